//! Pairs whose Driver and Worker are on different nodes (see [`crate::pair::remote`]).
//!
//! A node answers pair messages on `tandem.nodes.<node>.pairs` (NATS request/reply,
//! JSON): the pair's node asks the Worker's node to create the Worker, start a
//! delegated turn, tell its partial text, abort, record an event, leave the pair,
//! or show the Worker to `read_partner` (`PairCall::Read`: its status, title and
//! last turns, read there as for a local Worker; e2e
//! `cluster_pairs::a_driver_delegates_to_a_worker_on_another_node`); the Worker's
//! node reports a delegated turn's end to the pair's node. The answering node's
//! errors keep their code (`RuntimeError::Remote`). A message nobody received (no
//! responders) is `NODE_UNAVAILABLE`; one that went out and got no answer (timed
//! out, or the connection broke after it was sent) is `RuntimeError::NoAnswer`, as
//! its node may have run it. The Worker's node answers a `Start` only once the
//! Worker's record holding the delegation is on disk.
//!
//! The reporter sends every report in the [`crate::cluster_link::Outbox`] every
//! [`RETRY`], while the pair's node's lease holds (so it retries through a NATS
//! outage), until that node answers that it took it (or has no such pair). A
//! worktree Worker's branch and diff summary are summed up here at each try
//! (`PairCall::Ended.changes`), so the outcome carries what a local worktree
//! Worker's does (e2e
//! `cluster_workspaces::a_worktree_worker_on_another_node_reports_its_branch_and_changes`).
//! The pair's node answers "taken" only once the outcome is delivered (the waiting
//! caller answered, or the push-back handed to the Driver) and the cleared token is
//! on disk (`RemoteTurnEnded`); a report of a delegation that is not the pair's
//! current one (taken before, cut off by a close) is answered at once.
//!
//! A pair closed while its Worker's node was away could not tell the Worker. A busy
//! Worker learns it from the answer to its report ("no such pair"); for idle ones,
//! the Worker's node asks the pair's node whether their pairs are still open
//! ([`recheck`]; `PairCall::Open`: a running pair, or a stored row not `closed`),
//! as soon as that node is seen alive and every [`RECHECK`] after (e2e
//! `cluster_pairs::the_workers_node_killed_mid_delegation_reports_it_once_when_back`).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use tandem_protocol::{ErrorCode, EventBody, SessionInfo};
use tokio::sync::oneshot;

use super::{Cluster, ClusterError};
use crate::cluster_link::{NodeLink, PendingReport, RemoteWorkerSpec, StartOnWorker, WorkerView};
use crate::error::RuntimeError;
use crate::ids::{DelegationId, PairId, SessionId, TurnId};
use crate::pair::RemoteTurnEnded;
use crate::record::ReportedEnd;
use crate::session::{
    Abort, HoldsDelegation, IdleRemoteWorker, LeavePair, PartialText, RecordEvent, ReportDelivered,
    ReportTo,
};

/// How often this node asks the pairs' nodes whether the pairs its idle Workers
/// belong to are still open.
const RECHECK: Duration = Duration::from_secs(5);

/// How often unacknowledged reports are sent again.
const RETRY: Duration = Duration::from_millis(500);
/// How long a pair message may take (creating a Worker starts its session).
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a report waits for the pair to deliver its outcome before the reporter
/// is told to ask again.
const DELIVERY_WAIT: Duration = Duration::from_secs(20);

/// The subject a node answers pair messages on.
pub fn pairs_subject(node: &str) -> String {
    format!("tandem.nodes.{node}.pairs")
}

