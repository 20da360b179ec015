//! Start-up reconciliation of the multi-step workflows a crash can cut in half: pair
//! creation (`creating` rows), pair closing (`closed` rows), pairs whose other session
//! is gone, memberships naming a pair that does not run, and accepted proposals that
//! never reached `running`. [`plan`] is pure (records in, decisions out); [`apply`]
//! writes the decisions, with the events that tell each session, in one transaction
//! before any actor starts; what needs running actors is handed back as [`AfterStart`].
//!
//! Every step of these workflows is written before the next starts (one writer,
//! commits in order), so a crash leaves a prefix of the steps on disk:
//!
//! - Pair creation: row `creating` → the Driver's membership (`pair_created`) → the
//!   Worker session and its membership → row `active`. A `creating` pair whose two
//!   sessions both name it is rolled forward to `active`; otherwise it is rolled back:
//!   the row goes, and a session that had joined is unpaired with `pair_closed` and an
//!   `info` saying why. A failure on the way (not a crash) rolls back the same way.
//! - Pair closing: row `closed` → the cut-off delegation reported → both sessions
//!   leave (`pair_closed`) → row deleted. A `closed` row is finished: memberships
//!   cleared (`pair_closed` + `info`), a delegation it still held reported to the
//!   Driver once, keyed by its id.
//! - A pair missing a session, or a membership naming a pair that does not run: the
//!   pair is removed and the survivor unpaired and told, never silently; a delegation
//!   it held is reported to a surviving Driver once.
//! - Proposal acceptance: `pending` → `starting` → pair created → `running` → the
//!   task delegated (the token keyed by the proposal id). A `starting`/`running`
//!   proposal whose Driver has a running pair holding its delegation is `running`; one
//!   whose pair exists without it gets the task delegated again; one with no pair ends
//!   in `error` and the Driver is resumed once. So no proposal stays open and blocks
//!   the next.
//!
//! Beside this plan, start-up (`runtime/mod.rs`) queues `spawn_sessions` children
//! still holding their first prompt in their parent again, and finishes or undoes
//! merges and discards from their journal (`WorkspaceService::recover`). The crash tests
//! (`tests/e2e/crash_workflows.rs`) crash at each named step ([`crate::crash`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tandem_protocol::pair::{PairState, ProposalStatus};
use tandem_protocol::{EventBody, Role};

use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::ids::{PairId, SessionId};
use crate::pair::{DelegationStatus, Outcome};
use crate::record::{DelegationRecord, PairRecord, SessionRecord};
use crate::session::event_frame;
use crate::store::{LoadedSession, Store, StoredEvent, WriteOp};

/// What start-up decided about the stored pairs, memberships and proposals.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Plan {
    /// Pairs to run, all `active` (rolled-forward ones included).
    pub start: Vec<PairRecord>,
    /// Ids of `creating` pairs rolled forward (their row is rewritten `active`).
    pub activated: Vec<PairId>,
    /// Pair rows to delete (closed, rolled back, or missing a session).
    pub removed: Vec<PairId>,
    /// Sessions to take out of a pair that does not run, and why.
    pub unpair: Vec<Unpair>,
    /// Delegations of removed pairs whose Driver is still here: reported once to it.
    pub cut_off: Vec<(PairRecord, DelegationRecord)>,
    /// Accepted proposals that never reached `running` (or whose task never reached
    /// the Worker).
    pub proposals: Vec<ProposalFix>,
}

/// A session leaves a pair at start-up.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Unpair {
    /// The session whose membership is cleared (and told with `pair_closed`).
    pub session_id: SessionId,
    /// The pair its record named, repeated on its `pair_closed` event.
    pub pair_id: PairId,
    /// What the session is told.
    pub reason: String,
}

