//! The WebSocket endpoint: one actor per connection. It parses client frames, answers
//! requests, and writes the frames the gateway delivers into its bounded mailbox.
//!
//! This is the only file that uses actix-web-actors; moving to actix-ws is a change
//! here alone.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use actix_web::{web, HttpRequest, HttpResponse};
use actix_web_actors::ws;
use tandem_actors::gateway::{Drained, Shutdown};
use tandem_actors::{ClientQueue, Deliver, Principal, Runtime};
use tandem_protocol::incoming::{Fragment, Incoming, Reassembler};
use tandem_protocol::{parse_client_frame, ClientFrame, ErrorCode, ServerFrame};

use crate::auth::{caller, AuthMode};
use crate::limits::{ConnectionSlot, RateWindow};
use crate::state::{AppState, Heartbeat};
use crate::ws_limit::FrameLimit;
use crate::ws_requests::{dispatch, error_frame, Dispatched, Requester};

/// Messages the client actor's mailbox holds; the byte budget is the real bound.
const MAILBOX: usize = 4096;
/// Bad frames tolerated per [`ABUSE_WINDOW`] before the socket is closed.
const MAX_BAD_FRAMES: usize = 50;
const ABUSE_WINDOW: Duration = Duration::from_secs(10);

/// The connection's socket, kept per connection (`on_connect`) so the gateway can shut
/// it from outside the client's actor. Dropped with the connection; the gateway holds
/// only a weak reference, so it never keeps a socket open.
#[derive(Clone)]
pub struct ConnSocket(Arc<OwnedFd>);

impl ConnSocket {
    /// A duplicate of the stream's descriptor.
    pub fn of(tcp: &impl AsFd) -> std::io::Result<ConnSocket> {
        Ok(ConnSocket(Arc::new(tcp.as_fd().try_clone_to_owned()?)))
    }

    /// A [`Shutdown`] that shuts the socket both ways while the connection lives.
    fn shutdown(&self) -> Shutdown {
        let weak = Arc::downgrade(&self.0);
        Shutdown::new(move || {
            let Some(fd) = weak.upgrade() else {
                return;
            };
            match fd.try_clone() {
                // Shutting down (not closing) ends the connection for every
                // descriptor of it: the HTTP layer's reads and writes fail at once.
                Ok(dup) => {
                    let _ = std::net::TcpStream::from(dup).shutdown(std::net::Shutdown::Both);
                }
                Err(e) => tracing::warn!(error = %e, "cannot shut a client's socket"),
            }
        })
    }
}

