//! Enforces the WebSocket frame size limit at the frame header. actix-http's parser
//! buffers a whole frame before it compares its length with the limit, so a frame that
//! announces 2^40 bytes and then streams data would be held in memory as it arrives.
//! [`FrameLimit`] reads the frame headers in the raw byte stream instead and ends the
//! stream as soon as a header announces more than the limit, before its payload.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_web::error::PayloadError;
use actix_web::web::Bytes;
use futures_util::Stream;
use tandem_actors::gateway::Shutdown;

/// How long the close frame gets before the socket is shut.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Where the scanner is in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Inside a frame header; `have` of its bytes seen so far.
    Header { have: usize },
    /// Inside a payload; this many bytes left.
    Payload { left: u64 },
}

/// Scans WebSocket frame headers in a client's byte stream (RFC 6455 §5.2).
#[derive(Debug)]
pub struct HeaderScanner {
    at: At,
    header: [u8; 14],
    /// Largest payload a frame may announce.
    limit: u64,
}

impl HeaderScanner {
    /// A scanner at the start of a frame.
    pub fn new(limit: u64) -> Self {
        HeaderScanner {
            at: At::Header { have: 0 },
            header: [0; 14],
            limit,
        }
    }

    /// The header's full length and the payload length, once the length bytes are in
    /// (the mask key may still be missing).
    fn parse(&self, have: usize) -> Option<(usize, u64)> {
        if have < 2 {
            return None;
        }
        let masked = self.header[1] & 0x80 != 0;
        let (ext, len7) = match self.header[1] & 0x7f {
            126 => (2, None),
            127 => (8, None),
            n => (0, Some(u64::from(n))),
        };
        let total = 2 + ext + if masked { 4 } else { 0 };
        if have < 2 + ext {
            return None;
        }
        let len = len7.unwrap_or_else(|| {
            self.header[2..2 + ext]
                .iter()
                .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
        });
        Some((total, len))
    }

    /// Consumes `chunk`; an error names the first frame over the limit.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<(), u64> {
        while !chunk.is_empty() {
            match self.at {
                At::Payload { left } => {
                    let n = (chunk.len() as u64).min(left);
                    chunk = &chunk[n as usize..];
                    self.at = match left - n {
                        0 => At::Header { have: 0 },
                        rest => At::Payload { left: rest },
                    };
                }
                At::Header { have } => {
                    self.header[have] = chunk[0];
                    chunk = &chunk[1..];
                    let have = have + 1;
                    match self.parse(have) {
                        // Refused as soon as the length is known.
                        Some((_, len)) if len > self.limit => return Err(len),
                        Some((total, 0)) if have == total => self.at = At::Header { have: 0 },
                        Some((total, len)) if have == total => self.at = At::Payload { left: len },
                        _ => self.at = At::Header { have },
                    }
                }
            }
        }
        Ok(())
    }
}

/// A client's byte stream, cut off at the first frame that announces more than the
/// limit. `tripped` tells the connection's actor why its stream failed (close 1009).
pub struct FrameLimit<S> {
    inner: S,
    scanner: HeaderScanner,
    tripped: Arc<AtomicBool>,
    /// Shuts the socket once tripped: ending this stream alone does not stop actix-http
    /// from reading (and discarding) the rest of the announced payload.
    shutdown: Option<Shutdown>,
    done: bool,
}

impl<S> FrameLimit<S> {
    /// Wraps `inner`, refusing frames over `limit` bytes.
    pub fn new(
        inner: S,
        limit: usize,
        tripped: Arc<AtomicBool>,
        shutdown: Option<Shutdown>,
    ) -> Self {
        FrameLimit {
            inner,
            scanner: HeaderScanner::new(limit as u64),
            tripped,
            shutdown,
            done: false,
        }
    }
}

impl<S> Stream for FrameLimit<S>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => match self.scanner.feed(&chunk) {
                Ok(()) => Poll::Ready(Some(Ok(chunk))),
                Err(announced) => {
                    self.done = true;
                    self.tripped.store(true, Ordering::Release);
                    tracing::info!(
                        announced,
                        "WebSocket frame over the size limit refused at its header"
                    );
                    if let Some(shutdown) = self.shutdown.take() {
                        // A moment for the close frame (1009) to be written first.
                        actix_web::rt::spawn(async move {
                            actix_web::rt::time::sleep(CLOSE_GRACE).await;
                            shutdown.run();
                        });
                    }
                    Poll::Ready(Some(Err(PayloadError::Overflow)))
                }
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HeaderScanner;

    fn frame(len: u64, masked: bool) -> Vec<u8> {
        let mut out = vec![0x81];
        let mask = if masked { 0x80 } else { 0 };
        match len {
            n if n < 126 => out.push(mask | n as u8),
            n if n <= 0xffff => {
                out.push(mask | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(mask | 127);
                out.extend_from_slice(&n.to_be_bytes());
            }
        }
        if masked {
            out.extend_from_slice(&[1, 2, 3, 4]);
        }
        out
    }

    #[test]
    fn passes_frames_within_the_limit_in_any_chunking() {
        let mut bytes = Vec::new();
        for len in [0u64, 5, 125, 126, 300, 70_000] {
            bytes.extend(frame(len, true));
            bytes.extend(std::iter::repeat_n(7u8, len as usize));
        }
        for size in [1, 3, 7, 64, 4096, bytes.len()] {
            let mut scanner = HeaderScanner::new(70_000);
            for chunk in bytes.chunks(size) {
                assert_eq!(scanner.feed(chunk), Ok(()), "chunk size {size}");
            }
        }
    }

    #[test]
    fn refuses_at_the_header() {
        let mut scanner = HeaderScanner::new(1 << 20);
        let mut bytes = frame(10, true);
        bytes.extend([0u8; 10]);
        bytes.extend(frame(1 << 40, true));
        // Only the header of the huge frame is needed to refuse it.
        assert_eq!(scanner.feed(&bytes), Err(1 << 40));
        let mut scanner = HeaderScanner::new(100);
        assert_eq!(scanner.feed(&frame(100, true)[..2]), Ok(()));
        let mut scanner = HeaderScanner::new(100);
        assert_eq!(scanner.feed(&frame(101, true)[..2]), Err(101));
        let mut scanner = HeaderScanner::new(100);
        assert_eq!(scanner.feed(&frame(60_000, false)[..4]), Err(60_000));
    }
}