/// A pair message.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum PairCall {
    /// Create the Worker session here and join it to the pair.
    CreateWorker(RemoteWorkerSpec),
    /// Start a delegated turn in the Worker; its end is reported to `pair_node`.
    Start {
        worker_id: SessionId,
        text: String,
        driver_id: SessionId,
        pair_id: PairId,
        delegation_id: DelegationId,
        pair_node: String,
        /// Who answers the turn's permission requests.
        #[serde(default)]
        approvals: tandem_protocol::pair::WorkerApprovals,
    },
    /// The Worker's assistant text so far.
    Partial { worker_id: SessionId },
    /// Interrupt the Worker's turn.
    Abort { worker_id: SessionId },
    /// Append an event (a `delegation` change) to the Worker's history.
    Record {
        worker_id: SessionId,
        event: EventBody,
    },
    /// Whether the Worker knows a delegation (see [`crate::session::HoldsDelegation`]).
    Holds {
        worker_id: SessionId,
        delegation_id: DelegationId,
    },
    /// The Worker's status, title and last turns (`read_partner`).
    Read { worker_id: SessionId, count: usize },
    /// The pair was closed: the Worker leaves it.
    Leave {
        worker_id: SessionId,
        pair_id: PairId,
    },
    /// To the pair's node: a Worker there asks its Driver (`ask_driver`).
    Ask {
        question: crate::record::QuestionRecord,
    },
    /// Answer a Worker's waiting question.
    Answer {
        worker_id: SessionId,
        answer: crate::cluster_link::QuestionAnswer,
    },
    /// To the pair's node: a Worker there asks its Driver for a permission.
    Approval {
        need: crate::cluster_link::ApprovalNeed,
    },
    /// Answer a Worker's permission request in its Driver's name.
    Approve {
        worker_id: SessionId,
        answer: crate::cluster_link::ApprovalAnswer,
    },
    /// To the pair's node: whether the pair is still being created or runs.
    Open { pair_id: PairId },
    /// To the pair's node: a delegated turn ended.
    Ended {
        pair_id: PairId,
        delegation_id: DelegationId,
        end: ReportedEnd,
        /// A worktree Worker's branch and diff summary, summed up on its node.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changes: Option<tandem_protocol::workspace::ChangeSummary>,
    },
}

/// The answer to a pair message.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum PairAnswer {
    /// Done; what it answers.
    Ok(serde_json::Value),
    /// Refused, with the answering node's error code and message.
    Err { code: ErrorCode, message: String },
}

/// [`serve`]'s answer when an answer cannot be written: an `INTERNAL` refusal the
/// asking node reads like any other.
const UNWRITABLE: &[u8] =
    br#"{"err":{"code":"INTERNAL","message":"the node could not write its answer"}}"#;

/// What the pair's node answers a report.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
enum Taken {
    /// The outcome is delivered and on disk (or it was taken before).
    Taken,
    /// No such pair runs there: it was closed.
    NoPair,
}

impl Cluster {
    /// Sends a pair message to `node`; a node that does not answer is
    /// `NODE_UNAVAILABLE` for `session`.
    async fn pair_call(
        &self,
        node: &str,
        session: &str,
        call: &PairCall,
    ) -> Result<serde_json::Value, RuntimeError> {
        let unavailable = || RuntimeError::NodeUnavailable {
            session: session.into(),
            node: node.to_string(),
        };
        let payload =
            serde_json::to_vec(call).map_err(|e| RuntimeError::Internal(e.to_string()))?;
        let asked = self.client().send_request(
            pairs_subject(node),
            async_nats::Request::new()
                .payload(payload.into())
                .timeout(Some(TIMEOUT)),
        );
        let reply = match asked.await {
            Ok(reply) => reply,
            // Nobody subscribed, or it could not be sent: the node never got it.
            Err(e)
                if matches!(
                    e.kind(),
                    async_nats::RequestErrorKind::NoResponders
                        | async_nats::RequestErrorKind::InvalidSubject
                        | async_nats::RequestErrorKind::MaxPayloadExceeded
                ) =>
            {
                tracing::warn!(%node, error = %e, "pair message not answered");
                return Err(unavailable());
            }
            Err(e) => {
                tracing::warn!(%node, error = %e, "pair message sent, no answer");
                return Err(RuntimeError::NoAnswer {
                    session: session.into(),
                    node: node.to_string(),
                });
            }
        };
        match serde_json::from_slice::<PairAnswer>(&reply.payload) {
            Ok(PairAnswer::Ok(value)) => Ok(value),
            Ok(PairAnswer::Err { code, message }) => Err(match code {
                // The pair maps these two to its own answers.
                ErrorCode::RunInProgress => RuntimeError::RunInProgress(session.into()),
                ErrorCode::NoActiveRun => RuntimeError::NoActiveRun(session.into()),
                code => RuntimeError::Remote { code, message },
            }),
            Err(e) => Err(RuntimeError::Internal(format!(
                "bad answer from node {node}: {e}"
            ))),
        }
    }

