//! Driver/Worker pairs. A pair actor owns the relation and at most one delegation
//! token. Delegation start, finish, timeout, interrupt and close are messages to it;
//! the Worker's session tells it when the delegated turn ends, so nothing polls.
//!
//! Architecture invariant: a delegation's outcome reaches the Driver exactly once:
//! as the waiting `send_to_partner` result, or else as one pushed-back internal turn.
//! The pair resolves a delegation at most once ([`Token::Resolving`]), and the Driver's
//! session drops a push-back whose id it has already taken (a re-send after a crash).

mod approvals;
mod questions;
pub mod remote;
#[cfg(test)]
mod tests;
pub mod texts;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::pair::{PairInfo, PairState, ProposalStatus};
use tandem_protocol::{EventBody, TurnStatus};
use tokio::sync::oneshot;

use crate::clock::{now_ms, random_id};
use crate::cluster_link::StartOnWorker;
use crate::error::{PairError, RuntimeError};
use crate::ids::{DelegationId, PairId, TurnId};
use crate::record::{DelegationRecord, PairRecord};
use crate::registry::Registry;
use crate::session::{
    LeavePair, PairInbox, ProposalProgress, RecordEvent, Resume, Services, SessionActor,
    WorkerTurnEnded,
};
use crate::store::WriteOp;
pub use questions::WorkerAsks;
use remote::WorkerLink;

/// How often a restarted pair asks an unreachable remote Worker's node about the
/// delegation it holds.
const RECHECK: Duration = Duration::from_secs(1);

/// How a delegation ended, in tool-result words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelegationStatus {
    /// The Worker's turn completed.
    Complete,
    /// The Worker's turn failed.
    Error,
    /// The Worker was stopped (by someone, by closing the pair, by a restart).
    Interrupted,
}

/// How a delegation ended: answered to a waiting caller or pushed back to the Driver.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// How it ended; picks the wording of the result text.
    pub status: DelegationStatus,
    /// The Worker's assistant text of the delegated turn (tail-capped).
    pub response: String,
    /// Why it failed or stopped.
    pub error: Option<String>,
    /// A worktree Worker's branch and diff summary after its turn.
    pub changes: Option<tandem_protocol::workspace::ChangeSummary>,
}

/// What `Delegate` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum DelegateReply {
    /// The Worker's turn ended while the caller waited.
    Finished(Outcome),
    /// The wait timed out; the Worker keeps going and the result will be pushed back.
    TimedOut {
        /// The Worker's text so far.
        partial: String,
    },
    /// Not waiting: the result will be pushed back.
    Detached,
    /// The Worker asks its Driver something (`ask_driver`): the caller returns with
    /// the question, and the result will be pushed back.
    Question(crate::record::QuestionRecord),
    /// The Worker's agent asks permission and the pair's `workerApprovals` is
    /// `driver`: the caller returns with the request, and the result will be pushed
    /// back.
    Approval(tandem_protocol::ApprovalAsk),
}

/// Hand the Worker one task.
#[derive(Debug, Message)]
#[rtype(result = "Result<DelegateReply, PairError>")]
pub struct Delegate {
    /// The task, sent to the Worker as its turn's user message.
    pub message: String,
    /// Wait for the Worker's turn to end.
    pub wait: bool,
    /// With `wait`: how long before the caller gets the partial text and the result detaches.
    pub timeout: Duration,
    /// The proposal this carries out, if any.
    pub proposal_id: Option<String>,
}

/// Interrupt the Worker; answers whether it was running.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, PairError>")]
pub struct InterruptWorker;

/// Dissolve the pair (interrupting the Worker if it runs); answers whether the Worker
/// was interrupted.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, PairError>")]
pub struct ClosePair;

/// The published view of a pair, read without messaging its actor.
pub type PairShared = Arc<Mutex<PairRecord>>;

/// A live pair actor's address and the record it publishes.
#[derive(Clone)]
pub struct PairHandle {
    /// The actor's address: delegations and closing are sent here.
    pub addr: Addr<PairActor>,
    /// Its record, read without messaging it.
    pub shared: PairShared,
}

/// The `send_to_partner` call waiting for a delegation (also answered when a detached
/// start is accepted).
type Waiter = oneshot::Sender<Result<DelegateReply, PairError>>;

