//! Finding, creating, restoring and closing pairs.

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use tandem_protocol::client::PairCreateParams;
use tandem_protocol::pair::{PairInfo, PairState, ProposalStatus, WorkerApprovals, WorkerChoice};
use tandem_protocol::workspace::WorkspaceMode;
use tandem_protocol::{Role, SessionInfo};

use super::reconcile::{self, ProposalFix};
use super::{NewSession, PairHandle, Runtime};
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::clock::{now_ms, random_id};
use crate::cluster_link::{NodeLink, Outbox, RemoteWorkerSpec};
use crate::crash::crash_point;
use crate::error::{PairError, RuntimeError};
use crate::ids::{PairId, SessionId};
use crate::pair::remote::{RemoteWorker, WorkerLink};
use crate::pair::{pair_info, pushback_resume, ClosePair, Delegate, PairActor};
use crate::record::{DelegationRecord, PairRecord};
use crate::session::{JoinPair, LeavePair, ProposalProgress, Resume, SessionActor};
use crate::store::WriteOp;

/// The cluster, and the other node in it, where a new Worker is created.
type WorkerNode = (Arc<dyn NodeLink>, String);

impl Runtime {
    /// A live session actor's address; `None` for an unknown or archived id.
    pub fn session_addr(&self, id: &SessionId) -> Option<Addr<SessionActor>> {
        let handle = self.inner.services.sessions.get(id)?;
        match handle.addr() {
            Ok(addr) => Some(addr),
            Err(e) => {
                tracing::error!(session = %id, error = %e, "the session's actor could not start");
                None
            }
        }
    }

    /// A live session's handle; `None` for an unknown or archived id.
    pub fn session_handle(&self, id: &SessionId) -> Option<crate::session::SessionHandle> {
        self.inner.services.sessions.get(id)
    }

    /// What running a repository's checks needs (a Worker's delegation end on this
    /// node).
    pub fn check_env(&self) -> &crate::checks::CheckEnv {
        &self.inner.services.checks
    }

    /// A live session's published metadata, read without messaging its actor.
    pub fn session_info(&self, id: &SessionId) -> Option<SessionInfo> {
        self.inner
            .services
            .sessions
            .get(id)
            .map(|h| h.shared.info())
    }

    /// A running pair actor's address; `None` once the pair is closed.
    pub fn pair_addr(&self, id: &PairId) -> Option<Addr<PairActor>> {
        self.inner.pairs.get(id).map(|h| h.addr)
    }

    /// Whether pair `id` is being created or runs here (not closing, not gone): a
    /// Worker on another node asks it to find out whether it still belongs to it.
    pub fn pair_open(&self, id: &PairId) -> Result<bool, RuntimeError> {
        if let Some(handle) = self.inner.pairs.get(id) {
            return Ok(handle
                .shared
                .lock()
                .map_or(true, |r| r.state != PairState::Closed));
        }
        // A pair still being created has a row and no actor yet.
        Ok(self
            .inner
            .services
            .store
            .load_pair(id)?
            .is_some_and(|r| r.state != PairState::Closed))
    }

    /// The sessions of this node that are the Worker of some pair.
    pub fn workers(&self) -> Vec<Addr<SessionActor>> {
        let mut out = Vec::new();
        self.inner.services.sessions.for_each(|_, h| {
            let info = h.shared.info();
            if info.role == Some(Role::Worker) && info.pair_id.is_some() {
                out.extend(h.addr().ok());
            }
        });
        out
    }

    /// A pair's address and its Worker's id.
    pub fn pair_parts(&self, id: &PairId) -> Option<(Addr<PairActor>, SessionId)> {
        let handle = self.inner.pairs.get(id)?;
        let worker = handle.shared.lock().ok()?.worker_id.clone();
        Some((handle.addr.clone(), worker))
    }

    /// A running pair's actor and its Driver's id (a Worker's question goes there);
    /// `None` once the pair is closed, or when it runs on another node.
    pub fn pair_driver(&self, id: &PairId) -> Option<(Addr<PairActor>, SessionId)> {
        let handle = self.inner.pairs.get(id)?;
        let driver = handle.shared.lock().ok()?.driver_id.clone();
        Some((handle.addr.clone(), driver))
    }