/// How an open accepted proposal is finished.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ProposalFix {
    /// Its pair holds its delegation: it is `running` (the pair reports the cut-off
    /// delegation itself).
    Running {
        /// The session holding the proposal; `running` is recorded on it.
        driver_id: SessionId,
        /// Named on the `worker_proposal_update` event.
        proposal_id: String,
        /// The pair that holds the proposal's delegation.
        pair_id: PairId,
        /// The pair's Worker, named on the update.
        worker_id: SessionId,
    },
    /// The pair exists but never got the task: delegate it once actors run.
    Delegate {
        /// The session holding the proposal; told `running`, or why delegating failed.
        driver_id: SessionId,
        /// Carried on the delegation, so its end updates this proposal.
        proposal_id: String,
        /// The pair the task is delegated through once its actor runs.
        pair_id: PairId,
        /// The proposal's message, sent to the Worker as its turn's text.
        message: String,
    },
    /// No Worker to carry it out: it ends in `error` and the Driver is told.
    Fail {
        /// The session holding the proposal; it records the failure.
        driver_id: SessionId,
        /// Ends in `error`.
        proposal_id: String,
        /// Kept as the proposal's error and told to the Driver in an internal turn.
        reason: String,
    },
}

/// Work for the running actors, handed back by [`apply`].
#[derive(Debug, Default)]
pub(super) struct AfterStart {
    /// Pairs to run, all `active`.
    pub start: Vec<PairRecord>,
    /// Cut-off delegations to report to their Drivers.
    pub cut_off: Vec<(PairRecord, DelegationRecord)>,
    /// Proposals to delegate or fail.
    pub proposals: Vec<ProposalFix>,
}

/// Why a pair creation that never finished was undone.
const ROLLED_BACK: &str = "the server stopped while this pair was being created; it was undone";
/// Why a pair missing a session was closed.
const PARTNER_GONE: &str = "the other session of this pair is gone; the pair was closed";
/// Why a pair being closed was finished.
const CLOSED: &str = "this pair was closed";
/// Why a membership naming no running pair was cleared.
const NO_PAIR: &str = "this session's pair no longer exists; it was unpaired";

/// Decides, from the stored records alone, what start-up does. Archived sessions count
/// as gone and are left untouched.
pub(super) fn plan(pairs: &[PairRecord], sessions: &[&SessionRecord]) -> Plan {
    let live: HashMap<&str, &SessionRecord> = sessions
        .iter()
        .filter(|s| s.archived_at.is_none())
        .map(|s| (s.id.as_str(), *s))
        .collect();
    let mut out = Plan::default();
    let (reasons, running) = plan_pairs(pairs, &live, &mut out);
    plan_unpairs(&live, &reasons, &running, &mut out);
    plan_proposals(&live, &mut out);
    out
}

/// Decides which stored pairs run (rolling `creating` ones forward when both
/// sessions joined) and which are removed (into `out`); the reason each removed pair
/// gives its sessions, and the ids of the pairs that run.
fn plan_pairs<'a>(
    pairs: &'a [PairRecord],
    live: &HashMap<&str, &SessionRecord>,
    out: &mut Plan,
) -> (HashMap<&'a str, &'static str>, HashSet<&'a str>) {
    let member = |id: &str, pair_id: &PairId, role: Role| {
        live.get(id).is_some_and(|s| s.in_pair(pair_id, Some(role)))
    };
    let mut reasons: HashMap<&str, &str> = HashMap::new();
    let mut running: HashSet<&str> = HashSet::new();
    // A Worker in two started pairs, or a Driver that is also a Worker, is impossible
    // (JoinPair refuses), but a corrupt store must not start them. A Driver may drive
    // several.
    let mut workers: HashSet<&str> = HashSet::new();
    let mut drivers: HashSet<&str> = HashSet::new();
    for pair in pairs {
        let id = &pair.pair_id;
        // A Worker on another node is that node's to check (its reports find out
        // when this pair is gone).
        let worker_here = pair.worker_node.is_some() || member(&pair.worker_id, id, Role::Worker);
        let both = member(&pair.driver_id, id, Role::Driver)
            && worker_here
            && !workers.contains(pair.driver_id.as_str())
            && !workers.contains(pair.worker_id.as_str())
            && !drivers.contains(pair.worker_id.as_str());
        let reason = match pair.state {
            PairState::Closed => Some(CLOSED),
            PairState::Creating if !both => Some(ROLLED_BACK),
            PairState::Active if !both => Some(PARTNER_GONE),
            PairState::Creating | PairState::Active => None,
        };
        if let Some(reason) = reason {
            reasons.insert(id, reason);
            out.removed.push(pair.pair_id.clone());
            if let Some(delegation) = &pair.delegation {
                if live.contains_key(pair.driver_id.as_str()) {
                    out.cut_off.push((pair.clone(), delegation.clone()));
                }
            }
            continue;
        }
        if pair.state == PairState::Creating {
            out.activated.push(pair.pair_id.clone());
        }
        running.insert(id);
        drivers.insert(pair.driver_id.as_str());
        workers.insert(pair.worker_id.as_str());
        out.start.push(PairRecord {
            state: PairState::Active,
            ..pair.clone()
        });
    }
    (reasons, running)
}

