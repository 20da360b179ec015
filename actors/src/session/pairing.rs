//! Messages that tie a session to its pair, its Driver's results and its callers.

use actix::prelude::*;
use tandem_protocol::pair::{PairInfo, WorkerApprovals};
use tandem_protocol::{EventBody, Role, SessionInfo, TurnStatus};

use super::turn::{tail, TurnDelegation, RESPONSE_TAIL_CHARS};
use super::SessionActor;
use crate::cluster_link::ApprovalNeed;
use crate::error::{PairError, RuntimeError};
use crate::ids::{DelegationId, PairId, SessionId, TurnId};
use crate::record::{Membership, ProposalRecord};

/// How many delivered-result ids a session remembers for de-duplication.
pub(super) const DELIVERED_MEMORY: usize = 64;

/// Start a turn delegated by the Driver of this session's pair.
#[derive(Debug, Message)]
#[rtype(result = "Result<TurnId, RuntimeError>")]
pub struct StartDelegated {
    /// The Driver's task, which the Worker's agent gets as the turn's user message.
    pub text: String,
    /// The Driver's session id, kept as `delegatedBy` on the turn's `user_message`.
    pub driver_id: SessionId,
    /// Must be this session's pair, with this session as Worker, or it is refused.
    pub pair_id: PairId,
    /// The delegation, reported back when the turn ends.
    pub delegation_id: DelegationId,
    /// Who answers the turn's permission requests.
    pub approvals: WorkerApprovals,
    /// Where the turn's end is reported: the pair, which owns the delegation.
    pub report_to: ReportTo,
}

/// The pair actor on this node, as a delegated turn reports to it.
#[derive(Debug, Clone)]
pub struct PairInbox {
    /// The turn's end.
    pub ended: Recipient<WorkerTurnEnded>,
    /// A permission request for the Driver to answer (`workerApprovals: driver`).
    pub approvals: Recipient<WorkerNeedsApproval>,
}

/// A permission request of a delegated turn, for the Driver to answer (sent by the
/// Worker's session to its pair when the pair's `workerApprovals` is `driver`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct WorkerNeedsApproval(pub ApprovalNeed);

/// Where a delegated turn's end goes.
#[derive(Debug, Clone)]
pub enum ReportTo {
    /// The pair actor on this node.
    Pair(PairInbox),
    /// The pair runs on that cluster node: the end is kept in this session's record
    /// and sent there until it is acknowledged (see `crate::cluster_link::Outbox`).
    Node(String),
}

/// Asked by a pair's node after its restart: does this Worker know delegation
/// `delegation_id` (running it, or holding its end until it is taken)? If not, the
/// delegation never reached it, and the pair reports it interrupted.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct HoldsDelegation {
    /// The delegation the pair holds.
    pub delegation_id: DelegationId,
}

/// The pair this session is the Worker of on another node, as `(pair id, node)`,
/// when it is idle in it: no turn running and no report waiting. A pair closed while
/// this node was away could not tell it; the cluster asks that pair's node.
#[derive(Debug, Message)]
#[rtype(result = "Option<(PairId, String)>")]
pub struct IdleRemoteWorker;

/// The pair's node took the report of delegation `delegation_id`: this session
/// forgets it.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ReportDelivered {
    /// The delegation reported.
    pub delegation_id: DelegationId,
}

/// The Worker's delegated turn ended (sent by the Worker's session to the
/// recipient its [`StartDelegated`] carried).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct WorkerTurnEnded {
    /// The delegation the turn carried out.
    pub delegation_id: DelegationId,
    /// How the turn ended; the pair reports it to the Driver.
    pub status: TurnStatus,
    /// The turn's assistant text (tail-capped).
    pub response: String,
    /// Why the turn failed, when it did.
    pub error: Option<String>,
}

/// Push a result into this session as an internal user turn (run now, or queued until
/// the session is free). `id` de-duplicates: a result is delivered once.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), RuntimeError>")]
pub struct Resume {
    /// De-duplication key (a delegation or proposal id).
    pub id: String,
    /// The message the agent receives.
    pub text: String,
    /// A proposal status change that travels with the result.
    pub proposal: Option<super::proposal::ProposalProgress>,
}

/// The most Workers a Driver may have at once.
pub const MAX_WORKERS: usize = 8;

