//! [`Runtime`]: the handle the HTTP layer uses. It holds the services with state of
//! their own (sessions, auth, clients, uploads, push, files, terminals, workspaces,
//! schedules, pairs, MCP servers, vendors, peers: each reached by an accessor), and
//! runs the workflows that span services (creating a session, sending a message with
//! its attachments, a pair with its Worker, a fork, a handoff, edit & resend, a
//! review, archiving), after the one access check ([`SessionAccess`]).

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
mod sessions;
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
use tandem_protocol::client::SessionCreateParams;
use tandem_protocol::{SessionInfo, SessionStatus};

use crate::access::Principal;
use crate::adapter::clamp_effort;
use crate::clock::{now_ms, random_id};
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::gateway::SessionChanged;
use crate::ids::SessionId;
use crate::metrics::Metrics;
use crate::record::SessionRecord;
use crate::session::{Services, SessionActor, SessionHandle, SessionShared, WakeSession};
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
pub use sessions::SessionService;
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
    /// This node's sessions: found, read, listed, driven; owners' session counts.
    sessions: SessionService,
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
    /// What running a repository's checks needs (a Worker's delegation end on this
    /// node).
    pub fn check_env(&self) -> &crate::checks::CheckEnv {
        &self.inner.services.checks
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

    /// This node's sessions: found, read, listed and driven.
    pub fn sessions(&self) -> &SessionService {
        &self.inner.sessions
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
}

/// The port a live worktree session holds.
fn handle_port(info: &SessionInfo) -> Option<u16> {
    info.workspace
        .as_ref()
        .filter(|w| w.state == tandem_protocol::workspace::WorktreeState::Active)
        .and_then(|w| w.port)
}