/// Takes out of their pair (into `out.unpair`) the sessions whose membership names a
/// pair that does not run here with them in it, with the `reasons` of removed pairs
/// (else [`NO_PAIR`]).
fn plan_unpairs(
    live: &HashMap<&str, &SessionRecord>,
    reasons: &HashMap<&str, &str>,
    running: &HashSet<&str>,
    out: &mut Plan,
) {
    let mut ids: Vec<&&SessionRecord> = live.values().collect();
    ids.sort_by(|a, b| a.id.cmp(&b.id));
    for (session, membership) in ids
        .iter()
        .flat_map(|s| s.memberships().map(move |m| (s, m)))
    {
        let pair_id = membership.pair_id.as_str();
        if membership.pair_node.is_some() {
            // The Worker of a pair on another node: that node runs the pair.
            continue;
        }
        let in_running = running.contains(pair_id)
            && out.start.iter().any(|p| {
                p.pair_id == pair_id && (p.driver_id == session.id || p.worker_id == session.id)
            });
        if !in_running {
            out.unpair.push(Unpair {
                session_id: session.id.clone(),
                pair_id: pair_id.into(),
                reason: reasons.get(pair_id).copied().unwrap_or(NO_PAIR).to_string(),
            });
        }
    }
}

/// Finishes the accepted proposals still `starting` or `running` (into
/// `out.proposals`, by proposal id), given the pairs that run (`out.start`) and the
/// delegations reported as cut off (`out.cut_off`).
fn plan_proposals(live: &HashMap<&str, &SessionRecord>, out: &mut Plan) {
    for session in live.values() {
        let Some(proposal) = session
            .proposal
            .as_ref()
            .filter(|p| matches!(p.status, ProposalStatus::Starting | ProposalStatus::Running))
        else {
            continue;
        };
        let reported = out
            .cut_off
            .iter()
            .any(|(_, d)| d.proposal_id.as_deref() == Some(proposal.proposal_id.as_str()));
        if reported {
            // Its cut-off delegation is reported (and ends it): nothing more to say.
            continue;
        }
        // The pair carrying the proposal's task, else the Driver's first (an accepted
        // proposal made it, when the Driver had no Worker).
        let first = session.pair.as_ref().map(|m| m.pair_id.as_str());
        let mine = || out.start.iter().filter(|p| p.driver_id == session.id);
        let pair = mine()
            .find(|p| {
                p.delegation.as_ref().is_some_and(|d| {
                    d.proposal_id.as_deref() == Some(proposal.proposal_id.as_str())
                })
            })
            .or_else(|| mine().find(|p| Some(p.pair_id.as_str()) == first))
            .or_else(|| mine().next());
        let fix = match pair {
            None => ProposalFix::Fail {
                driver_id: session.id.clone(),
                proposal_id: proposal.proposal_id.clone(),
                reason: "the server stopped before the proposed Worker started".into(),
            },
            Some(pair) => match &pair.delegation {
                Some(d) if d.proposal_id.as_deref() == Some(proposal.proposal_id.as_str()) => {
                    if proposal.status == ProposalStatus::Running {
                        continue;
                    }
                    ProposalFix::Running {
                        driver_id: session.id.clone(),
                        proposal_id: proposal.proposal_id.clone(),
                        pair_id: pair.pair_id.clone(),
                        worker_id: pair.worker_id.clone(),
                    }
                }
                None => ProposalFix::Delegate {
                    driver_id: session.id.clone(),
                    proposal_id: proposal.proposal_id.clone(),
                    pair_id: pair.pair_id.clone(),
                    message: proposal.message.clone(),
                },
                Some(_) => ProposalFix::Fail {
                    driver_id: session.id.clone(),
                    proposal_id: proposal.proposal_id.clone(),
                    reason: "the Worker is busy with another task".into(),
                },
            },
        };
        out.proposals.push(fix);
    }
    out.proposals
        .sort_by(|a, b| proposal_key(a).cmp(proposal_key(b)));
}

