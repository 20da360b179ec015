//! The WebSocket endpoint: one actor per connection. It parses client frames, answers
//! requests, and queues what the gateway delivers; the response body
//! ([`crate::ws_io::OutboxBody`]) writes it as fast as the socket takes it.
//!
//! The actor runs on its own, not from the response body: its heartbeat, its close
//! handling and the gateway's eviction work while the client's socket is full. Its
//! input comes from [`crate::ws_io::Reader`], which reads only while the client's
//! queue is within its budget; its output goes through [`crate::ws_io::Outbox`].

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tandem_protocol::ids::SessionId;

use actix::prelude::*;
use actix_http::ws::{CloseCode, CloseReason, Frame, Item, ProtocolError};
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use tandem_actors::gateway::Shutdown;
use tandem_actors::{ClientQueue, Deliver, Principal, Runtime};
use tandem_protocol::incoming::{Fragment, Incoming, Reassembler};
use tandem_protocol::{parse_client_frame, ClientFrame, ErrorCode, ServerFrame};

use crate::auth::{caller, AuthMode};
use crate::limits::{ConnectionSlot, RateWindow};
use crate::state::{AppState, Heartbeat};
use crate::ws_io::{Out, Outbox, OutboxBody, ReadError, Reader};
use crate::ws_limit::FrameLimit;
use crate::ws_requests::{dispatch, error_frame, Dispatched, Requester};

/// Messages the client actor's mailbox holds; the byte budget is the real bound.
const MAILBOX: usize = 4096;
/// How often a socket that connected with a token checks that it still
/// authenticates, so a revoked token's listen-only sockets close too.
const AUTH_RECHECK: Duration = Duration::from_secs(1);
/// How long a stopped connection's last frames (an error, the close) may take to be
/// written before its socket is shut: a client that does not read never takes them.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How often a stopped connection checks whether its last frames are written.
const CLOSE_POLL: Duration = Duration::from_millis(20);
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
    let slot = connection_slot(&state, &principal)?;
    let token = match state.auth {
        AuthMode::Token => crate::auth::presented_token(&req),
        AuthMode::None => None,
    };
    // Checked before anything is set up: a bad handshake is an HTTP error.
    let accept = handshake(&req)?;
    let runtime = state.runtime.clone();
    let queue = runtime.clients().new_queue();
    let outbox = Outbox::new(queue.clone());
    let socket = req.conn_data::<ConnSocket>().map(ConnSocket::shutdown);
    queue.set_shutdown(eviction(socket.clone(), &outbox));
    let id = runtime.clients().next_id();
    let body = OutboxBody::new(outbox.clone(), runtime.clients().gateway().recipient(), id);
    // Frames up to 16× the limit are read and refused with FRAME_TOO_LARGE so the
    // socket stays usable; anything larger is a protocol violation that closes it
    // (1009), refused at its header before any of its payload is buffered.
    let hard_cap = state.max_frame_bytes.saturating_mul(16);
    let oversized = Arc::<std::sync::atomic::AtomicBool>::default();
    let limited = FrameLimit::new(stream, hard_cap, oversized.clone(), socket.clone());
    let reader = Reader::new(limited, hard_cap, outbox.clone());
    let client = WsClient {
        token,
        auth_checked: Instant::now(),
        id,
        queue,
        outbox,
        socket,
        ctx: state.context(),
        runtime,
        principal,
        max_frame: state.max_frame_bytes,
        heartbeat: state.heartbeat,
        last_heard: Instant::now(),
        incoming: Reassembler::new(state.max_frame_bytes),
        bad_frames: VecDeque::new(),
        rate: RateWindow::new(state.limits.messages_per_sec),
        _slot: slot,
        oversized,
    };
    WsClient::create(|ctx| {
        ctx.add_stream(reader);
        client
    });
    switching(accept, body)
}

/// Checks a WebSocket upgrade request and answers its `Sec-WebSocket-Accept` value; a
/// bad handshake is an HTTP error.
pub(crate) fn handshake(req: &HttpRequest) -> Result<[u8; 28], actix_web::Error> {
    actix_http::ws::verify_handshake(req.head())?;
    Ok(req
        .headers()
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|key| actix_http::ws::hash_key(key.as_bytes()))
        .ok_or(actix_http::ws::HandshakeError::BadWebsocketKey)?)
}

/// The `101 Switching Protocols` answer whose body is the socket's outgoing bytes.
pub(crate) fn switching<S, E>(accept: [u8; 28], body: S) -> Result<HttpResponse, actix_web::Error>
where
    S: futures_util::Stream<Item = Result<actix_web::web::Bytes, E>> + 'static,
    E: Into<Box<dyn std::error::Error>> + 'static,
{
    Ok(HttpResponse::SwitchingProtocols()
        .upgrade("websocket")
        .insert_header((
            header::SEC_WEBSOCKET_ACCEPT,
            header::HeaderValue::from_bytes(&accept)
                .map_err(actix_web::error::ErrorInternalServerError)?,
        ))
        .streaming(body))
}

