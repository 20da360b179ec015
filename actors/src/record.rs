//! The persisted form of a session's metadata.

use serde::{Deserialize, Serialize};
use tandem_protocol::pair::{
    DelegationInfo, PairInfo, PairState, ProposalStatus, WorkerApprovals, WorkerChoice,
};
use tandem_protocol::{
    BackgroundTask, PermissionMode, PermissionRule, Role, SessionInfo, SessionStatus, Visibility,
};

use crate::ids::{DelegationId, PairId, SessionId, TurnId, UserId, VendorId};
pub use crate::message_queue::{MessageQueue, QueuedMessage};

/// Everything about a session that survives a restart, except its events. Stored as
/// one JSON document per session so that adding a field needs no schema migration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// Our stable id (`ses_…` unless the creator chose one); requests name the session by it.
    pub id: SessionId,
    /// Shown in session lists; a person can rename it.
    pub title: String,
    /// Which adapter serves the session (a catalog id such as `claude`).
    pub vendor: VendorId,
    /// Model; empty for the vendor's default.
    pub model: String,
    /// Clamped effort; empty for the default.
    pub effort: String,
    /// Whether tool calls wait for a person's approval; the adapter applies it.
    pub permission_mode: PermissionMode,
    /// Where the last turn stands.
    pub status: SessionStatus,
    /// Turns started so far; the next turn is `turn_{turn_count + 1}`.
    pub turn_count: u64,
    /// Creation time, epoch ms; never changes.
    pub created_at: u64,
    /// Last change, epoch ms; session lists sort on it, newest first.
    pub last_activity: u64,
    /// The user who may drive the session (besides admins).
    pub owner_id: UserId,
    /// Shared sessions can be seen by every user; only the owner (or an admin) drives them.
    pub visibility: Visibility,
    /// The vendor's session/thread id, once known.
    #[serde(default)]
    pub vendor_session_id: Option<String>,
    /// A fork's adapter forks `vendor_session_id` (its source's) this way as it
    /// opens it; dropped once the vendor names the new session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_fork_on_open: Option<ForkOnOpen>,
    /// The directory the agent works in; vendor CLIs are started there.
    pub cwd: String,
    /// The turn in flight, so a restart can close it as interrupted.
    #[serde(default)]
    pub current_turn_id: Option<TurnId>,
    /// When that turn started, epoch ms.
    #[serde(default)]
    pub turn_started_at: Option<u64>,
    /// The pair this session belongs to and its role there; start-up checks that the
    /// pair still runs. Stored as the record's `pairId` and `role` fields.
    #[serde(flatten, default)]
    pub pair: Option<Membership>,
    /// A Driver's memberships in the pairs of its further Workers, oldest first
    /// (`pair` holds its first). Empty for any other session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_workers: Vec<Membership>,
    /// While its turn waits for a turn slot: its place in line (never stored: a
    /// restart ends the turn).
    #[serde(skip)]
    pub waiting_place: Option<u32>,
    /// Messages waiting for the session to be idle with no background work.
    #[serde(default)]
    pub queued: MessageQueue,
    /// Tools a person allowed for the rest of the session ("always allow"); handed to
    /// every adapter the session starts.
    #[serde(default)]
    pub permission_rules: Vec<PermissionRule>,
    /// The session that spawned this one with `spawn_sessions`.
    #[serde(default)]
    pub parent_id: Option<SessionId>,
    /// The session this one continues (handoff).
    #[serde(default)]
    pub handoff_from: Option<SessionId>,
    /// The outcome of its last `session.check`, which a merge gate reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_checks: Option<Vec<tandem_protocol::workspace::CheckResult>>,
    /// The session and message it was forked at (`session.fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<tandem_protocol::ForkedFrom>,
    /// A fork's transcript of the source's turns, given to the agent ahead of the
    /// fork's first message and then dropped (a fork whose vendor has no fork of its
    /// own, or another vendor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_context: Option<String>,
    /// The MCP servers it chose (`session.create`'s `mcpServers`), resolved when its
    /// agent starts; `None`: every server its owner may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<tandem_protocol::mcp_servers::McpServerChoice>>,
    /// A spawned session's first prompt, until its parent lets it start.
    #[serde(default)]
    pub pending_prompt: Option<String>,
    /// The latest Worker proposal, kept to finish it after a restart.
    #[serde(default)]
    pub proposal: Option<ProposalRecord>,
    /// Scheduled messages: pending ones and the latest finished ones.
    #[serde(default)]
    pub schedules: Vec<crate::schedule::ScheduleRecord>,
    /// Ids of the latest results pushed into this session (delegation results,
    /// proposal outcomes), so a result re-sent after a crash is not delivered twice.
    #[serde(default)]
    pub delivered: Vec<String>,
    /// When it was archived; an archived session is not loaded at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<u64>,
    /// The cluster node it is pinned to: the one whose disk holds its history and
    /// working directory. Set when a clustered node (`--node`) creates it, and filled
    /// in at start for sessions a node had before it joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Branches of the history that `chat.edit-send` superseded, oldest first; the
    /// same ranges as the `history_rewound` events, kept here so a client that reads
    /// older events without that event (a page, a replay from a later cursor) still
    /// knows, and so the next rewind finds the live turns without rescanning them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<tandem_protocol::SupersededRange>,
    /// Its own git worktree, when created with `workspace: "worktree"` (its `cwd` is
    /// then the worktree's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<tandem_protocol::workspace::WorkspaceInfo>,
    /// A delegated turn for a pair on another cluster node, until that node
    /// acknowledged its end (see [`RemoteReport`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_report: Option<RemoteReport>,
    /// The `seq` of the last turn's `turn_completed` (0 before the first).
    #[serde(default)]
    pub turn_end_seq: u64,
    /// The newest `seq` a client of the owner reported shown (`client.seen`).
    #[serde(default)]
    pub seen_seq: u64,
    /// Which moments the owner's devices are told of (`session.configure {notify}`).
    #[serde(
        default,
        skip_serializing_if = "tandem_protocol::push::Notify::is_default"
    )]
    pub notify: tandem_protocol::push::Notify,
    /// A Worker's question to its Driver (`ask_driver`) while it waits for an answer:
    /// kept so it survives a restart, and the session's attention is `needs_input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<QuestionRecord>,
    /// What it does when a vendor limit ends a turn.
    #[serde(
        default,
        skip_serializing_if = "tandem_protocol::session::OnLimit::is_fail"
    )]
    pub on_limit: tandem_protocol::session::OnLimit,
    /// The slash commands its agent offers, as the vendor last listed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<tandem_protocol::session::VendorCommand>,
    /// The loop it runs (`loop.start`), kept so it resumes where it was after a
    /// restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_run: Option<LoopRecord>,
}

