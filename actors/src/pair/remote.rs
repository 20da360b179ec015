//! A pair whose Worker is on another cluster node (`pair.create` with `workerNode`).
//!
//! The pair (record, actor, delegation token) always lives on its Driver's node, with
//! `workerNode` in its record; the Worker's membership names the pair's node
//! (`pairNode`), so start-up on the Worker's node leaves that membership alone, and
//! start-up on the pair's node keeps a pair whose Worker is elsewhere. The pair
//! reaches its Worker through a [`WorkerLink`]: the Worker session's address when it
//! is local (direct actor messages, as on a single node), or its node and id, whose
//! messages travel over NATS request/reply (`crate::cluster::pairs`). A Worker whose
//! node's lease lapsed is not asked: a delegation is refused with `NODE_UNAVAILABLE`.
//!
//! The Worker's node reports the delegated turn's end back: the Worker session
//! writes the delegation into its record with the turn's start and the end with the
//! turn's end ([`crate::record::RemoteReport`]), and the report waits in this
//! process's [`crate::cluster_link::Outbox`] until the pair's node acknowledged it,
//! which that node does only once the outcome is delivered and on disk; the pair
//! takes a delegation's end once (by delegation id). So the outcome reaches the
//! Driver exactly once across a restart of either node or a NATS outage:
//! - The Worker's node restarts mid-delegation: its start-up closes the turn as
//!   interrupted and the report goes out once the node is back. The delegation stays
//!   in flight while that node is away, not resolved when its lease lapses: a lease
//!   can lapse while the Worker still works (NATS down), and the real answer comes
//!   later.
//! - The pair's node restarts: the pair starts again holding the delegation and asks
//!   the Worker's node (every second until it can) whether its Worker has it
//!   ([`WorkerLink::holds`]: running it, or holding its end). If it has, the pair
//!   waits for its report; if not, the delegation never reached it and is reported
//!   interrupted, once (e2e
//!   `cluster_pairs::a_delegation_the_workers_node_never_got_is_reported_once_after_a_restart`,
//!   crash point `pair.delegate.remote`). The Driver's waiting `send_to_partner` died
//!   with the node like any turn, so the outcome is pushed back.
//! - A `Start` whose answer does not come back (`RuntimeError::NoAnswer`: the
//!   Worker's node may run it) is not refused: the pair keeps the delegation, tells
//!   the caller it runs (detached), and asks the Worker's node as after a restart
//!   (e2e `cluster_pairs::a_start_whose_answer_is_lost_is_pushed_back_once`, failpoint
//!   `pair.start.lost`).
//!
//! Not covered yet: a pair is always created with a new Worker (no pairing with an
//! existing session, on any node), and a Worker's node that never returns keeps the
//! delegation in flight until the pair is closed.

use std::future::Future;
use std::sync::Arc;

use actix::prelude::*;
use tandem_protocol::EventBody;

use crate::cluster_link::{NodeLink, NodeSlot, StartOnWorker};
use crate::error::RuntimeError;
use crate::ids::{DelegationId, PairId, SessionId, TurnId};
use crate::session::{Abort, LeavePair, PartialText, RecordEvent, SessionActor};

/// How a pair reaches its Worker.
#[derive(Clone)]
pub enum WorkerLink {
    /// On this node: actor messages.
    Local(Addr<SessionActor>),
    /// On another node: NATS request/reply to that node.
    Remote(RemoteWorker),
}

/// A Worker session on another node.
#[derive(Clone)]
pub struct RemoteWorker {
    /// Its node.
    pub node: String,
    /// Its session id.
    pub worker_id: SessionId,
    /// This node's cluster (set once it joined).
    pub cluster: NodeSlot,
}

impl RemoteWorker {
    /// The cluster, when the Worker's node can be asked now.
    fn reachable(&self) -> Result<Arc<dyn NodeLink>, RuntimeError> {
        match self.cluster.get() {
            Some(c) if c.alive(&self.node) => Ok(c.clone()),
            _ => Err(RuntimeError::NodeUnavailable {
                session: self.worker_id.clone(),
                node: self.node.clone(),
            }),
        }
    }
}

