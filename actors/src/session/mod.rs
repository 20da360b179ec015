//! Session actors: each owns one session's state and history and is the only thing
//! that changes them. Other actors and the HTTP layer talk to it with messages, and
//! read the copy it publishes in [`SessionShared`].

mod actor;
mod archive;
mod attention;
mod commands;
mod git_work;
mod limits;
mod loops;
mod notify;
mod pairing;
mod pending;
mod permissions;
pub mod prompts;
mod proposal;
mod question;
mod queue;
mod rewind;
mod schedules;
#[cfg(test)]
mod shared_tests;
mod spawn;
mod store_failure;
#[cfg(test)]
mod tests;
mod turn;
mod turns;
mod workspace;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use actix::prelude::*;
use tandem_protocol::client::TurnOptions;
use tandem_protocol::server::{PendingPermission, QueuedEntry};
use tandem_protocol::{Event, EventBody, PermissionRule, SessionInfo};

pub(crate) use actor::validate_title;
pub use actor::SessionActor;
pub use archive::Archive;
pub use attention::Seen;
pub use commands::ListCommands;
pub use loops::{StartLoop, StopLoop};
pub use pairing::{
    Describe, HoldsDelegation, IdleRemoteWorker, JoinPair, LeavePair, PairInbox, PartialText,
    RecordEvent, RecordEvents, ReportDelivered, ReportTo, Resume, SessionState, StartDelegated,
    WorkerNeedsApproval, WorkerTurnEnded, MAX_WORKERS,
};
pub use proposal::{ProposalDecision, ProposalProgress, Propose};
pub use question::{AnswerQuestion, Answered, Ask, WithdrawQuestion};
pub use queue::{CancelQueued, EditQueued};
pub(crate) use rewind::anchored_turn;
pub use rewind::{EditOutcome, EditSend, ForkVendor};
pub use schedules::{CancelSchedule, ListSchedules, ScheduleMessage};
pub use spawn::{ChildTurnEnded, Kick, SpawnChildren, MAX_RUNNING_CHILDREN};
pub use turn::{TurnEnd, WhenTurnEnds};
pub use turns::{RecentTurns, TurnSummary};
pub use workspace::{
    ChecksDone, OverlapNotice, Preparing, PublishGitState, Restore, Settle, WorkspaceChanged,
};

use crate::adapter::VendorCatalog;
use crate::error::RuntimeError;
use crate::gateway::Gateway;
use crate::ids::{RequestId, SessionId, TurnId, UserId};
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::store::StoreWriter;

/// What every session actor shares with the rest of the runtime.
#[derive(Clone)]
pub struct Services {
    /// Every history event and record change goes to SQLite through it, off this thread.
    pub writer: StoreWriter,
    /// Where metadata changes are announced.
    pub gateway: Addr<Gateway>,
    /// Process-wide counters for `/metrics`; sessions count the events they append.
    pub metrics: Arc<Metrics>,
    /// Vendor facts: a vendor or effort change is checked against them.
    pub catalog: Arc<VendorCatalog>,
    /// The vendor registry: starts the adapter for a session's vendor.
    pub vendors: crate::adapter::Vendors,
    /// Agent tools endpoint and its per-session tokens, handed to vendor CLIs.
    pub mcp: crate::mcp_tokens::McpTokens,
    /// The MCP servers agents get beside tandem's own tools.
    pub mcp_servers: crate::adapter::mcp_servers::registry::McpServers,
    /// The agent tools, handed to every adapter this session starts.
    pub tools: crate::adapter::Tools,
    /// Reads (replays, turn summaries).
    pub store: crate::store::Store,
    /// Whether a session's owner was revoked: such a session starts no turn.
    pub owners: crate::owners::Owners,
    /// Live sessions by id: a parent finds its children here, and a session whose
    /// creation never committed removes itself.
    pub sessions: Registry<SessionId, SessionHandle>,
    /// Ends of delegated turns for pairs on other cluster nodes, until acknowledged
    /// (empty on a single node).
    pub outbox: crate::cluster_link::Outbox,
    /// This node's cluster, once it joined (`--nats`); pairs with a Worker on another
    /// node reach it through this.
    pub cluster: crate::cluster_link::NodeSlot,
    /// What each live worktree session changed: siblings that change the same files
    /// are told (`overlap` events).
    pub overlaps: Arc<crate::workspace::overlap::Overlaps>,
    /// Runs a repository's checks (`session.check`, a Worker's delegation end).
    pub checks: crate::checks::CheckEnv,
    /// Runs worktrees' scripts and gives out their ports.
    pub scripts: crate::scripts::Scripts,
    /// Tells the owner's devices when the session needs them (Web Push).
    pub push: crate::push::Push,
    /// Hands a limited session's conversation to another vendor (`onLimit`); the
    /// runtime's.
    pub failover: Option<crate::failover::Failover>,
    /// The vendor processes serving one session each, and how many may run at once.
    pub fleet: crate::adapter::fleet::Fleet,
    /// How many turns may run at once (`--max-concurrent-turns`) and the line of
    /// those waiting.
    pub turns: crate::turn_slots::TurnSlots,
}