/// One of the user's WebSocket connections, or `LIMIT_EXCEEDED` when the user has
/// all they may.
pub(crate) fn connection_slot(
    state: &AppState,
    principal: &tandem_actors::Principal,
) -> Result<crate::limits::ConnectionSlot, crate::error::ApiError> {
    let max_connections = state.limits.connections_per_user;
    state
        .connections
        .acquire(&principal.user_id, max_connections)
        .ok_or_else(|| {
            crate::error::ApiError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "user `{}` already has {max_connections} WebSocket connections open \
                     (--max-connections-per-user)",
                    principal.user_id
                ),
            )
        })
}

/// What evicting the client does: shut the socket and drop everything queued at once.
fn eviction(socket: Option<Shutdown>, outbox: &Arc<Outbox>) -> Shutdown {
    let outbox = Arc::downgrade(outbox);
    Shutdown::new(move || {
        if let Some(socket) = &socket {
            socket.run();
        }
        if let Some(outbox) = outbox.upgrade() {
            outbox.abandon();
        }
    })
}

/// One WebSocket connection.
pub struct WsClient {
    /// Set when the byte stream was cut at a frame header over the hard limit.
    oversized: Arc<std::sync::atomic::AtomicBool>,
    id: u64,
    runtime: Runtime,
    /// What requests run against (the runtime and, in a cluster, the membership
    /// that routes requests for other nodes' sessions there).
    ctx: crate::operation::Context,
    principal: Principal,
    queue: Arc<ClientQueue>,
    /// Frames waiting for the client; the response body takes them.
    outbox: Arc<Outbox>,
    /// Shuts the socket (none when the connection's socket could not be kept).
    socket: Option<Shutdown>,
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

type Ctx = Context<WsClient>;

impl WsClient {
    fn send_frame(&self, frame: &ServerFrame) {
        self.outbox.push(Out::Text(frame.to_json().into()));
    }

    /// Queues the close frame (the last one written) and stops.
    fn close(&self, ctx: &mut Ctx, code: CloseCode, description: &str) {
        self.outbox.push(Out::Close(Some(CloseReason {
            code,
            description: Some(description.into()),
        })));
        ctx.stop();
    }

    fn error(
        &mut self,
        code: ErrorCode,
        error: String,
        request_id: Option<String>,
        session_id: Option<SessionId>,
    ) {
        let frame = error_frame(&self.runtime, code, error, request_id, session_id);
        self.send_frame(&frame);
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
                ErrorCode::RateLimited,
                "too many bad frames; closing".into(),
                None,
                None,
            );
            self.close(ctx, CloseCode::Policy, "too many bad frames");
        }
    }

    /// False once the token this socket connected with no longer authenticates.
    fn still_authorized(&mut self) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        if self.auth_checked.elapsed() < AUTH_RECHECK {
            return true;
        }
        self.auth_checked = Instant::now();
        self.runtime.auth().authenticate(token).is_some()
    }

    /// Tells the client its token no longer authenticates, and closes.
    fn revoked(&mut self, ctx: &mut Ctx) {
        self.error(
            ErrorCode::Unauthorized,
            "the token was revoked or replaced; closing".into(),
            None,
            None,
        );
        self.close(ctx, CloseCode::Policy, "token revoked");
    }

    /// Answers what the reassembler made of a data frame.
    fn on_incoming(&mut self, incoming: Incoming, ctx: &mut Ctx) {
        match incoming {
            Incoming::Text(text) => self.on_text(&text, ctx),
            Incoming::Refused { code, message } => {
                self.error(code, message, None, None);
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
            self.revoked(ctx);
            return;
        }
        match parse_client_frame(text) {
            Ok(frame) => {
                if self.rate.over() {
                    self.error(
                        ErrorCode::RateLimited,
                        "too many requests; slow down".into(),
                        frame.request_id,
                        None,
                    );
                    return;
                }
                self.dispatch(frame);
            }
            Err(e) => {
                self.error(e.code, e.message, e.request_id, e.session_id);
                self.bad_frame(ctx);
            }
        }
    }

    fn dispatch(&mut self, frame: ClientFrame) {
        let reads = !frame.request.writes();
        let who = Requester {
            ctx: &self.ctx,
            principal: &self.principal,
            client_id: self.id,
        };
        match dispatch(who, frame) {
            Dispatched::Now(frames) => {
                for frame in &frames {
                    self.send_frame(frame);
                }
            }
            // A request that was read runs to its end even when the connection ends
            // first (a client that answers a permission and closes at once): its
            // effect must not depend on the socket staying open. Its reply goes
            // straight to the outbox, which drops it once the connection is closing.
            // A read's answer may be large (a page of events): no further frame is
            // read until it is queued, so a client that does not read its answers is
            // held to its budget (writes answer small and run side by side).
            Dispatched::Later(fut) => {
                let outbox = self.outbox.clone();
                if reads {
                    outbox.read_started();
                }
                actix_rt::spawn(async move {
                    for json in fut.await {
                        outbox.push(Out::Text(json.into()));
                    }
                    if reads {
                        outbox.read_answered();
                    }
                });
            }
        }
    }

    fn on_fragment(&mut self, item: Item, ctx: &mut Ctx) {
        let (kind, bytes) = match item {
            Item::FirstText(b) => (Fragment::FirstText, b),
            Item::FirstBinary(b) => (Fragment::FirstBinary, b),
            Item::Continue(b) => (Fragment::Continue, b),
            Item::Last(b) => (Fragment::Last, b),
        };
        let incoming = self.incoming.fragment(kind, &bytes);
        if self.incoming.seen() > self.max_frame.saturating_mul(16) {
            // Like a frame over 16 times the limit: a message that goes on and on is
            // not read to its end (it might never end); the connection closes.
            self.error(
                ErrorCode::FrameTooLarge,
                format!(
                    "fragmented message exceeds 16 times the {} byte limit; closing",
                    self.max_frame
                ),
                None,
                None,
            );
            self.close(ctx, CloseCode::Size, "message too large");
            return;
        }
        self.on_incoming(incoming, ctx);
    }
}