    /// Creates a pair's Worker on `node`.
    pub(crate) async fn create_worker(
        &self,
        node: &str,
        spec: RemoteWorkerSpec,
    ) -> Result<SessionInfo, RuntimeError> {
        let id = spec.worker_id.clone();
        let value = self
            .pair_call(node, &id, &PairCall::CreateWorker(spec))
            .await?;
        serde_json::from_value(value).map_err(|e| RuntimeError::Internal(e.to_string()))
    }

    /// Starts a delegated turn in a Worker on `node`; answers its turn id.
    pub(crate) async fn start_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        msg: StartOnWorker,
    ) -> Result<TurnId, RuntimeError> {
        let call = PairCall::Start {
            worker_id: worker_id.into(),
            text: msg.text,
            driver_id: msg.driver_id,
            pair_id: msg.pair_id,
            delegation_id: msg.delegation_id,
            pair_node: self.node().to_string(),
            approvals: msg.approvals,
        };
        let value = self.pair_call(node, worker_id, &call).await?;
        // Test builds: the Worker's node took the start, and its answer is lost.
        crate::crash::fail_here("pair.start.lost").map_err(|_| RuntimeError::NoAnswer {
            session: worker_id.into(),
            node: node.to_string(),
        })?;
        Ok(TurnId::from(value.as_str().unwrap_or_default()))
    }

    /// The Worker's text so far (empty when it cannot be asked).
    pub(crate) async fn worker_partial(&self, node: &str, worker_id: &SessionId) -> String {
        let call = PairCall::Partial {
            worker_id: worker_id.into(),
        };
        match self.pair_call(node, worker_id, &call).await {
            Ok(value) => value.as_str().unwrap_or_default().to_string(),
            Err(_) => String::new(),
        }
    }

    /// Interrupts a Worker on `node`.
    pub(crate) async fn abort_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
    ) -> Result<(), RuntimeError> {
        let call = PairCall::Abort {
            worker_id: worker_id.into(),
        };
        self.pair_call(node, worker_id, &call).await.map(|_| ())
    }

    /// Appends an event to a Worker's history on `node` (logged when it fails).
    pub(crate) async fn record_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        event: EventBody,
    ) {
        let call = PairCall::Record {
            worker_id: worker_id.into(),
            event,
        };
        if let Err(e) = self.pair_call(node, worker_id, &call).await {
            tracing::warn!(%node, worker = %worker_id, error = %e, "event not recorded on the Worker");
        }
    }

    /// A Worker's status, title and last `count` turns on `node`.
    pub(crate) async fn read_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        count: usize,
    ) -> Result<WorkerView, RuntimeError> {
        let call = PairCall::Read {
            worker_id: worker_id.into(),
            count,
        };
        let value = self.pair_call(node, worker_id, &call).await?;
        serde_json::from_value(value)
            .map_err(|e| RuntimeError::Internal(format!("bad Worker view from {node}: {e}")))
    }

    /// Takes a Worker on `node` out of its pair (logged when it fails).
    pub(crate) async fn worker_leaves(&self, node: &str, worker_id: &SessionId, pair_id: &PairId) {
        let call = PairCall::Leave {
            worker_id: worker_id.into(),
            pair_id: pair_id.into(),
        };
        if let Err(e) = self.pair_call(node, worker_id, &call).await {
            tracing::warn!(%node, worker = %worker_id, error = %e, "the Worker could not be told its pair closed");
        }
    }
}

impl NodeLink for Cluster {
    fn node(&self) -> &str {
        Cluster::node(self)
    }

    fn copies(&self, session_id: &str) -> bool {
        Cluster::copies(self, session_id)
    }

    fn known(&self, node: &str) -> bool {
        Cluster::known(self, node)
    }

    fn alive(&self, node: &str) -> bool {
        Cluster::alive(self, node)
    }