/// A running loop: what it works toward and where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopRecord {
    /// Its id (`loop_…`).
    pub loop_id: String,
    /// Its goal.
    pub goal: String,
    /// How each iteration is checked.
    pub check: tandem_protocol::loops::LoopCheck,
    /// Its last iteration.
    pub max_iterations: u32,
    /// Pause after a failed check, seconds.
    pub cooldown_seconds: u64,
    /// The iteration under way, from 1.
    pub iteration: u32,
    /// Iterations whose turn started (the one under way, once its turn started).
    #[serde(default)]
    pub turns_started: u32,
    /// Where it is.
    pub phase: tandem_protocol::loops::LoopPhase,
    /// The turn of the iteration under way, once it started (a restart that cut it
    /// off runs the iteration again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// With phase `cooldown`: when the next iteration starts, epoch ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_at: Option<u64>,
    /// The last iteration's answer (tail-capped), for the check.
    #[serde(default)]
    pub last_answer: String,
    /// The last check's outcome, told to the next iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_check: Option<tandem_protocol::loops::LoopCheckOutcome>,
    /// The judge's session, once made (kept for the next iterations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_session_id: Option<SessionId>,
}

impl LoopRecord {
    /// The client-facing view.
    pub fn to_info(&self) -> tandem_protocol::loops::LoopInfo {
        tandem_protocol::loops::LoopInfo {
            loop_id: self.loop_id.clone(),
            goal: self.goal.clone(),
            iteration: self.iteration,
            max_iterations: self.max_iterations,
            phase: self.phase,
            next_at: self.next_at,
        }
    }
}