/// This session joins a pair: as its Worker when it belongs to none, as its Driver
/// when it belongs to none or drives others (a Worker name it gave already, or
/// [`MAX_WORKERS`] Workers, are refused).
#[derive(Debug, Message)]
#[rtype(result = "Result<(), RuntimeError>")]
pub struct JoinPair {
    /// The pair this session joins; recorded on its `pair_created` event.
    pub pair: PairInfo,
    /// This session's role in it.
    pub role: Role,
    /// The node the pair runs on, when it is another one (see
    /// [`crate::record::Membership::pair_node`]).
    pub pair_node: Option<String>,
}

/// This session's pair was dissolved; answers whether the session was still in it.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct LeavePair {
    /// The dissolved pair; a session no longer in it is left as it is.
    pub pair_id: PairId,
}

/// Append an event written by another actor (the pair) to this history.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RecordEvent(pub EventBody);

/// Records events in order, committed as one batch (an imported transcript).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RecordEvents(pub Vec<EventBody>);

/// What callers of the agent tools need to know about the calling session.
#[derive(Debug, Clone)]
pub struct SessionState {
    /// The session as it is now.
    pub info: SessionInfo,
    /// True while it runs a turn delegated by a Driver.
    pub delegated_turn: bool,
    /// The session that spawned it; a spawned session is offered no agent tools.
    pub parent_id: Option<SessionId>,
    /// Its latest proposal: accepting one takes the recommended Worker from here.
    pub proposal: Option<ProposalRecord>,
    /// Its place in a pair, with the pair's node and Driver (a Worker's question goes
    /// there).
    pub membership: Option<Membership>,
}

/// Ask for [`SessionState`].
#[derive(Debug, Message)]
#[rtype(result = "SessionState")]
pub struct Describe;

/// The assistant text of the running turn so far (or of the last turn).
#[derive(Debug, Message)]
#[rtype(result = "String")]
pub struct PartialText;

impl SessionActor {
    /// Tells the pair that the delegated turn ended.
    pub(super) fn notify_pair(
        &mut self,
        delegation: TurnDelegation,
        status: TurnStatus,
        response: String,
        error: Option<String>,
    ) {
        let ended = WorkerTurnEnded {
            delegation_id: delegation.delegation_id,
            status,
            response: tail(&response, RESPONSE_TAIL_CHARS),
            error,
        };
        let to = match &delegation.report_to {
            ReportTo::Pair(to) => &to.ended,
            ReportTo::Node(_) => return self.report_remote(ended),
        };
        if report(to, ended).is_err() {
            tracing::debug!(session = %self.id, pair = %delegation.pair_id, "delegated turn ended after its pair closed");
        }
    }

    /// Keeps the end of a delegated turn of a pair on another node in the record
    /// (written with the turn's end) and hands it to the outbox, which sends it
    /// until that node acknowledges it.
    fn report_remote(&mut self, ended: WorkerTurnEnded) {
        let Some(report) = self
            .record
            .remote_report
            .as_mut()
            .filter(|r| r.delegation_id == ended.delegation_id)
        else {
            tracing::debug!(session = %self.id, "delegated turn ended after its pair closed");
            return;
        };
        report.ended = Some(crate::record::ReportedEnd {
            status: ended.status,
            response: ended.response,
            error: ended.error,
        });
        let report = report.clone();
        self.touch();
        self.services.outbox.put(&self.record.id, report);
    }

    /// At start: a report a previous process left is sent again; one whose turn a
    /// restart cut off (start-up closed the turn) reports it interrupted.
    pub(super) fn resend_remote_report(&mut self) {
        if self.turn.is_some() {
            return;
        }
        let Some(report) = self.record.remote_report.as_mut() else {
            return;
        };
        let cut_off = report.ended.is_none();
        if cut_off {
            report.ended = Some(crate::record::ReportedEnd {
                status: TurnStatus::Interrupted,
                response: String::new(),
                error: Some("the Worker's node restarted while the Worker was on it".into()),
            });
        }
        let report = report.clone();
        if cut_off {
            self.touch();
        }
        self.services.outbox.put(&self.record.id, report);
    }
}

/// The pair actor is gone: nobody waits for the outcome any more.
#[derive(Debug)]
pub(super) struct PairGone;

/// Hands a delegated turn's outcome to its pair. The outcome is what the Driver waits
/// for, so it is never dropped for a full mailbox: then it is queued past the
/// mailbox's bound (one message per delegation, so the overshoot is bounded). Fails
/// only when the pair actor has stopped.
pub(super) fn report(
    to: &Recipient<WorkerTurnEnded>,
    ended: WorkerTurnEnded,
) -> Result<(), PairGone> {
    match to.try_send(ended) {
        Ok(()) => Ok(()),
        Err(SendError::Full(ended)) => {
            tracing::debug!(delegation = %ended.delegation_id, "pair mailbox full; outcome queued past its bound");
            // `do_send` queues whatever the mailbox's capacity; a closed mailbox was
            // reported by `try_send` above.
            to.do_send(ended);
            Ok(())
        }
        Err(SendError::Closed(_)) => Err(PairGone),
    }
}

