//! `send_to_partner`, `read_partner`, `interrupt_partner`, `close_partner`.

use std::time::Duration;

use tandem_protocol::pair::{PairedWorker, WorkerChoice};
use tandem_protocol::tools::{
    ClosePartnerResult, ClosedState, DelegationState, InterruptPartnerResult, InterruptState,
    PartnerParams, PartnerState, ReadPartnerParams, ReadPartnerResult, SendToPartnerParams,
    SendToPartnerResult,
};
use tandem_protocol::{Role, SessionStatus};

use super::{clamped, optional, required};
use crate::adapter::VendorId;
use crate::error::{PairError, ToolError};
use crate::ids::SessionId;
use crate::pair::{ClosePair, Delegate, DelegateReply, DelegationStatus, InterruptWorker};
use crate::runtime::Runtime;
use crate::session::{RecentTurns, SessionState};

/// The Worker vendor when none is requested: Codex if installed and the Driver is not
/// Codex; else another installed real vendor (not the Driver's, not `scripted`); else
/// the Driver's own; else (the Driver's vendor is gone) any installed real vendor,
/// `scripted` only when no real one is. So `scripted` is chosen only by name, as the
/// Driver's own vendor, or when nothing else is installed. A requested vendor must be
/// installed.
pub fn choose_worker_vendor(
    requested: Option<&VendorId>,
    driver_vendor: &VendorId,
    installed: &[VendorId],
) -> Result<VendorId, ToolError> {
    if let Some(vendor) = requested {
        return if installed.contains(vendor) {
            Ok(vendor.clone())
        } else {
            Err(ToolError::VendorNotInstalled(vendor.to_string()))
        };
    }
    if installed.contains(&VendorId::CODEX) && *driver_vendor != VendorId::CODEX {
        return Ok(VendorId::CODEX);
    }
    let mut real = installed.iter().filter(|v| !v.is_scripted());
    if let Some(other) = real.clone().find(|v| *v != driver_vendor) {
        return Ok(other.clone());
    }
    if installed.contains(driver_vendor) {
        return Ok(driver_vendor.clone());
    }
    real.next()
        .or_else(|| installed.first())
        .cloned()
        .ok_or(ToolError::NoVendor)
}

/// The caller's Worker that `worker` names (its name or session id), or its only
/// one; or why there is none.
pub(super) fn pick_worker(
    state: &SessionState,
    worker: Option<&str>,
) -> Result<PairedWorker, PairError> {
    let workers = &state.info.workers;
    if state.info.role == Some(Role::Worker) {
        return Err(PairError::NotDriver);
    }
    match (worker, workers.as_slice()) {
        (_, []) => Err(PairError::NoWorker),
        (Some(name), _) => workers
            .iter()
            .find(|w| w.worker_name == name || w.worker_id == name)
            .cloned()
            .ok_or_else(|| PairError::NoSuchWorker {
                name: name.chars().take(64).collect(),
                workers: listed(workers),
            }),
        (None, [only]) => Ok(only.clone()),
        (None, _) => Err(PairError::WhichWorker(listed(workers))),
    }
}

/// The Workers `worker` may mean, in the order to try them: the one it names, or
/// (left out) all of the caller's; for an answer whose id tells the Worker.
pub(super) fn workers_to_try(
    state: &SessionState,
    worker: Option<&str>,
) -> Result<Vec<PairedWorker>, PairError> {
    match worker {
        Some(_) => pick_worker(state, worker).map(|w| vec![w]),
        None if state.info.role == Some(Role::Worker) => Err(PairError::NotDriver),
        None if state.info.workers.is_empty() => Err(PairError::NoWorker),
        None => Ok(state.info.workers.clone()),
    }
}