/// A Worker's question waiting for its Driver's (or a person's) answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionRecord {
    /// Its id (`q_…`); the answer names it.
    pub question_id: String,
    /// The pair it was asked in.
    pub pair_id: PairId,
    /// The Driver asked; its history records the question and its answer too.
    pub driver_id: SessionId,
    /// The Driver's node, when it is another one than the Worker's (the pair runs
    /// there): the answer is recorded in the Driver's history over the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_node: Option<String>,
    /// The Worker that asks (its answer goes there).
    pub worker_id: SessionId,
    /// What the Worker asks.
    pub question: String,
    /// The answers it offers (any answer is taken).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// When it was asked, epoch ms.
    pub asked_at: u64,
    /// Unanswered this long after `asked_at`, it is answered "no answer: decide
    /// yourself" (also after a restart: the deadline is kept, not restarted).
    pub timeout_seconds: u64,
}

impl QuestionRecord {
    /// Its `question` event, as both histories record it.
    pub fn asked_event(&self, worker_id: &SessionId) -> tandem_protocol::EventBody {
        tandem_protocol::EventBody::Question {
            question_id: self.question_id.clone(),
            pair_id: self.pair_id.clone(),
            from: worker_id.into(),
            to: self.driver_id.clone(),
            question: self.question.clone(),
            choices: self.choices.clone(),
            timeout_seconds: self.timeout_seconds,
        }
    }

    /// When the timeout answers it, epoch ms.
    pub fn deadline(&self) -> u64 {
        self.asked_at
            .saturating_add(self.timeout_seconds.saturating_mul(1000))
    }
}

/// How a fork's first vendor process forks the source's vendor session as it opens
/// it; kept in the fork's record until the vendor names the new session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ForkOnOpen {
    /// Claude Code: resume at this message id in a new session
    /// (`--resume-session-at ID --fork-session`).
    At(String),
    /// ACP: `session/fork`, a copy of the whole session.
    Whole,
}

/// A Worker proposal's persisted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalRecord {
    /// Its id (`prop_…`); the accept or decline answer names it.
    pub proposal_id: String,
    /// One-line summary, shown on `worker_proposal`.
    pub summary: String,
    /// The proposing agent's plan, shown on `worker_proposal` to the person deciding.
    pub plan: String,
    /// The task the Worker gets on acceptance.
    pub message: String,
    /// Vendor, model and effort the proposing agent suggests for the Worker.
    pub recommended: WorkerChoice,
    /// Where it stands; while open, no new proposal is accepted from the session.
    pub status: ProposalStatus,
    /// Accepted without asking, because the proposing session runs in `bypassPermissions`.
    #[serde(default)]
    pub auto_approved: bool,
}

/// A pair's persisted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairRecord {
    /// Its id (`pair_…`); both members' records name it.
    pub pair_id: PairId,
    /// The session that delegates; push-backs and proposal outcomes go to it.
    pub driver_id: SessionId,
    /// The session that carries out the delegated tasks.
    pub worker_id: SessionId,
    /// Creation time, epoch ms; shown to clients.
    pub created_at: u64,
    /// The delegation token, while one is held.
    #[serde(default)]
    pub delegation: Option<DelegationRecord>,
    /// The cluster node of the Worker, when it is not this node's (`pair.create` with
    /// `workerNode`): the pair then reaches its Worker over NATS and waits for the
    /// Worker's node to report each delegation's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_node: Option<String>,
    /// Where its creation or closing stands, so start-up can finish or undo it.
    #[serde(default)]
    pub state: PairState,
    /// Who answers the permission requests of the Worker's delegated turns (sent
    /// with each delegation).
    #[serde(default, skip_serializing_if = "WorkerApprovals::is_user")]
    pub worker_approvals: WorkerApprovals,
    /// The Worker's name among its Driver's Workers.
    #[serde(default = "tandem_protocol::pair::default_worker_name")]
    pub worker_name: String,
}

