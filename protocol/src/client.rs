//! Client → server WebSocket frames, and the parser that classifies bad ones.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ErrorCode;
use crate::ids::{PairId, RequestId, SessionId, UserId};
pub use crate::operations::ClientRequest;
use crate::operations::{Refusal, Validate};
use crate::permission::RememberScope;
use crate::session::{PermissionMode, Visibility};

/// A parsed client frame: the request and the optional `requestId` to echo.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientFrame {
    /// Echoed on the reply or error.
    pub request_id: Option<String>,
    /// What the client asks for.
    pub request: ClientRequest,
}

/// Fields of `tool.call`: call a session-bound tool as that session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallParams {
    /// The session the call is made as.
    pub session_id: SessionId,
    /// Tool name.
    pub name: String,
    /// Tool arguments (an object).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Fields of `proposal.respond`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalRespondParams {
    /// The Driver session that proposed.
    pub session_id: SessionId,
    /// The proposal.
    pub proposal_id: String,
    /// Accept (true) or decline.
    pub accepted: bool,
    /// Worker vendor (default: the recommendation).
    #[serde(default)]
    pub vendor: Option<String>,
    /// Worker model.
    #[serde(default)]
    pub model: Option<String>,
    /// Worker effort.
    #[serde(default)]
    pub effort: Option<String>,
}

/// The Worker side of `pair.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerSpec {
    /// Worker vendor.
    pub vendor: String,
    /// Worker model.
    #[serde(default)]
    pub model: Option<String>,
    /// Worker effort (clamped to the vendor's levels).
    #[serde(default)]
    #[schemars(extend("enum" = ["", "minimal", "low", "medium", "high", "xhigh", "max", null]))]
    pub effort: Option<String>,
}

/// Fields of `pair.create`: a new Worker session paired with an existing Driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairCreateParams {
    /// The Driver session.
    pub driver_id: SessionId,
    /// The Worker to create.
    #[serde(deserialize_with = "crate::strict::object")]
    pub worker: WorkerSpec,
    /// Where the Worker works: in the Driver's directory (`shared`) or in a worktree
    /// of its own branched from the Driver's HEAD (`worktree`); default: the server's
    /// `worker_workspace` setting.
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub worker_workspace: Option<crate::workspace::WorkspaceMode>,
    /// Cluster only: the node to create the Worker on (default: the Driver's node).
    /// The pair runs on the Driver's node and reaches its Worker over NATS;
    /// `INVALID_ARGUMENT` (REST 422) for a node the cluster does not know,
    /// `NODE_UNAVAILABLE` for one whose lease lapsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_node: Option<String>,
    /// Who answers the permission requests of the Worker's delegated turns:
    /// `user` (default), `driver` (with `approve_worker`) or `bypass` (allowed at
    /// once).
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub worker_approvals: Option<crate::pair::WorkerApprovals>,
    /// The Worker's name among the Driver's Workers (1 to 32 letters, digits, `-`,
    /// `_`, `.`, not starting with `ses_`); default: its vendor, with `-2`, `-3`…
    /// when taken. A name the Driver already gave a Worker is `CONFLICT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 32),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    )]
    pub worker_name: Option<String>,
}

/// Fields of `session.handoff`: continue a conversation in a new session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionHandoffParams {
    /// The session to continue.
    pub session_id: SessionId,
    /// Vendor of the new session (required; absent gives a clear error).
    #[serde(default)]
    pub target_vendor: Option<String>,
    /// Model of the new session.
    #[serde(default)]
    pub model: Option<String>,
    /// Effort of the new session.
    #[serde(default)]
    pub effort: Option<String>,
}

/// Fields of `session.schedule`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionScheduleParams {
    /// The session.
    pub session_id: SessionId,
    /// The message to send when it comes due.
    pub content: String,
    /// When, RFC 3339 (at most 365 days ahead; a past time fires at once); for a
    /// recurring schedule, the rule's start.
    pub at: String,
    /// Repeat by this rule (`FREQ` MINUTELY to WEEKLY, `INTERVAL`, `BYDAY`, `BYHOUR`,
    /// `BYMINUTE`, `COUNT`, `UNTIL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrule: Option<String>,
    /// The IANA time zone of the rule's wall-clock times (default `UTC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// What an occurrence does while a turn runs (default `skip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_busy: Option<crate::schedule::IfBusy>,
}

