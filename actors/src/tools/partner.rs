//! `send_to_partner`, `read_partner`, `interrupt_partner`, `close_partner`.

use std::time::Duration;

use serde_json::{json, Map, Value};
use tandem_protocol::pair::WorkerChoice;
use tandem_protocol::{Role, SessionStatus};

use super::{clamped_number, opt_string, string_arg};
use crate::pair::{ClosePair, Delegate, DelegateReply, InterruptWorker};
use crate::runtime::Runtime;
use crate::session::{RecentTurns, SessionState};

/// The Worker vendor when none is requested: Codex if installed and the Driver is not
/// Codex; else the first installed vendor that differs from the Driver's; else the
/// first installed. A requested vendor must be installed.
pub fn choose_worker_vendor(
    requested: Option<&str>,
    driver_vendor: &str,
    installed: &[&str],
) -> Result<String, String> {
    if let Some(vendor) = requested {
        return if installed.contains(&vendor) {
            Ok(vendor.to_string())
        } else {
            Err(format!("Worker vendor `{vendor}` is not installed"))
        };
    }
    if installed.contains(&"codex") && driver_vendor != "codex" {
        return Ok("codex".into());
    }
    installed
        .iter()
        .find(|v| **v != driver_vendor)
        .or_else(|| installed.first())
        .map(|v| v.to_string())
        .ok_or_else(|| "no coding agent is installed for a Worker".to_string())
}

/// The caller's pair, or why it has none.
fn driver_pair(state: &SessionState) -> Result<String, String> {
    match (state.info.role, &state.info.pair_id) {
        (Some(Role::Driver), Some(pair_id)) => Ok(pair_id.clone()),
        (Some(Role::Worker), _) => {
            Err("only the Driver may direct the pair; this session is the Worker".into())
        }
        _ => Err("this session has no Worker; send_to_partner creates one".into()),
    }
}

pub(super) async fn send_to_partner(
    rt: &Runtime,
    state: &SessionState,
    args: &Map<String, Value>,
) -> Result<Value, String> {
    let message = string_arg(args, "message")?;
    let wait = match args.get("wait") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("wait must be a boolean".into()),
    };
    let timeout = clamped_number(args, "timeoutSeconds", 300, 1, 900)?;
    if state.delegated_turn {
        return Err(
            "this turn was delegated to you, and a delegated turn cannot delegate further".into(),
        );
    }
    if state.info.role == Some(Role::Worker) {
        return Err("only the Driver may delegate; this session is a Worker".into());
    }
    if state.parent_id.is_some() {
        return Err("spawned sessions cannot delegate".into());
    }
    let mut worker_created = false;
    let pair_id = match state.info.pair_id.clone() {
        Some(pair_id) => pair_id,
        None => {
            let installed = rt.installed_vendors();
            let vendor = choose_worker_vendor(
                opt_string(args, "workerVendor")?.as_deref(),
                &state.info.vendor,
                &installed,
            )?;
            let choice = WorkerChoice {
                vendor,
                model: opt_string(args, "workerModel")?.unwrap_or_default(),
                effort: opt_string(args, "workerEffort")?.unwrap_or_default(),
            };
            let pair = rt
                .pair_with_new_worker(&state.info.id, choice)
                .await
                .map_err(|e| e.to_string())?;
            worker_created = true;
            pair.pair_id
        }
    };
    let (pair, worker_id) = rt.pair_parts(&pair_id).ok_or_else(|| {
        "the pair is gone; call send_to_partner again for a new Worker".to_string()
    })?;
    let reply = pair
        .send(Delegate {
            message,
            wait,
            timeout: Duration::from_secs(timeout),
            proposal_id: None,
        })
        .await
        .map_err(|e| format!("the pair is unavailable: {e}"))??;
    let mut out = match reply {
        DelegateReply::Finished(outcome) => {
            let mut v = json!({"status": outcome.status.as_str(), "response": outcome.response});
            if let Some(error) = outcome.error {
                v["error"] = json!(error);
            }
            v
        }
        DelegateReply::TimedOut { partial } => json!({
            "status": "running",
            "response": partial,
            "hint": "The Worker is still working. Its result will be delivered to you as a new message when it finishes."
        }),
        DelegateReply::Detached => json!({
            "status": "running",
            "hint": "The result will be delivered to you as a new message when the Worker finishes. Use read_partner only for an interim check."
        }),
    };
    out["partnerId"] = json!(worker_id);
    if worker_created {
        out["workerCreated"] = json!(true);
    }
    Ok(out)
}

