//! REST bodies under `/api/v1`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::ids::{SessionId, TurnId, UploadId, UserId};
use crate::pair::PairInfo;
use crate::session::{BackgroundTask, SessionInfo};

/// `GET /api/v1/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// Always "ok" when the server answers.
    pub status: String,
    /// The server's version.
    pub version: String,
}

/// `GET /api/v1/sessions` (one page), and the `sessions.watch` / `sessions.list`
/// replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionsListResult {
    /// Sessions the caller may see, most recently active first.
    pub sessions: Vec<SessionInfo>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `GET /api/v1/sessions/{id}/events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsPage {
    /// Events with `seq > after`, oldest first.
    pub events: Vec<Event>,
    /// The session's newest `seq`.
    pub last_seq: u64,
    /// True when more events follow the last one returned.
    pub has_more: bool,
}

/// One entry of `GET /api/v1/sessions/running`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunningSession {
    /// The session.
    pub session_id: SessionId,
    /// Its vendor.
    pub vendor: String,
    /// When the turn (or the oldest background task) started, epoch milliseconds.
    pub started_at: u64,
    /// The session's newest `seq`.
    pub last_seq: u64,
    /// True when no turn runs but background work does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// False when an interrupt cannot reach it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_interrupt: Option<bool>,
    /// A short description of what it is doing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_text: Option<String>,
    /// Its background tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<BackgroundTask>>,
}

/// `GET /api/v1/sessions/running`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionsRunningResult {
    /// Sessions with a turn or background work in flight.
    pub sessions: Vec<RunningSession>,
}

/// One vendor in `GET /api/v1/vendors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VendorInfo {
    /// Vendor id used in `session.create`.
    pub id: String,
    /// Name to show people.
    pub display_name: String,
    /// True when sessions of this vendor can be created here.
    pub installed: bool,
    /// The CLI's version line, once known (absent when not installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Whether the vendor can work here, as far as is known without calling a model.
    #[serde(default)]
    pub status: VendorStatus,
    /// What is wrong and how to fix it, when `status` is neither `ok` nor `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Known model names: what the CLI reports (Codex's `model/list`, its default
    /// first) or its aliases (Claude Code), plus those the config file names.
    pub models: Vec<String>,
    /// The model a session gets when it names none, where the CLI says (absent: the
    /// CLI decides, e.g. by the account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Supported effort levels, lowest first.
    pub effort_levels: Vec<String>,
    /// What the adapter can do (`interrupt`, `backgroundTasks`, ...).
    pub capabilities: Vec<String>,
    /// An ACP agent's own name and version, as its `initialize` answer gave them
    /// (absent until the agent was asked, and for the built-in adapters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentIdentity>,
    /// Limits worth telling people, e.g. an ACP agent that cannot connect to tandem's
    /// MCP endpoint over HTTP and so cannot call the agent tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How this vendor's processes (and everything they start) are confined:
    /// `landlock` (a Landlock ruleset lets them use only their session's working
    /// directory, their own config and cache directories, a private temporary directory
    /// and read-only system paths; the data directory and other directories are denied)
    /// or `none` (they can read and write what the server can). Absent for vendors
    /// that run inside the server (`scripted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// Why `confinement` is `none`, or what a partial Landlock leaves out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement_problem: Option<String>,
}

/// An ACP agent's `agentInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentIdentity {
    /// Its machine name (`codex-acp`).
    pub name: String,
    /// Its name for people (`Codex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Where a vendor stands, as far as is known without calling a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum VendorStatus {
    /// Usable as far as can be told without calling the model.
    Ok,
    /// Not checked yet (the server checks in the background after it starts).
    #[default]
    Unknown,
    /// No binary found.
    Missing,
    /// The binary does not run (`--version` failed).
    Broken,
    /// The binary's version is outside the supported range.
    #[serde(rename = "unsupportedVersion")]
    Unsupported,
    /// The CLI says it has no credentials.
    NotLoggedIn,
}