/// The delegation token in memory. Its persisted part is `record.delegation`: `Held`
/// and `Resolving` have one, `Free` may still have one while a push-back's delivery
/// finishes (see [`PairActor::finish_delegation`]).
enum Token {
    /// No delegation in flight: the next `Delegate` may take it.
    Free,
    /// The Worker works on the delegation.
    Held {
        /// The caller waiting for it; `None` once it detached (asked not to wait, or
        /// its wait timed out) or when a restart cut the delegation off.
        waiter: Option<Waiter>,
        /// The caller's wait timer.
        timeout: Option<SpawnHandle>,
    },
    /// The outcome is being delivered; later endings of the same delegation are
    /// ignored, and a new delegation must wait.
    Resolving,
}

/// One Driver/Worker pair: holds the delegation token, so the Worker runs one task at a time.
pub struct PairActor {
    /// The persisted pair (state, current delegation); `state` says whether it closed.
    record: PairRecord,
    /// The copy published for readers.
    shared: PairShared,
    services: Arc<Services>,
    driver: Addr<SessionActor>,
    /// The Worker: its actor here, or its node (see [`remote`]).
    worker: WorkerLink,
    /// Live pairs; this pair removes itself when it closes.
    pairs: Registry<PairId, PairHandle>,
    /// Where the delegation token stands.
    token: Token,
    /// Reports of a remote Worker's node waiting to be acknowledged, by delegation
    /// id: answered once that delegation's outcome is delivered and on disk.
    acks: Vec<(DelegationId, oneshot::Sender<()>)>,
}

impl PairActor {
    /// An actor for `record`. If the record holds a delegation (a restart cut it
    /// off), it is resolved as interrupted as soon as the actor starts.
    pub fn new(
        record: PairRecord,
        shared: PairShared,
        services: Arc<Services>,
        driver: Addr<SessionActor>,
        worker: WorkerLink,
        pairs: Registry<PairId, PairHandle>,
    ) -> Self {
        let token = match record.delegation {
            Some(_) => Token::Held {
                waiter: None,
                timeout: None,
            },
            None => Token::Free,
        };
        PairActor {
            record,
            shared,
            services,
            driver,
            worker,
            pairs,
            token,
            acks: Vec::new(),
        }
    }

    /// True once the pair was closed (the record says so before anyone leaves).
    fn closed(&self) -> bool {
        self.record.state == PairState::Closed
    }

    /// True while an outcome is being delivered.
    fn resolving(&self) -> bool {
        matches!(self.token, Token::Resolving)
    }

    /// The waiting caller, taken out of a held token.
    fn take_waiter(&mut self) -> Option<Waiter> {
        match &mut self.token {
            Token::Held { waiter, .. } => waiter.take(),
            _ => None,
        }
    }

    /// Persists and publishes the record.
    fn save(&mut self) {
        if let Err(e) = self
            .services
            .writer
            .write(WriteOp::Pair(Box::new(self.record.clone())))
        {
            tracing::error!(pair = %self.record.pair_id, error = %e, "pair not stored");
        }
        if let Ok(mut shared) = self.shared.lock() {
            *shared = self.record.clone();
        }
    }

    fn delegation_event(
        &self,
        active: bool,
        changes: Option<tandem_protocol::workspace::ChangeSummary>,
    ) {
        let body = EventBody::Delegation {
            pair_id: self.record.pair_id.clone(),
            from: self.record.driver_id.clone(),
            to: self.record.worker_id.clone(),
            active,
            changes,
        };
        self.driver.do_send(RecordEvent(body.clone()));
        self.worker.record(body);
    }

    /// Answers the remote Worker's node's reports of delegation `id` once what this
    /// actor wrote so far is on disk (the outcome delivered, the token cleared).
    fn acknowledge(&mut self, id: &DelegationId, ctx: &mut Context<Self>) {
        if !self.acks.iter().any(|(d, _)| d == id) {
            return;
        }
        let waiting: Vec<oneshot::Sender<()>> = {
            let (mine, rest) = std::mem::take(&mut self.acks)
                .into_iter()
                .partition(|(d, _)| d == id);
            self.acks = rest;
            mine.into_iter().map(|(_, tx)| tx).collect()
        };
        let synced = self
            .services
            .writer
            .synced_since(self.services.writer.epoch());
        ctx.spawn(actix::fut::wrap_future(async move {
            synced.await;
            for tx in waiting {
                let _ = tx.send(());
            }
        }));
    }