/// The delegation token: at most one per pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegationRecord {
    /// Its id (also the push-back's de-duplication key).
    pub delegation_id: DelegationId,
    /// The text the Worker's delegated turn receives.
    pub message: String,
    /// When it started, epoch ms.
    pub started_at: u64,
    /// Nobody waits for the result: it is pushed back to the Driver.
    pub detached: bool,
    /// The proposal this delegation carries out, if any.
    #[serde(default)]
    pub proposal_id: Option<String>,
}

/// A session's place in a pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Membership {
    /// The pair.
    pub pair_id: PairId,
    /// Driver or Worker.
    pub role: Role,
    /// The node the pair runs on, when it is another one (a Worker of a Driver on
    /// another cluster node): start-up leaves such a membership alone, and the
    /// delegated turn's end is reported there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_node: Option<String>,
    /// The pair's Driver (kept since Workers ask it questions; absent in records
    /// written before): a Worker on another node records its questions' answers
    /// there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_id: Option<SessionId>,
    /// A Driver's membership: the pair's Worker (absent in records written before a
    /// Driver could have several; start-up fills it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<SessionId>,
    /// A Driver's membership: that Worker's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_name: Option<String>,
}

/// A delegation this session (a Worker) carries out for a pair on another node, kept
/// in its record from the turn's start until the pair's node acknowledged its end:
/// the end is reported again (after a restart too) until then, and the pair takes
/// it once (by delegation id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteReport {
    /// The pair (on `pair_node`).
    pub pair_id: PairId,
    /// The delegation the turn carries out.
    pub delegation_id: DelegationId,
    /// Where the pair runs: the report goes there.
    pub pair_node: String,
    /// How the turn ended; `None` while it runs. A restart that cut the turn off
    /// fills in `interrupted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<ReportedEnd>,
}

/// The end of a delegated turn, as reported to the pair's node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportedEnd {
    /// How the turn ended.
    pub status: tandem_protocol::TurnStatus,
    /// The turn's assistant text (tail-capped).
    pub response: String,
    /// Why it failed or stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SessionRecord {
    /// True when this session is in pair `pair_id`, in `role` if given.
    pub fn in_pair(&self, pair_id: &PairId, role: Option<Role>) -> bool {
        self.memberships()
            .any(|m| m.pair_id == pair_id && role.is_none_or(|r| m.role == r))
    }

    /// Every pair this session belongs to: a Worker's one, a Driver's one per
    /// Worker (oldest first).
    pub fn memberships(&self) -> impl Iterator<Item = &Membership> {
        self.pair.iter().chain(self.more_workers.iter())
    }

    /// Adds a membership; a Driver's further Workers go after its first.
    pub fn join(&mut self, membership: Membership) {
        match self.pair {
            None => self.pair = Some(membership),
            Some(_) => self.more_workers.push(membership),
        }
    }

    /// Removes the membership in pair `pair_id`; false when there was none. A Driver
    /// leaving its first Worker's pair keeps the next one's as its first.
    pub fn leave(&mut self, pair_id: &PairId) -> bool {
        if self.pair.as_ref().is_some_and(|m| m.pair_id == pair_id) {
            self.pair = (!self.more_workers.is_empty()).then(|| self.more_workers.remove(0));
            return true;
        }
        let before = self.more_workers.len();
        self.more_workers.retain(|m| m.pair_id != pair_id);
        self.more_workers.len() != before
    }

    /// A Driver's Workers as its `SessionInfo` lists them.
    fn workers(&self) -> Vec<tandem_protocol::pair::PairedWorker> {
        self.memberships()
            .filter(|m| m.role == Role::Driver)
            .filter_map(|m| {
                Some(tandem_protocol::pair::PairedWorker {
                    pair_id: m.pair_id.clone(),
                    worker_id: m.worker_id.clone()?,
                    worker_name: m
                        .worker_name
                        .clone()
                        .unwrap_or_else(tandem_protocol::pair::default_worker_name),
                })
            })
            .collect()
    }
}