pub(super) async fn read_partner(
    rt: &Runtime,
    state: &SessionState,
    args: &Map<String, Value>,
) -> Result<Value, String> {
    let count = clamped_number(args, "lastTurns", 1, 1, 5)? as usize;
    let pair_id = driver_pair(state)?;
    let (_, worker_id) = rt
        .pair_parts(&pair_id)
        .ok_or_else(|| "the pair is gone".to_string())?;
    let worker = rt
        .session_addr(&worker_id)
        .ok_or_else(|| "the Worker session is gone".to_string())?;
    let info = rt
        .session_info(&worker_id)
        .ok_or_else(|| "the Worker session is gone".to_string())?;
    let turns = worker
        .send(RecentTurns { count })
        .await
        .map_err(|e| format!("the Worker is unavailable: {e}"))?
        .map_err(|e| e.to_string())?;
    let status = match info.status {
        SessionStatus::Running | SessionStatus::Starting => "running",
        SessionStatus::Interrupted => "interrupted",
        SessionStatus::Idle | SessionStatus::Failed => "idle",
    };
    Ok(json!({
        "status": status,
        "partnerId": worker_id,
        "title": info.title,
        "turns": turns
            .into_iter()
            .map(|t| json!({"user": t.user, "delegated": t.delegated, "response": t.response}))
            .collect::<Vec<_>>(),
    }))
}

pub(super) async fn interrupt_partner(rt: &Runtime, state: &SessionState) -> Result<Value, String> {
    let pair_id = driver_pair(state)?;
    let (pair, worker_id) = rt
        .pair_parts(&pair_id)
        .ok_or_else(|| "the pair is gone".to_string())?;
    let was_running = pair
        .send(InterruptWorker)
        .await
        .map_err(|e| format!("the pair is unavailable: {e}"))??;
    let title = rt
        .session_info(&worker_id)
        .map(|i| i.title)
        .unwrap_or_default();
    Ok(json!({
        "status": if was_running { "interrupting" } else { "idle" },
        "partnerId": worker_id,
        "title": title,
    }))
}

pub(super) async fn close_partner(rt: &Runtime, state: &SessionState) -> Result<Value, String> {
    let pair_id = driver_pair(state)?;
    let (pair, worker_id) = rt
        .pair_parts(&pair_id)
        .ok_or_else(|| "the pair is gone".to_string())?;
    let interrupted = pair
        .send(ClosePair)
        .await
        .map_err(|e| format!("the pair is unavailable: {e}"))??;
    Ok(json!({
        "status": "closed",
        "partnerId": worker_id,
        "interrupted": interrupted,
        "historyPreserved": true,
    }))
}

#[cfg(test)]
mod tests {
    use super::choose_worker_vendor;

    #[test]
    fn worker_vendor_rule() {
        let all = ["scripted", "codex", "claude"];
        assert_eq!(
            choose_worker_vendor(None, "claude", &all).as_deref(),
            Ok("codex")
        );
        assert_eq!(
            choose_worker_vendor(None, "codex", &all).as_deref(),
            Ok("scripted")
        );
        assert_eq!(
            choose_worker_vendor(None, "codex", &["codex", "claude"]).as_deref(),
            Ok("claude")
        );
        assert_eq!(
            choose_worker_vendor(None, "claude", &["claude"]).as_deref(),
            Ok("claude")
        );
        assert_eq!(
            choose_worker_vendor(None, "scripted", &["scripted"]).as_deref(),
            Ok("scripted")
        );
        assert_eq!(
            choose_worker_vendor(None, "scripted", &["scripted", "claude"]).as_deref(),
            Ok("claude")
        );
        assert_eq!(
            choose_worker_vendor(Some("claude"), "claude", &all).as_deref(),
            Ok("claude")
        );
        assert!(choose_worker_vendor(Some("gemini"), "claude", &all).is_err());
        assert!(choose_worker_vendor(None, "claude", &[]).is_err());
    }
}
