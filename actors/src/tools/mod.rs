//! Session-bound agent tools: one implementation that the MCP endpoint, the
//! WebSocket `tool.call` and the scripted vendor's `/tool` directive all go through.
//! A tool is always called *as* a session; what it may do depends on that session's
//! role (Driver, Worker, unpaired, spawned child).
//!
//! The router asks the calling session actor for its state (`Describe`), refuses a
//! tool its role is not offered, and runs the tool, which talks to pair and session
//! actors with messages. Arguments are parsed into the protocol crate's `*Params`
//! types (unknown fields refused) and normalized there; results are its `*Result`
//! types, so no tool builds JSON by hand.
//!
//! `send_to_partner` from a session with no Worker (or naming a Worker it does not
//! have) first joins the Driver to the new pair (`JoinPair` refuses, in the Driver's
//! own actor, a Worker name it gave already and a Worker beyond `MAX_WORKERS`, so two
//! racing calls cannot both pass), creates the Worker session and starts a pair actor;
//! the partner tools pick the pair by their `worker` argument (`partner::pick_worker`).
//! The pair then reserves its token, records `delegation {active: true}` in both
//! histories and starts a delegated turn in the Worker, whose end resolves the token.
//! A wait that times out hands the caller the text so far and detaches the token; the
//! outcome is then pushed back.
//!
//! A Worker's question (`ask_driver`) is kept in the Worker's record, not the pair's:
//! that is where the waiting call lives and where any answer lands (the Driver's
//! `answer_worker`, a person's `question.answer`, the timeout), so "answered once" is
//! one record field cleared in one write, whichever node or restart it comes through.
//! The pair only carries the question to the Driver.

mod api;
mod approval;
pub mod defs;
mod handoff;
mod partner;
mod proposal;
mod question;
mod spawn;

use serde_json::{Map, Value};
use tandem_protocol::mcp::ToolDef;
use tandem_protocol::Role;

pub use proposal::{accept_proposal, decline_proposal};

use crate::error::{RuntimeError, ToolError};
use crate::ids::SessionId;
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
        let caller = SessionId::from(caller);
        let name = name.to_string();
        Box::pin(async move {
            let rt = runtime.upgrade().ok_or(ToolError::ShuttingDown)?;
            // A revoked owner's session acts for no one (MCP refuses it earlier; this
            // covers `tool.call` and the scripted `/tool`).
            rt.sessions().owner_allowed(&caller)?;
            let args = match arguments {
                Value::Object(map) => Value::Object(map),
                Value::Null => Value::Object(Map::new()),
                _ => {
                    return Err(ToolError::InvalidArguments {
                        tool: defs::ALL
                            .iter()
                            .find(|n| **n == name)
                            .copied()
                            .unwrap_or("the tool"),
                        reason: "arguments must be a JSON object".into(),
                    })
                }
            };
            let Some(tool) = defs::ALL.iter().find(|n| **n == name).copied() else {
                return Err(ToolError::Unknown(name));
            };
            let state = describe(&rt, &caller).await?;
            if !tools_for(&state).iter().any(|t| t.name == tool) {
                if tool == ASK_DRIVER && state.info.role.is_none() && state.parent_id.is_none() {
                    // A Worker whose pair closed (its Driver gone) asks nobody.
                    return Err(crate::error::PairError::NoDriver.into());
                }
                return Err(ToolError::NotOffered(not_offered(&state, tool)));
            }
            let result = match tool {
                SEND_TO_PARTNER => partner::send_to_partner(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                READ_PARTNER => partner::read_partner(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                INTERRUPT_PARTNER => partner::interrupt_partner(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                CLOSE_PARTNER => partner::close_partner(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                PROPOSE_WORKER => proposal::propose_worker(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                SPAWN_SESSIONS => spawn::spawn_sessions(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                CHECK_SPAWNED_SESSIONS => {
                    parse::<NoParams>(tool, args)?;
                    to_value(spawn::check_spawned_sessions(&rt, &state))
                }
                ASK_DRIVER => question::ask_driver(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                ANSWER_WORKER => question::answer_worker(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                APPROVE_WORKER => approval::approve_worker(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
                _ => handoff::read_handoff_source(&rt, &state, parse(tool, args)?)
                    .await
                    .and_then(to_value),
            };
            tracing::debug!(session = %caller, tool = %name, ok = result.is_ok(), "tool call");
            result
        })
    }
}

/// Reads a tool's arguments into its `*Params` type; an unknown field, a missing one
/// or a wrong type is `INVALID_ARGUMENT` naming the field.
fn parse<T: serde::de::DeserializeOwned>(tool: &'static str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments {
        tool,
        reason: e.to_string(),
    })
}

/// A tool's typed result as the JSON the caller gets.
fn to_value<T: serde::Serialize>(result: T) -> Result<Value, ToolError> {
    serde_json::to_value(result)
        .map_err(|e| ToolError::Runtime(RuntimeError::Internal(format!("tool result: {e}"))))
}

/// The calling session's state, or why it cannot call tools.
pub(crate) async fn describe(
    rt: &Runtime,
    session_id: &SessionId,
) -> Result<SessionState, RuntimeError> {
    let addr = rt
        .sessions()
        .session_addr(session_id)
        .ok_or_else(|| RuntimeError::SessionNotFound(session_id.into()))?;
    Ok(addr.send(Describe).await?)
}

/// The tools a session is offered, by role: a Driver gets the partner tools, an
/// unpaired session may create a Worker or propose one, a Worker may only ask its
/// Driver, and a spawned session gets none (delegation is one hop deep; children
/// cannot spawn).
pub fn tools_for(state: &SessionState) -> Vec<ToolDef> {
    let names: &[&str] = if state.parent_id.is_some() {
        &[]
    } else {
        match state.info.role {
            Some(Role::Worker) => &[ASK_DRIVER],
            Some(Role::Driver) => &[
                SEND_TO_PARTNER,
                READ_PARTNER,
                INTERRUPT_PARTNER,
                CLOSE_PARTNER,
                ANSWER_WORKER,
                APPROVE_WORKER,
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
    if name == ASK_DRIVER {
        return "ask_driver is only for the Worker of a pair".into();
    }
    match state.info.role {
        Some(Role::Worker) => format!(
            "{name} is only for the Driver of a pair; this session is a Worker, and delegation is one hop deep"
        ),
        Some(Role::Driver) => format!("{name} is not available while this session has a Worker"),
        None => format!("{name} needs a Worker; send_to_partner creates one"),
    }
}

/// A required text argument, trimmed; empty is refused.
pub(crate) fn required(key: &'static str, value: String) -> Result<String, ToolError> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(ToolError::Required(key));
    }
    Ok(trimmed.to_string())
}

/// An optional text argument, trimmed; empty counts as absent.
pub(crate) fn optional(value: Option<String>) -> Option<String> {
    value
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// An optional number argument, floored and clamped to `lo..=hi`.
pub(crate) fn clamped(value: Option<f64>, default: u64, lo: u64, hi: u64) -> u64 {
    match value {
        None => default,
        Some(v) if v.is_nan() => default,
        Some(v) => v.floor().max(lo as f64).min(hi as f64) as u64,
    }
}