/// A session's actor and the metadata it publishes.
///
/// An idle session loaded at start has no actor yet
/// ([`crate::record::SessionRecord::needs_actor_at_start`]): it costs only
/// its published metadata until a request names it, when [`SessionHandle::addr`]
/// starts its actor from the stored record. A million idle sessions would otherwise
/// be a million actors, each with its record, mailbox and task.
#[derive(Clone)]
pub struct SessionHandle {
    /// What it publishes, read without messaging it; also holds the actor's address
    /// once started.
    pub shared: Arc<SessionShared>,
    /// Starts the actor of a dormant session (the runtime; weak, since the runtime
    /// holds the handles).
    waker: Weak<dyn WakeSession>,
}

/// Starts the actor of a session that has none yet (implemented by the runtime).
pub trait WakeSession: Send + Sync {
    /// Starts the actor of the session `shared` publishes, from its stored record.
    /// Called with the handle's start lock held, so at most once per session.
    fn wake(&self, shared: &Arc<SessionShared>) -> Result<Addr<SessionActor>, RuntimeError>;
}

impl SessionHandle {
    /// A handle for a session whose actor is `addr`, or, with `None`, one whose
    /// actor `waker` starts when it is first needed.
    pub fn new(
        shared: Arc<SessionShared>,
        addr: Option<Addr<SessionActor>>,
        waker: Weak<dyn WakeSession>,
    ) -> Self {
        if let Some(addr) = addr {
            let _ = shared.actor.set(addr);
        }
        SessionHandle { shared, waker }
    }

    /// The actor's address, starting the actor first if the session has none yet.
    pub fn addr(&self) -> Result<Addr<SessionActor>, RuntimeError> {
        self.started().cloned()
    }

    /// The actor's address, borrowed (a clone of an `Addr` allocates), starting the
    /// actor first if the session has none yet.
    fn started(&self) -> Result<&Addr<SessionActor>, RuntimeError> {
        if let Some(addr) = self.shared.actor.get() {
            return Ok(addr);
        }
        let _starting = self
            .shared
            .starting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Another caller may have started it while this one waited for the lock.
        if let Some(addr) = self.shared.actor.get() {
            return Ok(addr);
        }
        let waker = self
            .waker
            .upgrade()
            .ok_or_else(|| RuntimeError::Internal("the runtime is shutting down".into()))?;
        let addr = waker.wake(&self.shared)?;
        Ok(self.shared.actor.get_or_init(|| addr))
    }

    /// Sends `msg` without waiting for an answer, starting the actor if needed. A
    /// session whose actor cannot be started (its record unreadable) drops it,
    /// logged.
    pub fn do_send<M>(&self, msg: M)
    where
        M: Message + Send + 'static,
        M::Result: Send,
        SessionActor: Handler<M>,
    {
        match self.started() {
            Ok(addr) => addr.do_send(msg),
            Err(e) => tracing::error!(
                session = %self.shared.peek(|i| i.id.clone()),
                error = %e,
                "message to a session whose actor could not start"
            ),
        }
    }