    fn create_worker(
        &self,
        node: &str,
        spec: RemoteWorkerSpec,
    ) -> LocalBoxFuture<'static, Result<SessionInfo, RuntimeError>> {
        let (this, node) = (self.clone(), node.to_string());
        Box::pin(async move { this.create_worker(&node, spec).await })
    }

    fn start_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        msg: StartOnWorker,
    ) -> LocalBoxFuture<'static, Result<TurnId, RuntimeError>> {
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move { this.start_on_worker(&node, &worker, msg).await })
    }

    fn worker_partial(&self, node: &str, worker_id: &SessionId) -> LocalBoxFuture<'static, String> {
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move { this.worker_partial(&node, &worker).await })
    }

    fn abort_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>> {
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move { this.abort_worker(&node, &worker).await })
    }

    fn record_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        event: EventBody,
    ) -> LocalBoxFuture<'static, ()> {
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move { this.record_on_worker(&node, &worker, event).await })
    }

    fn holds_delegation(
        &self,
        node: &str,
        worker_id: &SessionId,
        delegation_id: &DelegationId,
    ) -> LocalBoxFuture<'static, Result<bool, RuntimeError>> {
        let call = PairCall::Holds {
            worker_id: worker_id.into(),
            delegation_id: delegation_id.into(),
        };
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move {
            let value = this.pair_call(&node, &worker, &call).await?;
            Ok(value.as_bool().unwrap_or(false))
        })
    }

    fn read_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        count: usize,
    ) -> LocalBoxFuture<'static, Result<WorkerView, RuntimeError>> {
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move { this.read_worker(&node, &worker, count).await })
    }

    fn ask_driver(
        &self,
        node: &str,
        question: crate::record::QuestionRecord,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>> {
        let (this, node) = (self.clone(), node.to_string());
        Box::pin(async move {
            let session = question.driver_id.clone();
            this.pair_call(&node, &session, &PairCall::Ask { question })
                .await
                .map(|_| ())
        })
    }

    fn answer_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        answer: crate::cluster_link::QuestionAnswer,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>> {
        let call = PairCall::Answer {
            worker_id: worker_id.into(),
            answer,
        };
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move { this.pair_call(&node, &worker, &call).await.map(|_| ()) })
    }

    fn ask_approval(
        &self,
        node: &str,
        need: crate::cluster_link::ApprovalNeed,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>> {
        let (this, node) = (self.clone(), node.to_string());
        Box::pin(async move {
            let session = need.ask.worker_id.clone();
            this.pair_call(&node, &session, &PairCall::Approval { need })
                .await
                .map(|_| ())
        })
    }

    fn approve_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        answer: crate::cluster_link::ApprovalAnswer,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>> {
        let call = PairCall::Approve {
            worker_id: worker_id.into(),
            answer,
        };
        let (this, node, worker) = (self.clone(), node.to_string(), worker_id.clone());
        Box::pin(async move { this.pair_call(&node, &worker, &call).await.map(|_| ()) })
    }

    fn worker_leaves(
        &self,
        node: &str,
        worker_id: &SessionId,
        pair_id: &PairId,
    ) -> LocalBoxFuture<'static, ()> {
        let (this, node, worker, pair) = (
            self.clone(),
            node.to_string(),
            worker_id.clone(),
            pair_id.clone(),
        );
        Box::pin(async move { this.worker_leaves(&node, &worker, &pair).await })
    }
}

/// Answers pair messages sent to this node, for the life of the server.
pub(super) async fn serve(cluster: Cluster) -> Result<(), ClusterError> {
    let subject = pairs_subject(cluster.node());
    let this = cluster.clone();
    cluster
        .serve_subject(subject, "pair subject", move |payload| {
            let cluster = this.clone();
            async move {
                let answer = match serde_json::from_slice::<PairCall>(&payload) {
                    Ok(call) => match answer(&cluster, call).await {
                        Ok(value) => PairAnswer::Ok(value),
                        Err(e) => PairAnswer::Err {
                            code: e.code(),
                            message: e.to_string(),
                        },
                    },
                    Err(e) => PairAnswer::Err {
                        code: ErrorCode::InvalidArgument,
                        message: format!("bad pair message: {e}"),
                    },
                };
                // An answer holds JSON, a code and a message, so writing it cannot
                // fail; were it to, the asker still gets a refusal it can read
                // (rather than an empty answer), and the log says why.
                serde_json::to_vec(&answer).unwrap_or_else(|e| {
                    tracing::error!(error = %e, "cannot serialize a pair answer");
                    UNWRITABLE.to_vec()
                })
            }
        })
        .await
}

