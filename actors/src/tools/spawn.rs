//! `spawn_sessions` and `check_spawned_sessions`.

use tandem_protocol::tools::{
    CheckSpawnedSessionsResult, ChildState, ChildSummary, SpawnSessionsParams, SpawnSessionsResult,
    SpawnedSession, StartedState,
};
use tandem_protocol::SessionStatus;

use super::optional;
use crate::error::{RuntimeError, SpawnError, ToolError};
use crate::runtime::Runtime;
use crate::session::{SessionState, SpawnChildren};

/// Sessions one call may spawn.
const MAX_PER_CALL: usize = 10;
/// Children one session may have in all.
const MAX_CHILDREN: usize = 20;

pub(super) async fn spawn_sessions(
    rt: &Runtime,
    state: &SessionState,
    args: SpawnSessionsParams,
) -> Result<SpawnSessionsResult, ToolError> {
    if state.parent_id.is_some() {
        return Err(SpawnError::Nested.into());
    }
    let entries = args.sessions;
    if entries.is_empty() || entries.len() > MAX_PER_CALL {
        return Err(SpawnError::Count { max: MAX_PER_CALL }.into());
    }
    let total = entries.len();
    let mut tasks = Vec::with_capacity(total);
    for (index, entry) in entries.into_iter().enumerate() {
        let field = |field: &'static str, value: String| {
            optional(Some(value)).ok_or(SpawnError::MissingField { index, field })
        };
        tasks.push((field("title", entry.title)?, field("prompt", entry.prompt)?));
    }
    let existing = rt.children_of(&state.info.id).len();
    if existing + tasks.len() > MAX_CHILDREN {
        return Err(SpawnError::TooMany {
            max: MAX_CHILDREN,
            existing,
        }
        .into());
    }
    let vendor = optional(args.vendor).unwrap_or_else(|| state.info.vendor.clone());
    let parent = rt
        .sessions()
        .session_addr(&state.info.id)
        .ok_or_else(|| RuntimeError::SessionNotFound(state.info.id.clone()))?;
    let mut created: Vec<tandem_protocol::SessionInfo> = Vec::with_capacity(tasks.len());
    for (title, prompt) in tasks {
        let made = match crate::crash::fail_here("spawn.create_child") {
            Ok(()) => rt.create_child(&state.info, &vendor, title, prompt).await,
            Err(e) => Err(RuntimeError::Internal(e.0)),
        };
        let info = match made {
            Ok(info) => info,
            Err(e) if created.is_empty() => return Err(SpawnError::Create(e).into()),
            Err(e) => {
                // The ones already created are real sessions holding their prompt:
                // they are started like any others, and the caller is told which.
                parent.do_send(SpawnChildren {
                    children: created.iter().map(|c| c.id.clone()).collect(),
                });
                return Err(SpawnError::Partial {
                    number: created.len() + 1,
                    total,
                    source: Box::new(e),
                    started: created.into_iter().map(|c| c.id).collect(),
                }
                .into());
            }
        };
        created.push(info);
        // A crash from here on leaves the children created so far waiting with their
        // prompt; start-up queues them in this parent again.
        crate::crash::crash_point(rt.writer(), "spawn.child").await;
    }
    parent.do_send(SpawnChildren {
        children: created.iter().map(|c| c.id.clone()).collect(),
    });
    Ok(SpawnSessionsResult {
        status: StartedState::Started,
        sessions: created
            .into_iter()
            .map(|c| SpawnedSession {
                session_id: c.id,
                title: c.title,
            })
            .collect(),
        hint: "At most 3 run at once; the rest start as others finish. Use check_spawned_sessions to follow them.".into(),
    })
}

pub(super) fn check_spawned_sessions(
    rt: &Runtime,
    state: &SessionState,
) -> CheckSpawnedSessionsResult {
    let children = rt.children_of(&state.info.id);
    CheckSpawnedSessionsResult {
        sessions: children
            .into_iter()
            .map(|c| {
                // A child that has not started yet is waiting for a free slot: its
                // work is still ahead, so it counts as running.
                let status = match c.status {
                    SessionStatus::Running | SessionStatus::Waiting => ChildState::Running,
                    SessionStatus::Idle if c.turn_count == 0 => ChildState::Running,
                    SessionStatus::Interrupted => ChildState::Interrupted,
                    SessionStatus::Failed => ChildState::Error,
                    SessionStatus::Idle => ChildState::Done,
                };
                ChildSummary {
                    session_id: c.id,
                    title: c.title,
                    status,
                    turn_count: c.turn_count,
                    last_activity: c.last_activity,
                }
            })
            .collect(),
    }
}
