//! [`PairService`]: the pairs that run on this node: found by id, listed, closed,
//! started once created (`pair_creation.rs` creates them, with their Worker session)
//! or restored at start-up, and how each reaches its Worker (here, or on its node).

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use tandem_protocol::pair::{PairInfo, PairState};
use tandem_protocol::Role;

use super::SessionAccess;
use crate::access::Principal;
use crate::error::{PairError, RuntimeError};
use crate::ids::{PairId, SessionId};
use crate::pair::remote::{RemoteWorker, WorkerLink};
use crate::pair::{pair_info, ClosePair, PairActor, PairHandle};
use crate::record::PairRecord;
use crate::registry::Registry;
use crate::session::{LeavePair, Services, SessionActor};
use crate::store::WriteOp;

/// The pairs service.
pub struct PairService {
    /// Who may see or drive which session.
    access: SessionAccess,
    /// The pairs with a running actor.
    pairs: Registry<PairId, PairHandle>,
    /// What pair actors are built with (the store, the writer, the cluster).
    services: Arc<Services>,
    /// This node's name in a cluster.
    node: Option<String>,
    /// The thread pair actors run on (the sessions').
    arbiter: ArbiterHandle,
}

impl PairService {
    /// Runs pairs on `arbiter` between the sessions `access` finds.
    pub(super) fn new(
        access: SessionAccess,
        services: Arc<Services>,
        node: Option<String>,
        arbiter: ArbiterHandle,
    ) -> Self {
        PairService {
            access,
            pairs: Registry::default(),
            services,
            node,
            arbiter,
        }
    }

    /// A live session actor's address; `None` for an unknown or archived id.
    fn session_addr(&self, id: &SessionId) -> Option<Addr<SessionActor>> {
        self.access.addr(id)
    }

    /// True while pair `id` runs here with a delegation in flight.
    pub(super) fn holds_delegation(&self, id: &PairId) -> bool {
        self.pairs.get(id).is_some_and(|pair| {
            pair.shared
                .lock()
                .map(|record| record.delegation.is_some())
                .unwrap_or(false)
        })
    }

    /// A running pair actor's address; `None` once the pair is closed.
    pub fn addr(&self, id: &PairId) -> Option<Addr<PairActor>> {
        self.pairs.get(id).map(|h| h.addr)
    }

    /// Whether pair `id` is being created or runs here (not closing, not gone): a
    /// Worker on another node asks it to find out whether it still belongs to it.
    pub fn open(&self, id: &PairId) -> Result<bool, RuntimeError> {
        if let Some(handle) = self.pairs.get(id) {
            return Ok(handle
                .shared
                .lock()
                .map_or(true, |r| r.state != PairState::Closed));
        }
        // A pair still being created has a row and no actor yet.
        Ok(self
            .services
            .store
            .load_pair(id)?
            .is_some_and(|r| r.state != PairState::Closed))
    }

    /// The sessions of this node that are the Worker of some pair.
    pub fn workers(&self) -> Vec<Addr<SessionActor>> {
        let mut out = Vec::new();
        self.services.sessions.for_each(|_, h| {
            let info = h.shared.info();
            if info.role == Some(Role::Worker) && info.pair_id.is_some() {
                out.extend(h.addr().ok());
            }
        });
        out
    }

    /// A pair's address and its Worker's id.
    pub fn parts(&self, id: &PairId) -> Option<(Addr<PairActor>, SessionId)> {
        let handle = self.pairs.get(id)?;
        let worker = handle.shared.lock().ok()?.worker_id.clone();
        Some((handle.addr.clone(), worker))
    }

    /// A running pair's actor and its Driver's id (a Worker's question goes there);
    /// `None` once the pair is closed, or when it runs on another node.
    pub fn driver(&self, id: &PairId) -> Option<(Addr<PairActor>, SessionId)> {
        let handle = self.pairs.get(id)?;
        let driver = handle.shared.lock().ok()?.driver_id.clone();
        Some((handle.addr.clone(), driver))
    }

    /// The node of pair `pair_id`'s Worker when it is another one than this (a
    /// question is answered there); `None` for a Worker here or an unknown pair.
    pub(crate) fn remote_worker_node(&self, pair_id: &PairId) -> Option<String> {
        let handle = self.pairs.get(pair_id)?;
        let node = handle.shared.lock().ok()?.worker_node.clone()?;
        (Some(&node) != self.node.as_ref()).then_some(node)
    }

    /// A Worker's status, title and last `count` turns when pair `pair_id`'s Worker
    /// is on another node; `None` when it is on this one.
    pub(crate) async fn read_remote_worker(
        &self,
        pair_id: &PairId,
        count: usize,
    ) -> Option<Result<crate::cluster_link::WorkerView, RuntimeError>> {
        let (node, worker) = {
            let handle = self.pairs.get(pair_id)?;
            let record = handle.shared.lock().ok()?;
            (record.worker_node.clone()?, record.worker_id.clone())
        };
        if Some(&node) == self.node.as_ref() {
            return None;
        }
        let Some(cluster) = self.services.cluster.get().cloned() else {
            return Some(Err(RuntimeError::NodeUnavailable {
                session: worker,
                node,
            }));
        };
        if !cluster.alive(&node) {
            return Some(Err(RuntimeError::NodeUnavailable {
                session: worker,
                node,
            }));
        }
        Some(cluster.read_worker(&node, &worker, count).await)
    }