fn proposal_key(fix: &ProposalFix) -> &str {
    match fix {
        ProposalFix::Running { proposal_id, .. }
        | ProposalFix::Delegate { proposal_id, .. }
        | ProposalFix::Fail { proposal_id, .. } => proposal_id,
    }
}

/// Appends `body` to a loaded session's history (in `ops`).
fn append(
    session: &mut LoadedSession,
    body: EventBody,
    ops: &mut Vec<WriteOp>,
) -> Result<(), RuntimeError> {
    let seq = session.last_seq + 1;
    let frame = event_frame(&session.record.id, seq, now_ms(), None, body)?;
    session.last_seq = seq;
    ops.push(WriteOp::Event(StoredEvent {
        session_id: session.record.id.as_str().into(),
        seq,
        frame: frame.into(),
        gate: Arc::default(),
    }));
    Ok(())
}

/// Writes `plan` (rows, memberships, the events that tell the sessions) in one
/// transaction, and returns what must wait for the actors.
pub(super) fn apply(
    store: &Store,
    loaded: &mut [LoadedSession],
    plan: Plan,
) -> Result<AfterStart, RuntimeError> {
    let mut ops = Vec::new();
    let mut touched: HashSet<SessionId> = HashSet::new();
    let index: HashMap<SessionId, usize> = loaded
        .iter()
        .enumerate()
        .map(|(i, s)| (s.record.id.clone(), i))
        .collect();
    for unpair in &plan.unpair {
        let Some(session) = index.get(&unpair.session_id).map(|i| &mut loaded[*i]) else {
            continue;
        };
        unpair_session(session, unpair, &mut ops)?;
        touched.insert(unpair.session_id.clone());
    }
    let mut after = AfterStart {
        start: Vec::new(),
        cut_off: plan.cut_off,
        proposals: Vec::new(),
    };
    for fix in plan.proposals {
        let ProposalFix::Running {
            driver_id,
            proposal_id,
            pair_id,
            worker_id,
        } = &fix
        else {
            after.proposals.push(fix);
            continue;
        };
        let Some(session) = index.get(driver_id).map(|i| &mut loaded[*i]) else {
            continue;
        };
        if proposal_running(session, proposal_id, pair_id, worker_id, &mut ops)? {
            touched.insert(driver_id.clone());
        }
    }
    // A Driver's membership stored before Drivers had several Workers lacks its
    // Worker and name, which its `SessionInfo.workers` shows.
    for pair in &plan.start {
        let Some(session) = index.get(&pair.driver_id).map(|i| &mut loaded[*i]) else {
            continue;
        };
        if name_worker(session, pair) {
            touched.insert(pair.driver_id.clone());
        }
    }
    for id in &touched {
        if let Some(session) = index.get(id).map(|i| &loaded[*i]) {
            ops.push(WriteOp::Session(Box::new(session.record.clone())));
        }
    }
    for pair in plan
        .start
        .iter()
        .filter(|p| plan.activated.contains(&p.pair_id))
    {
        tracing::info!(pair = %pair.pair_id, "rolled a half-created pair forward");
        ops.push(WriteOp::Pair(Box::new(pair.clone())));
    }
    for id in plan.removed {
        tracing::info!(pair = %id, "removed a pair at start-up");
        ops.push(WriteOp::DeletePair(id));
    }
    if !ops.is_empty() {
        store.write_now(&ops)?;
    }
    after.start = plan.start;
    Ok(after)
}