/// Runs one pair message here.
async fn answer(cluster: &Cluster, call: PairCall) -> Result<serde_json::Value, RuntimeError> {
    let rt = &cluster.inner.runtime;
    let worker = |id: &SessionId| worker_addr(rt, id);
    Ok(match call {
        PairCall::CreateWorker(spec) => serde_json::to_value(rt.create_remote_worker(spec).await?)
            .map_err(|e| RuntimeError::Internal(e.to_string()))?,
        PairCall::Start {
            worker_id,
            text,
            driver_id,
            pair_id,
            delegation_id,
            pair_node,
            approvals,
        } => {
            let start = crate::session::StartDelegated {
                text,
                driver_id,
                pair_id,
                delegation_id,
                approvals,
                report_to: ReportTo::Node(pair_node),
            };
            serde_json::Value::String(start_delegated(rt, &worker_id, start).await?.into_string())
        }
        PairCall::Partial { worker_id } => {
            serde_json::Value::String(worker(&worker_id)?.send(PartialText).await?)
        }
        PairCall::Abort { worker_id } => {
            worker(&worker_id)?.send(Abort).await??;
            serde_json::Value::Null
        }
        PairCall::Record { worker_id, event } => {
            worker(&worker_id)?.do_send(RecordEvent(event));
            serde_json::Value::Null
        }
        PairCall::Holds {
            worker_id,
            delegation_id,
        } => serde_json::Value::Bool(
            worker(&worker_id)?
                .send(HoldsDelegation { delegation_id })
                .await?,
        ),
        PairCall::Read { worker_id, count } => worker_view(rt, &worker_id, count).await?,
        PairCall::Leave { worker_id, pair_id } => {
            serde_json::Value::Bool(worker(&worker_id)?.send(LeavePair { pair_id }).await?)
        }
        PairCall::Open { pair_id } => serde_json::Value::Bool(rt.pairs().open(&pair_id)?),
        PairCall::Ask { question } => {
            forward_question(rt, question).await?;
            serde_json::Value::Null
        }
        PairCall::Approval { need } => {
            forward_approval_need(rt, need).await?;
            serde_json::Value::Null
        }
        PairCall::Approve { worker_id, answer } => {
            worker(&worker_id)?.send(driver_decision(answer)).await??;
            serde_json::Value::Null
        }
        PairCall::Answer { worker_id, answer } => {
            worker(&worker_id)?.send(driver_answer(answer)).await??;
            serde_json::Value::Null
        }
        PairCall::Ended {
            pair_id,
            delegation_id,
            end,
            changes,
        } => return turn_ended(rt, &pair_id, delegation_id, end, changes).await,
    })
}

/// Hands a question of a Worker on another node to its pair here (`PairCall::Ask`),
/// which asks the Driver.
async fn forward_question(
    rt: &crate::runtime::Runtime,
    question: crate::record::QuestionRecord,
) -> Result<(), RuntimeError> {
    let pair = rt
        .pairs()
        .addr(&question.pair_id)
        .ok_or(crate::error::PairError::DriverGone)?;
    pair.send(crate::pair::WorkerAsks { question }).await??;
    Ok(())
}

/// Hands a permission request of a Worker on another node to its pair here
/// (`PairCall::Approval`), which asks the Driver.
async fn forward_approval_need(
    rt: &crate::runtime::Runtime,
    need: crate::cluster_link::ApprovalNeed,
) -> Result<(), RuntimeError> {
    let pair = rt
        .pairs()
        .addr(&need.pair_id)
        .ok_or(crate::error::PairError::DriverGone)?;
    pair.send(crate::session::WorkerNeedsApproval(need)).await?;
    Ok(())
}