impl Actor for WsClient {
    type Context = Ctx;

    fn started(&mut self, ctx: &mut Ctx) {
        ctx.set_mailbox_capacity(MAILBOX);
        self.runtime.clients().connect(
            self.id,
            ctx.address().recipient(),
            self.queue.clone(),
            self.principal.clone(),
        );
        ctx.run_interval(self.heartbeat.ping_every, |act, ctx| {
            if act.last_heard.elapsed() > act.heartbeat.timeout {
                tracing::info!(client = act.id, "dropping a silent WebSocket client");
                if let Some(socket) = &act.socket {
                    socket.run();
                }
                ctx.stop();
                return;
            }
            act.outbox.push(Out::Ping);
        });
        if self.token.is_some() {
            // A socket that only listens sends no request to check its token on.
            ctx.run_interval(AUTH_RECHECK, |act, ctx| {
                if !act.still_authorized() {
                    act.revoked(ctx);
                }
            });
        }
    }

    fn stopped(&mut self, _: &mut Ctx) {
        self.queue.mark_closed();
        self.runtime.clients().disconnect(self.id);
        if let Some(cluster) = &self.ctx.cluster {
            crate::cluster_visible::forget(cluster, &self.ctx.told, self.id);
        }
        // What is still queued (an error, the close frame) is written if the client
        // reads; its bytes no longer count against the gateway's budgets.
        self.outbox.finish();
        self.queue.release(usize::MAX);
        // Then the socket is shut: as soon as the last frame is written, or after
        // the grace period. Without this, a client that reads the close frame and
        // keeps sending would keep the connection (HTTP/1 reads a request body it no
        // longer wants to its end, and this one has none).
        let (outbox, socket) = (self.outbox.clone(), self.socket.clone());
        actix_rt::spawn(async move {
            let deadline = Instant::now() + CLOSE_GRACE;
            while !outbox.ended() && Instant::now() < deadline {
                actix_rt::time::sleep(CLOSE_POLL).await;
            }
            if !outbox.ended() {
                outbox.abandon();
            }
            if let Some(socket) = socket {
                socket.run();
            }
        });
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
        // Charged by the gateway; released when the body takes them.
        self.outbox.push_charged(msg.frames, msg.framed);
        if let Some((code, reason)) = msg.close {
            self.close(ctx, CloseCode::from(code), &reason);
        }
    }
}

impl StreamHandler<Result<Frame, ReadError>> for WsClient {
    fn handle(&mut self, msg: Result<Frame, ReadError>, ctx: &mut Ctx) {
        if self.queue.evicted() {
            // Whatever an evicted client sends is refused.
            ctx.stop();
            return;
        }
        self.last_heard = Instant::now();
        match msg {
            Ok(Frame::Text(bytes)) => match std::str::from_utf8(&bytes) {
                Ok(text) => self.on_text(text, ctx),
                // Answered like invalid UTF-8 in a fragmented message.
                Err(_) => self.on_incoming(tandem_protocol::incoming::not_utf8(), ctx),
            },
            Ok(Frame::Binary(_)) => {
                let refused = self.incoming.binary();
                self.on_incoming(refused, ctx);
            }
            Ok(Frame::Continuation(item)) => self.on_fragment(item, ctx),
            Ok(Frame::Ping(bytes)) => self.outbox.push(Out::Pong(bytes)),
            Ok(Frame::Pong(_)) => {}
            Ok(Frame::Close(reason)) => {
                self.outbox.push(Out::Close(reason));
                ctx.stop();
            }
            Err(e) => {
                tracing::debug!(client = self.id, error = %e, "WebSocket protocol error");
                let oversized = self.oversized.load(std::sync::atomic::Ordering::Acquire);
                let code = match e {
                    _ if oversized => CloseCode::Size,
                    ReadError::Protocol(ProtocolError::Overflow) => CloseCode::Size,
                    _ => CloseCode::Protocol,
                };
                self.close(ctx, code, &e.to_string());
            }
        }
    }
}
