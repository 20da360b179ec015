//! Session metadata as clients see it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{PairId, SessionId, UserId};

/// Where a session's last turn stands. `interrupted` and `failed` are never "done".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// No turn in flight (the last one completed, or none ran yet).
    Idle,
    /// A turn is in flight.
    Running,
    /// A turn was accepted and waits for one of the turns running to end
    /// (`--max-concurrent-turns`); `waitingPlace` says where it stands.
    Waiting,
    /// The last turn was stopped by someone before it finished.
    Interrupted,
    /// The last turn ended in error.
    Failed,
}

impl SessionStatus {
    /// Every status, for metrics that report a count per status.
    pub const ALL: [SessionStatus; 5] = [
        SessionStatus::Idle,
        SessionStatus::Running,
        SessionStatus::Waiting,
        SessionStatus::Interrupted,
        SessionStatus::Failed,
    ];

    /// The wire name of the status.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::Waiting => "waiting",
            SessionStatus::Interrupted => "interrupted",
            SessionStatus::Failed => "failed",
        }
    }

    /// Parses a wire name back; used when loading stored sessions.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// True while a turn is in flight.
    pub fn is_busy(self) -> bool {
        matches!(self, SessionStatus::Running | SessionStatus::Waiting)
    }
}

/// Who besides the owner may see a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Visibility {
    /// Only the owner (and admins).
    #[default]
    Private,
    /// Every user may see and subscribe; only the owner drives.
    Shared,
}

impl Visibility {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Private => "private",
            Visibility::Shared => "shared",
        }
    }

    /// Parses a wire name back.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "private" => Some(Visibility::Private),
            "shared" => Some(Visibility::Shared),
            _ => None,
        }
    }
}

/// How the vendor asks before using tools. Names follow Claude Code's modes, which the
/// other adapters map onto their own approval policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Ask before every tool use that needs approval.
    #[default]
    Default,
    /// File edits are accepted without asking.
    AcceptEdits,
    /// Read-only planning.
    Plan,
    /// Never ask.
    BypassPermissions,
}

impl PermissionMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// Parses a wire name back.
    pub fn parse(s: &str) -> Option<Self> {
        [
            PermissionMode::Default,
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
            PermissionMode::BypassPermissions,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }
}

/// A session's role inside a Driver/Worker pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// Directs the other session.
    Driver,
    /// Takes delegated work.
    Worker,
}

/// What kind of background work a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskType {
    /// A backgrounded shell command.
    Shell,
    /// A sub-agent.
    Agent,
    /// Anything else the vendor reports.
    Other,
}

/// What a session does when its vendor's usage or rate limit ends a turn (status
/// `limited`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnLimit {
    /// Nothing: the turn stays `limited` (the default).
    #[default]
    Fail,
    /// Send the turn's message again when the limit lifts (`resetsAt`, else in 15
    /// minutes), as a scheduled message.
    Wait,
    /// Hand the conversation to this vendor (as `session.handoff`), whose session
    /// carries on with the request.
    Handoff(String),
}

impl OnLimit {
    /// True for the default, which the wire leaves out.
    pub fn is_fail(&self) -> bool {
        *self == OnLimit::Fail
    }
}

/// A slash command the session's agent offers (`/name`), as its vendor lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VendorCommand {
    /// Its name, without the slash.
    pub name: String,
    /// What it does, when the vendor says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// What to type after it, when the vendor says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_hint: Option<String>,
}

/// Fields of `session.commands`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCommandsParams {
    /// The session.
    pub session_id: SessionId,
}

/// `session.commands` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCommandsResult {
    /// The session.
    pub session_id: SessionId,
    /// The slash commands its agent offers, as the vendor last listed them (empty
    /// until its agent first started, and for vendors that list none).
    pub commands: Vec<VendorCommand>,
}

/// One piece of work still running after its turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundTask {
    /// The vendor's id for the task; `chat.stop-task` takes it.
    pub task_id: String,
    /// What kind of work it is.
    pub task_type: TaskType,
    /// A short human description (the command, the sub-agent's goal).
    pub description: String,
    /// When it started, epoch milliseconds, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
}