/// Starts a delegated turn in Worker `worker_id` (`PairCall::Start`); its turn id
/// once the Worker's record holding the delegation is on disk.
async fn start_delegated(
    rt: &crate::runtime::Runtime,
    worker_id: &SessionId,
    start: crate::session::StartDelegated,
) -> Result<TurnId, RuntimeError> {
    let epoch = rt.write_epoch();
    let turn = worker_addr(rt, worker_id)?.send(start).await??;
    // The pair hears "started" only once the Worker's record holds the
    // delegation on disk: a crash after that reports it (interrupted) at the
    // restart, and a crash before it leaves nothing that a restarted pair's
    // `HoldsDelegation` would find.
    if !rt.synced_since(epoch).await {
        tracing::error!(worker = %worker_id, "the delegated turn's start is not stored");
    }
    Ok(turn)
}

/// Worker `worker_id`'s status, title and last `count` turns (`PairCall::Read`),
/// as the answer's JSON.
async fn worker_view(
    rt: &crate::runtime::Runtime,
    worker_id: &SessionId,
    count: usize,
) -> Result<serde_json::Value, RuntimeError> {
    let turns = worker_addr(rt, worker_id)?
        .send(crate::session::RecentTurns { count })
        .await??;
    let info = rt
        .sessions()
        .session_info(worker_id)
        .ok_or_else(|| RuntimeError::SessionNotFound(worker_id.into()))?;
    serde_json::to_value(WorkerView {
        status: info.status,
        title: info.title,
        turns: turns.iter().map(|t| t.to_partner_turn()).collect(),
    })
    .map_err(|e| RuntimeError::Internal(e.to_string()))
}

/// The Driver's `answer` to a Worker's permission request, as the Worker's session
/// takes it (`PairCall::Approve`).
fn driver_decision(
    answer: crate::cluster_link::ApprovalAnswer,
) -> crate::session::RespondPermission {
    crate::session::RespondPermission {
        request_id: answer.request_id,
        allow: answer.allow,
        updated_input: None,
        message: answer.message,
        remember: answer
            .remember
            .then_some(tandem_protocol::RememberScope::Session),
        permission_mode: None,
        decided_by: tandem_protocol::Decider::Driver,
    }
}

/// The `answer` to a Worker's waiting question, as the Worker's session takes it
/// (`PairCall::Answer`).
fn driver_answer(answer: crate::cluster_link::QuestionAnswer) -> crate::session::AnswerQuestion {
    crate::session::AnswerQuestion {
        question_id: answer.question_id,
        answer: answer.answer,
        by: answer.by,
    }
}

/// Hands a delegated turn's end reported by the Worker's node to pair `pair_id`
/// (`PairCall::Ended`), and answers "taken" once the outcome is delivered, or at
/// once when the pair does not run here.
async fn turn_ended(
    rt: &crate::runtime::Runtime,
    pair_id: &PairId,
    delegation_id: DelegationId,
    end: ReportedEnd,
    changes: Option<tandem_protocol::workspace::ChangeSummary>,
) -> Result<serde_json::Value, RuntimeError> {
    let Some(pair) = rt.pairs().addr(pair_id) else {
        return taken(Taken::NoPair);
    };
    let (done, delivered) = oneshot::channel();
    pair.send(RemoteTurnEnded {
        ended: crate::session::WorkerTurnEnded {
            delegation_id,
            status: end.status,
            response: end.response,
            error: end.error,
        },
        changes,
        done,
    })
    .await?;
    match tokio::time::timeout(DELIVERY_WAIT, delivered).await {
        // Delivered, or the pair stopped (closed: its closing reported it).
        Ok(_) => taken(Taken::Taken),
        Err(_) => Err(RuntimeError::Internal(
            "the outcome is not delivered yet; report it again".into(),
        )),
    }
}

/// Worker `id`'s session actor on this node.
fn worker_addr(
    rt: &crate::runtime::Runtime,
    id: &SessionId,
) -> Result<actix::Addr<crate::session::SessionActor>, RuntimeError> {
    rt.sessions()
        .session_addr(id)
        .ok_or_else(|| RuntimeError::SessionNotFound(id.into()))
}

/// A [`Taken`] as the answer's JSON. A unit variant writes as its name and cannot
/// fail; were it to, the report is refused (the Worker's node reports again).
fn taken(t: Taken) -> Result<serde_json::Value, RuntimeError> {
    serde_json::to_value(t)
        .map_err(|e| RuntimeError::Internal(format!("cannot write the report's answer: {e}")))
}