    /// The node of pair `pair_id`'s Worker when it is another one than this (a
    /// question is answered there); `None` for a Worker here or an unknown pair.
    pub(crate) fn remote_worker_node(&self, pair_id: &PairId) -> Option<String> {
        let handle = self.inner.pairs.get(pair_id)?;
        let node = handle.shared.lock().ok()?.worker_node.clone()?;
        (Some(&node) != self.inner.config.node.as_ref()).then_some(node)
    }

    /// This node's cluster, once it joined one.
    pub(crate) fn cluster_link(&self) -> Option<std::sync::Arc<dyn crate::cluster_link::NodeLink>> {
        self.inner.services.cluster.get().cloned()
    }

    /// A Worker's status, title and last `count` turns when pair `pair_id`'s Worker
    /// is on another node; `None` when it is on this one.
    pub(crate) async fn read_remote_worker(
        &self,
        pair_id: &PairId,
        count: usize,
    ) -> Option<Result<crate::cluster_link::WorkerView, RuntimeError>> {
        let (node, worker) = {
            let handle = self.inner.pairs.get(pair_id)?;
            let record = handle.shared.lock().ok()?;
            (record.worker_node.clone()?, record.worker_id.clone())
        };
        if Some(&node) == self.inner.config.node.as_ref() {
            return None;
        }
        let Some(cluster) = self.inner.services.cluster.get().cloned() else {
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

    /// The store writer (for crash points).
    pub(crate) fn writer(&self) -> &crate::store::StoreWriter {
        &self.inner.services.writer
    }

    /// Start-up, once actors run: reports delegations cut off by a removed pair to
    /// their Drivers (once: keyed by the delegation id), and finishes accepted
    /// proposals that never reached their Worker.
    pub(super) fn finish_after_start(
        &self,
        cut_off: Vec<(PairRecord, DelegationRecord)>,
        proposals: Vec<ProposalFix>,
    ) {
        for (pair, delegation) in cut_off {
            if let Some(driver) = self.session_addr(&pair.driver_id) {
                crate::metrics::Metrics::inc(&self.inner.services.metrics.pushbacks);
                driver.do_send(pushback_resume(
                    &pair,
                    &delegation,
                    &reconcile::cut_off_outcome(&pair),
                ));
            }
        }
        for fix in proposals {
            match fix {
                ProposalFix::Running { .. } => {}
                ProposalFix::Fail {
                    driver_id,
                    proposal_id,
                    reason,
                } => {
                    if let Some(driver) = self.session_addr(&driver_id) {
                        driver.do_send(Resume::proposal_failed(&proposal_id, &reason));
                    }
                }
                ProposalFix::Delegate {
                    driver_id,
                    proposal_id,
                    pair_id,
                    message,
                } => {
                    let (Some(driver), Some((pair, worker_id))) =
                        (self.session_addr(&driver_id), self.pair_parts(&pair_id))
                    else {
                        continue;
                    };
                    tracing::info!(proposal = %proposal_id, "delivering an accepted proposal's task after a restart");
                    // Running first, as on acceptance: a crash before the delegation
                    // is stored leaves `running` with no delegation, which the next
                    // start delegates again.
                    driver.do_send(ProposalProgress {
                        proposal_id: proposal_id.clone(),
                        status: ProposalStatus::Running,
                        worker_id: Some(worker_id),
                        pair_id: Some(pair_id),
                        error: None,
                    });
                    actix::spawn(async move {
                        let sent = pair
                            .send(Delegate {
                                message,
                                wait: false,
                                timeout: std::time::Duration::from_secs(1),
                                proposal_id: Some(proposal_id.clone()),
                            })
                            .await;
                        let error = match sent {
                            Ok(Ok(_)) => return,
                            Ok(Err(e)) => e.to_string(),
                            Err(e) => e.to_string(),
                        };
                        let _ = driver
                            .send(Resume::proposal_failed(&proposal_id, &error))
                            .await;
                    });
                }
            }
        }
    }

    /// The ends of delegated turns this node's Workers ran for pairs on other nodes,
    /// until acknowledged.
    pub(crate) fn outbox(&self) -> &Outbox {
        &self.inner.services.outbox
    }

    /// Records this node's cluster membership (once it joined), so pairs reach
    /// Workers on other nodes.
    pub(crate) fn set_cluster(&self, cluster: std::sync::Arc<dyn NodeLink>) {
        let _ = self.inner.services.cluster.set(cluster);
    }

    /// How a pair reaches its Worker: its actor here, or its node.
    fn worker_link(&self, record: &PairRecord) -> Result<WorkerLink, RuntimeError> {
        if let Some(node) = record.worker_node.clone() {
            return Ok(WorkerLink::Remote(RemoteWorker {
                node,
                worker_id: record.worker_id.clone(),
                cluster: self.inner.services.cluster.clone(),
            }));
        }
        self.session_addr(&record.worker_id)
            .map(WorkerLink::Local)
            .ok_or_else(|| RuntimeError::SessionNotFound(record.worker_id.clone()))
    }

    /// On the Worker's node: creates the Worker of a pair that runs on another node
    /// and joins it to that pair. It works in the Driver's directory when that is
    /// usable here, else in this node's first workspace root.
    pub async fn create_remote_worker(
        &self,
        spec: RemoteWorkerSpec,
    ) -> Result<SessionInfo, RuntimeError> {
        // The owner's roots on this node (a grant in this node's config, else its
        // roots).
        let owner = Principal {
            user_id: spec.owner_id.clone(),
            admin: false,
        };
        let cwd = self
            .resolve_cwd(&owner, Some(&spec.cwd))
            .or_else(|_| self.resolve_cwd(&owner, None))?;
        let id = spec.worker_id.clone();
        self.new_session(NewSession {
            mcp_servers: None,
            resume: None,
            id: Some(id.clone()),
            owner_id: spec.owner_id,
            visibility: spec.visibility,
            vendor: VendorId::from(spec.vendor),
            model: spec.model,
            effort: spec.effort,
            title: Some(spec.title),
            cwd: cwd.to_string_lossy().into_owned(),
            permission_mode: spec.permission_mode,
            parent_id: None,
            pending_prompt: None,
            handoff_from: None,
            fork: None,
            worktree: spec.worktree.then_some(super::create::WorktreeRequest {
                base_ref: None,
                files_from: None,
            }),
        })
        .await?;
        let worker = self
            .session_addr(&id)
            .ok_or_else(|| RuntimeError::Internal("the Worker session vanished".into()))?;
        worker
            .send(JoinPair {
                pair: spec.pair,
                role: Role::Worker,
                pair_node: Some(spec.pair_node),
            })
            .await??;
        self.session_info(&id)
            .ok_or_else(|| RuntimeError::Internal("the Worker session vanished".into()))
    }

    fn start_pair(&self, record: PairRecord) -> Result<(), RuntimeError> {
        let driver = self
            .session_addr(&record.driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(record.driver_id.clone()))?;
        let worker = self.worker_link(&record)?;
        let shared = Arc::new(Mutex::new(record.clone()));
        let services = self.inner.services.clone();
        let actor_shared = shared.clone();
        let id = record.pair_id.clone();
        let pairs = self.inner.pairs.clone();
        let addr = PairActor::start_in_arbiter(&self.inner.sessions_arbiter.handle(), move |_| {
            PairActor::new(record, actor_shared, services, driver, worker, pairs)
        });
        self.inner.pairs.insert(id, PairHandle { addr, shared });
        Ok(())
    }

    /// Starts the actor of an active pair loaded from the store (start-up has
    /// reconciled it: both sessions exist and belong to it).
    pub(super) fn restore_pair(&self, record: PairRecord) {
        let id = record.pair_id.clone();
        if let Err(e) = self.start_pair(record) {
            // Reconciliation checked both sessions; this is a bug, not a crash leftover.
            tracing::error!(pair = %id, error = %e, "a reconciled pair could not start");
        }
    }

    /// Creates a Worker session for `driver_id` and pairs the two: the Driver's
    /// first Worker, or one more (each Worker is a pair of its own, so delegations to
    /// different Workers run at once). The Driver joins first, and its actor refuses
    /// a name taken or a Worker too many, so two concurrent calls cannot both pass.
    pub async fn pair_with_new_worker(
        &self,
        driver_id: &SessionId,
        choice: WorkerChoice,
        workspace: Option<WorkspaceMode>,
        worker_node: Option<String>,
        worker_approvals: WorkerApprovals,
        worker_name: Option<String>,
    ) -> Result<PairInfo, RuntimeError> {
        let workspace = workspace.unwrap_or(self.inner.config.worker_workspace);
        // Another node's Worker: that node must be in the cluster and available.
        let worker_node = worker_node.filter(|n| Some(n) != self.inner.config.node.as_ref());
        let remote = self.worker_node_link(worker_node.as_ref())?;
        let driver_info = self
            .session_info(driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.into()))?;
        let driver = self
            .session_addr(driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.into()))?;
        let worker_name = new_worker_name(&driver_info, &choice, worker_name)?;
        if remote.is_none() {
            // Another node checks its own catalog.
            self.check_vendor_installed(&choice.vendor)?;
        }
        let record = PairRecord {
            pair_id: PairId::new(random_id("pair_", 8)),
            driver_id: driver_id.into(),
            worker_id: SessionId::new(random_id("ses_", 12)),
            created_at: now_ms(),
            delegation: None,
            worker_node: worker_node.clone(),
            state: PairState::Creating,
            worker_approvals,
            worker_name,
        };
        // Row first (`creating`), then the memberships, then `active`: a crash between
        // two steps leaves a `creating` row that start-up rolls forward or back.
        let writer = &self.inner.services.writer;
        writer.write(WriteOp::Pair(Box::new(record.clone())))?;
        crash_point(writer, "pair.create.row").await;
        let info = record.to_info();
        self.join_driver(&driver, &record, info.clone()).await?;
        crash_point(writer, "pair.create.driver").await;
        if let Some((cluster, node)) = remote {
            let spec = RemoteWorkerSpec {
                worker_id: record.worker_id.clone(),
                owner_id: driver_info.owner_id.clone(),
                visibility: driver_info.visibility,
                vendor: choice.vendor,
                model: choice.model,
                effort: choice.effort,
                title: worker_title(&driver_info, &record.worker_name),
                cwd: driver_info.cwd.clone(),
                permission_mode: driver_info.permission_mode,
                worktree: workspace == WorkspaceMode::Worktree,
                pair: info.clone(),
                pair_node: self.inner.config.node.clone().unwrap_or_default(),
            };
            let made = cluster.create_worker(&node, spec).await;
            return self
                .finish_creation(record, &driver, made.map(|_| ()))
                .await;
        }
        let joined = self
            .create_local_worker(&record, &driver_info, choice, workspace, info)
            .await;
        self.finish_creation(record, &driver, joined).await
    }

