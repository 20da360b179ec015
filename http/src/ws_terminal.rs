//! `GET /ws/terminals/{terminalId}`: a terminal's bytes, for its session's owner
//! (docs/PROTOCOL.md, "Terminals"). Authentication, Origin and Host are checked as for
//! `/ws` (the guard runs before every route), and the socket counts toward the user's
//! WebSocket connections.
//!
//! Output leaves as binary frames, what the terminal kept first; typed input arrives
//! as binary frames, a resize as a JSON text frame. The server pings every socket
//! and drops one that stays silent, and closes one whose token stops authenticating.
//! Two tasks serve a socket: the response body writes (the terminal's output, the
//! socket's own pongs and errors, pings), and a reader decodes the client's frames
//! and hands them to the terminal (a shell that does not read stops that reader, and
//! so the client, not the server).

use std::cell::Cell;
use std::convert::Infallible;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix_codec::Decoder;
use actix_http::ws::{CloseCode, CloseReason, Codec, Frame, OpCode, Parser};
use actix_web::web::{Bytes, BytesMut};
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use tandem_actors::terminals::{Attachment, Output};
use tandem_actors::Runtime;
use tandem_protocol::terminals::{size_refusal, TerminalControl, MAX_INPUT_FRAME};
use tandem_protocol::ErrorCode;
use tokio::sync::mpsc;

use crate::auth::{caller, AuthMode};
use crate::error::ApiError;
use crate::state::AppState;

/// How often a socket's token is checked again at most (with each ping).
const AUTH_RECHECK: Duration = Duration::from_secs(1);
/// Output bytes written in one frame at most when several chunks wait.
const COALESCE: usize = 64 << 10;

/// What the reader asks the writer to send.
enum Ctl {
    /// The answer to a ping.
    Pong(Bytes),
    /// A text frame (a refusal).
    Text(String),
    /// The close frame, after which nothing is written.
    Close(CloseReason),
}

/// `GET /ws/terminals/{terminalId}`: authenticates, attaches, upgrades.
pub async fn connect(
    req: HttpRequest,
    stream: web::Payload,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, actix_web::Error> {
    let principal = caller(&req, &state.runtime, state.auth)?;
    let attachment = state
        .runtime
        .terminals()
        .attach(&principal, &id)
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no terminal {id}")))?;
    let slot = crate::ws::connection_slot(&state, &principal)?;
    let accept = crate::ws::handshake(&req)?;
    let token = match state.auth {
        AuthMode::Token => crate::auth::presented_token(&req),
        AuthMode::None => None,
    };
    let (control, controls) = mpsc::channel(16);
    let heard = Rc::new(Cell::new(Instant::now()));
    actix_rt::spawn(read_client(
        stream,
        attachment.terminal.clone(),
        control,
        heard.clone(),
    ));
    let mut ping = tokio::time::interval(state.heartbeat.ping_every);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let writer = Writer {
        replay: Some(attachment.replay.clone()),
        attachment,
        controls,
        ping,
        heard,
        timeout: state.heartbeat.timeout,
        runtime: state.runtime.clone(),
        token,
        auth_checked: Instant::now(),
        done: false,
        _slot: slot,
    };
    let body = futures_util::stream::unfold(writer, |mut w| async move {
        let bytes = w.next().await?;
        Some((Ok::<_, Infallible>(bytes), w))
    });
    crate::ws::switching(accept, body)
}

/// The response body's state: what to write next.
struct Writer {
    /// What the terminal kept, written first.
    replay: Option<Bytes>,
    /// The client's hold on the terminal (dropped with the socket: detached).
    attachment: Attachment,
    /// From the reader.
    controls: mpsc::Receiver<Ctl>,
    ping: tokio::time::Interval,
    /// When the client was last heard from (any frame).
    heard: Rc<Cell<Instant>>,
    timeout: Duration,
    runtime: Runtime,
    /// The token the socket connected with (token auth).
    token: Option<String>,
    auth_checked: Instant,
    /// The close frame was written.
    done: bool,
    _slot: crate::limits::ConnectionSlot,
}

impl Writer {
    /// The next bytes for the socket; `None` ends it.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        if let Some(replay) = self.replay.take().filter(|r| !r.is_empty()) {
            return Some(frame(OpCode::Binary, &replay));
        }
        tokio::select! {
            out = self.attachment.output.recv() => Some(self.output(out)),
            ctl = self.controls.recv() => match ctl {
                Some(Ctl::Pong(payload)) => Some(frame(OpCode::Pong, &payload)),
                Some(Ctl::Text(text)) => Some(frame(OpCode::Text, text.as_bytes())),
                Some(Ctl::Close(reason)) => Some(self.close(reason)),
                // The client's side is gone.
                None => None,
            },
            _ = self.ping.tick() => Some(self.heartbeat()),
        }
    }

    /// Frames for the terminal's output: waiting chunks go in one frame; its end is the
    /// `exit` frame and the close.
    fn output(&mut self, out: Option<Output>) -> Bytes {
        match out {
            Some(Output::Bytes(first)) => {
                if self.attachment.output.is_empty() {
                    return frame(OpCode::Binary, &first);
                }
                let mut all = BytesMut::from(&first[..]);
                while all.len() < COALESCE {
                    match self.attachment.output.try_recv() {
                        Ok(Output::Bytes(more)) => all.extend_from_slice(&more),
                        Ok(end @ Output::Exit { .. }) => {
                            let mut bytes = BytesMut::from(&frame(OpCode::Binary, &all)[..]);
                            bytes.extend_from_slice(&self.output(Some(end)));
                            return bytes.freeze();
                        }
                        Err(_) => break,
                    }
                }
                frame(OpCode::Binary, &all)
            }
            Some(Output::Exit { exit_code, reason }) => {
                let text = control_text(&TerminalControl::Exit {
                    exit_code,
                    reason: reason.clone(),
                });
                let mut bytes = BytesMut::from(&frame(OpCode::Text, text.as_bytes())[..]);
                bytes.extend_from_slice(&self.close(CloseReason {
                    code: CloseCode::Normal,
                    description: Some(clip(&reason)),
                }));
                bytes.freeze()
            }
            // Dropped for falling behind: it may reconnect and get the kept output.
            None => self.close(CloseReason {
                code: CloseCode::Again,
                description: Some("fell behind the terminal's output; reconnect".into()),
            }),
        }
    }

    /// A ping, or the close when the client went silent or its token stopped working.
    fn heartbeat(&mut self) -> Bytes {
        if self.heard.get().elapsed() > self.timeout {
            return self.close(CloseReason {
                code: CloseCode::Away,
                description: Some("no frame or pong in time".into()),
            });
        }
        if let Some(token) = &self.token {
            if self.auth_checked.elapsed() >= AUTH_RECHECK {
                self.auth_checked = Instant::now();
                if self.runtime.auth().authenticate(token).is_none() {
                    return self.close(CloseReason {
                        code: CloseCode::Policy,
                        description: Some("token revoked".into()),
                    });
                }
            }
        }
        frame(OpCode::Ping, b"")
    }

    fn close(&mut self, reason: CloseReason) -> Bytes {
        self.done = true;
        let mut bytes = BytesMut::new();
        Parser::write_close(&mut bytes, Some(reason), false);
        bytes.freeze()
    }
}