/// Takes this node's idle Workers out of pairs that their pairs' nodes closed, for
/// the life of the server. Closing a pair tells its Worker at once when the Worker's
/// node can be reached; this covers a close while it could not (its node down, or
/// NATS): the first check runs as soon as the pair's node is seen, then every
/// [`RECHECK`]. A busy Worker, or one holding a report, learns it from the answer
/// to its report ("no such pair").
pub(super) async fn recheck(cluster: Cluster) {
    let mut tick = tokio::time::interval(RETRY);
    // The other nodes seen alive, with when their pairs were last asked about.
    let mut checked: HashMap<String, tokio::time::Instant> = HashMap::new();
    loop {
        tick.tick().await;
        let alive = cluster.other_nodes();
        // A node that was away is asked again as soon as it is back.
        checked.retain(|node, _| alive.contains(node));
        let due: HashSet<String> = alive
            .into_iter()
            .filter(|n| checked.get(n).is_none_or(|at| at.elapsed() >= RECHECK))
            .collect();
        if due.is_empty() {
            continue;
        }
        for worker in cluster.inner.runtime.pairs().workers() {
            let Ok(Some((pair_id, node))) = worker.send(IdleRemoteWorker).await else {
                continue;
            };
            if !due.contains(&node) {
                continue;
            }
            let call = PairCall::Open {
                pair_id: pair_id.clone(),
            };
            match cluster.pair_call(&node, &pair_id, &call).await {
                Ok(serde_json::Value::Bool(false)) => {
                    tracing::info!(pair = %pair_id, node = %node, "the pair was closed while this node was away; its Worker leaves");
                    worker.do_send(LeavePair { pair_id });
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(pair = %pair_id, error = %e, "pair not checked; retrying")
                }
            }
        }
        let now = tokio::time::Instant::now();
        checked.extend(due.into_iter().map(|node| (node, now)));
    }
}

/// Sends the outbox's reports to their pairs' nodes until each is taken, for the
/// life of the server.
pub(super) async fn report(cluster: Cluster) {
    let mut tick = tokio::time::interval(RETRY);
    loop {
        tick.tick().await;
        for pending in cluster.inner.runtime.peers().outbox().waiting() {
            if cluster.alive(&pending.report.pair_node) {
                send_report(&cluster, pending).await;
            }
        }
    }
}

async fn send_report(cluster: &Cluster, pending: PendingReport) {
    let PendingReport { worker_id, report } = pending;
    let Some(end) = report.ended.clone() else {
        return;
    };
    let rt = &cluster.inner.runtime;
    // Summed up at each try: a report waits for the pair's node only while that node
    // is away, and the Worker takes no other delegation meanwhile.
    let changes = match rt.sessions().session_info(&worker_id) {
        Some(info) => {
            let summary = rt.check_env().delegation_summary(&info).await;
            crate::pair::record_checks(
                rt.sessions().session_handle(&worker_id).as_ref(),
                summary.as_ref(),
            );
            summary
        }
        None => None,
    };
    let call = PairCall::Ended {
        pair_id: report.pair_id.clone(),
        delegation_id: report.delegation_id.clone(),
        end,
        changes,
    };
    let answer = cluster
        .pair_call(&report.pair_node, &report.pair_id, &call)
        .await
        .map(serde_json::from_value::<Taken>);
    match answer {
        Ok(Ok(taken)) => {
            rt.peers().outbox().remove(&report.delegation_id);
            let Some(session) = rt.sessions().session_addr(&worker_id) else {
                return;
            };
            if taken == Taken::NoPair {
                // The pair was closed while this node could not be told.
                session.do_send(LeavePair {
                    pair_id: report.pair_id,
                });
            } else {
                session.do_send(ReportDelivered {
                    delegation_id: report.delegation_id,
                });
            }
        }
        Ok(Err(e)) => {
            tracing::warn!(delegation = %report.delegation_id, error = %e, "bad answer to a report")
        }
        Err(e) => {
            tracing::debug!(delegation = %report.delegation_id, error = %e, "report not taken yet; retrying")
        }
    }
}