    /// Joins the Driver to the pair being created (its `creating` row is stored); when
    /// it refuses, nobody joined, so the row alone goes.
    async fn join_driver(
        &self,
        driver: &Addr<SessionActor>,
        record: &PairRecord,
        info: PairInfo,
    ) -> Result<(), RuntimeError> {
        if let Err(e) = driver
            .send(JoinPair {
                pair: info,
                role: Role::Driver,
                pair_node: None,
            })
            .await
            .map_err(RuntimeError::from)
            .and_then(|r| r)
        {
            // Nobody joined: the row alone goes.
            let writer = &self.inner.services.writer;
            let _ = writer.write(WriteOp::DeletePair(record.pair_id.clone()));
            return Err(e);
        }
        Ok(())
    }

    /// The cluster and node of a new Worker asked for on another node (`None`: on
    /// this one); refused when this server is in no cluster, or that node is not in
    /// it or not available.
    fn worker_node_link(
        &self,
        worker_node: Option<&String>,
    ) -> Result<Option<WorkerNode>, RuntimeError> {
        let Some(node) = worker_node else {
            return Ok(None);
        };
        let cluster = self.inner.services.cluster.get().ok_or_else(|| {
            RuntimeError::unusable(format!(
                "workerNode `{node:.64}`: this server is not in a cluster"
            ))
        })?;
        if !cluster.known(node) {
            return Err(RuntimeError::unusable(format!(
                "no node `{node:.64}` in the cluster"
            )));
        }
        if !cluster.alive(node) {
            return Err(RuntimeError::NodeUnavailable {
                session: "the new Worker".into(),
                node: node.clone(),
            });
        }
        Ok(Some((cluster.clone(), node.clone())))
    }