/// `GET /ws`: authenticates, then upgrades.
pub async fn connect(
    req: HttpRequest,
    stream: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, actix_web::Error> {
    let principal = caller(&req, &state.runtime, state.auth)?;
    let max_connections = state.limits.connections_per_user;
    let Some(slot) = state
        .connections
        .acquire(&principal.user_id, max_connections)
    else {
        return Err(crate::error::ApiError::new(
            ErrorCode::LimitExceeded,
            format!(
                "user `{}` already has {max_connections} WebSocket connections open \
                 (--max-connections-per-user)",
                principal.user_id
            ),
        )
        .into());
    };
    let token = match state.auth {
        AuthMode::Token => crate::auth::presented_token(&req),
        AuthMode::None => None,
    };
    let runtime = state.runtime.clone();
    let queue = runtime.new_client_queue();
    let shutdown = req.conn_data::<ConnSocket>().map(ConnSocket::shutdown);
    if let Some(shutdown) = &shutdown {
        queue.set_shutdown(shutdown.clone());
    }
    let client = WsClient {
        token,
        auth_checked: Instant::now(),
        id: runtime.next_client_id(),
        queue,
        runtime,
        principal,
        max_frame: state.max_frame_bytes,
        heartbeat: state.heartbeat,
        last_heard: Instant::now(),
        incoming: Reassembler::new(state.max_frame_bytes),
        bad_frames: VecDeque::new(),
        rate: RateWindow::new(state.limits.messages_per_sec),
        _slot: slot,
        oversized: Arc::default(),
    };
    // Frames up to 16× the limit are read and refused with FRAME_TOO_LARGE so the
    // socket stays usable; anything larger is a protocol violation that closes it
    // (1009), refused at its header before any of its payload is buffered.
    let hard_cap = state.max_frame_bytes.saturating_mul(16);
    let limited = FrameLimit::new(stream, hard_cap, client.oversized.clone(), shutdown);
    ws::WsResponseBuilder::new(client, &req, limited)
        .frame_size(hard_cap)
        .start()
}

/// One WebSocket connection.
pub struct WsClient {
    /// Set when the byte stream was cut at a frame header over the hard limit.
    oversized: Arc<std::sync::atomic::AtomicBool>,
    id: u64,
    runtime: Runtime,
    principal: Principal,
    queue: Arc<ClientQueue>,
    max_frame: usize,
    /// How often to ping, and how long a silent client (no frame, no pong) may stay
    /// before it is dropped as half-open.
    heartbeat: Heartbeat,
    last_heard: Instant,
    /// Size limit, fragment reassembly and UTF-8 checks of incoming messages.
    incoming: Reassembler,
    bad_frames: VecDeque<Instant>,
    /// Requests in the current second (`--ws-messages-per-sec`).
    rate: RateWindow,
    /// This connection's share of its user's `--max-connections-per-user`.
    _slot: ConnectionSlot,
    /// The token it connected with (token auth), checked again before requests at
    /// most once a second, so a revoked or rotated token stops a socket too.
    token: Option<String>,
    auth_checked: Instant,
}

type Ctx = ws::WebsocketContext<WsClient>;

impl WsClient {
    fn send_frame(ctx: &mut Ctx, frame: &ServerFrame) {
        ctx.text(frame.to_json());
    }

    fn error(
        &mut self,
        ctx: &mut Ctx,
        code: ErrorCode,
        error: String,
        request_id: Option<String>,
        session_id: Option<String>,
    ) {
        let frame = error_frame(&self.runtime, code, error, request_id, session_id);
        Self::send_frame(ctx, &frame);
    }

    /// Counts a bad frame; a client that keeps sending them is closed.
    fn bad_frame(&mut self, ctx: &mut Ctx) {
        let now = Instant::now();
        self.bad_frames.push_back(now);
        while self
            .bad_frames
            .front()
            .is_some_and(|t| now.duration_since(*t) > ABUSE_WINDOW)
        {
            self.bad_frames.pop_front();
        }
        if self.bad_frames.len() > MAX_BAD_FRAMES {
            self.error(
                ctx,
                ErrorCode::RateLimited,
                "too many bad frames; closing".into(),
                None,
                None,
            );
            ctx.close(Some(ws::CloseReason {
                code: ws::CloseCode::Policy,
                description: Some("too many bad frames".into()),
            }));
            ctx.stop();
        }
    }

    /// False once the token this socket connected with no longer authenticates.
    fn still_authorized(&mut self) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        if self.auth_checked.elapsed() < Duration::from_secs(1) {
            return true;
        }
        self.auth_checked = Instant::now();
        self.runtime.authenticate(token).is_some()
    }

    /// Answers what the reassembler made of a data frame.
    fn on_incoming(&mut self, incoming: Incoming, ctx: &mut Ctx) {
        match incoming {
            Incoming::Text(text) => self.on_text(&text, ctx),
            Incoming::Refused { code, message } => {
                self.error(ctx, code, message, None, None);
                self.bad_frame(ctx);
            }
            Incoming::Pending => {}
        }
    }

    fn on_text(&mut self, text: &str, ctx: &mut Ctx) {
        if text.len() > self.max_frame {
            let refused = self.incoming.too_large(text.len());
            self.on_incoming(refused, ctx);
            return;
        }
        if !self.still_authorized() {
            self.error(
                ctx,
                ErrorCode::Unauthorized,
                "the token was revoked or replaced; closing".into(),
                None,
                None,
            );
            ctx.close(Some(ws::CloseReason {
                code: ws::CloseCode::Policy,
                description: Some("token revoked".into()),
            }));
            ctx.stop();
            return;
        }
        match parse_client_frame(text) {
            Ok(frame) => {
                if self.rate.over() {
                    self.error(
                        ctx,
                        ErrorCode::RateLimited,
                        "too many requests; slow down".into(),
                        frame.request_id,
                        None,
                    );
                    return;
                }
                self.dispatch(frame, ctx);
            }
            Err(e) => {
                self.error(ctx, e.code, e.message, e.request_id, e.session_id);
                self.bad_frame(ctx);
            }
        }
    }

    fn dispatch(&mut self, frame: ClientFrame, ctx: &mut Ctx) {
        let who = Requester {
            runtime: &self.runtime,
            principal: &self.principal,
            client_id: self.id,
        };
        match dispatch(who, frame) {
            Dispatched::Now(frames) => {
                for frame in &frames {
                    Self::send_frame(ctx, frame);
                }
            }
            Dispatched::Later(fut) => {
                ctx.spawn(
                    fut.into_actor(self)
                        .map(|frame, _, ctx| Self::send_frame(ctx, &frame)),
                );
            }
        }
    }

    fn on_fragment(&mut self, item: actix_http::ws::Item, ctx: &mut Ctx) {
        let (kind, bytes) = match item {
            actix_http::ws::Item::FirstText(b) => (Fragment::FirstText, b),
            actix_http::ws::Item::FirstBinary(b) => (Fragment::FirstBinary, b),
            actix_http::ws::Item::Continue(b) => (Fragment::Continue, b),
            actix_http::ws::Item::Last(b) => (Fragment::Last, b),
        };
        let incoming = self.incoming.fragment(kind, &bytes);
        self.on_incoming(incoming, ctx);
    }
}

