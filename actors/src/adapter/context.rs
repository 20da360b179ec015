//! What a session hands a new adapter: who it works for, where, how to start its CLI,
//! and where to report.

use std::path::PathBuf;

use actix::Recipient;

use super::core::Emitter;
use super::messages::{AgentOutput, TurnSettings};
use super::Tools;
use crate::adapter::messages::Pace;
use crate::ids::{SessionId, UserId};

/// The agent tools endpoint for one session: the `/mcp` URL and the bearer token bound
/// to the session. Vendor CLIs are configured with it so their model can call
/// `send_to_partner` and the rest as this session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAccess {
    /// `http://HOST:PORT/mcp` of this server.
    pub url: String,
    /// Bearer token bound to the session (never logged).
    pub token: String,
    /// The MCP servers the session gets beside ours.
    pub servers: std::sync::Arc<Vec<crate::adapter::mcp_servers::NamedServer>>,
}

/// Everything an adapter needs to serve one session.
#[derive(Clone)]
pub struct AdapterContext {
    /// Our session id (tool calls are made as it).
    pub session_id: SessionId,
    /// The session's owner (adapters that share a process per user key by it).
    pub owner_id: UserId,
    /// The session's working directory; vendor CLIs are started there.
    pub cwd: PathBuf,
    /// The vendor's own session/thread id to resume, once known.
    pub vendor_session_id: Option<String>,
    /// A fork's adapter forks `vendor_session_id` this way as it opens it, until the
    /// vendor names the new session.
    pub fork_on_open: Option<super::messages::ForkOnOpen>,
    /// Settings in force when the adapter starts.
    pub settings: TurnSettings,
    /// The session actor: every [`AgentOutput`] the adapter produces goes there.
    pub out: Recipient<AgentOutput>,
    /// Awaited every few dozen events when producing fast, so the adapter cannot
    /// outrun fan-out.
    pub pace: Recipient<Pace>,
    /// The agent tools endpoint for this session; `None` before the server is bound.
    pub mcp: Option<McpAccess>,
    /// The agent tools, for adapters that call them in-process (the scripted agent);
    /// CLIs reach them over [`AdapterContext::mcp`].
    pub tools: Tools,
    /// Tools a person allowed for the rest of the session ("always allow"): their
    /// requests are answered without asking.
    pub remembered: Vec<String>,
    /// Variables the session adds to its agent's environment (a worktree's
    /// `TANDEM_PORT`), over the vendor's own.
    pub env: std::collections::BTreeMap<String, String>,
    /// The server's vendor processes: an adapter with a process of its own takes a
    /// seat for it.
    pub fleet: super::fleet::Fleet,
}

impl AdapterContext {
    /// The emitter every adapter reports through.
    pub fn emitter(&self) -> Emitter {
        Emitter::new(self.out.clone(), self.pace.clone())
    }
}