    /// Refuses a Worker vendor this node's catalog does not know or has not
    /// installed.
    fn check_vendor_installed(&self, vendor: &str) -> Result<(), RuntimeError> {
        let spec = self
            .inner
            .services
            .catalog
            .get(&VendorId::from(vendor))
            .ok_or_else(|| RuntimeError::unusable(format!("unknown vendor `{vendor:.64}`")))?;
        if !spec.installed {
            return Err(RuntimeError::VendorNotInstalled(vendor.to_string()));
        }
        Ok(())
    }

    /// Creates pair `record`'s Worker session on this node (in the Driver's
    /// directory, its own worktree when `workspace` says so) and joins it to the pair
    /// described by `info`.
    async fn create_local_worker(
        &self,
        record: &PairRecord,
        driver_info: &SessionInfo,
        choice: WorkerChoice,
        workspace: WorkspaceMode,
        info: PairInfo,
    ) -> Result<(), RuntimeError> {
        let created = self
            .new_session(NewSession {
                mcp_servers: self.chosen_mcp_servers(&driver_info.id),
                resume: None,
                id: Some(record.worker_id.clone()),
                owner_id: driver_info.owner_id.clone(),
                visibility: driver_info.visibility,
                vendor: VendorId::from(choice.vendor),
                model: choice.model,
                effort: choice.effort,
                title: Some(worker_title(driver_info, &record.worker_name)),
                cwd: driver_info.cwd.clone(),
                permission_mode: driver_info.permission_mode,
                parent_id: None,
                pending_prompt: None,
                handoff_from: None,
                fork: None,
                worktree: (workspace == WorkspaceMode::Worktree).then_some(
                    super::create::WorktreeRequest {
                        base_ref: None,
                        files_from: None,
                    },
                ),
            })
            .await;
        match created {
            Ok(_) => match self.session_addr(&record.worker_id) {
                Some(worker) => worker
                    .send(JoinPair {
                        pair: info,
                        role: Role::Worker,
                        pair_node: None,
                    })
                    .await
                    .map_err(RuntimeError::from)
                    .and_then(|r| r),
                None => Err(RuntimeError::Internal("the Worker session vanished".into())),
            },
            Err(e) => Err(e),
        }
    }

