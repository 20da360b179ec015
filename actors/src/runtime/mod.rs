//! [`Runtime`]: the handle the HTTP layer uses. It finds session actors, checks access
//! against their published metadata, and forwards requests as actor messages.

mod agents;
mod archive;
mod checkpoints;
mod checks;
mod clients;
mod commands;
mod create;
mod devices;
mod edit;
mod external;
mod fleet;
mod fork;
mod handoff;
mod judge;
mod listing;
mod loading;
mod loops;
mod mcp_servers;
mod messages;
mod pairs;
mod peers;
mod push;
mod queue;
mod reconcile;
mod recovery;
mod review;
mod review_by;
mod schedules;
mod scripts;
mod terminals;
mod usage;
mod workspaces;

use create::NewSession;

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};

use actix::prelude::*;
use dashmap::DashMap;
use tandem_protocol::client::{
    ChatPermissionResponseParams, SessionConfigureParams, SessionCreateParams,
};
use tandem_protocol::rest::{RunningSession, VendorInfo};
use tandem_protocol::{SessionInfo, SessionStatus};

use crate::access::Principal;
use crate::adapter::model_cache::{CachedModels, ModelCache};
use crate::adapter::{clamp_effort, VendorCatalog, VendorId};
use crate::clock::{now_ms, random_id};
use crate::config::RuntimeConfig;
use crate::error::{RuntimeError, MAX_ID_BYTES};
use crate::gateway::{Gateway, SessionChanged};
use crate::ids::{PairId, SessionId, UserId};
use crate::mcp_tokens::McpTokens;
use crate::metrics::Metrics;
use crate::pair::PairHandle;
use crate::record::SessionRecord;
use crate::registry::Registry;
use crate::session::{
    Abort, Configure, RespondPermission, Services, SessionActor, SessionHandle, SessionShared,
    StopTask, WakeSession,
};
use crate::store::{Store, StoreFailure, StoreWriter, WriteOp, WriterHooks};

pub use listing::{SessionPage, MAX_SESSIONS_PAGE};
pub use peers::CommitTap;

/// Most events one REST page returns.
pub const MAX_EVENTS_PAGE: usize = 5000;

/// A weak handle on the runtime, held by actors (a strong one would keep the runtime
/// alive through its own actors).
#[derive(Clone, Default)]
pub struct RuntimeRef(Weak<Inner>);

impl RuntimeRef {
    /// The runtime, unless it is shutting down.
    pub fn upgrade(&self) -> Option<Runtime> {
        self.0.upgrade().map(|inner| Runtime { inner })
    }
}

/// The runtime; cheap to clone, shared by every HTTP worker.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    config: RuntimeConfig,
    store: Store,
    services: Arc<Services>,
    /// Live pairs (live sessions are in `services.sessions`).
    pairs: Registry<PairId, PairHandle>,
    /// Token digest → user and when the store was last asked, so a revoked or
    /// rotated token stops working within [`TOKEN_RECHECK`] on a running server.
    tokens: DashMap<crate::store::tokens::TokenDigest, (Principal, std::time::Instant)>,
    /// Sessions per owner, for `max_sessions_per_user`.
    owned: DashMap<UserId, usize>,
    /// Sessions with a merge or discard in flight (one at a time per session; their
    /// turns are refused meanwhile).
    workspace_ops: DashMap<SessionId, ()>,
    /// The thread session actors (and their adapters) run on.
    sessions_arbiter: Arbiter,
    /// Kept so the gateway's thread lives as long as the runtime.
    _gateway_arbiter: Arbiter,
    next_client: AtomicU64,
    /// Also sees every committed batch once set (the cluster's publisher, `--nats`);
    /// unset on a single node, where the writer's hook does nothing more.
    commit_tap: Arc<std::sync::OnceLock<CommitTap>>,
    /// Uploaded files and message attachments.
    uploads: crate::uploads::Uploads,
    /// Where other devices reach this server (`https://LAN-ADDRESS:PORT`), the base of
    /// pairing links, and whether another device can (not a loopback address). Set
    /// once the server listens.
    public_url: std::sync::OnceLock<(String, bool)>,
    /// Sessions' terminals.
    terminals: crate::terminals::Terminals,
    /// The CLI transcripts read so far (`external.list`).
    external: Arc<crate::external::ExternalSessions>,
}

