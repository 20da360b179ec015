//! [`Runtime`]: the handle the HTTP layer uses. It holds the services with state of
//! their own (auth, clients, uploads, push, files, terminals, workspaces, schedules,
//! pairs, MCP servers, vendors, peers: each reached by an accessor), and runs the
//! session requests and the workflows that span services (creating a session, a
//! pair with its Worker, a fork, a handoff), after the one access check
//! ([`SessionAccess`]).

mod agents;
mod archive;
mod auth;
mod checkpoints;
mod checks;
mod clients;
mod commands;
mod create;
mod devices;
mod edit;
mod external;
mod files;
mod fleet;
mod fork;
mod handoff;
mod judge;
mod listing;
mod loading;
mod loops;
mod mcp_servers;
mod messages;
mod pair_creation;
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
mod session_access;
mod start;
mod terminals;
mod uploads;
mod usage;
mod vendors;
mod workspaces;

use create::NewSession;

use std::path::Path;
use std::sync::{Arc, Weak};

use actix::prelude::*;
use dashmap::DashMap;
use tandem_protocol::client::{
    ChatPermissionResponseParams, SessionConfigureParams, SessionCreateParams,
};
use tandem_protocol::rest::RunningSession;
use tandem_protocol::{SessionInfo, SessionStatus};

use crate::access::Principal;
use crate::adapter::{clamp_effort, VendorId};
use crate::clock::{now_ms, random_id};
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::gateway::SessionChanged;
use crate::ids::{SessionId, UserId};
use crate::metrics::Metrics;
use crate::record::SessionRecord;
use crate::session::{
    Abort, Configure, RespondPermission, Services, SessionActor, SessionHandle, SessionShared,
    StopTask, WakeSession,
};
use crate::store::{Store, StoreFailure, WriteOp};

pub use auth::AuthService;
pub use clients::ClientService;
pub use devices::PairingCode;
pub use files::FileService;
pub use listing::{SessionPage, MAX_SESSIONS_PAGE};
pub use mcp_servers::McpServerService;
pub use pairs::PairService;
pub use peers::{CommitTap, PeerService};
pub use push::PushService;
pub use schedules::ScheduleService;
pub use session_access::SessionAccess;
pub use terminals::TerminalService;
pub use uploads::UploadService;
pub use vendors::VendorService;
pub use workspaces::WorkspaceService;

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
    config: Arc<RuntimeConfig>,
    store: Store,
    services: Arc<Services>,
    /// Live sessions (the registry in `services.sessions`) through the access rules.
    access: SessionAccess,
    /// Live pairs (live sessions are in `services.sessions`).
    pairs: PairService,
    /// Tokens, pairing codes and devices.
    auth: AuthService,
    /// Sessions per owner, for `max_sessions_per_user`.
    owned: DashMap<UserId, usize>,
    /// The thread session actors (and their adapters) run on.
    sessions_arbiter: Arbiter,
    /// Kept so the gateway's thread lives as long as the runtime.
    _gateway_arbiter: Arbiter,
    /// WebSocket clients of the gateway.
    clients: ClientService,
    /// What the cluster (`--nats`) reaches: the commit tap, local sessions, remote
    /// subscriptions.
    peers: PeerService,
    /// The agent CLIs: installed, checked, their processes.
    vendors: VendorService,
    /// Uploaded files and message attachments.
    uploads: UploadService,
    /// Web Push devices.
    push: PushService,
    /// Sessions' working directories: changes, diffs, files.
    files: FileService,
    /// Sessions' terminals.
    terminals: TerminalService,
    /// Scheduled messages and loops.
    schedules: ScheduleService,
    /// The MCP servers sessions may get.
    mcp_servers: McpServerService,
    /// Sessions' working directories as a whole: merge, discard, rebase, push,
    /// checks, checkpoints, scripts.
    workspaces: WorkspaceService,
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

pub use crate::access::ADMIN_USER;

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

    /// The store writer (for crash points).
    pub(crate) fn writer(&self) -> &crate::store::StoreWriter {
        &self.inner.services.writer
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
        self.inner.terminals.stop_all();
        let limit = std::time::Duration::from_secs(5);
        self.inner.services.vendors.shutdown(limit).await;
    }

    /// Tokens, pairing codes and devices.
    pub fn auth(&self) -> &AuthService {
        &self.inner.auth
    }

    /// WebSocket clients, their subscriptions, and stored events.
    pub fn clients(&self) -> &ClientService {
        &self.inner.clients
    }

    /// Sessions' working directories: changes, diffs, files.
    pub fn files(&self) -> &FileService {
        &self.inner.files
    }

    /// Web Push devices and what clients show.
    pub fn push(&self) -> &PushService {
        &self.inner.push
    }

    /// Uploaded files.
    pub fn uploads(&self) -> &UploadService {
        &self.inner.uploads
    }

    /// Sessions' terminals.
    pub fn terminals(&self) -> &TerminalService {
        &self.inner.terminals
    }

    /// The pairs running here: found, listed, closed.
    pub fn pairs(&self) -> &PairService {
        &self.inner.pairs
    }

    /// The store (histories read back by the cluster, users counted at start).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// What the cluster reaches: the commit tap, local sessions, remote
    /// subscriptions.
    pub fn peers(&self) -> &PeerService {
        &self.inner.peers
    }

    /// The agent CLIs: installed, checked, their processes (the fleet).
    pub fn vendors(&self) -> &VendorService {
        &self.inner.vendors
    }

    /// The MCP servers a user's sessions may get.
    pub fn mcp_servers(&self) -> &McpServerService {
        &self.inner.mcp_servers
    }

    /// Scheduled messages and loops.
    pub fn schedules(&self) -> &ScheduleService {
        &self.inner.schedules
    }

    /// Merges, discards, rebases and pushes of worktrees; checks, checkpoints and
    /// scripts.
    pub fn workspaces(&self) -> &WorkspaceService {
        &self.inner.workspaces
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

    /// The access check on live sessions, which every request makes first.
    pub(crate) fn access(&self) -> &SessionAccess {
        &self.inner.access
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
        Ok(self.access().visible(who, id)?.shared.info())
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
            .filter(|info| who.can_see(info) && !self.inner.peers.hosts(&info.id))
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
        self.access().drivable(who, id)?.ask(Abort).await?
    }

    /// Stops one background task.
    pub async fn stop_task(
        &self,
        who: &Principal,
        id: &SessionId,
        task_id: String,
    ) -> Result<(), RuntimeError> {
        self.access()
            .drivable(who, id)?
            .ask(StopTask { task_id })
            .await?
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
                .inner
                .peers
                .permission_holder(&params.request_id)
                .ok_or_else(|| RuntimeError::NoSuchPermission(params.request_id.clone()))?,
        };
        self.access()
            .drivable(who, &id)?
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
        let handle = self.access().drivable(who, &params.session_id)?;
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
}

/// The port a live worktree session holds.
fn handle_port(info: &SessionInfo) -> Option<u16> {
    info.workspace
        .as_ref()
        .filter(|w| w.state == tandem_protocol::workspace::WorktreeState::Active)
        .and_then(|w| w.port)
}