    /// The last steps of [`Runtime::pair_with_new_worker`] once the Worker joined (or
    /// could not be made): `active` and the actor, or the rollback.
    async fn finish_creation(
        &self,
        mut record: PairRecord,
        driver: &Addr<SessionActor>,
        joined: Result<(), RuntimeError>,
    ) -> Result<PairInfo, RuntimeError> {
        let writer = &self.inner.services.writer;
        if let Err(e) = joined {
            // Roll back: the row goes `closed` before the Driver leaves, so a crash
            // in between is finished by start-up. The refusal is answered once the
            // Driver has left: a caller reading it right after sees no pair.
            record.state = PairState::Closed;
            let _ = writer.write(WriteOp::Pair(Box::new(record.clone())));
            if let Err(e) = driver
                .send(LeavePair {
                    pair_id: record.pair_id.clone(),
                })
                .await
            {
                tracing::warn!(pair = %record.pair_id, error = %e, "the Driver could not leave a refused pair");
            }
            let _ = writer.write(WriteOp::DeletePair(record.pair_id.clone()));
            return Err(e);
        }
        crash_point(writer, "pair.create.worker").await;
        record.state = PairState::Active;
        writer.write(WriteOp::Pair(Box::new(record.clone())))?;
        let info = record.to_info();
        self.start_pair(record)?;
        Ok(info)
    }