/// The Workers as an error names them: `name (session id)`, comma-separated.
fn listed(workers: &[PairedWorker]) -> String {
    workers
        .iter()
        .map(|w| format!("{} ({})", w.worker_name, w.worker_id))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) async fn send_to_partner(
    rt: &Runtime,
    state: &SessionState,
    args: SendToPartnerParams,
) -> Result<SendToPartnerResult, ToolError> {
    let message = required("message", args.message)?;
    let wait = args.wait.unwrap_or(true);
    let timeout = clamped(args.timeout_seconds, 300, 1, 900);
    may_delegate(state)?;
    let mut worker_created = false;
    let named = optional(args.worker);
    let picked = existing_worker(state, named.as_deref())?;
    let (pair_id, worker_name) = match picked {
        Some(worker) => (worker.pair_id, worker.worker_name),
        None => {
            let vendor = choose_new_worker_vendor(rt, state, args.worker_vendor)?;
            let choice = WorkerChoice {
                vendor: vendor.to_string(),
                model: optional(args.worker_model).unwrap_or_default(),
                effort: optional(args.worker_effort).unwrap_or_default(),
            };
            let pair = rt
                .pair_with_new_worker(
                    &state.info.id,
                    choice,
                    None,
                    None,
                    Default::default(),
                    named,
                )
                .await?;
            worker_created = true;
            (pair.pair_id, pair.worker_name)
        }
    };
    let (pair, worker_id) = rt.pairs().parts(&pair_id).ok_or(PairError::Gone)?;
    let reply = pair
        .send(Delegate {
            message,
            wait,
            timeout: Duration::from_secs(timeout),
            proposal_id: None,
        })
        .await
        .map_err(PairError::from)??;
    Ok(delegation_result(
        reply,
        worker_id,
        worker_name,
        worker_created,
    ))
}

/// Refuses to delegate from a delegated turn, a Worker or a spawned session.
fn may_delegate(state: &SessionState) -> Result<(), ToolError> {
    if state.delegated_turn {
        return Err(ToolError::NotAllowed(
            "this turn was delegated to you, and a delegated turn cannot delegate further",
        ));
    }
    if state.info.role == Some(Role::Worker) {
        return Err(ToolError::NotAllowed(
            "only the Driver may delegate; this session is a Worker",
        ));
    }
    if state.parent_id.is_some() {
        return Err(ToolError::NotAllowed("spawned sessions cannot delegate"));
    }
    Ok(())
}

