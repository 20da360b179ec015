//! What every handler shares: the runtime and the server's settings. Its own module so
//! the handlers (REST, MCP, WebSocket) and the server that mounts them import it
//! without importing each other.

use tandem_actors::Runtime;

use crate::auth::AuthMode;

/// Shared by every handler (`web::Data`); built once by the server at start.
pub struct AppState {
    /// The composition root: every handler acts through it.
    pub runtime: Runtime,
    /// Whether callers need a token; handlers pass it to [`crate::auth::caller`].
    pub auth: AuthMode,
    /// Largest frame or body accepted.
    pub max_frame_bytes: usize,
    /// WebSocket keep-alive, applied to each new socket.
    pub heartbeat: Heartbeat,
    /// Per-user and per-socket limits, checked on upgrade and per message.
    pub limits: Limits,
    /// Open WebSocket connections per user.
    pub connections: crate::limits::ConnectionCounts,
    /// This node's cluster membership (`--nats`); `None` on a single node.
    pub cluster: Option<tandem_actors::cluster::Cluster>,
    /// Which other nodes this node's WebSocket clients told what they show
    /// (`client.visible`).
    pub told: crate::cluster_visible::Told,
}

/// How much one user or one socket may ask of the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open WebSocket connections per user; the next upgrade is `LIMIT_EXCEEDED`.
    pub connections_per_user: usize,
    /// Client messages per second per socket; the rest are `RATE_LIMITED`.
    pub messages_per_sec: u32,
}

/// WebSocket keep-alive: the server pings every `ping_every` and drops a client it
/// has not heard from (no frame, no pong) for `timeout`.
#[derive(Debug, Clone, Copy)]
pub struct Heartbeat {
    /// Time between pings the server sends on each socket.
    pub ping_every: std::time::Duration,
    /// Silence after which a client is dropped as half-open.
    pub timeout: std::time::Duration,
}

impl AppState {
    /// What a request runs against ([`crate::operation::execute`]).
    pub fn context(&self) -> crate::operation::Context {
        crate::operation::Context {
            runtime: self.runtime.clone(),
            cluster: self.cluster.clone(),
            told: self.told.clone(),
        }
    }
}