/// A session as REST and `session_upserted` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Our stable id, minted at creation.
    pub id: SessionId,
    /// Human title.
    pub title: String,
    /// Vendor id (`scripted`, `codex`, `claude`, ...).
    pub vendor: String,
    /// Model name; empty means the vendor's default.
    pub model: String,
    /// Reasoning effort, already clamped to the vendor's levels; empty means default.
    pub effort: String,
    /// Tool approval mode.
    pub permission_mode: PermissionMode,
    /// Where the last turn stands.
    pub status: SessionStatus,
    /// Turns started so far.
    pub turn_count: u64,
    /// Sequence number of the newest history event (0 when there is none).
    pub last_seq: u64,
    /// Creation time, epoch milliseconds.
    pub created_at: u64,
    /// Time of the last event or change, epoch milliseconds.
    pub last_activity: u64,
    /// The owning user's id.
    pub owner_id: UserId,
    /// Who else may see it.
    pub visibility: Visibility,
    /// The vendor's own session or thread id, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_session_id: Option<String>,
    /// The pair this session belongs to, if any (a Driver with several Workers: the
    /// pair of its first one; `workers` lists them all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_id: Option<PairId>,
    /// Its role in that pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// While its turn waits for a turn slot (status `waiting`): its place in the
    /// line, 1 being next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_place: Option<u32>,
    /// A Driver's Workers, oldest first, each with its pair and name; empty (left
    /// out) for any other session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<crate::pair::PairedWorker>,
    /// When the turn in flight started, epoch ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_started_at: Option<u64>,
    /// The session this one continues (a handoff), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_from: Option<SessionId>,
    /// The outcome of its last `session.check` (a merge gate reads it), if any ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_checks: Option<Vec<crate::workspace::CheckResult>>,
    /// The session and message this one was forked at (`session.fork`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// The names of the MCP servers it chose (`session.create`'s `mcpServers`), its
    /// own entries among them; absent: every server its owner may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<String>>,
    /// The session that spawned this one, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<SessionId>,
    /// Background work still running.
    pub background_tasks: Vec<BackgroundTask>,
    /// Working directory of the vendor process.
    pub cwd: String,
    /// When it was archived (`DELETE /sessions/{id}`), epoch ms; an archived session
    /// is listed nowhere and announced once with this set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<u64>,
    /// The cluster node the session is pinned to (`tandem serve --node NAME`); absent
    /// on a server that is not part of a cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// True while that node's lease has lapsed (it was stopped or cannot be reached):
    /// `status` is then the last one it published, and commands to the session are
    /// `NODE_UNAVAILABLE`. Left out while the node is available; never stored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub node_unavailable: bool,
    /// Ranges of the history that `chat.edit-send` superseded, oldest first (each as
    /// its `history_rewound` event says); clients show them collapsed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<SupersededRange>,
    /// The session's own git worktree (`workspace: "worktree"`); absent for a
    /// session that works in the directory it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::workspace::WorkspaceInfo>,
    /// Whether the session waits for its owner, as every client shows it.
    #[serde(default)]
    pub attention: Attention,
    /// Which moments its owner's devices are told of by Web Push (absent: `attention`).
    #[serde(default, skip_serializing_if = "crate::push::Notify::is_default")]
    pub notify: crate::push::Notify,
    /// The loop it runs (`loop.start`), if any.
    #[serde(rename = "loop", default, skip_serializing_if = "Option::is_none")]
    pub loop_info: Option<crate::loops::LoopInfo>,
    /// What it does when a vendor limit ends a turn (absent: `fail`).
    #[serde(default, skip_serializing_if = "OnLimit::is_fail")]
    pub on_limit: OnLimit,
}

impl SessionInfo {
    /// True when this session belongs to pair `pair_id` (as its Worker, or as the
    /// Driver of any of its Workers).
    pub fn in_pair(&self, pair_id: &PairId) -> bool {
        self.pair_id.as_ref() == Some(pair_id) || self.workers.iter().any(|w| w.pair_id == *pair_id)
    }
}

/// What a session asks of its owner, kept by the server so every client and node
/// shows the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Attention {
    /// Nothing.
    #[default]
    None,
    /// Something waits for a person: a tool approval (a plan's too) or a Worker
    /// proposal.
    NeedsInput,
    /// The last turn failed and no client of the owner has shown it since.
    Failed,
    /// A turn ended that no client of the owner has shown since (`client.seen`).
    DoneUnseen,
}

/// Where a fork branched off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    /// The source session.
    pub session_id: SessionId,
    /// The `seq` of its `user_message` whose turn the fork's conversation ends with.
    pub anchor_seq: u64,
}

/// How a fork's agent has the source's conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ForkConversation {
    /// The vendor's own fork of its conversation (Codex `thread/fork`, Claude Code
    /// `--fork-session`).
    Vendor,
    /// A bounded transcript of the turns, given to the agent with the fork's first
    /// message (another vendor, or one without a fork of its own).
    Transcript,
}

/// A branch of the history that a rewind replaced: what `history_rewound` carries,
/// plus the `seq` of that event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupersededRange {
    /// The edited `user_message`.
    pub anchor_seq: u64,
    /// First superseded `seq`.
    pub superseded_from: u64,
    /// Last superseded `seq`.
    pub superseded_to: u64,
    /// Turns in the branch not already superseded by an earlier rewind.
    pub turns: u64,
    /// The `history_rewound` event that superseded it.
    pub rewound_at: u64,
}

impl SupersededRange {
    /// True when `seq` lies in the range.
    pub fn covers(&self, seq: u64) -> bool {
        (self.superseded_from..=self.superseded_to).contains(&seq)
    }
}

/// The largest `seq` `client.seen` takes: JSON's largest exact integer, as its schema
/// says (a client's numbers past it are not exact anyway).
pub const MAX_SEEN_SEQ: u64 = 9_007_199_254_740_991;

/// Fields of `client.seen`: a client of the owner shows the session up to `seq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientSeenParams {
    /// The session.
    pub session_id: SessionId,
    /// The newest event the client shows (a larger one counts as the session's last).
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(max = 9_007_199_254_740_991_u64))]
    pub seq: u64,
}

impl crate::operations::Validate for ClientSeenParams {
    fn validate(&self) -> Result<(), crate::operations::Refusal> {
        if self.seq > MAX_SEEN_SEQ {
            return Err(crate::operations::Refusal::invalid(format!(
                "seq is at most {MAX_SEEN_SEQ}"
            )));
        }
        Ok(())
    }
}

/// Body of `POST /sessions/{id}/seen` (as `client.seen`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeenBody {
    /// The newest event the client shows.
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(max = 9_007_199_254_740_991_u64))]
    pub seq: u64,
}

/// `client.seen` reply: the session's attention now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientSeenResult {
    /// The session.
    pub session_id: SessionId,
    /// What it asks of its owner now.
    pub attention: Attention,
}