/// Fields of `session.schedule-cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionScheduleCancelParams {
    /// The session.
    pub session_id: SessionId,
    /// The pending schedule.
    pub schedule_id: String,
}

/// Fields of `chat.queue-cancel`: take a message out of the session's queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatQueueCancelParams {
    /// The session.
    pub session_id: SessionId,
    /// The queued message (`queueId` of `chat_subscribed.queued` or `GET .../queue`).
    pub queue_id: String,
}

/// Fields of `chat.queue-edit`: replace a queued message's text; it keeps its place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatQueueEditParams {
    /// The session.
    pub session_id: SessionId,
    /// The queued message.
    pub queue_id: String,
    /// Its new text; not blank.
    pub content: String,
}

/// Fields of `pair.close`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairCloseParams {
    /// The pair to dissolve.
    pub pair_id: PairId,
}

/// Fields of `session.create` and of `POST /api/v1/sessions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreateParams {
    /// Vendor id; `scripted` when absent. One `GET /vendors` lists as installed (else,
    /// REST 422: `INVALID_ARGUMENT` for an id it does not list, `VENDOR_NOT_INSTALLED`
    /// for one not installed).
    #[serde(default)]
    pub vendor: Option<String>,
    /// Model name.
    #[serde(default)]
    pub model: Option<String>,
    /// Reasoning effort (clamped to the vendor's levels).
    #[serde(default)]
    #[schemars(extend("enum" = ["", "minimal", "low", "medium", "high", "xhigh", "max", null]))]
    pub effort: Option<String>,
    /// Title; "New session" when absent. 1 to 200 characters once trimmed.
    #[serde(default)]
    #[schemars(regex(pattern = crate::content::TITLE))]
    pub title: Option<String>,
    /// Working directory: an existing directory under one of the caller's workspace
    /// roots, outside the server's data directory (else `INVALID_ARGUMENT`, REST 422:
    /// a rule of this server's disk and configuration); blank or absent: the caller's
    /// first root. No NUL byte (no path has one).
    #[serde(default)]
    #[schemars(regex(pattern = crate::content::NO_NUL))]
    pub cwd: Option<String>,
    /// Tool approval mode.
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub permission_mode: Option<PermissionMode>,
    /// Private (default) or shared.
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub visibility: Option<Visibility>,
    /// The cluster node to create it on (it is pinned there: its working directory
    /// is that node's); default the node asked. A node the cluster does not have (any
    /// node, outside a cluster) is refused with `INVALID_ARGUMENT` (REST 422).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `shared` (default: work in `cwd`) or `worktree` (a new git worktree on branch
    /// `tandem/<short id>`; `cwd` must be inside a git repository).
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub workspace: Option<crate::workspace::WorkspaceMode>,
    /// With `worktree`: the commit, tag or branch to branch from (default: the HEAD of
    /// the checkout at `cwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
    /// The MCP servers its agent gets beside tandem's own tools: names from
    /// `mcp-servers.list` and entries for this session alone, at most 32 and no name
    /// twice (a name the caller cannot use, or one given twice: `INVALID_ARGUMENT`,
    /// REST 422). Absent or `null`: every server `mcp-servers.list` shows the owner;
    /// `[]`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub mcp_servers: Option<Vec<crate::mcp_servers::McpServerChoice>>,
}

/// Per-turn overrides on `chat.send`; they stick to the session like `session.configure`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnOptions {
    /// Model for this and later turns.
    #[serde(default)]
    pub model: Option<String>,
    /// Effort for this and later turns (clamped to the vendor's levels).
    #[serde(default)]
    #[schemars(extend("enum" = ["", "minimal", "low", "medium", "high", "xhigh", "max", null]))]
    pub effort: Option<String>,
    /// Permission mode for this and later turns.
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub permission_mode: Option<PermissionMode>,
}