impl VendorStatus {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            VendorStatus::Ok => "ok",
            VendorStatus::Unknown => "unknown",
            VendorStatus::Missing => "missing",
            VendorStatus::Broken => "broken",
            VendorStatus::Unsupported => "unsupportedVersion",
            VendorStatus::NotLoggedIn => "notLoggedIn",
        }
    }

    /// True when sessions of the vendor cannot work.
    pub fn unusable(self) -> bool {
        !matches!(self, VendorStatus::Ok | VendorStatus::Unknown)
    }
}

/// `GET /api/v1/vendors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VendorsListResult {
    /// All vendors, installed or not.
    pub vendors: Vec<VendorInfo>,
}

/// `POST /api/v1/sessions/{id}/messages` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostMessage {
    /// The user's message: a string, or a list of content blocks (as on `chat.send`).
    pub content: crate::content::MessageContent,
    /// Model/effort/permission changes applied before the turn (as on `chat.send`).
    #[serde(default, deserialize_with = "crate::strict::object_opt")]
    pub options: Option<crate::client::TurnOptions>,
    /// Queue the message when a turn runs instead of answering `RUN_IN_PROGRESS`.
    #[serde(default)]
    pub queue: bool,
}

/// `POST /api/v1/sessions/{id}/edit-send` body (as `chat.edit-send`, the session
/// from the path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostEditSend {
    /// The `seq` of the `user_message` to replace.
    #[schemars(range(min = 1, max = crate::MAX_SEQ))]
    #[serde(deserialize_with = "crate::strict::whole")]
    pub anchor_seq: u64,
    /// The new message: a string, or a list of content blocks (as on `chat.send`).
    pub content: crate::content::MessageContent,
    /// Model/effort/permission changes applied before the turn (as on `chat.send`).
    #[serde(default, deserialize_with = "crate::strict::object_opt")]
    pub options: Option<crate::client::TurnOptions>,
    /// Also put the files back as they were when the anchor's turn started.
    #[serde(default)]
    pub restore_files: bool,
}

/// `POST /api/v1/sessions/{id}/edit-send` answer (202): the new turn and the branch
/// it replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditSendAccepted {
    /// The turn that runs the new message.
    pub turn_id: TurnId,
    /// The branch the rewind superseded.
    pub superseded: crate::session::SupersededRange,
    /// With `restoreFiles`: the restore made first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<crate::queries::SessionRestoreResult>,
}

/// `POST /api/v1/sessions/{id}/messages` answer (202).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnAccepted {
    /// The turn that was started.
    pub turn_id: TurnId,
}

/// `GET /api/v1/pairs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairsListResult {
    /// Pairs whose sessions the caller may see.
    pub pairs: Vec<PairInfo>,
}

/// `POST /api/v1/sessions/{id}/mcp-token` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpToken {
    /// Bearer token for `/mcp`, bound to the session.
    pub token: String,
    /// The MCP endpoint.
    pub url: String,
}

/// `POST /api/v1/sessions/{id}/messages` answer (202): the turn started, or (with
/// `queue: true` during a turn) the message was queued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageAccepted {
    /// A turn started.
    Started(TurnAccepted),
    /// The message waits in the session's queue.
    Queued(MessageQueued),
}

/// The message waits in the session's queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessageQueued {
    /// Always true.
    pub queued: bool,
    /// Its place in the queue (1: next).
    pub position: usize,
}

/// The body of the POSTs that take no fields (`interrupt`, `mcp-token`,
/// `tasks/{taskId}/stop`, `discard`): `{}`, or an empty body, which reads as `{}`.
/// They still carry `Content-Type: application/json` like every POST.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyBody {}

/// `POST /api/v1/sessions/{id}/interrupt` answer (202).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InterruptAccepted {
    /// The session whose turn is being stopped.
    pub session_id: SessionId,
}