    /// `pair.create`: a new Worker for a Driver the caller may drive.
    pub async fn create_pair(
        &self,
        who: &Principal,
        params: PairCreateParams,
    ) -> Result<PairInfo, RuntimeError> {
        let driver_id = &params.driver_id;
        self.access().drivable(who, driver_id)?;
        let info = self
            .session_info(driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.into()))?;
        if info.parent_id.is_some() {
            return Err(PairError::SpawnedDriver.into());
        }
        self.pair_with_new_worker(
            driver_id,
            WorkerChoice {
                vendor: params.worker.vendor,
                model: params.worker.model.unwrap_or_default(),
                effort: params.worker.effort.unwrap_or_default(),
            },
            params.worker_workspace,
            params.worker_node,
            params.worker_approvals.unwrap_or_default(),
            params.worker_name,
        )
        .await
    }

    /// `pair.close`: a person dissolves a pair whose Driver they may drive. A pair
    /// that has no running actor (its creation is half done, or it is gone while a
    /// session still names it) is dissolved too: every session naming it that the
    /// caller may drive leaves it, so a Driver can always be freed.
    pub async fn close_pair(
        &self,
        who: &Principal,
        pair_id: &PairId,
    ) -> Result<bool, RuntimeError> {
        let driver_id = self
            .inner
            .pairs
            .get(pair_id)
            .and_then(|h| h.shared.lock().ok().map(|r| r.driver_id.clone()));
        let Some(driver_id) = driver_id else {
            return self.close_stray_pair(who, pair_id).await;
        };
        self.access().drivable(who, &driver_id)?;
        let addr = self
            .pair_addr(pair_id)
            .ok_or_else(|| PairError::NoSuchPair(pair_id.into()))?;
        Ok(addr.send(ClosePair).await??)
    }

    /// Clears the memberships of a pair with no actor (see [`Runtime::close_pair`]).
    async fn close_stray_pair(
        &self,
        who: &Principal,
        pair_id: &PairId,
    ) -> Result<bool, RuntimeError> {
        if pair_id.len() > 128 {
            return Err(PairError::NoSuchPair(PairId::new(
                pair_id.chars().take(32).collect::<String>(),
            ))
            .into());
        }
        let mut members: Vec<(SessionId, Addr<SessionActor>)> = Vec::new();
        self.inner.services.sessions.for_each(|id, h| {
            if h.shared.info().in_pair(pair_id) {
                members.extend(h.addr().ok().map(|addr| (id.clone(), addr)));
            }
        });
        let mut left = false;
        for (id, addr) in members {
            if self.access().drivable(who, &id).is_err() {
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
        self.inner
            .services
            .writer
            .write(WriteOp::DeletePair(pair_id.clone()))?;
        Ok(false)
    }

    /// Pairs whose Driver the caller may see.
    pub fn list_pairs(&self, who: &Principal) -> Vec<PairInfo> {
        let mut all: Vec<PairInfo> = Vec::new();
        self.inner
            .pairs
            .for_each(|_, h| all.extend(pair_info(&h.shared)));
        let mut pairs: Vec<PairInfo> = all
            .into_iter()
            .filter(|p| {
                self.session_info(&p.driver_id)
                    .is_some_and(|info| who.can_see(&info))
            })
            .collect();
        pairs.sort_by_key(|p| p.created_at);
        pairs
    }
}

/// The name of a Driver's new Worker (`worker_name`, else a free one for its
/// vendor), once the Driver may take one more: a Worker cannot drive, and a Driver
/// has at most [`crate::session::MAX_WORKERS`].
fn new_worker_name(
    driver_info: &SessionInfo,
    choice: &WorkerChoice,
    worker_name: Option<String>,
) -> Result<String, RuntimeError> {
    if driver_info.role == Some(Role::Worker) {
        return Err(PairError::AlreadyPaired.into());
    }
    if driver_info.workers.len() >= crate::session::MAX_WORKERS {
        return Err(PairError::TooManyWorkers(crate::session::MAX_WORKERS).into());
    }
    match worker_name {
        Some(name) if !tandem_protocol::pair::valid_worker_name(&name) => {
            Err(PairError::BadWorkerName.into())
        }
        Some(name) => Ok(name),
        None => Ok(free_worker_name(&choice.vendor, &driver_info.workers)),
    }
}

/// The title of a Worker created for a Driver.
/// A new Worker's title: the Driver's and `· Worker`, with the Worker's name when
/// the Driver has others.
fn worker_title(driver: &SessionInfo, name: &str) -> String {
    let title = if driver.workers.is_empty() {
        format!("{} · Worker", driver.title)
    } else {
        format!("{} · Worker {name}", driver.title)
    };
    title.chars().take(200).collect()
}

/// A Worker's default name: its vendor's, with `-2`, `-3`… when a Worker of the
/// Driver has it already.
fn free_worker_name(vendor: &str, taken: &[tandem_protocol::pair::PairedWorker]) -> String {
    let base: String = vendor
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(24)
        .collect();
    let base = if tandem_protocol::pair::valid_worker_name(&base) {
        base
    } else {
        tandem_protocol::pair::default_worker_name()
    };
    let free = |name: &str| !taken.iter().any(|w| w.worker_name == name);
    if free(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|name| free(name))
        .unwrap_or(base)
}