impl PairRecord {
    /// The client-facing view.
    pub fn to_info(&self) -> PairInfo {
        PairInfo {
            pair_id: self.pair_id.clone(),
            driver_id: self.driver_id.clone(),
            worker_id: self.worker_id.clone(),
            worker_name: self.worker_name.clone(),
            created_at: self.created_at,
            delegation: self.delegation.as_ref().map(|d| DelegationInfo {
                delegation_id: d.delegation_id.clone(),
                from: self.driver_id.clone(),
                to: self.worker_id.clone(),
                message: d.message.clone(),
                started_at: d.started_at,
                detached: d.detached,
            }),
            state: self.state,
            worker_approvals: self.worker_approvals,
        }
    }
}

impl SessionRecord {
    /// Whether its actor must start with the server: it has something to do without
    /// being asked (queued messages, a pending schedule, a loop, a question's
    /// timeout, a report for another node, a spawned prompt), or it takes part in a
    /// pair or a proposal, whose start-up work messages it. Every other session loaded
    /// at start stays dormant, its actor started by the first request for it
    /// ([`crate::session::SessionHandle`]).
    pub fn needs_actor_at_start(&self) -> bool {
        use crate::schedule::ScheduleStatus;
        self.status.is_busy()
            || !self.queued.is_empty()
            || self
                .schedules
                .iter()
                .any(|s| s.status == ScheduleStatus::Pending)
            || self.loop_run.is_some()
            || self.question.is_some()
            || self.remote_report.is_some()
            || self.pending_prompt.is_some()
            || self.pair.is_some()
            || !self.more_workers.is_empty()
            || self.proposal.is_some()
    }

    /// The client-facing view, given the parts that live outside the record.
    pub fn to_info(&self, last_seq: u64, background_tasks: &[BackgroundTask]) -> SessionInfo {
        SessionInfo {
            id: self.id.clone(),
            title: self.title.clone(),
            vendor: self.vendor.to_string(),
            model: self.model.clone(),
            effort: self.effort.clone(),
            permission_mode: self.permission_mode,
            status: self.status,
            turn_count: self.turn_count,
            last_seq,
            created_at: self.created_at,
            last_activity: self.last_activity,
            owner_id: self.owner_id.clone(),
            visibility: self.visibility,
            vendor_session_id: self.vendor_session_id.clone(),
            pair_id: self.pair.as_ref().map(|m| m.pair_id.clone()),
            role: self.pair.as_ref().map(|m| m.role),
            workers: self.workers(),
            waiting_place: self.waiting_place,
            turn_started_at: self.turn_started_at,
            handoff_from: self.handoff_from.clone(),
            forked_from: self.forked_from.clone(),
            mcp_servers: self
                .mcp_servers
                .as_ref()
                .map(|c| c.iter().map(|c| c.name().to_string()).collect()),
            last_checks: self.last_checks.clone(),
            parent_id: self.parent_id.clone(),
            background_tasks: background_tasks.to_vec(),
            cwd: self.cwd.clone(),
            archived_at: self.archived_at,
            node: self.node.clone(),
            node_unavailable: false,
            superseded: self.superseded.clone(),
            workspace: self.workspace.clone(),
            attention: self.attention(false),
            notify: self.notify,
            loop_info: self.loop_run.as_ref().map(LoopRecord::to_info),
            on_limit: self.on_limit.clone(),
        }
    }

    /// What the session asks of its owner; `waiting_input` when a tool approval waits
    /// (the actor knows; a stored record has none pending). A Worker's waiting question
    /// (`ask_driver`) asks for input too: the user may answer it in the Driver's place.
    pub fn attention(&self, waiting_input: bool) -> tandem_protocol::Attention {
        use tandem_protocol::Attention;
        let proposal_waits = self
            .proposal
            .as_ref()
            .is_some_and(|p| p.status == ProposalStatus::Pending);
        if waiting_input || proposal_waits || self.question.is_some() {
            Attention::NeedsInput
        } else if self.turn_end_seq > self.seen_seq && self.status == SessionStatus::Failed {
            Attention::Failed
        } else if self.turn_end_seq > self.seen_seq && self.status != SessionStatus::Running {
            Attention::DoneUnseen
        } else {
            Attention::None
        }
    }
}