impl Handler<StartDelegated> for SessionActor {
    type Result = Result<TurnId, RuntimeError>;

    fn handle(&mut self, msg: StartDelegated, ctx: &mut Context<Self>) -> Self::Result {
        if !self.record.in_pair(&msg.pair_id, Some(Role::Worker)) {
            return Err(RuntimeError::Conflict(
                "this session is not the Worker of that pair".into(),
            ));
        }
        if self.turn.is_some() {
            return Err(RuntimeError::RunInProgress(self.record.id.clone()));
        }
        let remote = match &msg.report_to {
            ReportTo::Node(node) => Some(crate::record::RemoteReport {
                pair_id: msg.pair_id.clone(),
                delegation_id: msg.delegation_id.clone(),
                pair_node: node.clone(),
                ended: None,
            }),
            ReportTo::Pair(_) => None,
        };
        let delegation = TurnDelegation {
            pair_id: msg.pair_id,
            delegation_id: msg.delegation_id,
            approvals: msg.approvals,
            report_to: msg.report_to,
        };
        let result = self.start_turn(msg.text, false, Some((delegation, msg.driver_id)), ctx);
        if result.is_ok() && remote.is_some() {
            // Written with the turn's start: a restart from here on reports it.
            self.record.remote_report = remote;
            self.touch();
        }
        self.flush();
        result
    }
}

impl Handler<Resume> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, msg: Resume, ctx: &mut Context<Self>) -> Self::Result {
        if self.record.delivered.contains(&msg.id) {
            // Re-sent after a crash: it was delivered already.
            return Ok(());
        }
        self.record.delivered.push(msg.id);
        if self.record.delivered.len() > DELIVERED_MEMORY {
            self.record.delivered.remove(0);
        }
        if let Some(progress) = msg.proposal {
            self.apply_proposal_progress(progress);
        }
        self.run_or_queue(msg.text, true, ctx);
        self.flush();
        Ok(())
    }
}

impl Handler<JoinPair> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, msg: JoinPair, _: &mut Context<Self>) -> Self::Result {
        if self.record.parent_id.is_some() {
            return Err(RuntimeError::Conflict(
                "a spawned session cannot be paired".into(),
            ));
        }
        let mut driven = 0;
        for m in self.record.memberships() {
            if m.role == Role::Worker || msg.role == Role::Worker {
                return Err(PairError::AlreadyPaired.into());
            }
            if m.worker_name.as_deref() == Some(msg.pair.worker_name.as_str()) {
                return Err(PairError::NameTaken(msg.pair.worker_name).into());
            }
            driven += 1;
        }
        if driven >= MAX_WORKERS {
            return Err(PairError::TooManyWorkers(MAX_WORKERS).into());
        }
        let driver = msg.role == Role::Driver;
        self.record.join(Membership {
            pair_id: msg.pair.pair_id.clone(),
            role: msg.role,
            pair_node: msg.pair_node,
            driver_id: Some(msg.pair.driver_id.clone()),
            worker_id: driver.then(|| msg.pair.worker_id.clone()),
            worker_name: driver.then(|| msg.pair.worker_name.clone()),
        });
        self.emit(None, EventBody::PairCreated { pair: msg.pair });
        self.touch();
        self.flush();
        Ok(())
    }
}

impl Handler<LeavePair> for SessionActor {
    type Result = bool;

    fn handle(&mut self, msg: LeavePair, ctx: &mut Context<Self>) -> bool {
        if !self.record.in_pair(&msg.pair_id, None) {
            return false;
        }
        // A Worker's waiting question has nobody to answer it any more.
        self.close_question(&msg.pair_id, ctx);
        let worker = self.record.in_pair(&msg.pair_id, Some(Role::Worker));
        self.record.leave(&msg.pair_id);
        if worker {
            if let Some(turn) = self.turn.as_mut() {
                // The pair is gone: the turn's end has nobody to report to.
                turn.delegation = None;
            }
            if let Some(report) = self.record.remote_report.take() {
                self.services.outbox.remove(&report.delegation_id);
            }
        }
        self.emit(
            None,
            EventBody::PairClosed {
                pair_id: msg.pair_id,
            },
        );
        self.touch();
        self.flush();
        true
    }
}

