//! Finding, creating, restoring and closing pairs.

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use tandem_protocol::client::WorkerSpec;
use tandem_protocol::pair::{PairInfo, WorkerChoice};
use tandem_protocol::{Role, SessionInfo};

use super::{NewSession, PairHandle, Runtime};
use crate::access::Principal;
use crate::clock::{now_ms, random_id};
use crate::error::RuntimeError;
use crate::pair::{pair_info, ClosePair, PairActor};
use crate::record::PairRecord;
use crate::session::{JoinPair, LeavePair, SessionActor};
use crate::store::WriteOp;

impl Runtime {
    /// A session actor's address.
    pub fn session_addr(&self, id: &str) -> Option<Addr<SessionActor>> {
        self.inner.sessions.get(id).map(|h| h.addr.clone())
    }

    /// A session's published metadata.
    pub fn session_info(&self, id: &str) -> Option<SessionInfo> {
        self.inner.sessions.get(id).map(|h| h.shared.info())
    }

    /// A pair actor's address.
    pub fn pair_addr(&self, id: &str) -> Option<Addr<PairActor>> {
        self.inner.pairs.get(id).map(|h| h.addr.clone())
    }

    /// A pair's address and its Worker's id.
    pub fn pair_parts(&self, id: &str) -> Option<(Addr<PairActor>, String)> {
        let handle = self.inner.pairs.get(id)?;
        let worker = handle.shared.lock().ok()?.worker_id.clone();
        Some((handle.addr.clone(), worker))
    }

    /// Drops a dissolved pair from the registry.
    pub(crate) fn forget_pair(&self, id: &str) {
        self.inner.pairs.remove(id);
    }

    fn start_pair(&self, record: PairRecord) -> Result<(), RuntimeError> {
        let driver = self
            .session_addr(&record.driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(record.driver_id.clone()))?;
        let worker = self
            .session_addr(&record.worker_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(record.worker_id.clone()))?;
        let shared = Arc::new(Mutex::new(record.clone()));
        let services = self.inner.services.clone();
        let actor_shared = shared.clone();
        let id = record.pair_id.clone();
        let addr = PairActor::start_in_arbiter(&self.inner.sessions_arbiter.handle(), move |_| {
            PairActor::new(record, actor_shared, services, driver, worker)
        });
        self.inner.pairs.insert(id, PairHandle { addr, shared });
        Ok(())
    }

    /// Starts the actor of a pair loaded from the store. A pair whose sessions are
    /// gone is removed.
    pub(super) fn restore_pair(&self, record: PairRecord) {
        let id = record.pair_id.clone();
        if let Err(e) = self.start_pair(record) {
            tracing::warn!(pair = %id, error = %e, "dropping a pair whose sessions are gone");
            let _ = self.inner.services.writer.write(WriteOp::DeletePair(id));
        }
    }

    /// Creates a Worker session for `driver_id` and pairs the two. The Driver is
    /// claimed first, so two concurrent calls cannot give it two Workers.
    pub async fn pair_with_new_worker(
        &self,
        driver_id: &str,
        choice: WorkerChoice,
    ) -> Result<PairInfo, RuntimeError> {
        let driver_info = self
            .session_info(driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.to_string()))?;
        let driver = self
            .session_addr(driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.to_string()))?;
        if driver_info.pair_id.is_some() {
            return Err(RuntimeError::InvalidArgument(
                "this session already has a Worker".into(),
            ));
        }
        let spec = self
            .inner
            .services
            .catalog
            .get(&choice.vendor)
            .ok_or_else(|| {
                RuntimeError::InvalidArgument(format!("unknown vendor `{}`", choice.vendor))
            })?;
        if !spec.installed {
            return Err(RuntimeError::VendorNotInstalled(choice.vendor));
        }
        let record = PairRecord {
            pair_id: random_id("pair_", 8),
            driver_id: driver_id.to_string(),
            worker_id: random_id("ses_", 12),
            created_at: now_ms(),
            delegation: None,
        };
        let info = record.to_info();
        driver
            .send(JoinPair {
                pair: info.clone(),
                role: Role::Driver,
            })
            .await??;
        let created = self
            .new_session(NewSession {
                id: Some(record.worker_id.clone()),
                owner_id: driver_info.owner_id.clone(),
                visibility: driver_info.visibility,
                vendor: choice.vendor,
                model: choice.model,
                effort: choice.effort,
                title: Some(worker_title(&driver_info.title)),
                cwd: driver_info.cwd.clone(),
                permission_mode: driver_info.permission_mode,
                parent_id: None,
                pending_prompt: None,
                handoff_from: None,
            })
            .await;
        let joined = match created {
            Ok(_) => match self.session_addr(&record.worker_id) {
                Some(worker) => worker
                    .send(JoinPair {
                        pair: info.clone(),
                        role: Role::Worker,
                    })
                    .await
                    .map_err(RuntimeError::from)
                    .and_then(|r| r),
                None => Err(RuntimeError::Internal("the Worker session vanished".into())),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = joined {
            driver.do_send(LeavePair {
                pair_id: record.pair_id.clone(),
            });
            return Err(e);
        }
        self.inner
            .services
            .writer
            .write(WriteOp::Pair(Box::new(record.clone())))?;
        self.start_pair(record)?;
        Ok(info)
    }

    /// `pair.create`: a new Worker for a Driver the caller may drive.
    pub async fn create_pair(
        &self,
        who: &Principal,
        driver_id: &str,
        worker: WorkerSpec,
    ) -> Result<PairInfo, RuntimeError> {
        self.drivable(who, driver_id)?;
        let info = self
            .session_info(driver_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(driver_id.to_string()))?;
        if info.parent_id.is_some() {
            return Err(RuntimeError::InvalidArgument(
                "a spawned session cannot drive a pair".into(),
            ));
        }
        self.pair_with_new_worker(
            driver_id,
            WorkerChoice {
                vendor: worker.vendor,
                model: worker.model.unwrap_or_default(),
                effort: worker.effort.unwrap_or_default(),
            },
        )
        .await
    }

    /// `pair.close`: a person dissolves a pair whose Driver they may drive.
    pub async fn close_pair(&self, who: &Principal, pair_id: &str) -> Result<bool, RuntimeError> {
        let driver_id = self
            .inner
            .pairs
            .get(pair_id)
            .and_then(|h| h.shared.lock().ok().map(|r| r.driver_id.clone()))
            .ok_or_else(|| RuntimeError::InvalidArgument(format!("no pair {pair_id}")))?;
        self.drivable(who, &driver_id)?;
        let addr = self
            .pair_addr(pair_id)
            .ok_or_else(|| RuntimeError::InvalidArgument(format!("no pair {pair_id}")))?;
        addr.send(ClosePair)
            .await?
            .map_err(RuntimeError::InvalidArgument)
    }

    /// Pairs whose Driver the caller may see.
    pub fn list_pairs(&self, who: &Principal) -> Vec<PairInfo> {
        let mut pairs: Vec<PairInfo> = self
            .inner
            .pairs
            .iter()
            .filter_map(|h| pair_info(&h.shared))
            .filter(|p| {
                self.session_info(&p.driver_id)
                    .is_some_and(|info| who.can_see(&info))
            })
            .collect();
        pairs.sort_by_key(|p| p.created_at);
        pairs
    }
}

/// The title of a Worker created for a Driver.
fn worker_title(driver_title: &str) -> String {
    let title = format!("{driver_title} · Worker");
    title.chars().take(200).collect()
}