impl Inner {
    /// Starts the actor of a session whose metadata `shared` publishes.
    fn start_actor(
        &self,
        record: SessionRecord,
        last_seq: u64,
        shared: Arc<SessionShared>,
    ) -> Addr<SessionActor> {
        let services = self.services.clone();
        Metrics::inc(&self.services.metrics.session_actors_started);
        SessionActor::start_in_arbiter(&self.sessions_arbiter.handle(), move |_| {
            SessionActor::new(record, last_seq, services, shared)
        })
    }
}

impl WakeSession for Inner {
    /// Reads the dormant session's record back from the store: nothing changed it
    /// since start-up, which wrote every change it made before any actor started.
    fn wake(&self, shared: &Arc<SessionShared>) -> Result<Addr<SessionActor>, RuntimeError> {
        let id = shared.peek(|i| i.id.clone());
        let loaded = self
            .store
            .load_session(&id)?
            .ok_or_else(|| RuntimeError::SessionNotFound(id.clone()))?;
        let mut record = loaded.record;
        // As at start-up: a session from before the node joined a cluster is its.
        if record.node.is_none() {
            record.node = self.config.node.clone();
        }
        tracing::debug!(session = %id, "starting a dormant session's actor");
        let last_seq = loaded.last_seq.max(shared.last_seq());
        Ok(self.start_actor(record, last_seq, shared.clone()))
    }
}

/// What [`Runtime::start`] hands back.
pub struct Started {
    /// The composition root the HTTP layer holds and calls.
    pub runtime: Runtime,
    /// The admin's token when it was created by this start (shown once); `None`
    /// when it already existed (`tandem token show` prints it).
    pub new_admin_token: Option<String>,
}

/// How long a token found in the store is trusted before it is looked up again.
const TOKEN_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

pub use crate::access::ADMIN_USER;