impl Handler<IdleRemoteWorker> for SessionActor {
    type Result = Option<(PairId, String)>;

    fn handle(&mut self, _: IdleRemoteWorker, _: &mut Context<Self>) -> Self::Result {
        if self.turn.is_some() || self.record.remote_report.is_some() {
            return None;
        }
        let membership = self.record.pair.as_ref()?;
        if membership.role != Role::Worker {
            return None;
        }
        let node = membership.pair_node.clone()?;
        Some((membership.pair_id.clone(), node))
    }
}

impl Handler<HoldsDelegation> for SessionActor {
    type Result = bool;

    fn handle(&mut self, msg: HoldsDelegation, _: &mut Context<Self>) -> bool {
        self.record
            .remote_report
            .as_ref()
            .is_some_and(|r| r.delegation_id == msg.delegation_id)
    }
}

impl Handler<ReportDelivered> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: ReportDelivered, _: &mut Context<Self>) {
        let taken = self
            .record
            .remote_report
            .as_ref()
            .is_some_and(|r| r.delegation_id == msg.delegation_id && r.ended.is_some());
        if taken {
            self.record.remote_report = None;
            self.touch();
            self.flush();
        }
    }
}

impl Handler<RecordEvent> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RecordEvent, _: &mut Context<Self>) {
        self.emit(None, msg.0);
        self.flush();
    }
}

impl Handler<RecordEvents> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RecordEvents, _: &mut Context<Self>) {
        for body in msg.0 {
            self.emit(None, body);
        }
        self.flush();
    }
}

impl Handler<Describe> for SessionActor {
    type Result = MessageResult<Describe>;

    fn handle(&mut self, _: Describe, _: &mut Context<Self>) -> Self::Result {
        MessageResult(SessionState {
            info: self.info(),
            delegated_turn: self.turn.as_ref().is_some_and(|t| t.delegation.is_some()),
            parent_id: self.record.parent_id.clone(),
            proposal: self.record.proposal.clone(),
            membership: self.record.pair.clone(),
        })
    }
}

impl Handler<PartialText> for SessionActor {
    type Result = String;

    fn handle(&mut self, _: PartialText, _: &mut Context<Self>) -> String {
        match &self.turn {
            Some(turn) => tail(&turn.text_so_far(), RESPONSE_TAIL_CHARS),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stands in for the pair actor: a one-message mailbox, and what it received.
    struct Pair {
        got: Vec<DelegationId>,
    }

    impl Actor for Pair {
        type Context = Context<Self>;
        fn started(&mut self, ctx: &mut Context<Self>) {
            ctx.set_mailbox_capacity(1);
        }
    }

    impl Handler<WorkerTurnEnded> for Pair {
        type Result = ();
        fn handle(&mut self, msg: WorkerTurnEnded, _: &mut Context<Self>) {
            self.got.push(msg.delegation_id);
        }
    }

    #[derive(Message)]
    #[rtype(result = "Vec<DelegationId>")]
    struct Got;

    impl Handler<Got> for Pair {
        type Result = MessageResult<Got>;
        fn handle(&mut self, _: Got, _: &mut Context<Self>) -> Self::Result {
            MessageResult(self.got.clone())
        }
    }

    fn ended(id: &str) -> WorkerTurnEnded {
        WorkerTurnEnded {
            delegation_id: id.into(),
            status: TurnStatus::Completed,
            response: "done".into(),
            error: None,
        }
    }

    #[actix_rt::test]
    async fn the_outcome_reaches_a_pair_whose_mailbox_is_full() {
        let pair = Pair { got: Vec::new() }.start();
        // Let it start (and take its capacity) before filling the mailbox.
        pair.send(Got).await.unwrap();
        let to = pair.clone().recipient::<WorkerTurnEnded>();
        let mut filler = 0;
        while to.try_send(ended(&format!("filler-{filler}"))).is_ok() {
            filler += 1;
            assert!(filler < 100, "the mailbox never filled");
        }
        assert!(matches!(
            to.try_send(ended("probe")),
            Err(SendError::Full(_))
        ));
        report(&to, ended("the-outcome")).unwrap();
        let got = pair.send(Got).await.unwrap();
        assert_eq!(got.len(), filler + 1, "{got:?}");
        assert_eq!(got.last().map(DelegationId::as_str), Some("the-outcome"));
    }
}