/// The Driver's Worker that `named` picks (see [`pick_worker`]); `None` when a new
/// one is to be made under that name (the Driver has none, or none of that name).
fn existing_worker(
    state: &SessionState,
    named: Option<&str>,
) -> Result<Option<PairedWorker>, ToolError> {
    match pick_worker(state, named) {
        Ok(worker) => Ok(Some(worker)),
        // A session id that is none of the Driver's Workers is a mistake, not a
        // name (names never start with `ses_`).
        Err(e @ (PairError::NoWorker | PairError::NoSuchWorker { .. }))
            if named.is_some_and(|n| n.starts_with("ses_")) =>
        {
            Err(e.into())
        }
        // No Worker yet, or none of that name: one is made.
        Err(PairError::NoWorker | PairError::NoSuchWorker { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The vendor of a new Worker: the one `requested` (trimmed; it must be installed),
/// else as [`choose_worker_vendor`] picks among the installed ones.
fn choose_new_worker_vendor(
    rt: &Runtime,
    state: &SessionState,
    requested: Option<String>,
) -> Result<VendorId, ToolError> {
    let installed = rt.vendors().installed();
    choose_worker_vendor(
        optional(requested).map(VendorId::from).as_ref(),
        &VendorId::from(state.info.vendor.as_str()),
        &installed,
    )
}

/// What `send_to_partner` answers for the Delegate `reply` of Worker `worker_id`
/// (`worker_name`, made by this call when `worker_created`).
fn delegation_result(
    reply: DelegateReply,
    worker_id: SessionId,
    worker_name: String,
    worker_created: bool,
) -> SendToPartnerResult {
    let running = |response: Option<String>, hint: &str| SendToPartnerResult {
        status: DelegationState::Running,
        response,
        error: None,
        hint: Some(hint.to_string()),
        partner_id: worker_id.clone(),
        worker_name: worker_name.clone(),
        worker_created,
        changes: None,
        question_id: None,
        question: None,
        choices: Vec::new(),
        approval: None,
    };
    match reply {
        DelegateReply::Finished(outcome) => SendToPartnerResult {
            status: match outcome.status {
                DelegationStatus::Complete => DelegationState::Complete,
                DelegationStatus::Error => DelegationState::Error,
                DelegationStatus::Interrupted => DelegationState::Interrupted,
            },
            response: Some(outcome.response),
            error: outcome.error,
            hint: None,
            partner_id: worker_id.clone(),
            worker_name: worker_name.clone(),
            worker_created,
            changes: outcome.changes,
            question_id: None,
            question: None,
            choices: Vec::new(),
            approval: None,
        },
        DelegateReply::Question(q) => {
            question_result(q, worker_id.clone(), worker_name.clone(), worker_created)
        }
        DelegateReply::Approval(ask) => {
            approval_result(ask, worker_id.clone(), worker_name.clone(), worker_created)
        }
        DelegateReply::TimedOut { partial } => running(
            Some(partial),
            "The Worker is still working. Its result will be delivered to you as a new message when it finishes.",
        ),
        DelegateReply::Detached => running(
            None,
            "The result will be delivered to you as a new message when the Worker finishes. Use read_partner only for an interim check.",
        ),
    }
}

/// What `send_to_partner` answers when the Worker asks its Driver question `q` and
/// waits: the question, and how to answer it.
fn question_result(
    q: crate::record::QuestionRecord,
    worker_id: SessionId,
    worker_name: String,
    worker_created: bool,
) -> SendToPartnerResult {
    SendToPartnerResult {
        status: DelegationState::Question,
        response: None,
        error: None,
        hint: Some(format!(
            "The Worker asks you this and waits. Answer it with answer_worker {{questionId: \"{}\", answer}}. The Worker's result will be delivered to you as a new message when it finishes.",
            q.question_id
        )),
        partner_id: worker_id,
        worker_name,
        worker_created,
        changes: None,
        question_id: Some(q.question_id),
        question: Some(q.question),
        choices: q.choices,
        approval: None,
    }
}

/// What `send_to_partner` answers when the Worker's agent asks the Driver's
/// permission (`ask`) and waits: the request, and how to answer it.
fn approval_result(
    ask: tandem_protocol::ApprovalAsk,
    worker_id: SessionId,
    worker_name: String,
    worker_created: bool,
) -> SendToPartnerResult {
    SendToPartnerResult {
        status: DelegationState::Approval,
        response: None,
        error: None,
        hint: Some(format!(
            "The Worker's agent asks permission to use {} and waits. Answer with approve_worker {{requestId: \"{}\", allow: true|false}}. The Worker's result will be delivered to you as a new message when it finishes.",
            ask.tool_name, ask.request_id
        )),
        partner_id: worker_id,
        worker_name,
        worker_created,
        changes: None,
        question_id: None,
        question: None,
        choices: Vec::new(),
        approval: Some(ask),
    }
}

pub(super) async fn read_partner(
    rt: &Runtime,
    state: &SessionState,
    args: ReadPartnerParams,
) -> Result<ReadPartnerResult, ToolError> {
    let count = clamped(args.last_turns, 1, 1, 5) as usize;
    let picked = pick_worker(state, optional(args.worker).as_deref())?;
    let pair_id = picked.pair_id;
    let (_, worker_id) = rt.pairs().parts(&pair_id).ok_or(PairError::Gone)?;
    let (status, title, turns) = match rt.pairs().read_remote_worker(&pair_id, count).await {
        // A Worker on another node: its node reads it.
        Some(view) => {
            let view = view?;
            (view.status, view.title, view.turns)
        }
        None => {
            let worker = rt
                .sessions()
                .session_addr(&worker_id)
                .ok_or(PairError::WorkerGone)?;
            let info = rt
                .sessions()
                .session_info(&worker_id)
                .ok_or(PairError::WorkerGone)?;
            let turns = worker.send(RecentTurns { count }).await??;
            let turns = turns.iter().map(|t| t.to_partner_turn()).collect();
            (info.status, info.title, turns)
        }
    };
    let status = match status {
        SessionStatus::Running | SessionStatus::Waiting => PartnerState::Running,
        SessionStatus::Interrupted => PartnerState::Interrupted,
        SessionStatus::Idle | SessionStatus::Failed => PartnerState::Idle,
    };
    Ok(ReadPartnerResult {
        status,
        partner_id: worker_id,
        worker_name: picked.worker_name,
        title,
        turns,
    })
}

pub(super) async fn interrupt_partner(
    rt: &Runtime,
    state: &SessionState,
    args: PartnerParams,
) -> Result<InterruptPartnerResult, ToolError> {
    let picked = pick_worker(state, optional(args.worker).as_deref())?;
    let (pair, worker_id) = rt.pairs().parts(&picked.pair_id).ok_or(PairError::Gone)?;
    let was_running = pair
        .send(InterruptWorker)
        .await
        .map_err(PairError::from)??;
    let title = rt
        .sessions()
        .session_info(&worker_id)
        .map(|i| i.title)
        .unwrap_or_default();
    Ok(InterruptPartnerResult {
        status: if was_running {
            InterruptState::Interrupting
        } else {
            InterruptState::Idle
        },
        partner_id: worker_id,
        worker_name: picked.worker_name,
        title,
    })
}

pub(super) async fn close_partner(
    rt: &Runtime,
    state: &SessionState,
    args: PartnerParams,
) -> Result<ClosePartnerResult, ToolError> {
    let picked = pick_worker(state, optional(args.worker).as_deref())?;
    let (pair, worker_id) = rt.pairs().parts(&picked.pair_id).ok_or(PairError::Gone)?;
    let interrupted = pair.send(ClosePair).await.map_err(PairError::from)??;
    Ok(ClosePartnerResult {
        status: ClosedState::Closed,
        partner_id: worker_id,
        worker_name: picked.worker_name,
        interrupted,
        history_preserved: true,
    })
}

#[cfg(test)]
mod tests {
    use tandem_protocol::ErrorCode;

    use crate::adapter::VendorId;
    use crate::error::ToolError;

    /// The rule on plain strings, as the tests write them.
    fn choose_worker_vendor(
        requested: Option<&str>,
        driver: &str,
        installed: &[&str],
    ) -> Result<String, ToolError> {
        let installed: Vec<VendorId> = installed.iter().map(|v| VendorId::from(*v)).collect();
        super::choose_worker_vendor(
            requested.map(VendorId::from).as_ref(),
            &VendorId::from(driver),
            &installed,
        )
        .map(String::from)
    }

    #[test]
    fn worker_vendor_rule() {
        let all = ["scripted", "codex", "claude"];
        assert_eq!(
            choose_worker_vendor(None, "claude", &all).ok().as_deref(),
            Some("codex")
        );
        // A real vendor is installed besides the Driver's: never the scripted one.
        assert_eq!(
            choose_worker_vendor(None, "codex", &all).ok().as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_worker_vendor(None, "codex", &["scripted", "codex"])
                .ok()
                .as_deref(),
            Some("codex")
        );
        assert_eq!(
            choose_worker_vendor(None, "claude", &["scripted", "claude"])
                .ok()
                .as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_worker_vendor(None, "scripted", &all).ok().as_deref(),
            Some("codex")
        );
        // The Driver's vendor was uninstalled: a real one, scripted only as a last resort.
        assert_eq!(
            choose_worker_vendor(None, "codex", &["scripted", "claude"])
                .ok()
                .as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_worker_vendor(None, "claude", &["scripted"])
                .ok()
                .as_deref(),
            Some("scripted")
        );
        // Asked for by name, it is still there.
        assert_eq!(
            choose_worker_vendor(Some("scripted"), "codex", &all)
                .ok()
                .as_deref(),
            Some("scripted")
        );
        assert_eq!(
            choose_worker_vendor(None, "codex", &["codex", "claude"])
                .ok()
                .as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_worker_vendor(None, "claude", &["claude"])
                .ok()
                .as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_worker_vendor(None, "scripted", &["scripted"])
                .ok()
                .as_deref(),
            Some("scripted")
        );
        assert_eq!(
            choose_worker_vendor(None, "scripted", &["scripted", "claude"])
                .ok()
                .as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_worker_vendor(Some("claude"), "claude", &all)
                .ok()
                .as_deref(),
            Some("claude")
        );
        let code = |r: Result<String, crate::error::ToolError>| r.err().map(|e| e.code());
        assert_eq!(
            code(choose_worker_vendor(Some("gemini"), "claude", &all)),
            Some(ErrorCode::VendorNotInstalled)
        );
        assert_eq!(
            code(choose_worker_vendor(None, "claude", &[])),
            Some(ErrorCode::VendorNotInstalled)
        );
    }
}
