//! What pairs and sessions ask of other cluster nodes (`--nats`), as a trait the
//! cluster implements ([`NodeLink`]), so that neither depends on the cluster's code:
//! a pair whose Worker is on another node reaches it through this, and a Worker
//! session keeps the ends of its delegated turns in the [`Outbox`] until the pair's
//! node took them (see [`crate::pair::remote`]). The cluster's reporter sends them;
//! only when the pair's node answered "taken" or "no such pair" does the session
//! drop the report from its record too, so one a crash left goes out again after
//! the restart. On a single node the slot stays empty and the outbox stays empty.

use std::sync::{Arc, OnceLock};

use dashmap::DashMap;
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use tandem_protocol::pair::PairInfo;
use tandem_protocol::{EventBody, SessionInfo};

use crate::error::RuntimeError;
use crate::ids::{DelegationId, PairId, RequestId, SessionId, TurnId, UserId};
use crate::record::RemoteReport;

/// What this node asks of the other nodes for pairs; the cluster implements it.
pub trait NodeLink: Send + Sync {
    /// This node's name.
    fn node(&self) -> &str;
    /// Whether `node` has ever been seen in the cluster.
    fn known(&self, node: &str) -> bool;
    /// Whether `node`'s lease holds.
    fn alive(&self, node: &str) -> bool;
    /// Creates a pair's Worker on `node`.
    fn create_worker(
        &self,
        node: &str,
        spec: RemoteWorkerSpec,
    ) -> LocalBoxFuture<'static, Result<SessionInfo, RuntimeError>>;
    /// Starts a delegated turn in a Worker on `node`; its turn id.
    fn start_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        msg: StartOnWorker,
    ) -> LocalBoxFuture<'static, Result<TurnId, RuntimeError>>;
    /// The Worker's assistant text so far (empty when it cannot be asked).
    fn worker_partial(&self, node: &str, worker_id: &SessionId) -> LocalBoxFuture<'static, String>;
    /// Interrupts a Worker on `node`.
    fn abort_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>>;
    /// Appends an event to a Worker's history on `node` (best effort).
    fn record_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        event: EventBody,
    ) -> LocalBoxFuture<'static, ()>;
    /// Whether a Worker on `node` knows delegation `delegation_id` (runs it, or
    /// holds its end until taken).
    fn holds_delegation(
        &self,
        node: &str,
        worker_id: &SessionId,
        delegation_id: &DelegationId,
    ) -> LocalBoxFuture<'static, Result<bool, RuntimeError>>;
    /// A Worker's status, title and last `count` turns on `node` (`read_partner`).
    fn read_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        count: usize,
    ) -> LocalBoxFuture<'static, Result<WorkerView, RuntimeError>>;
    /// Carries a Worker's question to its pair on `node`, which tells the Driver
    /// (see [`crate::pair::WorkerAsks`]).
    fn ask_driver(
        &self,
        node: &str,
        question: crate::record::QuestionRecord,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>>;
    /// Answers the waiting question of a Worker on `node` (see
    /// [`crate::session::AnswerQuestion`]).
    fn answer_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        answer: QuestionAnswer,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>>;
    /// Carries a Worker's permission request to its pair on `node`, which asks the
    /// Driver.
    fn ask_approval(
        &self,
        node: &str,
        need: ApprovalNeed,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>>;
    /// Answers a permission request of a Worker on `node` in its Driver's name.
    fn approve_on_worker(
        &self,
        node: &str,
        worker_id: &SessionId,
        answer: ApprovalAnswer,
    ) -> LocalBoxFuture<'static, Result<(), RuntimeError>>;
    /// Takes a Worker on `node` out of its pair (best effort).
    fn worker_leaves(
        &self,
        node: &str,
        worker_id: &SessionId,
        pair_id: &PairId,
    ) -> LocalBoxFuture<'static, ()>;
    /// Whether this node keeps a copy of `session_id`, another node's session. After
    /// a failed commit the copy's writes are taken again only once its copier has
    /// restarted from what the store holds, so the runtime leaves that to it.
    fn copies(&self, session_id: &str) -> bool;
}

/// This node's [`NodeLink`] once it joined a cluster; empty on a single node.
pub type NodeSlot = Arc<OnceLock<Arc<dyn NodeLink>>>;

/// What a pair asks of a Worker to start a delegated turn.
#[derive(Debug, Clone)]
pub struct StartOnWorker {
    /// The task.
    pub text: String,
    /// The Driver, named on the Worker's `user_message`.
    pub driver_id: SessionId,
    /// The pair.
    pub pair_id: PairId,
    /// The delegation.
    pub delegation_id: DelegationId,
    /// Who answers the permission requests of the delegated turn.
    pub approvals: tandem_protocol::pair::WorkerApprovals,
}

/// An answer to a Worker's question, sent to the Worker's node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnswer {
    /// The question.
    pub question_id: String,
    /// The answer.
    pub answer: String,
    /// Who answers.
    pub by: tandem_protocol::question::Answerer,
}