/// Fields of `chat.send`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatSendParams {
    /// Target session.
    pub session_id: SessionId,
    /// The user's message: a string, or a list of content blocks (text, images,
    /// files).
    pub content: crate::content::MessageContent,
    /// Model/effort/permission changes applied before the turn.
    #[serde(default, deserialize_with = "crate::strict::object_opt")]
    pub options: Option<TurnOptions>,
    /// Queue the message instead of failing when a turn runs.
    #[serde(default)]
    pub queue: bool,
}

/// Fields of `chat.edit-send`: rewind the conversation to just before an earlier
/// user message and run `content` in its place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatEditSendParams {
    /// Target session.
    pub session_id: SessionId,
    /// The `seq` of the `user_message` to replace: one of an ended turn of this
    /// session that no earlier rewind superseded.
    #[serde(deserialize_with = "crate::strict::whole")]
    pub anchor_seq: u64,
    /// The new message: a string or content blocks, as `chat.send`'s `content`, and
    /// run the same way.
    pub content: crate::content::MessageContent,
    /// Model/effort/permission changes applied before the turn (as on `chat.send`).
    #[serde(default, deserialize_with = "crate::strict::object_opt")]
    pub options: Option<TurnOptions>,
    /// Also put the files back as they were when the anchor's turn started (the
    /// newest `checkpoint` or `restored` before it), as `session.restore` does, before
    /// the conversation is rewound. `NO_SUCH_CHECKPOINT` when none was recorded.
    #[serde(default)]
    pub restore_files: bool,
}

/// Fields of `session.fork`: a new session whose conversation is this one's up to and
/// including the turn of an earlier user message; the source is unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionForkParams {
    /// The session forked.
    pub session_id: SessionId,
    /// The `seq` of a `user_message` of an ended turn of it that no rewind superseded.
    #[serde(deserialize_with = "crate::strict::whole")]
    pub anchor_seq: u64,
    /// The fork's title; the source's with " · fork" when absent. 1 to 200
    /// characters once trimmed.
    #[serde(default)]
    #[schemars(regex(pattern = crate::content::TITLE))]
    pub title: Option<String>,
    /// The fork's vendor; the source's when absent. Another vendor gets the
    /// conversation as a bounded transcript.
    #[serde(default)]
    pub vendor: Option<String>,
    /// `worktree`: a worktree of its own whose files are the anchor turn's checkpoint
    /// (the default when the source has a worktree); `shared`: the source's
    /// working directory as it is.
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub workspace: Option<crate::workspace::WorkspaceMode>,
}

/// Fields of `chat.abort`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatAbortParams {
    /// The session whose turn to interrupt.
    pub session_id: SessionId,
}

/// Fields of `session.discard`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiscardParams {
    /// The session whose worktree to remove.
    pub session_id: SessionId,
}

/// Fields of `chat.permission-response`: a person's answer to a `permission_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatPermissionResponseParams {
    /// The permission request answered. On the wire it is the frame's `requestId`
    /// (which the reply echoes as usual), so the parser fills it in.
    #[serde(default)]
    pub request_id: RequestId,
    /// The session that asked; optional (request ids are unique server-wide), but it
    /// saves a lookup.
    #[serde(default)]
    pub session_id: Option<SessionId>,
    /// Allow the tool call once (true) or deny it.
    pub allow: bool,
    /// Input to run the tool with instead of the requested one.
    #[serde(default)]
    pub updated_input: Option<Value>,
    /// Why it was denied; passed on to the agent.
    #[serde(default)]
    pub message: Option<String>,
    /// With `allow`: also allow this tool without asking for the rest of the session
    /// (the vendor's "always allow").
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub remember: Option<RememberScope>,
    /// With `allow`: the session's permission mode from now on (a plan approved with
    /// "accept edits" answers `acceptEdits`).
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub permission_mode: Option<PermissionMode>,
}

/// Fields of `chat.stop-task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatStopTaskParams {
    /// The session that owns the task.
    pub session_id: SessionId,
    /// The background task to stop.
    #[serde(default)]
    pub task_id: Option<String>,
}

/// One entry of `chat.subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeEntry {
    /// The session to watch.
    pub session_id: SessionId,
    /// The last `seq` the client already has; replay starts after it (0: everything).
    #[serde(default)]
    pub last_seq: Option<u64>,
}