    /// Sends `msg` to the session and waits for its answer. A session whose actor
    /// stopped in between (archived by a request that came first: its actor stops as
    /// it answers, and messages still queued are dropped) is `SESSION_NOT_FOUND`, as
    /// it would have been a moment later, not an internal error.
    pub async fn ask<M>(&self, msg: M) -> Result<M::Result, RuntimeError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        SessionActor: Handler<M>,
    {
        self.started()?.send(msg).await.map_err(|e| match e {
            MailboxError::Closed => {
                RuntimeError::SessionNotFound(self.shared.peek(|i| i.id.clone()))
            }
            MailboxError::Timeout => e.into(),
        })
    }
}

/// What a session publishes for readers outside its actor, replaced as one piece so
/// a reader never sees the metadata of one moment beside the permissions or queue
/// of another.
#[derive(Debug, Clone)]
pub struct Published {
    /// The session's metadata (its `last_seq` as of the last metadata change; the
    /// newest is [`SessionShared::last_seq`]).
    pub info: SessionInfo,
    /// Pending permission requests as `permission_request` fields, for
    /// `chat_subscribed`.
    pub permissions: Vec<PendingPermission>,
    /// Tools allowed for the rest of the session, for `chat_subscribed`.
    pub rules: Vec<PermissionRule>,
    /// The queue as last flushed, for `chat_subscribed` and `GET .../queue`.
    pub queued: Vec<QueuedEntry>,
}

/// The read-only copy of a session's metadata that its actor publishes, so listing
/// and access checks never wait on a session's mailbox.
#[derive(Debug)]
pub struct SessionShared {
    /// The current [`Published`]; readers take the `Arc`, the actor replaces it
    /// (in place when no reader holds it).
    published: Mutex<Arc<Published>>,
    /// Newest `seq` handed to the store: moves with every event, so it is kept
    /// apart from the snapshot, which changes only with the metadata.
    last_seq: AtomicU64,
    /// The session's actor, once started (see [`SessionHandle`]).
    actor: OnceLock<Addr<SessionActor>>,
    /// Held while the actor is being started, so it is started once.
    starting: Mutex<()>,
}

impl SessionShared {
    /// A published copy starting from `info`.
    pub fn new(info: SessionInfo) -> Self {
        let last_seq = AtomicU64::new(info.last_seq);
        SessionShared {
            published: Mutex::new(Arc::new(Published {
                info,
                permissions: Vec::new(),
                rules: Vec::new(),
                queued: Vec::new(),
            })),
            last_seq,
            actor: OnceLock::new(),
            starting: Mutex::new(()),
        }
    }

    /// What a session loaded from the store publishes before its actor starts (and
    /// what the actor would publish first).
    pub(crate) fn from_record(record: &crate::record::SessionRecord, last_seq: u64) -> Self {
        let shared = SessionShared::new(record.to_info(last_seq, &[]));
        shared.publish(|p| {
            p.rules = record.permission_rules.clone();
            p.queued = record.queued.entries();
        });
        shared
    }