impl Runtime {
    /// Opens the store, closes turns a previous process left open, and starts the
    /// gateway, the store writer and one actor per stored session. Call inside an
    /// actix `System`.
    ///
    /// `tools` makes the tool host sessions hand their adapters; the crate's
    /// [`crate::start`] passes the agent tools built on this runtime.
    pub fn start(
        config: RuntimeConfig,
        tools: impl FnOnce(RuntimeRef) -> crate::adapter::Tools,
    ) -> Result<Started, RuntimeError> {
        let metrics = Arc::new(Metrics::default());
        let store = Store::open(&config.data_dir)?;
        crate::adapter::old_history::upgrade(&store)?;
        let new_admin_token = store.ensure_admin()?;
        let pairs = store.load_pairs()?;
        let loading::Loaded {
            active: mut loaded,
            dormant,
        } = loading::load(&store, &pairs, config.node.as_ref())?;
        recovery::recover_interrupted_turns(&store, &mut loaded)?;
        let plan = {
            let records: Vec<&SessionRecord> = loaded.iter().map(|s| &s.record).collect();
            reconcile::plan(&pairs, &records)
        };
        let after_start = reconcile::apply(&store, &mut loaded, plan)?;

        let gateway_arbiter = Arbiter::new();
        let gw_store = store.clone();
        let gw_metrics = metrics.clone();
        let ring = config.ring_events;
        let stall = config.client_stall;
        let total_cap = config.total_queue_bytes;
        let gateway = Gateway::start_in_arbiter(&gateway_arbiter.handle(), move |_| {
            Gateway::new(gw_store, gw_metrics, ring, stall, total_cap)
        });
        let committed_to = gateway.clone();
        let commit_tap: Arc<std::sync::OnceLock<CommitTap>> = Arc::default();
        let tap = commit_tap.clone();
        // The writer starts before the runtime exists; failures reach the sessions
        // through this once it does.
        let failures_to: Arc<std::sync::OnceLock<RuntimeRef>> = Arc::default();
        let failures = failures_to.clone();
        let db_path = store.path().to_path_buf();
        let give_up_after = config.store_give_up;
        let writer = StoreWriter::start(
            &store,
            config.commit_batch,
            give_up_after,
            metrics.clone(),
            WriterHooks {
                on_commit: Box::new(move |events| {
                    if let Some(tap) = tap.get() {
                        tap(&events);
                    }
                    committed_to.do_send(crate::gateway::Committed(events))
                }),
                on_failure: Box::new(move |failure| {
                    if let Some(rt) = failures.get().and_then(RuntimeRef::upgrade) {
                        rt.store_failed(failure);
                    }
                }),
                on_give_up: Box::new(move |error| {
                    tracing::error!(path = %db_path.display(), %error, "store keeps failing; stopping");
                    eprintln!(
                        "tandem: the database {} could not be written for {} s ({error}); stopping",
                        db_path.display(),
                        give_up_after.as_secs()
                    );
                    std::process::exit(1);
                }),
            },
        )?;
        let vendors = crate::adapter::Vendors::from_config(&config.vendors);
        let catalog = Arc::new(VendorCatalog::new(vendors.specs()));
        for (id, models) in &config.configured_models {
            catalog.add_configured_models(&VendorId::from(id.as_str()), models);
        }
        let uploads =
            crate::uploads::Uploads::open(&config.data_dir, store.clone(), config.uploads)?;
        let checks = crate::checks::CheckEnv {
            launcher: config.confinement.launcher.clone(),
            private: config.private_paths(),
            reviewer: None,
            judge: None,
        };
        let scripts = crate::scripts::Scripts::new(
            config.confinement.launcher.clone(),
            config.worktree_ports.clone(),
            &config.data_dir,
        );
        let push = crate::push::Push::open(&config.data_dir, store.clone())?;
        let terminals = crate::terminals::Terminals::new(
            config.terminals.clone(),
            config.confinement.launcher.clone(),
        );
        terminals.start_sweeper();
        let mcp = McpTokens::default();
        let mcp_servers = crate::adapter::mcp_servers::registry::McpServers::new(
            config.mcp_servers.clone(),
            store
                .mcp_servers()?
                .into_iter()
                .map(|(user, entry)| (user, entry.into()))
                .collect(),
        );
        let max_concurrent_turns = config.max_concurrent_turns;
        let fleet = crate::adapter::fleet::Fleet::new(
            config.max_live_processes,
            config.max_process_rss_mib.map(|mib| mib << 20),
        );
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| Inner {
            config,
            store: store.clone(),
            services: Arc::new(Services {
                writer,
                gateway,
                metrics,
                catalog,
                vendors,
                mcp,
                mcp_servers,
                tools: tools(RuntimeRef(weak.clone())),
                sessions: Registry::default(),
                store: store.clone(),
                owners: crate::owners::Owners::new(store.clone()),
                outbox: Default::default(),
                cluster: Default::default(),
                overlaps: Default::default(),
                checks: crate::checks::CheckEnv {
                    reviewer: Some(review_by::delegation_reviewer(RuntimeRef(weak.clone()))),
                    judge: Some(judge::loop_judge(RuntimeRef(weak.clone()))),
                    ..checks
                },
                scripts,
                push,
                failover: Some(handoff::failover(RuntimeRef(weak.clone()))),
                fleet,
                turns: crate::turn_slots::TurnSlots::new(max_concurrent_turns),
            }),
            pairs: Registry::default(),
            tokens: DashMap::new(),
            owned: DashMap::new(),
            workspace_ops: DashMap::new(),
            sessions_arbiter: Arbiter::new(),
            _gateway_arbiter: gateway_arbiter,
            next_client: AtomicU64::new(1),
            commit_tap,
            uploads,
            public_url: std::sync::OnceLock::new(),
            terminals,
            external: Arc::default(),
        });
        let runtime = Runtime { inner };
        let _ = failures_to.set(RuntimeRef(Arc::downgrade(&runtime.inner)));
        for session in dormant {
            runtime.count_owned(session.owner_id);
            runtime.register(session.id, session.shared, None);
        }
        let mut waiting_children: Vec<(SessionId, SessionId)> = Vec::new();
        for session in loaded {
            if let (Some(parent), true) = (
                session.record.parent_id.clone(),
                session.record.pending_prompt.is_some(),
            ) {
                waiting_children.push((parent, session.record.id.clone()));
            }
            runtime.count_owned(session.record.owner_id.clone());
            runtime.spawn_session(session.record, session.last_seq);
        }
        let reconcile::AfterStart {
            start,
            cut_off,
            proposals,
        } = after_start;
        for record in start {
            runtime.restore_pair(record);
        }
        runtime.finish_after_start(cut_off, proposals);
        runtime.recover_workspaces();
        // Spawned sessions that were still waiting for a slot go back in their
        // parent's queue.
        for (parent, child) in waiting_children {
            if let Some(addr) = runtime.session_addr(&parent) {
                addr.do_send(crate::session::SpawnChildren {
                    children: vec![child],
                });
            }
        }
        runtime.probe_vendor_versions();
        Ok(Started {
            runtime,
            new_admin_token,
        })
    }

    /// Checks each installed vendor CLI in the background (version, supported range,
    /// login, models; no tokens spent); `GET /vendors` shows it once known. Until then
    /// it shows the models the CLIs reported last time (the model cache), and each new
    /// report replaces them there too.
    fn probe_vendor_versions(&self) {
        let catalog = self.inner.services.catalog.clone();
        let cache = Arc::new(ModelCache::new(&self.inner.config.data_dir));
        let installed = catalog.installed();
        for (id, cached) in cache.load() {
            let id = VendorId::from(id);
            if installed.contains(&id) {
                catalog.set_models(&id, cached);
            }
        }
        for (id, probe) in self.inner.services.vendors.probes() {
            let catalog = catalog.clone();
            let cache = cache.clone();
            actix::spawn(async move {
                let health = probe.await;
                if let Some(problem) = &health.problem {
                    tracing::warn!(vendor = %id, %problem, "vendor check");
                }
                let models = health.models.clone().unwrap_or_default();
                let effort_levels = health.effort_levels.clone().unwrap_or_default();
                if !models.is_empty() || !effort_levels.is_empty() {
                    let default_model = health.default_model.clone();
                    cache.store(
                        &id,
                        CachedModels {
                            models,
                            default_model,
                            effort_levels,
                        },
                    );
                }
                catalog.set_health(&id, health);
            });
        }
    }

    /// Tells the runtime where it is served (`http://HOST:PORT`), once bound: vendor
    /// CLIs reach the agent tools at `/mcp` under it.
    pub fn set_base_url(&self, base: &str) {
        self.inner.services.mcp.set_base_url(base);
    }

    /// Kills the worktrees' scripts, the terminals' processes and the vendor processes
    /// adapters started, and waits (briefly) until the vendors' have exited; called
    /// when the server stops, so no CLI, script or shell outlives it.
    pub async fn stop_vendor_processes(&self) {
        self.inner.services.scripts.shutdown();
        self.stop_terminals();
        let limit = std::time::Duration::from_secs(5);
        self.inner.services.vendors.shutdown(limit).await;
    }

    /// The principal used when authentication is off (`--auth none`, loopback only).
    pub fn local_principal() -> Principal {
        Principal {
            user_id: ADMIN_USER.into(),
            admin: true,
        }
    }

    /// The user a token belongs to. Tokens are looked up by their SHA-256 digest and
    /// remembered for a second, so users added, revoked or rotated with the CLI while
    /// the server runs take effect within that second.
    pub fn authenticate(&self, token: &str) -> Option<Principal> {
        use crate::store::tokens::{digest, digests_equal};
        let wanted = digest(token);
        if let Some(entry) = self.inner.tokens.get(&wanted) {
            let (principal, checked) = entry.value();
            if digests_equal(entry.key(), &wanted) && checked.elapsed() < TOKEN_RECHECK {
                return Some(principal.clone());
            }
        }
        match self.inner.store.user_by_token(token) {
            Ok(Some((user_id, admin))) => {
                let principal = Principal {
                    user_id: user_id.into(),
                    admin,
                };
                self.inner
                    .tokens
                    .insert(wanted, (principal.clone(), std::time::Instant::now()));
                Some(principal)
            }
            Ok(None) => {
                self.inner.tokens.remove(&wanted);
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "token lookup failed");
                None
            }
        }
    }

    /// Process-wide counters, read by `/metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.services.metrics
    }

    /// Resolves once every write queued so far is committed and none failed since
    /// `epoch` (false otherwise).
    pub fn synced_since(&self, epoch: u64) -> impl std::future::Future<Output = bool> {
        self.inner.services.writer.synced_since(epoch)
    }

    /// The store writer's failure count: take it before a request's writes and pass
    /// it to [`Runtime::synced_since`] before acknowledging them.
    pub fn write_epoch(&self) -> u64 {
        self.inner.services.writer.epoch()
    }

    /// The configuration in force.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Registers a session and starts its actor.
    fn spawn_session(&self, record: SessionRecord, last_seq: u64) -> SessionHandle {
        let shared = Arc::new(SessionShared::from_record(&record, last_seq));
        let id = record.id.clone();
        let addr = self.inner.start_actor(record, last_seq, shared.clone());
        self.register(id, shared, Some(addr))
    }

    /// Lists a session under `id`: with its actor's address, or dormant (`None`: the
    /// actor starts at the first request that needs it).
    fn register(
        &self,
        id: SessionId,
        shared: Arc<SessionShared>,
        addr: Option<Addr<SessionActor>>,
    ) -> SessionHandle {
        if let Some(port) = shared.peek(handle_port) {
            self.inner.services.scripts.hold_port(port);
        }
        let waker: Weak<dyn WakeSession> = Arc::downgrade(&self.inner) as Weak<Inner>;
        let handle = SessionHandle::new(shared, addr, waker);
        self.inner.services.sessions.insert(id, handle.clone());
        handle
    }

    /// Counts a session loaded at start against its owner's limit.
    fn count_owned(&self, owner_id: UserId) {
        *self.inner.owned.entry(owner_id).or_insert(0) += 1;
    }

    /// A commit failed: each session whose writes were in it reloads from disk.
    fn store_failed(&self, failure: StoreFailure) {
        for id in failure.sessions {
            if let Some(handle) = self.inner.services.sessions.get(&id) {
                handle.do_send(crate::session::StoreFailed {
                    error: failure.error.clone(),
                });
            } else if self
                .inner
                .services
                .cluster
                .get()
                .is_some_and(|cluster| cluster.copies(&id))
            {
                // Another node's session copied here: its mirror notices the failure,
                // restarts from what the store holds and resumes its writes then.
                // Resumed now, its writes queued after the failure would be stored
                // above the hole the failure left.
            } else {
                // A session whose creation failed has no actor: nothing to reload.
                let _ = self.inner.services.writer.write(WriteOp::Resume(id));
            }
        }
    }

    fn lookup(&self, id: &str) -> Result<SessionHandle, RuntimeError> {
        if id.len() > MAX_ID_BYTES {
            // No session has such an id. Not echoed: an error must not be as large as
            // the garbage it answers.
            return Err(RuntimeError::IdTooLong(id.len()));
        }
        let handle = self
            .inner
            .services
            .sessions
            .get(id)
            .ok_or_else(|| RuntimeError::SessionNotFound(id.into()))?;
        // Archived and about to leave the registry: its actor has stopped, so a
        // message sent to it would fail as an internal error.
        if handle.shared.peek(|i| i.archived_at.is_some()) {
            return Err(RuntimeError::SessionNotFound(id.into()));
        }
        Ok(handle)
    }

    fn visible(&self, who: &Principal, id: &str) -> Result<SessionHandle, RuntimeError> {
        let handle = self.lookup(id)?;
        if !who.can_see(&handle.shared.info()) {
            // Someone else's private session is reported as missing, not as
            // forbidden: its existence is not the caller's business.
            return Err(RuntimeError::SessionNotFound(id.into()));
        }
        Ok(handle)
    }

    pub(crate) fn drivable(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<SessionHandle, RuntimeError> {
        let handle = self.lookup(id)?;
        let info = handle.shared.info();
        if !who.can_see(&info) {
            return Err(RuntimeError::SessionNotFound(id.into()));
        }
        if !who.can_drive(&info) {
            return Err(RuntimeError::AccessDenied(id.to_string()));
        }
        Ok(handle)
    }

    /// Number of sessions in each status, for metrics.
    pub fn status_counts(&self) -> Vec<(SessionStatus, usize)> {
        let mut counts = [0usize; 5];
        self.inner.services.sessions.for_each(|_, h| {
            let status = h.shared.info().status;
            if let Some(i) = SessionStatus::ALL.iter().position(|s| *s == status) {
                counts[i] += 1;
            }
        });
        SessionStatus::ALL.into_iter().zip(counts).collect()
    }

    /// One session, if `who` may see it.
    pub fn session(&self, who: &Principal, id: &SessionId) -> Result<SessionInfo, RuntimeError> {
        Ok(self.visible(who, id)?.shared.info())
    }

    /// Sessions with a turn or background work in flight.
    pub fn running(&self, who: &Principal) -> Vec<RunningSession> {
        self.running_with(who, &[])
    }

    /// [`Runtime::running`] with `others` too: other cluster nodes' sessions as their
    /// directory lists them (Claude Code processes outside tandem are looked for
    /// on this machine only, so for this node's sessions).
    pub fn running_with(&self, who: &Principal, others: &[SessionInfo]) -> Vec<RunningSession> {
        let mut visible: Vec<SessionInfo> = Vec::new();
        self.inner.services.sessions.for_each(|_, h| {
            let info = h.shared.info();
            if who.can_see(&info) {
                visible.push(info);
            }
        });
        let remote = others
            .iter()
            .filter(|info| who.can_see(info) && !self.hosts(&info.id))
            .cloned();
        let mut out: Vec<RunningSession> = visible
            .iter()
            .cloned()
            .chain(remote)
            .filter_map(|info| {
                if info.status.is_busy() {
                    Some(RunningSession {
                        session_id: info.id,
                        vendor: info.vendor,
                        started_at: info.turn_started_at.unwrap_or(info.last_activity),
                        last_seq: info.last_seq,
                        background: None,
                        can_interrupt: Some(true),
                        status_text: None,
                        tasks: (!info.background_tasks.is_empty()).then_some(info.background_tasks),
                    })
                } else if !info.background_tasks.is_empty() {
                    let started = info
                        .background_tasks
                        .iter()
                        .filter_map(|t| t.started_at)
                        .min()
                        .unwrap_or(info.last_activity);
                    Some(RunningSession {
                        session_id: info.id,
                        vendor: info.vendor,
                        started_at: started,
                        last_seq: info.last_seq,
                        background: Some(true),
                        can_interrupt: Some(false),
                        status_text: None,
                        tasks: Some(info.background_tasks),
                    })
                } else {
                    None
                }
            })
            .collect();
        // Claude Code processes outside tandem working on one of these sessions.
        let external = self.inner.services.vendors.external_runs(&visible, &out);
        out.extend(external);
        out.sort_by_key(|s| s.started_at);
        out
    }

    /// Interrupts the running turn.
    pub async fn abort(&self, who: &Principal, id: &SessionId) -> Result<(), RuntimeError> {
        self.drivable(who, id)?.ask(Abort).await?
    }

    /// Stops one background task.
    pub async fn stop_task(
        &self,
        who: &Principal,
        id: &SessionId,
        task_id: String,
    ) -> Result<(), RuntimeError> {
        self.drivable(who, id)?.ask(StopTask { task_id }).await?
    }

    /// `chat.permission-response`: answers a pending tool approval. Request ids are
    /// unique across the server, so `session_id` is only a shortcut.
    pub async fn respond_permission(
        &self,
        who: &Principal,
        params: ChatPermissionResponseParams,
    ) -> Result<(), RuntimeError> {
        let id = match params.session_id.filter(|s| !s.is_empty()) {
            Some(id) => id,
            None => self
                .permission_holder(&params.request_id)
                .ok_or_else(|| RuntimeError::NoSuchPermission(params.request_id.clone()))?,
        };
        self.drivable(who, &id)?
            .ask(RespondPermission {
                request_id: params.request_id,
                allow: params.allow,
                updated_input: params.updated_input,
                message: params.message,
                remember: params.remember,
                permission_mode: params.permission_mode,
                decided_by: tandem_protocol::Decider::User,
            })
            .await?
    }

    /// Changes a session's settings. `ownerId` (an admin's only) reassigns it to
    /// another existing user, e.g. a revoked user's session, which takes commands
    /// again once reassigned.
    pub async fn configure(
        &self,
        who: &Principal,
        params: SessionConfigureParams,
    ) -> Result<SessionInfo, RuntimeError> {
        let handle = self.drivable(who, &params.session_id)?;
        let owner_id = match params.owner_id {
            Some(owner) => Some(self.reserve_new_owner(who, &handle, owner)?),
            None => None,
        };
        let configured = handle
            .ask(Configure {
                model: params.model,
                effort: params.effort,
                vendor: params.vendor.map(VendorId::from),
                permission_mode: params.permission_mode,
                title: params.title,
                owner_id: owner_id.as_ref().map(|(new, _)| new.clone()),
                notify: params.notify,
                on_limit: params.on_limit,
            })
            .await
            .and_then(|answer| answer);
        if let Some((new, old)) = owner_id {
            // The slot moves to the new owner, or goes back if nothing changed.
            let freed = if configured.is_ok() { old } else { new };
            if let Some(mut owned) = self.inner.owned.get_mut(&freed) {
                *owned = owned.saturating_sub(1);
            }
        }
        configured
    }

    /// Checks that `who` may reassign `handle`'s session to `owner` (an admin may, to
    /// an existing user) and takes one of the new owner's session slots; returns the
    /// new and the old owner. The caller gives back the old owner's slot once the
    /// session moved, or the new owner's if it did not.
    fn reserve_new_owner(
        &self,
        who: &Principal,
        handle: &SessionHandle,
        owner: UserId,
    ) -> Result<(UserId, UserId), RuntimeError> {
        if !who.admin {
            return Err(RuntimeError::AccessDenied(format!(
                "{} (only an admin may reassign a session)",
                handle.shared.peek(|i| i.id.clone())
            )));
        }
        let owner = UserId::new(owner.trim());
        if !self.inner.store.user_exists(&owner)? {
            return Err(RuntimeError::unusable(format!(
                "ownerId: no user `{owner:.64}` (tandem user list shows them)"
            )));
        }
        let old = handle.shared.peek(|i| i.owner_id.clone());
        let max = self.inner.config.max_sessions_per_user;
        let mut owned = self.inner.owned.entry(owner.clone()).or_insert(0);
        if owner != old && *owned >= max {
            return Err(RuntimeError::LimitExceeded(format!(
                "user `{owner}` already has {max} sessions (--max-sessions-per-user)"
            )));
        }
        *owned += 1;
        Ok((owner, old))
    }

    /// Refuses work for session `id` when its owner was revoked (see
    /// [`crate::owners`]); sessions this node does not run pass.
    pub(crate) fn owner_allowed(&self, id: &str) -> Result<(), RuntimeError> {
        let Some(handle) = self.inner.services.sessions.get(id) else {
            return Ok(());
        };
        let owner = handle.shared.peek(|i| i.owner_id.clone());
        if self.inner.services.owners.revoked(&owner) {
            return Err(RuntimeError::OwnerRevoked {
                session: id.into(),
                owner,
            });
        }
        Ok(())
    }

    /// Every vendor and whether it can be used here.
    pub fn vendors(&self) -> Vec<VendorInfo> {
        let mut infos = self.inner.services.catalog.infos();
        infos
            .iter_mut()
            .for_each(|info| self.inner.config.confinement.describe(info));
        infos
    }
}

/// The port a live worktree session holds.
fn handle_port(info: &SessionInfo) -> Option<u16> {
    info.workspace
        .as_ref()
        .filter(|w| w.state == tandem_protocol::workspace::WorktreeState::Active)
        .and_then(|w| w.port)
}
