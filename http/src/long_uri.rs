//! Answers requests whose target is too long for the HTTP layer with a JSON error.
//!
//! actix-http parses the request target with the `http` crate, which refuses targets
//! over 65,534 bytes; the connection then gets `400` with an empty body before any of
//! our code runs. [`LongUriGuard`] sits under actix-http on each connection, follows
//! the request heads in the bytes the client sends, and answers a target over that
//! limit itself (`414`, `{"error": {"code": "INVALID_ARGUMENT", ...}}`), then ends the
//! connection. It follows `Content-Length` bodies; after a chunked body or an upgrade
//! (a WebSocket) it steps aside for the rest of the connection.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use actix_codec::{AsyncRead, AsyncWrite, ReadBuf};
use tandem_protocol::error::{ErrorBody, ErrorDetail};
use tandem_protocol::ErrorCode;

/// The longest request target the HTTP layer accepts (the `http` crate's limit).
pub const MAX_TARGET: usize = 65_534;
/// Header bytes kept per line to recognize the few headers that frame a request.
const LINE_KEEP: usize = 128;

/// Where the scanner is in the client's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before a request line (empty lines are skipped there).
    Start,
    /// In the method.
    Method,
    /// In the request target, this many bytes so far.
    Target(usize),
    /// In the rest of the request line.
    Version,
    /// In a header line.
    Header,
    /// In a body, this many bytes left.
    Body(u64),
    /// Not following any more (chunked body, upgrade).
    Off,
}

/// A request target over [`MAX_TARGET`] bytes was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetTooLong;

/// Follows request heads in a connection's byte stream.
#[derive(Debug)]
pub struct HeadScanner {
    at: At,
    /// The current header line (its first [`LINE_KEEP`] bytes).
    line: Vec<u8>,
    content_length: u64,
    /// The request changes framing (chunked body or upgrade): stop following.
    unframed: bool,
}

impl Default for HeadScanner {
    fn default() -> Self {
        HeadScanner {
            at: At::Start,
            line: Vec::new(),
            content_length: 0,
            unframed: false,
        }
    }
}

impl HeadScanner {
    /// Consumes `bytes`; an error means a request target is over [`MAX_TARGET`].
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), TargetTooLong> {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            i += 1;
            self.at = match self.at {
                At::Off => return Ok(()),
                At::Body(left) => {
                    // Skip the body in one step.
                    let n = (left as usize).min(bytes.len() - i + 1);
                    i += n - 1;
                    match left - n as u64 {
                        0 => At::Start,
                        rest => At::Body(rest),
                    }
                }
                At::Start if b == b'\r' || b == b'\n' => At::Start,
                At::Start => At::Method,
                At::Method if b == b' ' => At::Target(0),
                At::Method if b == b'\n' => self.head_line(),
                At::Method => At::Method,
                At::Target(_) if b == b' ' => At::Version,
                At::Target(_) if b == b'\n' => self.head_line(),
                At::Target(n) if n + 1 > MAX_TARGET => return Err(TargetTooLong),
                At::Target(n) => At::Target(n + 1),
                At::Version if b == b'\n' => self.head_line(),
                At::Version => At::Version,
                At::Header if b == b'\n' => self.end_of_line(),
                At::Header => {
                    if self.line.len() < LINE_KEEP {
                        self.line.push(b.to_ascii_lowercase());
                    }
                    At::Header
                }
            };
        }
        Ok(())
    }

    /// The request line ended: headers follow.
    fn head_line(&mut self) -> At {
        self.line.clear();
        self.content_length = 0;
        self.unframed = false;
        At::Header
    }

    /// A header line ended (or the head, on an empty line).
    fn end_of_line(&mut self) -> At {
        let line = std::mem::take(&mut self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            return match (self.unframed, self.content_length) {
                (true, _) => At::Off,
                (false, 0) => At::Start,
                (false, n) => At::Body(n),
            };
        }
        let value = |name: &[u8]| {
            line.strip_prefix(name)
                .map(|v| String::from_utf8_lossy(v).trim().to_string())
        };
        if let Some(v) = value(b"content-length:") {
            match v.parse() {
                Ok(n) => self.content_length = n,
                // Truncated or malformed: actix-http decides; stop following.
                Err(_) => self.unframed = true,
            }
        } else if let Some(v) = value(b"transfer-encoding:") {
            self.unframed |= v.contains("chunked") || line.len() >= LINE_KEEP;
        } else if value(b"upgrade:").is_some() {
            self.unframed = true;
        }
        At::Header
    }
}