    /// How a pair reaches its Worker: its actor here, or its node.
    fn worker_link(&self, record: &PairRecord) -> Result<WorkerLink, RuntimeError> {
        if let Some(node) = record.worker_node.clone() {
            return Ok(WorkerLink::Remote(RemoteWorker {
                node,
                worker_id: record.worker_id.clone(),
                cluster: self.services.cluster.clone(),
            }));
        }
        self.session_addr(&record.worker_id)
            .map(WorkerLink::Local)
            .ok_or_else(|| RuntimeError::SessionNotFound(record.worker_id.clone()))
    }

    /// Starts the actor of pair `record`, now `active`, and lists it.
    pub(super) fn start(&self, record: PairRecord) -> Result<(), RuntimeError> {
        let driver = self
            .session_addr(&record.driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(record.driver_id.clone()))?;
        let worker = self.worker_link(&record)?;
        let shared = Arc::new(Mutex::new(record.clone()));
        let services = self.services.clone();
        let actor_shared = shared.clone();
        let id = record.pair_id.clone();
        let pairs = self.pairs.clone();
        let addr = PairActor::start_in_arbiter(&self.arbiter, move |_| {
            PairActor::new(record, actor_shared, services, driver, worker, pairs)
        });
        self.pairs.insert(id, PairHandle { addr, shared });
        Ok(())
    }

    /// Starts the actor of an active pair loaded from the store (start-up has
    /// reconciled it: both sessions exist and belong to it).
    pub(super) fn restore(&self, record: PairRecord) {
        let id = record.pair_id.clone();
        if let Err(e) = self.start(record) {
            // Reconciliation checked both sessions; this is a bug, not a crash leftover.
            tracing::error!(pair = %id, error = %e, "a reconciled pair could not start");
        }
    }

    /// `pair.close`: a person dissolves a pair whose Driver they may drive. A pair
    /// that has no running actor (its creation is half done, or it is gone while a
    /// session still names it) is dissolved too: every session naming it that the
    /// caller may drive leaves it, so a Driver can always be freed.
    pub async fn close(&self, who: &Principal, pair_id: &PairId) -> Result<bool, RuntimeError> {
        let driver_id = self
            .pairs
            .get(pair_id)
            .and_then(|h| h.shared.lock().ok().map(|r| r.driver_id.clone()));
        let Some(driver_id) = driver_id else {
            return self.close_stray(who, pair_id).await;
        };
        self.access.drivable(who, &driver_id)?;
        let addr = self
            .addr(pair_id)
            .ok_or_else(|| PairError::NoSuchPair(pair_id.into()))?;
        Ok(addr.send(ClosePair).await??)
    }

    /// Clears the memberships of a pair with no actor (see [`PairService::close`]).
    async fn close_stray(&self, who: &Principal, pair_id: &PairId) -> Result<bool, RuntimeError> {
        if pair_id.len() > 128 {
            return Err(PairError::NoSuchPair(PairId::new(
                pair_id.chars().take(32).collect::<String>(),
            ))
            .into());
        }
        let mut members: Vec<(SessionId, Addr<SessionActor>)> = Vec::new();
        self.services.sessions.for_each(|id, h| {
            if h.shared.info().in_pair(pair_id) {
                members.extend(h.addr().ok().map(|addr| (id.clone(), addr)));
            }
        });
        let mut left = false;
        for (id, addr) in members {
            if self.access.drivable(who, &id).is_err() {
                continue;
            }
            // A session still leaving a pair closed a moment ago answers false: the
            // pair was not stray.
            left |= addr
                .send(LeavePair {
                    pair_id: pair_id.clone(),
                })
                .await?;
        }
        if !left {
            return Err(PairError::NoSuchPair(pair_id.into()).into());
        }
        self.services
            .writer
            .write(WriteOp::DeletePair(pair_id.clone()))?;
        Ok(false)
    }

    /// Pairs whose Driver the caller may see.
    pub fn list(&self, who: &Principal) -> Vec<PairInfo> {
        let mut all: Vec<PairInfo> = Vec::new();
        self.pairs.for_each(|_, h| all.extend(pair_info(&h.shared)));
        let mut pairs: Vec<PairInfo> = all
            .into_iter()
            .filter(|p| {
                self.services
                    .sessions
                    .get(&p.driver_id)
                    .is_some_and(|h| who.can_see(&h.shared.info()))
            })
            .collect();
        pairs.sort_by_key(|p| p.created_at);
        pairs
    }
}
