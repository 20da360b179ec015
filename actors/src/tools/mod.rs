//! Session-bound agent tools: one implementation that the MCP endpoint, the
//! WebSocket `tool.call` and the scripted vendor's `/tool` directive all go through.
//! A tool is always called *as* a session; what it may do depends on that session's
//! role (Driver, Worker, unpaired, spawned child).

mod api;
pub mod defs;
mod handoff;
mod partner;
mod proposal;
mod spawn;

use serde_json::{Map, Value};
use tandem_protocol::mcp::ToolDef;
use tandem_protocol::Role;

pub use partner::choose_worker_vendor;
pub use proposal::{accept_proposal, decline_proposal};

use crate::runtime::{Runtime, RuntimeRef};
use crate::session::{Describe, SessionState};
use defs::*;

pub use crate::adapter::ToolFuture;

/// Routes a tool call made as a session to the tool's implementation.
#[derive(Clone, Default)]
pub struct ToolRouter {
    runtime: RuntimeRef,
}

impl std::fmt::Debug for ToolRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolRouter")
    }
}

impl ToolRouter {
    /// A router over the runtime.
    pub fn new(runtime: RuntimeRef) -> Self {
        ToolRouter { runtime }
    }

    /// The tool host sessions hand their adapters (see [`crate::start`]).
    pub fn host(runtime: RuntimeRef) -> crate::adapter::Tools {
        std::sync::Arc::new(ToolRouter::new(runtime))
    }
}

impl crate::adapter::ToolHost for ToolRouter {
    /// Calls `name` with `arguments` on behalf of session `caller`.
    fn call(&self, caller: &str, name: &str, arguments: Value) -> ToolFuture {
        let runtime = self.runtime.clone();
        let caller = caller.to_string();
        let name = name.to_string();
        Box::pin(async move {
            let rt = runtime
                .upgrade()
                .ok_or_else(|| "the server is shutting down".to_string())?;
            let args = match arguments {
                Value::Object(map) => map,
                Value::Null => Map::new(),
                _ => return Err("tool arguments must be a JSON object".into()),
            };
            let state = describe(&rt, &caller).await?;
            if defs::def(&name).is_some() && !tools_for(&state).iter().any(|t| t.name == name) {
                return Err(not_offered(&state, &name));
            }
            let result = match name.as_str() {
                SEND_TO_PARTNER => partner::send_to_partner(&rt, &state, &args).await,
                READ_PARTNER => partner::read_partner(&rt, &state, &args).await,
                INTERRUPT_PARTNER => partner::interrupt_partner(&rt, &state).await,
                CLOSE_PARTNER => partner::close_partner(&rt, &state).await,
                PROPOSE_WORKER => proposal::propose_worker(&rt, &state, &args).await,
                SPAWN_SESSIONS => spawn::spawn_sessions(&rt, &state, &args).await,
                CHECK_SPAWNED_SESSIONS => spawn::check_spawned_sessions(&rt, &state),
                READ_HANDOFF_SOURCE => handoff::read_handoff_source(&rt, &state, &args).await,
                other => Err(format!("unknown tool `{other}`")),
            };
            tracing::debug!(session = %caller, tool = %name, ok = result.is_ok(), "tool call");
            result
        })
    }
}

/// The calling session's state, or why it cannot call tools.
pub(crate) async fn describe(rt: &Runtime, session_id: &str) -> Result<SessionState, String> {
    let addr = rt
        .session_addr(session_id)
        .ok_or_else(|| format!("session {session_id} not found"))?;
    addr.send(Describe)
        .await
        .map_err(|e| format!("session unavailable: {e}"))
}

/// The tools a session is offered, by role: a Driver gets the partner tools, an
/// unpaired session may create a Worker or propose one, a Worker and a spawned
/// session get none (delegation is one hop deep; children cannot spawn).
pub fn tools_for(state: &SessionState) -> Vec<ToolDef> {
    let names: &[&str] = if state.parent_id.is_some() {
        &[]
    } else {
        match state.info.role {
            Some(Role::Worker) => &[],
            Some(Role::Driver) => &[
                SEND_TO_PARTNER,
                READ_PARTNER,
                INTERRUPT_PARTNER,
                CLOSE_PARTNER,
                SPAWN_SESSIONS,
                CHECK_SPAWNED_SESSIONS,
            ],
            None => &[
                SEND_TO_PARTNER,
                PROPOSE_WORKER,
                SPAWN_SESSIONS,
                CHECK_SPAWNED_SESSIONS,
            ],
        }
    };
    let handoff: &[&str] = if state.info.handoff_from.is_some() {
        &[READ_HANDOFF_SOURCE]
    } else {
        &[]
    };
    names
        .iter()
        .chain(handoff)
        .filter_map(|n| defs::def(n))
        .collect()
}

/// Why a known tool is not available to this session.
fn not_offered(state: &SessionState, name: &str) -> String {
    if name == READ_HANDOFF_SOURCE {
        return "this session does not continue another one".into();
    }
    if state.parent_id.is_some() {
        return format!("spawned sessions cannot use {name}");
    }
    match state.info.role {
        Some(Role::Worker) => format!(
            "{name} is only for the Driver of a pair; this session is a Worker, and delegation is one hop deep"
        ),
        Some(Role::Driver) => format!("{name} is not available while this session has a Worker"),
        None => format!("{name} needs a Worker; send_to_partner creates one"),
    }
}

/// A required non-empty string argument.
pub(crate) fn string_arg(args: &Map<String, Value>, key: &str) -> Result<String, String> {
    match args.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(Value::String(_)) | None | Some(Value::Null) => Err(format!("{key} is required")),
        Some(_) => Err(format!("{key} must be a string")),
    }
}

/// An optional string argument (empty counts as absent).
pub(crate) fn opt_string(args: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(format!("{key} must be a string")),
    }
}

/// An optional number argument, floored and clamped to `lo..=hi`.
pub(crate) fn clamped_number(
    args: &Map<String, Value>,
    key: &str,
    default: u64,
    lo: u64,
    hi: u64,
) -> Result<u64, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => {
            let v = n.as_f64().unwrap_or(default as f64).floor();
            Ok((v.max(lo as f64).min(hi as f64)) as u64)
        }
        Some(_) => Err(format!("{key} must be a number")),
    }
}