impl Actor for WsClient {
    type Context = Ctx;

    fn started(&mut self, ctx: &mut Ctx) {
        ctx.set_mailbox_capacity(MAILBOX);
        self.runtime.connect_client(
            self.id,
            ctx.address().recipient(),
            self.queue.clone(),
            self.principal.clone(),
        );
        ctx.run_interval(self.heartbeat.ping_every, |act, ctx| {
            if act.last_heard.elapsed() > act.heartbeat.timeout {
                tracing::info!(client = act.id, "dropping a silent WebSocket client");
                ctx.stop();
                return;
            }
            ctx.ping(b"");
        });
    }

    fn stopped(&mut self, _: &mut Ctx) {
        self.queue.mark_closed();
        self.runtime.disconnect_client(self.id);
        // Frames still in the mailbox die with it; release their bytes.
        self.queue.delivered(self.queue.queued());
    }
}

impl Handler<Deliver> for WsClient {
    type Result = ();

    fn handle(&mut self, msg: Deliver, ctx: &mut Ctx) {
        if self.queue.evicted() {
            // Given up on: its socket is being shut; write nothing more.
            ctx.stop();
            return;
        }
        for frame in msg.frames {
            ctx.text(frame);
        }
        if self.queue.delivered(msg.bytes) {
            self.runtime
                .gateway()
                .do_send(Drained { client_id: self.id });
        }
        if let Some((code, reason)) = msg.close {
            ctx.close(Some(ws::CloseReason {
                code: ws::CloseCode::from(code),
                description: Some(reason),
            }));
            ctx.stop();
        }
    }
}

impl StreamHandler<Result<ws::Message, ws::ProtocolError>> for WsClient {
    fn handle(&mut self, msg: Result<ws::Message, ws::ProtocolError>, ctx: &mut Ctx) {
        if self.queue.evicted() {
            // Whatever an evicted client sends is refused.
            ctx.stop();
            return;
        }
        self.last_heard = Instant::now();
        match msg {
            Ok(ws::Message::Text(text)) => self.on_text(&text, ctx),
            Ok(ws::Message::Binary(_)) => {
                let refused = self.incoming.binary();
                self.on_incoming(refused, ctx);
            }
            Ok(ws::Message::Continuation(item)) => self.on_fragment(item, ctx),
            Ok(ws::Message::Ping(bytes)) => ctx.pong(&bytes),
            Ok(ws::Message::Pong(_)) | Ok(ws::Message::Nop) => {}
            Ok(ws::Message::Close(reason)) => {
                ctx.close(reason);
                ctx.stop();
            }
            // actix-web-actors reports a whole text frame that is not UTF-8 as an I/O
            // error, having consumed the frame; answer it like a fragmented one.
            Err(ws::ProtocolError::Io(e)) if e.to_string().contains("utf-8") => {
                self.on_incoming(tandem_protocol::incoming::not_utf8(), ctx);
            }
            Err(e) => {
                tracing::debug!(client = self.id, error = %e, "WebSocket protocol error");
                let oversized = self.oversized.load(std::sync::atomic::Ordering::Acquire);
                let code = match e {
                    _ if oversized => ws::CloseCode::Size,
                    ws::ProtocolError::Overflow => ws::CloseCode::Size,
                    _ => ws::CloseCode::Protocol,
                };
                ctx.close(Some(ws::CloseReason {
                    code,
                    description: Some(e.to_string()),
                }));
                ctx.stop();
            }
        }
    }
}
