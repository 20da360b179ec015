//! `spawn_sessions` and `check_spawned_sessions`.

use serde_json::{json, Map, Value};
use tandem_protocol::SessionStatus;

use super::opt_string;
use crate::runtime::Runtime;
use crate::session::{SessionState, SpawnChildren};

/// Sessions one call may spawn.
const MAX_PER_CALL: usize = 10;
/// Children one session may have in all.
const MAX_CHILDREN: usize = 20;

pub(super) async fn spawn_sessions(
    rt: &Runtime,
    state: &SessionState,
    args: &Map<String, Value>,
) -> Result<Value, String> {
    if state.parent_id.is_some() {
        return Err("spawned sessions cannot spawn sessions".into());
    }
    let Some(Value::Array(entries)) = args.get("sessions") else {
        return Err("sessions is required: a list of {title, prompt}".into());
    };
    if entries.is_empty() || entries.len() > MAX_PER_CALL {
        return Err(format!("sessions must hold 1 to {MAX_PER_CALL} entries"));
    }
    let mut tasks = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |key: &str| {
            entry
                .get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| format!("sessions[{i}].{key} is required"))
        };
        tasks.push((field("title")?, field("prompt")?));
    }
    let existing = rt.children_of(&state.info.id).len();
    if existing + tasks.len() > MAX_CHILDREN {
        return Err(format!(
            "a session may spawn at most {MAX_CHILDREN} sessions; {existing} exist already"
        ));
    }
    let vendor = opt_string(args, "vendor")?.unwrap_or_else(|| state.info.vendor.clone());
    let parent = rt
        .session_addr(&state.info.id)
        .ok_or_else(|| "session gone".to_string())?;
    let mut created: Vec<tandem_protocol::SessionInfo> = Vec::with_capacity(tasks.len());
    for (title, prompt) in tasks {
        let made = match crate::crash::fail_here("spawn.create_child") {
            Ok(()) => rt
                .create_child(&state.info, &vendor, title, prompt)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        let info = match made {
            Ok(info) => info,
            Err(e) if created.is_empty() => return Err(e),
            Err(e) => {
                // The ones already created are real sessions holding their prompt:
                // they are started like any others, and the caller is told which.
                parent.do_send(SpawnChildren {
                    children: created.iter().map(|c| c.id.clone()).collect(),
                });
                return Err(format!(
                    "session {} of {} could not be created ({e}); the {} created before it \
                     were started: {}",
                    created.len() + 1,
                    entries.len(),
                    created.len(),
                    created
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
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
    Ok(json!({
        "status": "started",
        "sessions": created
            .iter()
            .map(|c| json!({"sessionId": c.id, "title": c.title}))
            .collect::<Vec<_>>(),
        "hint": "At most 3 run at once; the rest start as others finish. Use check_spawned_sessions to follow them."
    }))
}

pub(super) fn check_spawned_sessions(rt: &Runtime, state: &SessionState) -> Result<Value, String> {
    let children = rt.children_of(&state.info.id);
    Ok(json!({
        "sessions": children
            .into_iter()
            .map(|c| {
                // A child that has not started yet is waiting for a free slot: its
                // work is still ahead, so it counts as running.
                let status = match c.status {
                    SessionStatus::Running | SessionStatus::Starting => "running",
                    SessionStatus::Idle if c.turn_count == 0 => "running",
                    SessionStatus::Interrupted => "interrupted",
                    SessionStatus::Failed => "error",
                    SessionStatus::Idle => "done",
                };
                json!({
                    "sessionId": c.id,
                    "title": c.title,
                    "status": status,
                    "turnCount": c.turn_count,
                    "lastActivity": c.last_activity,
                })
            })
            .collect::<Vec<_>>()
    }))
}