/// Fields of `chat.subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatSubscribeParams {
    /// Sessions to subscribe to.
    #[serde(deserialize_with = "crate::strict::objects")]
    pub sessions: Vec<SubscribeEntry>,
}

/// Paging fields of `sessions.watch` and `sessions.list` (and the query of REST
/// `GET /sessions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionsListParams {
    /// Sessions per page, 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `nextCursor` of the previous page; absent for the first.
    #[serde(default)]
    pub cursor: Option<String>,
}

impl SessionsListParams {
    /// Page size when none is asked for.
    pub const DEFAULT_LIMIT: usize = 100;
}

/// Fields of `sessions.watch`: the first page, as `sessions.list`'s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionsWatchParams {
    /// Sessions in the first page, 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `nextCursor` of a previous page; absent for the first.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Fields of `chat.unsubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatUnsubscribeParams {
    /// Sessions to stop receiving.
    pub session_ids: Vec<SessionId>,
}

/// Fields of `session.configure`; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigureParams {
    /// The session.
    pub session_id: SessionId,
    /// New model.
    #[serde(default)]
    pub model: Option<String>,
    /// New effort (clamped).
    #[serde(default)]
    pub effort: Option<String>,
    /// New vendor (refused once the vendor has a session id).
    #[serde(default)]
    pub vendor: Option<String>,
    /// New permission mode.
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub permission_mode: Option<PermissionMode>,
    /// New title.
    #[serde(default)]
    pub title: Option<String>,
    /// New owner: an existing user's id. Admins only; how a revoked user's session is
    /// given to someone else (it takes commands again).
    #[serde(default)]
    pub owner_id: Option<UserId>,
    /// Which moments the owner's devices are told of by Web Push.
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub notify: Option<crate::push::Notify>,
    /// What to do when the vendor's usage or rate limit ends a turn: `fail`, `wait`
    /// or `{"handoff": VENDOR}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_limit: Option<crate::session::OnLimit>,
}

/// Why a frame could not be turned into a request. Carries what is needed to answer
/// with a `protocol_error`.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameError {
    /// The code to report.
    pub code: ErrorCode,
    /// What was wrong, for a person.
    pub message: String,
    /// The frame's `requestId`, when it could be read.
    pub request_id: Option<String>,
    /// The frame's `sessionId`, when it could be read.
    pub session_id: Option<SessionId>,
}

/// Parses one text frame. Never panics; every failure is classified:
/// not JSON or not an object → `INVALID_JSON`; missing or unknown `type` →
/// `UNKNOWN_MESSAGE_TYPE`; a missing `sessionId` where the request's scope needs one
/// (the table in [`crate::operations`]) → `SESSION_ID_REQUIRED`; any other shape
/// problem or broken rule → `INVALID_ARGUMENT` (or the rule's own code).
pub fn parse_client_frame(text: &str) -> Result<ClientFrame, FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|e| FrameError {
        code: ErrorCode::InvalidJson,
        message: format!("frame is not valid JSON: {e}"),
        request_id: None,
        session_id: None,
    })?;
    let Value::Object(mut obj) = value else {
        return Err(FrameError {
            code: ErrorCode::InvalidJson,
            message: "frame must be a JSON object".into(),
            request_id: None,
            session_id: None,
        });
    };
    let request_id = obj
        .get("requestId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let session_id = obj
        .get("sessionId")
        .and_then(Value::as_str)
        .map(SessionId::from);
    let fail = |code: ErrorCode, message: String| FrameError {
        code,
        message,
        request_id: request_id.clone(),
        session_id: session_id.clone(),
    };
    let Some(Value::String(kind)) = obj.remove("type") else {
        return Err(fail(
            ErrorCode::UnknownMessageType,
            "frame has no string `type`".into(),
        ));
    };
    let needs_session = crate::operations::OPERATIONS
        .iter()
        .any(|o| o.name == kind && o.needs_session);
    if needs_session && session_id.as_deref().is_none_or(str::is_empty) {
        return Err(fail(
            ErrorCode::SessionIdRequired,
            format!("`{kind}` needs a string `sessionId`"),
        ));
    }
    // A permission response names the request it answers by the frame's
    // `requestId`; every other request has it only to echo.
    if kind != "chat.permission-response" {
        obj.remove("requestId");
    }
    if kind == "chat.subscribe" {
        subscribe_entries_named(&obj).map_err(|r| fail(r.code, r.message))?;
    }
    let request = match ClientRequest::decode(&kind, obj) {
        None => {
            return Err(fail(
                ErrorCode::UnknownMessageType,
                format!("unknown message type `{kind}`"),
            ))
        }
        Some(decoded) => decoded.and_then(|r| r.validate().map(|()| r)),
    };
    match request {
        Ok(request) => Ok(ClientFrame {
            request_id,
            request,
        }),
        Err(refusal) => Err(FrameError {
            session_id: refusal.session_id.or_else(|| session_id.clone()),
            ..fail(refusal.code, refusal.message)
        }),
    }
}