/// The answer to a request whose target is too long.
fn rejection() -> Vec<u8> {
    let message = format!("the request target is longer than {MAX_TARGET} bytes");
    // A code and a message cannot fail to serialize; were they to, the body is still
    // the error's JSON, written by hand, and the log says why.
    let body = serde_json::to_string(&ErrorBody {
        error: ErrorDetail {
            code: ErrorCode::InvalidArgument,
            message: message.clone(),
            paths: None,
        },
    })
    .unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot serialize the 414 answer's body");
        format!(r#"{{"error":{{"code":"INVALID_ARGUMENT","message":"{message}"}}}}"#)
    });
    format!(
        "HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// What the guard does once it has refused a request.
#[derive(Debug)]
struct Refusal {
    response: Vec<u8>,
    written: usize,
    shut: bool,
}

/// A connection's I/O, with over-long request targets answered here (module doc).
pub struct LongUriGuard<T> {
    inner: T,
    scanner: HeadScanner,
    refusal: Option<Refusal>,
}

impl<T> LongUriGuard<T> {
    /// Wraps a connection.
    pub fn new(inner: T) -> Self {
        LongUriGuard {
            inner,
            scanner: HeadScanner::default(),
            refusal: None,
        }
    }

    /// The connection.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> LongUriGuard<T> {
    /// Writes the refusal, shuts the write side, then discards what the client still
    /// sends (so closing does not reset the connection before it read the answer) and
    /// reports the end of input to actix-http once the client closes.
    fn poll_refuse(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let Some(refusal) = self.refusal.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        while refusal.written < refusal.response.len() {
            let n = ready!(
                Pin::new(&mut self.inner).poll_write(cx, &refusal.response[refusal.written..])
            )?;
            if n == 0 {
                return Poll::Ready(Ok(()));
            }
            refusal.written += n;
        }
        if !refusal.shut {
            ready!(Pin::new(&mut self.inner).poll_shutdown(cx))?;
            refusal.shut = true;
        }
        loop {
            let before = buf.filled().len();
            ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
            let got = buf.filled().len() - before;
            buf.set_filled(before);
            if got == 0 {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for LongUriGuard<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.refusal.is_some() {
            return this.poll_refuse(cx, buf);
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.scanner.feed(&buf.filled()[before..]).is_err() {
            tracing::info!("refusing a request target over {MAX_TARGET} bytes");
            buf.set_filled(before);
            this.refusal = Some(Refusal {
                response: rejection(),
                written: 0,
                shut: false,
            });
            return this.poll_refuse(cx, buf);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for LongUriGuard<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::{HeadScanner, TargetTooLong, MAX_TARGET};

    fn scan(parts: &[&[u8]]) -> Result<(), TargetTooLong> {
        let mut s = HeadScanner::default();
        for p in parts {
            s.feed(p)?;
        }
        Ok(())
    }

    #[test]
    fn a_target_over_the_limit_is_refused_in_any_chunking() {
        let long = format!(
            "GET /{} HTTP/1.1\r\nHost: x\r\n\r\n",
            "a".repeat(MAX_TARGET)
        );
        assert_eq!(scan(&[long.as_bytes()]), Err(TargetTooLong));
        for size in [1, 7, 4096] {
            let mut s = HeadScanner::default();
            let r: Result<(), TargetTooLong> =
                long.as_bytes().chunks(size).try_for_each(|c| s.feed(c));
            assert_eq!(r, Err(TargetTooLong), "chunk size {size}");
        }
        let fits = format!(
            "GET /{} HTTP/1.1\r\nHost: x\r\n\r\n",
            "a".repeat(MAX_TARGET - 1)
        );
        assert_eq!(scan(&[fits.as_bytes()]), Ok(()));
    }

    #[test]
    fn bodies_are_skipped_and_only_request_lines_count() {
        // A body longer than the limit, with spaces and newlines, is not a target.
        let body = format!("x {}\n", "y".repeat(100_000));
        let req = format!(
            "POST /a HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_TARGET));
        assert_eq!(scan(&[req.as_bytes(), req.as_bytes()]), Ok(()));
        // ...and the request after it is followed again.
        assert_eq!(scan(&[req.as_bytes(), long.as_bytes()]), Err(TargetTooLong));
        // After an upgrade the stream is not HTTP any more.
        let upgrade = "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n";
        assert_eq!(scan(&[upgrade.as_bytes(), long.as_bytes()]), Ok(()));
    }
}