/// Takes a loaded session out of a pair that does not run (`unpair`): its membership
/// cleared, a question it waits on answered, and `pair_closed` and an `info` saying
/// why appended (in `ops`).
fn unpair_session(
    session: &mut LoadedSession,
    unpair: &Unpair,
    ops: &mut Vec<WriteOp>,
) -> Result<(), RuntimeError> {
    session.record.leave(&unpair.pair_id);
    session.record.last_activity = now_ms();
    // A Worker's waiting question has nobody to answer it any more (as when a
    // running pair closes, see `SessionActor::close_question`).
    if let Some(question) = session
        .record
        .question
        .take_if(|q| q.pair_id == unpair.pair_id)
    {
        append(
            session,
            EventBody::QuestionAnswered {
                question_id: question.question_id,
                pair_id: question.pair_id,
                answer: tandem_protocol::question::PAIR_CLOSED.to_string(),
                by: tandem_protocol::question::Answerer::PairClosed,
            },
            ops,
        )?;
    }
    append(
        session,
        EventBody::PairClosed {
            pair_id: unpair.pair_id.clone(),
        },
        ops,
    )?;
    append(
        session,
        EventBody::Info {
            text: unpair.reason.clone(),
        },
        ops,
    )?;
    tracing::info!(session = %unpair.session_id, pair = %unpair.pair_id, reason = %unpair.reason, "unpaired at start-up");
    Ok(())
}

/// Records on the Driver's loaded session that its proposal is `running` in pair
/// `pair_id` with Worker `worker_id` (with its `worker_proposal_update`, in `ops`);
/// false when the session holds no proposal.
fn proposal_running(
    session: &mut LoadedSession,
    proposal_id: &str,
    pair_id: &PairId,
    worker_id: &SessionId,
    ops: &mut Vec<WriteOp>,
) -> Result<bool, RuntimeError> {
    let Some(proposal) = session.record.proposal.as_mut() else {
        return Ok(false);
    };
    proposal.status = ProposalStatus::Running;
    let auto_approved = proposal.auto_approved;
    append(
        session,
        EventBody::WorkerProposalUpdate {
            proposal_id: proposal_id.to_string(),
            status: ProposalStatus::Running,
            selected: None,
            worker_id: Some(worker_id.into()),
            pair_id: Some(pair_id.into()),
            error: None,
            auto_approved,
        },
        ops,
    )?;
    Ok(true)
}

/// Names `pair`'s Worker and its name on the Driver's loaded membership of it when
/// that lacks them (stored before Drivers had several Workers); whether it did.
fn name_worker(session: &mut LoadedSession, pair: &PairRecord) -> bool {
    let unnamed = session
        .record
        .pair
        .iter_mut()
        .chain(session.record.more_workers.iter_mut())
        .find(|m| m.pair_id == pair.pair_id && m.worker_id.is_none());
    if let Some(membership) = unnamed {
        membership.worker_id = Some(pair.worker_id.clone());
        membership.worker_name = Some(pair.worker_name.clone());
        return true;
    }
    false
}

/// What a cut-off delegation of a removed pair tells its Driver.
pub(super) fn cut_off_outcome(pair: &PairRecord) -> Outcome {
    Outcome {
        status: DelegationStatus::Interrupted,
        response: String::new(),
        error: Some(match pair.state {
            PairState::Closed => "the pair was closed".into(),
            _ => "the Worker's session is gone".into(),
        }),
        changes: None,
    }
}

#[cfg(test)]
mod tests;
