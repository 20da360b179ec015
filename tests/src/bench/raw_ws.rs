//! A bare WebSocket client: frames as bytes, no JSON parsing, no backlog. The load
//! generator and the slow-client test use it where [`crate::WsClient`] would parse
//! every frame or hide how the socket closed.

use std::time::Duration;

use actix_codec::Framed;
use awc::ws::{Codec, Frame, Message};
use awc::BoxedSocket;
use futures_util::{SinkExt, StreamExt};

/// What [`RawWs::next_text`] saw.
#[derive(Debug, PartialEq)]
pub enum Incoming<R> {
    /// A text frame, as the caller's closure made it.
    Text(R),
    /// The server closed the socket (with this close code, if it gave one), or the
    /// connection ended.
    Closed(Option<u16>),
}

/// A connected WebSocket client.
pub struct RawWs {
    framed: Framed<BoxedSocket, Codec>,
}

impl RawWs {
    /// Opens `count` connections for a client thread, tells the coordinator it is
    /// ready (or why it is not), and waits for the start signal, so that no thread
    /// starts measuring before every client exists.
    pub async fn connect_all(
        url: &str,
        count: usize,
        ready: &std::sync::mpsc::Sender<Result<(), String>>,
        go: &std::sync::mpsc::Receiver<()>,
    ) -> Result<Vec<RawWs>, String> {
        let mut conns = Vec::with_capacity(count);
        for _ in 0..count {
            match RawWs::connect(url).await {
                Ok(ws) => conns.push(ws),
                Err(e) => {
                    let _ = ready.send(Err(e.clone()));
                    return Err(e);
                }
            }
        }
        let _ = ready.send(Ok(()));
        // Nothing else runs on this thread until the start signal.
        go.recv_timeout(Duration::from_secs(60))
            .map_err(|e| format!("no start signal: {e}"))?;
        Ok(conns)
    }

    /// Connects to a `ws://` URL.
    pub async fn connect(url: &str) -> Result<RawWs, String> {
        Ok(RawWs {
            framed: crate::ws::connect_framed(url).await?,
        })
    }

    /// Sends a text frame.
    pub async fn send_text(&mut self, text: String) -> Result<(), String> {
        self.framed
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| format!("ws send: {e}"))
    }

    /// Waits up to `timeout` for the next text frame and hands its bytes to `f`.
    /// Pings are answered on the way. The server never fragments messages, so a
    /// continuation frame is an error.
    pub async fn next_text<R>(
        &mut self,
        timeout: Duration,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Incoming<R>, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.framed.next())
                .await
                .map_err(|_| format!("no frame within {timeout:?}"))?;
            match frame {
                None => return Ok(Incoming::Closed(None)),
                Some(Err(e)) => return Err(format!("ws receive: {e}")),
                Some(Ok(Frame::Text(bytes))) => return Ok(Incoming::Text(f(&bytes))),
                Some(Ok(Frame::Ping(p))) => {
                    let _ = self.framed.send(Message::Pong(p)).await;
                }
                Some(Ok(Frame::Close(reason))) => {
                    return Ok(Incoming::Closed(reason.map(|r| u16::from(r.code))));
                }
                Some(Ok(Frame::Continuation(_))) => {
                    return Err("unexpected fragmented message".into());
                }
                Some(Ok(Frame::Binary(_) | Frame::Pong(_))) => {}
            }
        }
    }

    /// Sends a close frame.
    pub async fn close(mut self) {
        let _ = self.framed.send(Message::Close(None)).await;
    }
}