/// One unmasked frame (the server's).
fn frame(op: OpCode, payload: &[u8]) -> Bytes {
    let mut bytes = BytesMut::with_capacity(payload.len() + 10);
    Parser::write_message(&mut bytes, payload, op, true, false);
    bytes.freeze()
}

/// A control frame's JSON. Its variants hold only strings and numbers, so writing it
/// cannot fail; were it to, the client still gets a control frame it can read (an
/// `error` one saying so) rather than an empty text frame, and the log says why.
fn control_text(c: &TerminalControl) -> String {
    serde_json::to_string(c).unwrap_or_else(|e| {
        tracing::error!(error = %e, control = ?c, "cannot serialize a terminal control frame");
        r#"{"type":"error","message":"the server could not write a control frame"}"#.into()
    })
}

/// A close reason fits in a control frame (125 bytes, 2 of them the code): cut at a
/// character boundary within 120 bytes.
fn clip(text: &str) -> String {
    let mut end = text.len().min(120);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Reads the client's frames: input to the terminal, resizes, pings; ends when the
/// client closes or goes.
async fn read_client(
    mut stream: web::Payload,
    terminal: std::sync::Arc<tandem_actors::terminals::Terminal>,
    control: mpsc::Sender<Ctl>,
    heard: Rc<Cell<Instant>>,
) {
    let mut codec = Codec::new().max_size(MAX_INPUT_FRAME);
    let mut buf = BytesMut::new();
    loop {
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(f)) => {
                    heard.set(Instant::now());
                    if !on_frame(f, &terminal, &control).await {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let code = match e {
                        actix_http::ws::ProtocolError::Overflow => CloseCode::Size,
                        _ => CloseCode::Protocol,
                    };
                    let description = Some(clip(&e.to_string()));
                    let _ = control
                        .send(Ctl::Close(CloseReason { code, description }))
                        .await;
                    return;
                }
            }
        }
        match stream.next().await {
            Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
            _ => return,
        }
    }
}

/// Handles one client frame; `false` ends the reader.
async fn on_frame(
    f: Frame,
    terminal: &tandem_actors::terminals::Terminal,
    control: &mpsc::Sender<Ctl>,
) -> bool {
    let refuse = |message: String| Ctl::Text(control_text(&TerminalControl::Error { message }));
    match f {
        Frame::Binary(bytes) => terminal.write(bytes).await,
        Frame::Text(bytes) => {
            let answer = match serde_json::from_slice::<TerminalControl>(&bytes) {
                Ok(TerminalControl::Resize { cols, rows }) => match size_refusal(cols, rows) {
                    Ok(()) => terminal
                        .resize(cols, rows)
                        .err()
                        .map(|e| refuse(format!("cannot resize: {e}"))),
                    Err(r) => Some(refuse(r.message)),
                },
                Ok(_) => Some(refuse("only `resize` is sent to a terminal".into())),
                Err(e) => Some(refuse(format!(
                    "a text frame is a control frame ({{\"type\":\"resize\",\"cols\":N,\"rows\":N}}); \
                     input goes in binary frames: {e}"
                ))),
            };
            match answer {
                Some(ctl) => control.send(ctl).await.is_ok(),
                None => true,
            }
        }
        Frame::Ping(payload) => control.send(Ctl::Pong(payload)).await.is_ok(),
        Frame::Pong(_) => true,
        Frame::Close(reason) => {
            let reason = reason.unwrap_or(CloseReason {
                code: CloseCode::Normal,
                description: None,
            });
            let _ = control.send(Ctl::Close(reason)).await;
            false
        }
        Frame::Continuation(_) => control
            .send(refuse(
                "fragmented frames are not taken: send each input as one frame".into(),
            ))
            .await
            .is_ok(),
    }
}