    fn current(&self, delegation_id: &DelegationId) -> bool {
        self.record
            .delegation
            .as_ref()
            .is_some_and(|d| d.delegation_id == delegation_id)
    }

    /// Delivers a delegation's outcome exactly once: to the waiting caller if there
    /// is one, else as an internal turn pushed into the Driver.
    fn resolve(&mut self, outcome: Outcome, ctx: &mut Context<Self>) {
        let Some(delegation) = self.record.delegation.clone() else {
            return;
        };
        let waiter = match std::mem::replace(&mut self.token, Token::Resolving) {
            Token::Resolving => return,
            Token::Free => None,
            Token::Held { waiter, timeout } => {
                if let Some(handle) = timeout {
                    ctx.cancel_future(handle);
                }
                waiter
            }
        };
        self.delegation_event(false, outcome.changes.clone());
        if let Some(waiter) = waiter.filter(|w| !w.is_closed()) {
            // The caller gets the result only once the cleared token is on disk:
            // after a crash before that, the restart reports the delegation (once),
            // and the caller, whose turn died with the process, never saw it.
            self.record.delegation = None;
            let epoch = self.services.writer.epoch();
            if !self.closed() {
                self.save();
            }
            let synced = self.services.writer.synced_since(epoch);
            ctx.spawn(actix::fut::wrap_future(synced).map(
                move |stored, act: &mut PairActor, ctx| {
                    if !stored {
                        tracing::error!(pair = %act.record.pair_id, "delegation end not stored");
                    }
                    let id = delegation.delegation_id.clone();
                    match waiter.send(Ok(DelegateReply::Finished(outcome))) {
                        Ok(()) => act.token = Token::Free,
                        // The caller stopped waiting meanwhile: push the result back.
                        Err(Ok(DelegateReply::Finished(outcome))) => {
                            return act.push_back(delegation, outcome, ctx)
                        }
                        Err(_) => act.token = Token::Free,
                    }
                    act.acknowledge(&id, ctx);
                },
            ));
            return;
        }
        self.push_back(delegation, outcome, ctx);
    }

    /// Pushes an outcome into the Driver as an internal turn (keyed by the delegation
    /// id, so the Driver takes it once) and clears the token once the Driver has it.
    fn push_back(
        &mut self,
        delegation: DelegationRecord,
        outcome: Outcome,
        ctx: &mut Context<Self>,
    ) {
        let resume = pushback_resume(&self.record, &delegation, &outcome);
        // Counted, so metrics (and the tests) can see exactly-once delivery.
        crate::metrics::Metrics::inc(&self.services.metrics.pushbacks);
        let id = delegation.delegation_id;
        ctx.spawn(actix::fut::wrap_future(self.driver.send(resume)).map(
            move |res, act: &mut PairActor, ctx| {
                if let Err(e) = res {
                    tracing::error!(pair = %act.record.pair_id, error = %e, "Driver gone; result not delivered");
                }
                act.finish_delegation(&id);
                act.acknowledge(&id, ctx);
            },
        ));
    }

    /// The Worker's node was asked to start delegation `id` and no answer came back:
    /// it may run it. The delegation is kept and detached (the caller hears it runs;
    /// the outcome is pushed back), and the Worker's node is asked whether it has it,
    /// as after a restart.
    fn start_in_doubt(&mut self, id: DelegationId, ctx: &mut Context<Self>) {
        tracing::warn!(pair = %self.record.pair_id, delegation = %id, "the Worker's node did not confirm the start; asking it");
        if let Some(d) = self.record.delegation.as_mut() {
            d.detached = true;
        }
        self.save();
        if let Some(waiter) = self.take_waiter() {
            let _ = waiter.send(Ok(DelegateReply::Detached));
        }
        self.check_remote_delegation(id, ctx);
    }

    /// With a remote Worker's delegation in flight whose start is not confirmed (after
    /// a restart, or when the start's answer was lost): asks the Worker's node (every
    /// [`RECHECK`] until it can be asked) whether it has that delegation; if it does
    /// not, the delegation never reached it and is reported interrupted, once. If it
    /// does, its node reports the end.
    fn check_remote_delegation(&mut self, id: DelegationId, ctx: &mut Context<Self>) {
        let asked = self.worker.holds(&id);
        ctx.spawn(
            actix::fut::wrap_future(asked).map(move |holds, act: &mut PairActor, ctx| {
                if !act.current(&id) || act.resolving() {
                    return;
                }
                match holds {
                    Some(true) => {}
                    Some(false) => act.resolve(
                        Outcome {
                            status: DelegationStatus::Interrupted,
                            response: String::new(),
                            error: Some("the Worker's node never got the task".into()),
                            changes: None,
                        },
                        ctx,
                    ),
                    None => {
                        ctx.run_later(RECHECK, move |act, ctx| {
                            act.check_remote_delegation(id, ctx)
                        });
                    }
                }
            }),
        );
    }

