//! `propose_worker`, and accepting or declining a proposal (from a person, or
//! automatically when the Driver bypasses permissions).

use std::time::Duration;

use tandem_protocol::pair::{ProposalStatus, WorkerChoice};
use tandem_protocol::tools::{ProposeState, ProposeWorkerParams, ProposeWorkerResult};

use super::partner::choose_worker_vendor;
use super::{optional, required};
use crate::adapter::{clamp_effort, VendorId};
use crate::error::{PairError, ProposalError, RuntimeError, ToolError};
use crate::ids::{PairId, SessionId};
use crate::pair::Delegate;
use crate::record::ProposalRecord;
use crate::runtime::Runtime;
use crate::session::{ProposalDecision, ProposalProgress, Resume, SessionState};

pub(super) async fn propose_worker(
    rt: &Runtime,
    state: &SessionState,
    args: ProposeWorkerParams,
) -> Result<ProposeWorkerResult, ToolError> {
    let summary = required("summary", args.summary)?;
    let plan = required("plan", args.plan)?;
    let message = required("message", args.message)?;
    if state.info.pair_id.is_some() || state.parent_id.is_some() || state.delegated_turn {
        return Err(ProposalError::NotAlone.into());
    }
    let installed = rt.vendors().installed();
    let requested = optional(args.recommended_vendor)
        .map(VendorId::from)
        .filter(|v| installed.contains(v));
    let vendor = choose_worker_vendor(
        requested.as_ref(),
        &VendorId::from(state.info.vendor.as_str()),
        &installed,
    )?;
    let spec = rt
        .vendors()
        .get(&vendor)
        .ok_or_else(|| ToolError::VendorNotInstalled(vendor.to_string()))?;
    let model = optional(args.recommended_model)
        .filter(|m| spec.knows_model(m))
        .unwrap_or_default();
    let effort = clamp_effort(
        &optional(args.recommended_effort).unwrap_or_else(|| "medium".into()),
        &spec.effort_levels,
    )
    .unwrap_or_default();
    let driver = rt
        .sessions()
        .session_addr(&state.info.id)
        .ok_or_else(|| RuntimeError::SessionNotFound(state.info.id.clone()))?;
    let record = driver
        .send(crate::session::Propose {
            summary,
            plan,
            message,
            recommended: WorkerChoice {
                vendor: vendor.to_string(),
                model,
                effort,
            },
        })
        .await??;
    if record.auto_approved {
        let choice = record.recommended.clone();
        let started =
            accept_proposal(rt, &state.info.id, &record.proposal_id, choice, true).await?;
        return Ok(ProposeWorkerResult {
            status: ProposeState::Running,
            proposal_id: record.proposal_id,
            auto_approved: true,
            worker_id: Some(started.worker_id),
            pair_id: Some(started.pair_id),
            hint: "Permissions are bypassed, so the Worker was started at once. Its result will be delivered to you as a new message.".into(),
        });
    }
    Ok(ProposeWorkerResult {
        status: ProposeState::Posted,
        proposal_id: record.proposal_id,
        auto_approved: false,
        worker_id: None,
        pair_id: None,
        hint: "The user will accept or decline. Stop here; you will be resumed with the decision."
            .into(),
    })
}

/// Where an accepted proposal's Worker runs.
#[derive(Debug, Clone)]
pub struct StartedWorker {
    /// The Worker session.
    pub worker_id: SessionId,
    /// The pair.
    pub pair_id: PairId,
}

/// Checks a Worker choice against what is installed: the vendor must be installed, a
/// model must be one the vendor lists, the effort is clamped.
fn validate_choice(rt: &Runtime, choice: WorkerChoice) -> Result<WorkerChoice, RuntimeError> {
    let spec = rt
        .vendors()
        .get(&VendorId::from(choice.vendor.as_str()))
        .ok_or_else(|| RuntimeError::unusable(format!("unknown vendor `{:.64}`", choice.vendor)))?;
    if !spec.installed {
        return Err(RuntimeError::VendorNotInstalled(choice.vendor));
    }
    if !choice.model.is_empty() && !spec.knows_model(&choice.model) {
        return Err(RuntimeError::InvalidArgument(format!(
            "model `{}` is not available for {}",
            choice.model, spec.id
        )));
    }
    let effort = clamp_effort(&choice.effort, &spec.effort_levels)?;
    Ok(WorkerChoice { effort, ..choice })
}

/// Accepts a pending proposal: records the choice, creates the Worker and the pair,
/// and delegates the proposal's task (detached: the outcome is pushed back).
pub async fn accept_proposal(
    rt: &Runtime,
    driver_id: &SessionId,
    proposal_id: &str,
    choice: WorkerChoice,
    auto: bool,
) -> Result<StartedWorker, RuntimeError> {
    let choice = validate_choice(rt, choice)?;
    let driver = rt
        .sessions()
        .session_addr(driver_id)
        .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.into()))?;
    let record: ProposalRecord = driver
        .send(ProposalDecision {
            proposal_id: proposal_id.to_string(),
            accept: Some(choice.clone()),
            auto,
        })
        .await??;
    let fail = |error: RuntimeError| {
        let driver = driver.clone();
        let proposal_id = proposal_id.to_string();
        async move {
            let _ = driver
                .send(Resume::proposal_failed(&proposal_id, &error.to_string()))
                .await;
            error
        }
    };
    crate::crash::crash_point(rt.writer(), "proposal.accept.starting").await;
    let pair = match rt
        .pair_with_new_worker(driver_id, choice, None, None, Default::default(), None)
        .await
    {
        Ok(pair) => pair,
        Err(e) => return Err(fail(e).await),
    };
    driver.do_send(ProposalProgress {
        proposal_id: proposal_id.to_string(),
        status: ProposalStatus::Running,
        worker_id: Some(pair.worker_id.clone()),
        pair_id: Some(pair.pair_id.clone()),
        error: None,
    });
    crate::crash::crash_point(rt.writer(), "proposal.accept.running").await;
    let Some((pair_addr, _)) = rt.pairs().parts(&pair.pair_id) else {
        return Err(fail(PairError::Gone.into()).await);
    };
    let delegated = pair_addr
        .send(Delegate {
            message: record.message,
            wait: false,
            timeout: Duration::from_secs(1),
            proposal_id: Some(proposal_id.to_string()),
        })
        .await;
    match delegated {
        Ok(Ok(_)) => Ok(StartedWorker {
            worker_id: pair.worker_id,
            pair_id: pair.pair_id,
        }),
        Ok(Err(e)) => Err(fail(e.into()).await),
        Err(e) => Err(fail(e.into()).await),
    }
}

/// Declines a pending proposal; the Driver is resumed and told to continue itself.
pub async fn decline_proposal(
    rt: &Runtime,
    driver_id: &SessionId,
    proposal_id: &str,
) -> Result<(), RuntimeError> {
    let driver = rt
        .sessions()
        .session_addr(driver_id)
        .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.into()))?;
    driver
        .send(ProposalDecision {
            proposal_id: proposal_id.to_string(),
            accept: None,
            auto: false,
        })
        .await??;
    Ok(())
}