/// Every `sessions` entry of `chat.subscribe` names its session (checked before the
/// fields are read, so a missing one is `SESSION_ID_REQUIRED`, not a shape error).
fn subscribe_entries_named(obj: &Map<String, Value>) -> Result<(), Refusal> {
    let missing = obj
        .get("sessions")
        .and_then(Value::as_array)
        .is_some_and(|entries| {
            entries.iter().any(|e| {
                e.get("sessionId")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            })
        });
    if missing {
        return Err(Refusal {
            code: ErrorCode::SessionIdRequired,
            message: "every `sessions` entry needs a string `sessionId`".into(),
            session_id: None,
        });
    }
    Ok(())
}

impl Validate for ChatEditSendParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.anchor_seq == 0 || self.anchor_seq > crate::MAX_SEQ {
            return Err(Refusal::invalid(format!(
                "`anchorSeq` must be between 1 and {}",
                crate::MAX_SEQ
            )));
        }
        Ok(())
    }
}

impl Validate for SessionForkParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.anchor_seq == 0 || self.anchor_seq > crate::MAX_SEQ {
            return Err(Refusal::invalid(format!(
                "`anchorSeq` must be between 1 and {}",
                crate::MAX_SEQ
            )));
        }
        Ok(())
    }
}

impl Validate for ChatStopTaskParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.task_id.as_deref().is_none_or(str::is_empty) {
            return Err(Refusal {
                code: ErrorCode::TaskIdRequired,
                message: "`chat.stop-task` needs a `taskId`".into(),
                session_id: None,
            });
        }
        Ok(())
    }
}

impl Validate for ChatPermissionResponseParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.request_id.is_empty() {
            return Err(Refusal::invalid(
                "`chat.permission-response` needs the permission's `requestId`",
            ));
        }
        Ok(())
    }
}