/// `PATCH /api/v1/sessions/{id}` body: the fields of `session.configure` without the
/// id (which is in the path); absent fields stay as they are, unknown ones are refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionPatch {
    /// New title: 1 to 200 characters once trimmed.
    #[serde(default)]
    #[schemars(regex(pattern = crate::content::TITLE))]
    pub title: Option<String>,
    /// New model.
    #[serde(default)]
    pub model: Option<String>,
    /// New effort (clamped to the vendor's levels; empty: the vendor's default).
    #[serde(default)]
    #[schemars(extend("enum" = ["", "minimal", "low", "medium", "high", "xhigh", "max", null]))]
    pub effort: Option<String>,
    /// New vendor, one `GET /vendors` lists as installed (else 422: `INVALID_ARGUMENT`
    /// for an id it does not list, `VENDOR_NOT_INSTALLED` for one not installed).
    #[serde(default)]
    pub vendor: Option<String>,
    /// New permission mode.
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub permission_mode: Option<crate::PermissionMode>,
    /// New owner, an existing user's id (admins only; a user that does not exist is
    /// 422 `INVALID_ARGUMENT`): reassigns the session, e.g. one of a revoked user.
    #[serde(default)]
    pub owner_id: Option<UserId>,
    /// Which moments the owner's devices are told of by Web Push.
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub notify: Option<crate::push::Notify>,
    /// What to do when the vendor's usage or rate limit ends a turn (as
    /// `session.configure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_limit: Option<crate::session::OnLimit>,
}

/// `GET /api/v1/sessions/{id}/schedules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionSchedulesResult {
    /// Pending schedules and the latest 50 finished.
    pub schedules: Vec<crate::schedule::ScheduleInfo>,
}

/// `GET /api/v1/sessions/{id}/queue`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatQueueResult {
    /// The session.
    pub session_id: SessionId,
    /// Messages waiting to be sent, oldest first.
    pub queued: Vec<crate::server::QueuedEntry>,
}

/// Token counts and cost summed over turns. Vendors report usage in their own
/// shapes (`turn_completed.usage`); these are the parts every page shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// Turns that reported usage.
    pub turns: u64,
    /// Input tokens (Claude: including cache reads and writes).
    pub input_tokens: u64,
    /// Of the input, tokens served from the vendor's cache.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, summed over the turns whose vendor reported one; absent
    /// when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What one delegated Worker turn used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DelegationUsage {
    /// The Worker session that ran it.
    pub worker_id: SessionId,
    /// The Worker's turn.
    pub turn_id: TurnId,
    /// The Driver that delegated it.
    pub driver_id: SessionId,
    /// When the turn started, epoch ms.
    pub started_at: u64,
    /// Its usage (`turns` is 1 when the vendor reported any, else 0).
    pub usage: UsageTotals,
}

/// `GET /api/v1/sessions/{id}/usage`: totals from the stored `turn_completed` events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageSummary {
    /// The session.
    pub session_id: SessionId,
    /// Every turn of this session.
    pub total: UsageTotals,
    /// Delegated turns: for a Driver, its Workers' turns it delegated; for a Worker,
    /// its own delegated turns. Oldest first.
    pub delegations: Vec<DelegationUsage>,
}

/// Query of `GET /api/v1/sessions/{id}/usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageQuery {
    /// Count only turns that ended at or after this time, epoch ms (default 0: all).
    #[serde(default)]
    pub since: u64,
}

/// Query of `GET /api/v1/sessions/{id}/events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventsQuery {
    /// Events with `seq > after` (0..2^63−1).
    #[serde(default)]
    pub after: u64,
    /// Events per page, 1 to 5000.
    #[serde(default = "EventsQuery::default_limit")]
    pub limit: usize,
}

impl EventsQuery {
    /// Page size when none is asked for.
    pub fn default_limit() -> usize {
        1000
    }
}

/// `POST /api/v1/uploads` answer (201): the stored file, addressed by its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadInfo {
    /// `up_` and the SHA-256 of the bytes (hex): the same bytes give the same id.
    pub upload_id: UploadId,
    /// Bytes stored.
    pub size: u64,
    /// The media type, from the request's `Content-Type`.
    pub mime_type: String,
}

/// `POST /api/v1/uploads` query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadQuery {
    /// The file's name (path components are dropped); shown in history and used when
    /// a file is saved in a session's working directory.
    #[serde(default)]
    pub name: Option<String>,
}