impl WorkerLink {
    /// Starts the delegated turn; the outer error is "the Worker could not be asked"
    /// (its actor or node is gone), the inner one the Worker's refusal. A local
    /// Worker reports the turn's end to `pair`.
    pub fn start(
        &self,
        msg: StartOnWorker,
        pair: crate::session::PairInbox,
    ) -> impl Future<Output = Result<Result<TurnId, RuntimeError>, String>> + 'static {
        let link = self.clone();
        async move {
            match link {
                WorkerLink::Local(addr) => addr
                    .send(crate::session::StartDelegated {
                        text: msg.text,
                        driver_id: msg.driver_id,
                        pair_id: msg.pair_id,
                        delegation_id: msg.delegation_id,
                        approvals: msg.approvals,
                        report_to: crate::session::ReportTo::Pair(pair),
                    })
                    .await
                    .map_err(|e| e.to_string()),
                WorkerLink::Remote(w) => match w.reachable() {
                    Ok(cluster) => Ok(cluster.start_on_worker(&w.node, &w.worker_id, msg).await),
                    Err(e) => Ok(Err(e)),
                },
            }
        }
    }

    /// The Worker's assistant text so far (empty when it cannot be asked).
    pub fn partial(&self) -> impl Future<Output = String> + 'static {
        let link = self.clone();
        async move {
            match link {
                WorkerLink::Local(addr) => addr.send(PartialText).await.unwrap_or_default(),
                WorkerLink::Remote(w) => match w.reachable() {
                    Ok(cluster) => cluster.worker_partial(&w.node, &w.worker_id).await,
                    Err(_) => String::new(),
                },
            }
        }
    }

    /// Interrupts the Worker's turn.
    pub fn abort(
        &self,
    ) -> impl Future<Output = Result<Result<(), RuntimeError>, String>> + 'static {
        let link = self.clone();
        async move {
            match link {
                WorkerLink::Local(addr) => addr.send(Abort).await.map_err(|e| e.to_string()),
                WorkerLink::Remote(w) => match w.reachable() {
                    Ok(cluster) => Ok(cluster.abort_worker(&w.node, &w.worker_id).await),
                    Err(e) => Ok(Err(e)),
                },
            }
        }
    }

    /// Appends an event to the Worker's history (best effort on another node: a
    /// Worker's node that cannot be reached misses it).
    pub fn record(&self, body: EventBody) {
        match self {
            WorkerLink::Local(addr) => addr.do_send(RecordEvent(body)),
            WorkerLink::Remote(w) => {
                if let Ok(cluster) = w.reachable() {
                    let (node, worker) = (w.node.clone(), w.worker_id.clone());
                    actix::spawn(
                        async move { cluster.record_on_worker(&node, &worker, body).await },
                    );
                }
            }
        }
    }

    /// Takes the Worker out of the pair (best effort on another node: a Worker whose
    /// node is away leaves when its next report is answered "no such pair").
    pub fn leave(&self, pair_id: PairId) {
        match self {
            WorkerLink::Local(addr) => addr.do_send(LeavePair { pair_id }),
            WorkerLink::Remote(w) => {
                if let Ok(cluster) = w.reachable() {
                    let (node, worker) = (w.node.clone(), w.worker_id.clone());
                    actix::spawn(
                        async move { cluster.worker_leaves(&node, &worker, &pair_id).await },
                    );
                }
            }
        }
    }

    /// For a Worker on another node: whether it knows delegation `delegation_id`;
    /// `None` while it cannot be asked (this node has not joined yet, or that node is
    /// away). A local Worker is never asked (`Some(true)`).
    pub fn holds(
        &self,
        delegation_id: &DelegationId,
    ) -> impl Future<Output = Option<bool>> + 'static {
        let (link, id) = (self.clone(), delegation_id.clone());
        async move {
            match link {
                WorkerLink::Local(_) => Some(true),
                WorkerLink::Remote(w) => match w.reachable() {
                    Ok(cluster) => cluster
                        .holds_delegation(&w.node, &w.worker_id, &id)
                        .await
                        .ok(),
                    Err(_) => None,
                },
            }
        }
    }

    /// True for a Worker on another node.
    pub fn is_remote(&self) -> bool {
        matches!(self, WorkerLink::Remote(_))
    }
}