    /// The Worker's answer `res` to the start of delegation `delegation_id`: a refusal
    /// ends it and tells the Driver why; a detached one answers at once, a waited one
    /// waits at most `timeout`.
    fn worker_started(
        &mut self,
        delegation_id: DelegationId,
        res: Result<Result<TurnId, RuntimeError>, String>,
        wait: bool,
        timeout: Duration,
        ctx: &mut Context<Self>,
    ) {
        if !self.current(&delegation_id) || self.resolving() {
            return;
        }
        if let Ok(Err(RuntimeError::NoAnswer { .. })) = &res {
            self.start_in_doubt(delegation_id, ctx);
            return;
        }
        let refused = match res {
            Ok(Ok(_turn_id)) => None,
            Ok(Err(RuntimeError::RunInProgress(_))) => Some(PairError::WorkerBusy),
            Ok(Err(e)) => Some(PairError::WorkerRefused(Box::new(e))),
            Err(e) => Some(PairError::Unavailable(e)),
        };
        if let Some(reason) = refused {
            self.delegation_event(false, None);
            self.record.delegation = None;
            self.save();
            if let Some(waiter) = self.take_waiter() {
                let _ = waiter.send(Err(reason));
            }
            self.token = Token::Free;
            return;
        }
        if !wait {
            if let Some(waiter) = self.take_waiter() {
                let _ = waiter.send(Ok(DelegateReply::Detached));
            }
            return;
        }
        let timer = ctx.run_later(timeout, move |act, ctx| {
            act.wait_timed_out(&delegation_id, ctx)
        });
        if let Token::Held { timeout, .. } = &mut self.token {
            *timeout = Some(timer);
        }
    }

    /// A waited delegation `delegation_id` ran out of time: the Driver gets the
    /// Worker's text so far, and the result is pushed back when it comes.
    fn wait_timed_out(&mut self, delegation_id: &DelegationId, ctx: &mut Context<Self>) {
        if !self.current(delegation_id) {
            return;
        }
        let Token::Held { waiter, timeout } = &mut self.token else {
            return;
        };
        *timeout = None;
        let Some(waiter) = waiter.take() else {
            return;
        };
        // From now on the result is pushed back when it comes.
        if let Some(d) = self.record.delegation.as_mut() {
            d.detached = true;
        }
        self.save();
        ctx.spawn(
            actix::fut::wrap_future(self.worker.partial()).map(move |partial, _, _| {
                let _ = waiter.send(Ok(DelegateReply::TimedOut { partial }));
            }),
        );
    }

    /// Drops the token of delegation `id` (if it is still the current one).
    fn finish_delegation(&mut self, id: &DelegationId) {
        self.token = Token::Free;
        if self.current(id) {
            self.record.delegation = None;
            if !self.closed() {
                self.save();
            }
        }
    }
}

impl Actor for PairActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // A remote Worker's turn goes on while this node restarts: its node reports
        // the end (kept until acknowledged), so the delegation waits for that, unless
        // the Worker never got it (this node stopped before its node took it).
        if let Some(d) = self
            .record
            .delegation
            .as_ref()
            .filter(|_| self.worker.is_remote())
        {
            self.check_remote_delegation(d.delegation_id.clone(), ctx);
            return;
        }
        if self.record.delegation.is_some() {
            // Loaded with a delegation in flight: the restart cut the Worker's turn
            // off (its session closed it as interrupted). Tell the Driver, once.
            self.resolve(
                Outcome {
                    status: DelegationStatus::Interrupted,
                    response: String::new(),
                    error: Some("the server restarted while the Worker was on it".into()),
                    changes: None,
                },
                ctx,
            );
        }
    }
}

impl Handler<Delegate> for PairActor {
    type Result = ResponseFuture<Result<DelegateReply, PairError>>;