/// A Driver's answer to its Worker's permission request (`approve_worker`), sent to
/// the Worker's node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAnswer {
    /// The request.
    pub request_id: RequestId,
    /// Allow or deny.
    pub allow: bool,
    /// Also allow the tool for the rest of the Worker's session.
    pub remember: bool,
    /// Why it was denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A permission request of a delegated turn, for the Driver to answer: what a
/// Worker's session tells its pair when the pair's `workerApprovals` is `driver`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalNeed {
    /// The pair.
    pub pair_id: PairId,
    /// The delegation whose turn asks.
    pub delegation_id: DelegationId,
    /// The request.
    pub ask: tandem_protocol::ApprovalAsk,
}

/// What `read_partner` shows of a Worker on another node, as its node sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerView {
    /// Its status.
    pub status: tandem_protocol::SessionStatus,
    /// Its title.
    pub title: String,
    /// Its last turns, oldest first.
    pub turns: Vec<tandem_protocol::tools::PartnerTurn>,
}

/// What the Driver's node sends the Worker's node to create a pair's Worker there.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteWorkerSpec {
    /// The Worker's id, chosen by the pair's node (the pair record names it).
    pub worker_id: SessionId,
    /// The Driver's owner, who owns the Worker too.
    pub owner_id: UserId,
    /// The Driver's visibility.
    pub visibility: tandem_protocol::Visibility,
    /// The Worker's vendor.
    pub vendor: String,
    /// Model; empty for the vendor's default.
    pub model: String,
    /// Effort; empty for the default.
    pub effort: String,
    /// Its title.
    pub title: String,
    /// The Driver's directory: used when it is usable on the Worker's node.
    pub cwd: String,
    /// The Driver's permission mode.
    pub permission_mode: tandem_protocol::PermissionMode,
    /// A worktree of its own (`workerWorkspace: "worktree"`).
    pub worktree: bool,
    /// The pair it joins.
    pub pair: PairInfo,
    /// The node the pair runs on (the Driver's).
    pub pair_node: String,
}

/// Ends of delegated turns not yet acknowledged by their pair's node, by delegation
/// id. Filled by Worker sessions (when such a turn ends, and at start for reports a
/// restart left); emptied by the cluster's reporter, which sends each until it is
/// acknowledged. Stays empty on a single node.
#[derive(Clone, Default)]
pub struct Outbox {
    pending: Arc<DashMap<DelegationId, PendingReport>>,
}

/// One report waiting for its acknowledgement.
#[derive(Debug, Clone)]
pub struct PendingReport {
    /// The Worker session, told when the report was taken.
    pub worker_id: SessionId,
    /// What is reported (its `ended` is set).
    pub report: RemoteReport,
}

impl Outbox {
    /// Queues (or replaces) a report.
    pub fn put(&self, worker_id: &SessionId, report: RemoteReport) {
        self.pending.insert(
            report.delegation_id.clone(),
            PendingReport {
                worker_id: worker_id.into(),
                report,
            },
        );
    }

    /// Every report waiting now.
    pub fn waiting(&self) -> Vec<PendingReport> {
        self.pending.iter().map(|r| r.value().clone()).collect()
    }

    /// Drops a report (acknowledged, or its pair is gone).
    pub fn remove(&self, delegation_id: &DelegationId) {
        self.pending.remove(delegation_id);
    }
}
