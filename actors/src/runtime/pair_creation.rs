//! Creating a pair: its row, the Driver's membership, its Worker session (here, or
//! on another node: `create_remote_worker` is that node's half), then `active` and
//! its actor ([`super::PairService`] runs it from there). A crash between two steps
//! leaves a `creating` row that start-up rolls forward or back (`reconcile.rs`).

use std::sync::Arc;

use actix::prelude::*;
use tandem_protocol::client::PairCreateParams;
use tandem_protocol::pair::{PairInfo, PairState, WorkerApprovals, WorkerChoice};
use tandem_protocol::workspace::WorkspaceMode;
use tandem_protocol::{Role, SessionInfo};

use super::{NewSession, Runtime};
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::clock::{now_ms, random_id};
use crate::cluster_link::{NodeLink, RemoteWorkerSpec};
use crate::crash::crash_point;
use crate::error::{PairError, RuntimeError};
use crate::ids::{PairId, SessionId};
use crate::record::PairRecord;
use crate::session::{JoinPair, LeavePair, SessionActor};
use crate::store::WriteOp;

/// The cluster, and the other node in it, where a new Worker is created.
type WorkerNode = (Arc<dyn NodeLink>, String);

impl Runtime {
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
            .sessions()
            .session_addr(&id)
            .ok_or_else(|| RuntimeError::Internal("the Worker session vanished".into()))?;
        worker
            .send(JoinPair {
                pair: spec.pair,
                role: Role::Worker,
                pair_node: Some(spec.pair_node),
            })
            .await??;
        self.sessions()
            .session_info(&id)
            .ok_or_else(|| RuntimeError::Internal("the Worker session vanished".into()))
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
            .sessions()
            .session_info(driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.into()))?;
        let driver = self
            .sessions()
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
            Ok(_) => match self.sessions().session_addr(&record.worker_id) {
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
        self.inner.pairs.start(record)?;
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
            .sessions()
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