    fn handle(&mut self, msg: Delegate, ctx: &mut Context<Self>) -> Self::Result {
        if self.closed() {
            return Box::pin(async { Err(PairError::Closed) });
        }
        if self.record.delegation.is_some() || !matches!(self.token, Token::Free) {
            return Box::pin(async { Err(PairError::DelegationInFlight) });
        }
        let delegation_id = DelegationId::new(random_id("dlg_", 8));
        self.record.delegation = Some(DelegationRecord {
            delegation_id: delegation_id.clone(),
            message: msg.message.clone(),
            started_at: now_ms(),
            detached: !msg.wait,
            proposal_id: msg.proposal_id,
        });
        let (tx, rx) = oneshot::channel();
        self.token = Token::Held {
            waiter: Some(tx),
            timeout: None,
        };
        self.save();
        self.delegation_event(true, None);
        let start = self.worker.start(
            StartOnWorker {
                text: msg.message,
                driver_id: self.record.driver_id.clone(),
                pair_id: self.record.pair_id.clone(),
                delegation_id: delegation_id.clone(),
                approvals: self.record.worker_approvals,
            },
            PairInbox {
                ended: ctx.address().recipient(),
                approvals: ctx.address().recipient(),
            },
        );
        let (writer, remote) = (self.services.writer.clone(), self.worker.is_remote());
        let start = async move {
            if remote {
                // Test builds: dies with the delegation stored, before the Worker's
                // node got it.
                crate::crash::crash_point(&writer, "pair.delegate.remote").await;
            }
            start.await
        };
        let (wait, timeout) = (msg.wait, msg.timeout);
        ctx.spawn(
            actix::fut::wrap_future(start).map(move |res, act: &mut PairActor, ctx| {
                act.worker_started(delegation_id, res, wait, timeout, ctx)
            }),
        );
        Box::pin(async move { rx.await.unwrap_or(Err(PairError::ClosedBeforeAnswer)) })
    }
}

impl Handler<WorkerTurnEnded> for PairActor {
    type Result = ();

    fn handle(&mut self, msg: WorkerTurnEnded, ctx: &mut Context<Self>) {
        if !self.current(&msg.delegation_id) {
            return;
        }
        let info = self
            .services
            .sessions
            .get(&self.record.worker_id)
            .map(|h| h.shared.info())
            .filter(|info| {
                info.workspace
                    .as_ref()
                    .is_some_and(|w| w.state == tandem_protocol::workspace::WorktreeState::Active)
            });
        let (id, mut outcome) = outcome_of(msg);
        let Some(info) = info else {
            self.resolve(outcome, ctx);
            return;
        };
        // A worktree Worker's changes are summed up (and its repository's checks run)
        // off this mailbox, then the delegation resolves with them.
        let env = self.services.checks.clone();
        let worker = self.services.sessions.get(&info.id);
        let summed = async move {
            let summary = env.delegation_summary(&info).await;
            record_checks(worker.as_ref(), summary.as_ref());
            summary
        };
        ctx.spawn(
            actix::fut::wrap_future(summed).map(move |changes, act: &mut PairActor, ctx| {
                outcome.changes = changes;
                if act.current(&id) {
                    act.resolve(outcome, ctx);
                }
            }),
        );
    }
}

/// Appends the checks a delegation's end ran to the Worker's history.
pub(crate) fn record_checks(
    worker: Option<&crate::session::SessionHandle>,
    summary: Option<&tandem_protocol::workspace::ChangeSummary>,
) {
    if let (Some(worker), Some(results)) = (worker, summary.and_then(|s| s.checks.clone())) {
        worker.do_send(crate::session::ChecksDone {
            results,
            record_events: true,
        });
    }
}

/// A Worker's report as the delegation's outcome (without changes), with its
/// delegation id.
fn outcome_of(ended: WorkerTurnEnded) -> (DelegationId, Outcome) {
    let status = match ended.status {
        TurnStatus::Completed => DelegationStatus::Complete,
        TurnStatus::Failed | TurnStatus::Limited => DelegationStatus::Error,
        TurnStatus::Interrupted => DelegationStatus::Interrupted,
    };
    let outcome = Outcome {
        status,
        response: ended.response,
        error: ended.error,
        changes: None,
    };
    (ended.delegation_id, outcome)
}