impl Validate for ChatSubscribeParams {
    fn validate(&self) -> Result<(), Refusal> {
        match self
            .sessions
            .iter()
            .find(|e| e.last_seq.is_some_and(|s| s > crate::MAX_SEQ))
        {
            Some(entry) => Err(Refusal {
                session_id: Some(entry.session_id.clone()),
                ..Refusal::invalid(format!(
                    "`lastSeq` must be at most {} (positions are never wrapped)",
                    crate::MAX_SEQ
                ))
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> ErrorCode {
        match parse_client_frame(text) {
            Ok(f) => panic!("parsed {f:?}"),
            Err(e) => e.code,
        }
    }

    #[test]
    fn classifies_bad_frames() {
        assert_eq!(code("{nope"), ErrorCode::InvalidJson);
        assert_eq!(code("[1,2]"), ErrorCode::InvalidJson);
        assert_eq!(
            code(r#"{"type":"warp.drive"}"#),
            ErrorCode::UnknownMessageType
        );
        assert_eq!(code(r#"{"requestId":"r"}"#), ErrorCode::UnknownMessageType);
        assert_eq!(
            code(r#"{"type":"chat.send","content":"x"}"#),
            ErrorCode::SessionIdRequired
        );
        assert_eq!(
            code(r#"{"type":"chat.send","sessionId":"s"}"#),
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            code(r#"{"type":"chat.stop-task","sessionId":"s"}"#),
            ErrorCode::TaskIdRequired
        );
        assert_eq!(
            code(r#"{"type":"chat.subscribe","sessions":[{"lastSeq":1}]}"#),
            ErrorCode::SessionIdRequired
        );
        assert_eq!(
            code(r#"{"type":"session.create","permissionMode":"yolo"}"#),
            ErrorCode::InvalidArgument
        );
    }

    /// Positions past what the store can hold are refused, never wrapped: `lastSeq`
    /// 2^64-1 once made the gateway compute `after + 1` = 0 and replay everything.
    #[test]
    fn subscribe_positions_are_bounded() {
        for last in [
            (crate::MAX_SEQ + 1).to_string(),
            u64::MAX.to_string(),
            "18446744073709551616".into(),
            "-1".into(),
            "1.5".into(),
        ] {
            let text = format!(
                r#"{{"type":"chat.subscribe","sessions":[{{"sessionId":"s","lastSeq":{last}}}]}}"#
            );
            assert_eq!(code(&text), ErrorCode::InvalidArgument, "{last}");
        }
        let err = parse_client_frame(&format!(
            r#"{{"type":"chat.subscribe","sessions":[{{"sessionId":"a"}},{{"sessionId":"b","lastSeq":{}}}]}}"#,
            u64::MAX
        ))
        .err()
        .unwrap_or_else(|| panic!("should fail"));
        assert_eq!(err.session_id.as_deref(), Some("b"));
        let ok = parse_client_frame(&format!(
            r#"{{"type":"chat.subscribe","sessions":[{{"sessionId":"s","lastSeq":{}}}]}}"#,
            crate::MAX_SEQ
        ))
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            ok.request,
            ClientRequest::ChatSubscribe(ChatSubscribeParams {
                sessions: vec![SubscribeEntry {
                    session_id: "s".into(),
                    last_seq: Some(crate::MAX_SEQ),
                }]
            })
        );
    }

    #[test]
    fn keeps_request_id_on_errors_and_success() {
        let err = parse_client_frame(r#"{"type":"bogus","requestId":"r7","sessionId":"s"}"#)
            .err()
            .unwrap_or_else(|| panic!("should fail"));
        assert_eq!(err.request_id.as_deref(), Some("r7"));
        assert_eq!(err.session_id.as_deref(), Some("s"));
        let ok = parse_client_frame(
            r#"{"type":"chat.send","requestId":"r8","sessionId":"s","content":"hi"}"#,
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(ok.request_id.as_deref(), Some("r8"));
        assert_eq!(
            ok.request,
            ClientRequest::ChatSend(ChatSendParams {
                session_id: "s".into(),
                content: "hi".into(),
                options: None,
                queue: false,
            })
        );
    }

    #[test]
    fn permission_response_takes_the_frame_request_id() {
        assert_eq!(
            code(r#"{"type":"chat.permission-response","allow":true}"#),
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            code(r#"{"type":"chat.permission-response","requestId":"perm_1"}"#),
            ErrorCode::InvalidArgument
        );
        let ok = parse_client_frame(
            r#"{"type":"chat.permission-response","requestId":"perm_1","allow":false,"message":"no"}"#,
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(ok.request_id.as_deref(), Some("perm_1"));
        assert_eq!(
            ok.request,
            ClientRequest::ChatPermissionResponse(ChatPermissionResponseParams {
                request_id: "perm_1".into(),
                session_id: None,
                allow: false,
                updated_input: None,
                message: Some("no".into()),
                remember: None,
                permission_mode: None,
            })
        );
        let always = parse_client_frame(
            r#"{"type":"chat.permission-response","requestId":"perm_2","allow":true,"remember":"session"}"#,
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let ClientRequest::ChatPermissionResponse(p) = always.request else {
            panic!("not a permission response: {:?}", always.request);
        };
        assert_eq!(p.remember, Some(RememberScope::Session));
        assert_eq!(
            code(
                r#"{"type":"chat.permission-response","requestId":"p","allow":true,"remember":"forever"}"#
            ),
            ErrorCode::InvalidArgument
        );
    }
}
