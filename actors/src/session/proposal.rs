//! Worker proposals on the Driver's side: the persisted state machine
//! pending → starting → running → completed | interrupted | error, or pending → declined.

use actix::prelude::*;
use tandem_protocol::pair::{ProposalStatus, WorkerChoice};
use tandem_protocol::{EventBody, PermissionMode};

use super::SessionActor;
use crate::clock::random_id;
use crate::error::{ProposalError, RuntimeError};
use crate::ids::{PairId, SessionId};
use crate::record::ProposalRecord;

/// Record a new proposal (from the `propose_worker` tool).
#[derive(Debug, Message)]
#[rtype(result = "Result<ProposalRecord, RuntimeError>")]
pub struct Propose {
    /// One-line summary, shown on the `worker_proposal` event.
    pub summary: String,
    /// The agent's plan, shown to the person deciding.
    pub plan: String,
    /// The task the Worker gets as its first delegation once accepted.
    pub message: String,
    /// The recommended Worker (already validated).
    pub recommended: WorkerChoice,
}

/// Accept (with the chosen Worker) or decline a pending proposal.
#[derive(Debug, Message)]
#[rtype(result = "Result<ProposalRecord, RuntimeError>")]
pub struct ProposalDecision {
    /// Must be the session's current proposal, still pending.
    pub proposal_id: String,
    /// `Some(worker)` accepts, `None` declines.
    pub accept: Option<WorkerChoice>,
    /// Accepted automatically because permissions are bypassed.
    pub auto: bool,
}

/// A proposal moved on (Worker created, finished, failed).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ProposalProgress {
    /// The session's current proposal; other ids and finished proposals are ignored.
    pub proposal_id: String,
    /// New status, recorded on a `worker_proposal_update` event (a repeat is not).
    pub status: ProposalStatus,
    /// The Worker session carrying the proposal out, once created.
    pub worker_id: Option<SessionId>,
    /// The pair created for it, once created.
    pub pair_id: Option<PairId>,
    /// Why it failed; recorded with an `error` status.
    pub error: Option<String>,
}

/// What the Driver is told when a person declines its proposal.
const DECLINED_TEXT: &str = "[Worker proposal declined]\nNo Worker will be started. \
Carry on with the task yourself, following the plan you prepared.";

impl SessionActor {
    pub(super) fn apply_proposal_progress(&mut self, progress: ProposalProgress) {
        let Some(proposal) = self
            .record
            .proposal
            .as_mut()
            .filter(|p| p.proposal_id == progress.proposal_id)
        else {
            return;
        };
        // A finished proposal stays finished; a repeated step (re-sent after a
        // restart) is not recorded twice.
        if !proposal.status.is_open() || proposal.status == progress.status {
            return;
        }
        proposal.status = progress.status;
        let auto_approved = proposal.auto_approved;
        self.emit(
            None,
            EventBody::WorkerProposalUpdate {
                proposal_id: progress.proposal_id,
                status: progress.status,
                selected: None,
                worker_id: progress.worker_id,
                pair_id: progress.pair_id,
                error: progress.error,
                auto_approved,
            },
        );
        self.touch();
    }
}

impl Handler<Propose> for SessionActor {
    type Result = Result<ProposalRecord, RuntimeError>;

    fn handle(&mut self, msg: Propose, _: &mut Context<Self>) -> Self::Result {
        if self.record.pair.is_some() {
            return Err(ProposalError::AlreadyPaired.into());
        }
        if self
            .record
            .proposal
            .as_ref()
            .is_some_and(|p| p.status.is_open())
        {
            return Err(ProposalError::AlreadyOpen.into());
        }
        let record = ProposalRecord {
            proposal_id: random_id("prop_", 8),
            summary: msg.summary,
            plan: msg.plan,
            message: msg.message,
            recommended: msg.recommended,
            status: ProposalStatus::Pending,
            auto_approved: self.record.permission_mode == PermissionMode::BypassPermissions,
        };
        self.emit(
            None,
            EventBody::WorkerProposal {
                proposal_id: record.proposal_id.clone(),
                summary: record.summary.clone(),
                plan: record.plan.clone(),
                status: record.status,
                recommended: record.recommended.clone(),
                auto_approved: record.auto_approved,
            },
        );
        self.record.proposal = Some(record.clone());
        self.touch();
        self.flush();
        Ok(record)
    }
}

impl Handler<ProposalDecision> for SessionActor {
    type Result = Result<ProposalRecord, RuntimeError>;

    fn handle(&mut self, msg: ProposalDecision, ctx: &mut Context<Self>) -> Self::Result {
        let Some(proposal) = self
            .record
            .proposal
            .as_mut()
            .filter(|p| p.proposal_id == msg.proposal_id)
        else {
            return Err(ProposalError::NotFound(msg.proposal_id).into());
        };
        if proposal.status != ProposalStatus::Pending {
            return Err(ProposalError::AlreadyResolved.into());
        }
        let status = if msg.accept.is_some() {
            ProposalStatus::Starting
        } else {
            ProposalStatus::Declined
        };
        proposal.status = status;
        proposal.auto_approved |= msg.auto;
        let record = proposal.clone();
        self.emit(
            None,
            EventBody::WorkerProposalUpdate {
                proposal_id: record.proposal_id.clone(),
                status,
                selected: msg.accept,
                worker_id: None,
                pair_id: None,
                error: None,
                auto_approved: record.auto_approved,
            },
        );
        self.touch();
        if status == ProposalStatus::Declined {
            self.run_or_queue(DECLINED_TEXT.to_string(), true, ctx);
        }
        self.flush();
        Ok(record)
    }
}

impl Handler<ProposalProgress> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: ProposalProgress, _: &mut Context<Self>) {
        self.apply_proposal_progress(msg);
        self.flush();
    }
}

impl super::Resume {
    /// What the Driver is told when its accepted proposal's Worker could not start:
    /// an internal turn keyed `{proposal_id}:failed` (taken once) that ends the
    /// proposal in `error`.
    pub fn proposal_failed(proposal_id: &str, error: &str) -> Self {
        super::Resume {
            id: format!("{proposal_id}:failed"),
            text: format!("[Worker could not start]\n{error}\nCarry on with the task yourself."),
            proposal: Some(ProposalProgress {
                proposal_id: proposal_id.to_string(),
                status: ProposalStatus::Error,
                worker_id: None,
                pair_id: None,
                error: Some(error.to_string()),
            }),
        }
    }
}