    /// Everything the session published, as one snapshot.
    pub fn snapshot(&self) -> Arc<Published> {
        match self.published.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Changes the published snapshot in one step (the actor's side).
    fn publish(&self, change: impl FnOnce(&mut Published)) {
        let mut guard = match self.published.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        change(Arc::make_mut(&mut guard));
    }

    /// The session as last published, with its newest `seq`.
    pub fn info(&self) -> SessionInfo {
        let mut info = self.peek(SessionInfo::clone);
        info.last_seq = self.last_seq.load(Ordering::Acquire);
        info
    }

    /// Runs `f` on the published metadata without copying it (listing many
    /// sessions looks at every one but copies only a page).
    pub fn peek<T>(&self, f: impl FnOnce(&SessionInfo) -> T) -> T {
        match self.published.lock() {
            Ok(guard) => f(&guard.info),
            Err(poisoned) => f(&poisoned.into_inner().info),
        }
    }

    /// Newest `seq` handed to the store.
    pub fn last_seq(&self) -> u64 {
        self.last_seq.load(Ordering::Acquire)
    }

    /// Permission requests waiting for an answer.
    pub fn permissions(&self) -> Vec<PendingPermission> {
        self.snapshot().permissions.clone()
    }

    /// True when `request_id` is pending here.
    pub fn has_permission(&self, request_id: &RequestId) -> bool {
        self.snapshot()
            .permissions
            .iter()
            .any(|p| p.request_id == request_id)
    }

    /// Tools a person allowed for the rest of the session.
    pub fn permission_rules(&self) -> Vec<PermissionRule> {
        self.snapshot().rules.clone()
    }

    /// Messages waiting in the queue, oldest first.
    pub fn queued(&self) -> Vec<QueuedEntry> {
        self.snapshot().queued.clone()
    }

    fn set_last_seq(&self, seq: u64) {
        self.last_seq.store(seq, Ordering::Release);
    }
}

/// Serializes one history event exactly as it goes over the wire and into the store.
pub fn event_frame(
    session_id: &str,
    seq: u64,
    ts: u64,
    turn_id: Option<TurnId>,
    body: EventBody,
) -> Result<String, RuntimeError> {
    serde_json::to_string(&Event {
        session_id: session_id.into(),
        seq,
        ts,
        turn_id,
        body,
    })
    .map_err(|e| RuntimeError::Internal(format!("cannot serialize event: {e}")))
}

/// How a `chat.send` was taken.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// A turn started at once.
    Started {
        /// The new turn's id (`turn_N`); its events carry it.
        turn_id: TurnId,
    },
    /// The message waits until the session is idle with no background work.
    Queued {
        /// Messages ahead of it plus one.
        position: usize,
    },
}

/// Start a turn (or queue the message).
#[derive(Debug, Message)]
#[rtype(result = "Result<SendOutcome, RuntimeError>")]
pub struct SendMessage {
    /// The text the agent gets as the turn's user message (or later, if queued).
    pub content: String,
    /// Its images and files, already checked and stored (empty for text only).
    pub attachments: crate::adapter::messages::Attachments,
    /// Settings applied before the turn (and kept).
    pub options: Option<TurnOptions>,
    /// Queue instead of refusing when busy.
    pub queue: bool,
    /// A review's comments (`chat.review`), recorded as a `review` event just after
    /// the turn's user message, or at once when the message is queued.
    pub review: Option<EventBody>,
}

/// A commit with this session's writes failed: reload from disk, stop the turn, and
/// say so in the history once the store takes writes again.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StoreFailed {
    /// What SQLite said; quoted in the history once the store takes writes again.
    pub error: String,
}

/// A person's answer to a pending permission request.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), RuntimeError>")]
pub struct RespondPermission {
    /// Its id; an id not pending here is refused.
    pub request_id: RequestId,
    /// Allow this one call, or deny it.
    pub allow: bool,
    /// Input to use instead of the requested one.
    pub updated_input: Option<serde_json::Value>,
    /// Why it was denied; the adapter passes it on to the agent.
    pub message: Option<String>,
    /// Also allow the tool without asking for the rest of the session.
    pub remember: Option<tandem_protocol::RememberScope>,
    /// The session's permission mode from now on (a plan approved with "accept edits").
    pub permission_mode: Option<tandem_protocol::PermissionMode>,
    /// Who answers; recorded on `permission_resolved`.
    pub decided_by: tandem_protocol::Decider,
}

/// Interrupt the running turn.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), RuntimeError>")]
pub struct Abort;

/// Stop one background task.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), RuntimeError>")]
pub struct StopTask {
    /// The vendor's task id; a task this session does not list is refused.
    pub task_id: String,
}

/// Change settings; absent fields stay.
#[derive(Debug, Default, Message)]
#[rtype(result = "Result<SessionInfo, RuntimeError>")]
pub struct Configure {
    /// New model, trimmed; empty selects the vendor's default.
    pub model: Option<String>,
    /// New effort, trimmed and moved to the vendor's nearest level (unknown ones refused).
    pub effort: Option<String>,
    /// New vendor: only before the vendor's conversation started and between turns.
    pub vendor: Option<crate::adapter::VendorId>,
    /// New permission mode, passed on to a running adapter at once.
    pub permission_mode: Option<tandem_protocol::PermissionMode>,
    /// New title, trimmed; empty or too long is refused.
    pub title: Option<String>,
    /// New owner (an admin's reassignment; the runtime checked the user exists).
    pub owner_id: Option<UserId>,
    /// Which moments the owner's devices are told of.
    pub notify: Option<tandem_protocol::push::Notify>,
    /// What to do when a vendor limit ends a turn.
    pub on_limit: Option<tandem_protocol::session::OnLimit>,
}