/// A remote Worker's node reports a delegated turn's end; `done` is answered once the
/// delegation's outcome is delivered and on disk (or at once when the delegation is
/// not this pair's current one: taken already, or cut off).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RemoteTurnEnded {
    /// The report.
    pub ended: WorkerTurnEnded,
    /// A worktree Worker's branch and diff summary, summed up on its node.
    pub changes: Option<tandem_protocol::workspace::ChangeSummary>,
    /// Answered when the node may forget the report.
    pub done: oneshot::Sender<()>,
}

impl Handler<RemoteTurnEnded> for PairActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteTurnEnded, ctx: &mut Context<Self>) {
        if !self.current(&msg.ended.delegation_id) {
            let _ = msg.done.send(());
            return;
        }
        self.acks.push((msg.ended.delegation_id.clone(), msg.done));
        let (_, mut outcome) = outcome_of(msg.ended);
        outcome.changes = msg.changes;
        self.resolve(outcome, ctx);
    }
}

impl Handler<InterruptWorker> for PairActor {
    type Result = ResponseFuture<Result<bool, PairError>>;

    fn handle(&mut self, _: InterruptWorker, _: &mut Context<Self>) -> Self::Result {
        let abort = self.worker.abort();
        Box::pin(async move {
            match abort.await {
                Ok(Ok(())) => Ok(true),
                Ok(Err(RuntimeError::NoActiveRun(_))) => Ok(false),
                Ok(Err(e)) => Err(PairError::Worker(Box::new(e))),
                Err(e) => Err(PairError::Unavailable(e)),
            }
        })
    }
}

impl Handler<ClosePair> for PairActor {
    type Result = ResponseActFuture<Self, Result<bool, PairError>>;

    fn handle(&mut self, _: ClosePair, _: &mut Context<Self>) -> Self::Result {
        if self.closed() {
            return Box::pin(actix::fut::ready(Err(PairError::AlreadyClosed)));
        }
        // `closed` is on disk before anyone leaves: a crash from here on is finished
        // by start-up (memberships cleared, a cut-off delegation reported once).
        self.record.state = PairState::Closed;
        self.save();
        let partial = self.worker.partial();
        let abort = self.worker.abort();
        let writer = self.services.writer.clone();
        Box::pin(
            actix::fut::wrap_future(async move {
                let partial = partial.await;
                let interrupted = matches!(abort.await, Ok(Ok(())));
                crate::crash::crash_point(&writer, "pair.close.row").await;
                (partial, interrupted)
            })
            .map(|(partial, interrupted), act: &mut PairActor, ctx| {
                if act.record.delegation.is_some() && !act.resolving() {
                    act.resolve(
                        Outcome {
                            status: DelegationStatus::Interrupted,
                            response: partial,
                            error: Some("the pair was closed".into()),
                            changes: None,
                        },
                        ctx,
                    );
                }
                let pair_id = act.record.pair_id.clone();
                act.driver.do_send(LeavePair {
                    pair_id: pair_id.clone(),
                });
                act.worker.leave(pair_id.clone());
                if let Err(e) = act
                    .services
                    .writer
                    .write(WriteOp::DeletePair(pair_id.clone()))
                {
                    tracing::error!(pair = %pair_id, error = %e, "pair removal not stored");
                }
                act.pairs.remove(&pair_id);
                Ok(interrupted)
            }),
        )
    }
}

/// The internal turn that reports `outcome` of `delegation` (of pair `record`) to its
/// Driver, keyed by the delegation id so the Driver takes it once.
pub(crate) fn pushback_resume(
    record: &PairRecord,
    delegation: &DelegationRecord,
    outcome: &Outcome,
) -> Resume {
    let proposal = delegation
        .proposal_id
        .clone()
        .map(|proposal_id| ProposalProgress {
            proposal_id,
            status: match outcome.status {
                DelegationStatus::Complete => ProposalStatus::Completed,
                DelegationStatus::Interrupted => ProposalStatus::Interrupted,
                DelegationStatus::Error => ProposalStatus::Error,
            },
            worker_id: Some(record.worker_id.clone()),
            pair_id: Some(record.pair_id.clone()),
            error: outcome.error.clone(),
        });
    Resume {
        id: delegation.delegation_id.to_string(),
        text: texts::pushback(delegation, outcome) + &texts::signature(record),
        proposal,
    }
}

/// The client view of a shared pair record.
pub fn pair_info(shared: &PairShared) -> Option<PairInfo> {
    shared.lock().ok().map(|r| r.to_info())
}
