//! Typed serde shapes of the `codex app-server` messages this adapter uses.
//!
//! Only the fields we read or write are declared; app-server adds fields and
//! notifications from version to version, and serde ignores what we do not name.
//! Every optional field is `Option` (or defaulted) so a field a newer version drops
//! does not fail a parse. `schema_check` (a test) compares these shapes with the JSON
//! schema the pinned binary generates.

use serde::{Deserialize, Serialize};
use serde_json::Value;

// ---------------------------------------------------------------------------
// JSON-RPC framing
// ---------------------------------------------------------------------------

/// A JSON-RPC request id. We send numbers; app-server's own requests use numbers too,
/// but the protocol allows strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    Text(String),
}

/// One line read from app-server, before it is classified. `jsonrpc` may be absent.
#[derive(Debug, Deserialize)]
pub struct RawMessage {
    /// Present on responses and on server→client requests.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// Present on notifications and requests.
    #[serde(default)]
    pub method: Option<String>,
    /// Parameters of a notification or request.
    #[serde(default)]
    pub params: Option<Value>,
    /// A successful response's result.
    #[serde(default)]
    pub result: Option<Value>,
    /// A failed response's error.
    #[serde(default)]
    pub error: Option<RpcErrorBody>,
}

/// The `error` member of a failed response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcErrorBody {
    /// JSON-RPC error code (-32600 "Not initialized", -32601 unknown method, ...).
    pub code: i64,
    /// Human-readable reason.
    pub message: String,
}

/// Which thread a notification or server request concerns: the routing key.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRef {
    /// Absent on process-wide notifications (rate limits, config warnings).
    #[serde(default)]
    pub thread_id: Option<String>,
}

// ---------------------------------------------------------------------------
// Client → server requests
// ---------------------------------------------------------------------------

/// `initialize` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who we are (shown in app-server's user agent).
    pub client_info: ClientInfo,
    /// Opt-ins.
    pub capabilities: InitializeCapabilities,
}

/// `initialize.clientInfo`.
#[derive(Debug, Serialize)]
pub struct ClientInfo {
    /// Machine name.
    pub name: String,
    /// Display name.
    pub title: String,
    /// Our version.
    pub version: String,
}

/// `initialize.capabilities`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Needed for `thread/backgroundTerminals/*`.
    pub experimental_api: bool,
    /// Notifications we never use, so app-server does not write them at all.
    pub opt_out_notification_methods: Vec<String>,
}

/// `initialize` result.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// app-server's user agent; holds its version.
    pub user_agent: String,
    /// Its `$CODEX_HOME`.
    #[serde(default)]
    pub codex_home: Option<String>,
}

/// Approval policy of a thread or turn (`AskForApproval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Ask before anything not known to be safe.
    Untrusted,
    /// The model asks when it wants to leave the sandbox.
    OnRequest,
    /// Never ask.
    Never,
}

/// Sandbox of a thread (`SandboxMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing may be written.
    ReadOnly,
    /// The working directory may be written.
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

/// Sandbox of one turn (`SandboxPolicy`, an object unlike the thread's mode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// Nothing may be written.
    ReadOnly,
    /// The working directory may be written.
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

impl From<SandboxMode> for SandboxPolicy {
    fn from(mode: SandboxMode) -> Self {
        match mode {
            SandboxMode::ReadOnly => SandboxPolicy::ReadOnly,
            SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite,
            SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        }
    }
}

/// `thread/start` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// Working directory of the thread.
    pub cwd: String,
    /// Approval policy until a turn overrides it.
    pub approval_policy: ApprovalPolicy,
    /// Sandbox until a turn overrides it.
    pub sandbox: SandboxMode,
    /// Model; `None` keeps the configured default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Extra instructions (a Driver's pair instruction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// Per-thread config overrides: the `tandem` MCP server with this session's token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
}

/// `thread/resume` params (a thread from an earlier process).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread to load.
    pub thread_id: String,
    /// Working directory.
    pub cwd: String,
    /// Approval policy.
    pub approval_policy: ApprovalPolicy,
    /// Sandbox.
    pub sandbox: SandboxMode,
    /// Model; `None` keeps the thread's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Extra instructions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// Per-thread config overrides (see [`ThreadStartParams::config`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// We keep our own history; do not send the old turns back.
    pub exclude_turns: bool,
}

/// `thread/start` and `thread/resume` result.
#[derive(Debug, Serialize, Deserialize)]
pub struct ThreadResponse {
    /// The thread.
    pub thread: Thread,
}

/// A thread as app-server describes it (we only need its id).
#[derive(Debug, Serialize, Deserialize)]
pub struct Thread {
    /// The thread id, recorded as the session's `vendorSessionId`.
    pub id: String,
}

/// One piece of user input.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// UI spans; always empty from us.
        text_elements: Vec<Value>,
    },
}

/// `turn/start` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread.
    pub thread_id: String,
    /// The user's message.
    pub input: Vec<UserInput>,
    /// Model for this turn (and the following ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort for this turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Approval policy for this turn (the session's mode may have changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Sandbox for this turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
}

/// `turn/start` result.
#[derive(Debug, Serialize, Deserialize)]
pub struct TurnStartResponse {
    /// The new turn (`status: inProgress`).
    pub turn: Turn,
}

/// A turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// Codex's turn id.
    pub id: String,
    /// Where it stands.
    pub status: TurnStatus,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<TurnError>,
}

/// A turn's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    /// Ended normally.
    Completed,
    /// Stopped by `turn/interrupt`.
    Interrupted,
    /// Ended by an error.
    Failed,
    /// Still running.
    InProgress,
}

/// A turn's (or an `error` notification's) error.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// What went wrong.
    pub message: String,
    /// More detail (the transport error, for instance).
    #[serde(default)]
    pub additional_details: Option<String>,
}

impl TurnError {
    /// Message and details in one line.
    pub fn describe(&self) -> String {
        match self.additional_details.as_deref() {
            Some(d) if !d.is_empty() => format!("{} ({d})", self.message),
            _ => self.message.clone(),
        }
    }
}

/// `turn/interrupt` params; the result is `{}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The turn to stop.
    pub turn_id: String,
}

/// `thread/backgroundTerminals/list` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundTerminalsListParams {
    /// The thread.
    pub thread_id: String,
    /// Page cursor from the previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `thread/backgroundTerminals/list` result.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundTerminalsListResponse {
    /// Terminals still running.
    pub data: Vec<BackgroundTerminal>,
    /// Set when there is another page.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One shell command still running after its turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundTerminal {
    /// The `commandExecution` item that started it.
    pub item_id: String,
    /// Codex's process id (not an OS pid); `terminate` takes it. Our task id.
    pub process_id: String,
    /// The command line.
    pub command: String,
}

/// `thread/backgroundTerminals/terminate` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundTerminalsTerminateParams {
    /// The thread.
    pub thread_id: String,
    /// The terminal.
    pub process_id: String,
}

/// `thread/backgroundTerminals/terminate` result.
#[derive(Debug, Serialize, Deserialize)]
pub struct BackgroundTerminalsTerminateResponse {
    /// False when it had already ended.
    pub terminated: bool,
}

/// `model/list` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelListParams {
    /// Page cursor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `model/list` result.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelListResponse {
    /// Models.
    pub data: Vec<Model>,
    /// Set when there is another page.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// A model app-server offers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The name to pass as `model`.
    pub model: String,
    /// Hidden from pickers.
    #[serde(default)]
    pub hidden: bool,
}

// ---------------------------------------------------------------------------
// Server → client notifications
// ---------------------------------------------------------------------------

/// `turn/started`, `turn/completed`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn: Turn,
}

/// `item/started`, `item/completed`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn the item belongs to.
    pub turn_id: String,
    /// The item.
    pub item: ThreadItem,
}

/// `item/agentMessage/delta`, `item/reasoning/summaryTextDelta`,
/// `item/reasoning/textDelta`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item the text belongs to.
    pub item_id: String,
    /// New text.
    pub delta: String,
}

/// `thread/tokenUsage/updated`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// Usage so far.
    pub token_usage: ThreadTokenUsage,
}

/// Token usage of a thread: the whole thread and the last model request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// The last model request only; a turn's usage is the sum of these.
    pub last: TokenUsageBreakdown,
    /// The model's context window.
    #[serde(default)]
    pub model_context_window: Option<i64>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    /// Input tokens.
    pub input_tokens: i64,
    /// Of those, served from cache.
    pub cached_input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Of those, reasoning.
    pub reasoning_output_tokens: i64,
    /// Everything.
    pub total_tokens: i64,
}

/// `error`: the turn met an error; `will_retry` says whether Codex keeps trying.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The error.
    pub error: TurnError,
    /// True while Codex retries (it retries an unreachable model indefinitely).
    pub will_retry: bool,
}

/// `serverRequest/resolved`: a request app-server sent us no longer needs an answer
/// (answered, or withdrawn by an interrupt).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestResolved {
    /// The thread.
    pub thread_id: String,
    /// The request's JSON-RPC id.
    pub request_id: RequestId,
}

/// A thread item (`ThreadItem`), tagged by `type`. Kinds we do not show are `Other`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    /// Assistant text.
    #[serde(rename_all = "camelCase")]
    AgentMessage {
        /// Item id.
        id: String,
        /// The whole text (on completion).
        #[serde(default)]
        text: String,
    },
    /// Model reasoning.
    #[serde(rename_all = "camelCase")]
    Reasoning {
        /// Item id.
        id: String,
        /// Summary parts.
        #[serde(default)]
        summary: Vec<String>,
        /// Raw reasoning parts (rarely sent).
        #[serde(default)]
        content: Vec<String>,
    },
    /// A shell command.
    #[serde(rename_all = "camelCase")]
    CommandExecution {
        /// Item id (the model's call id).
        id: String,
        /// The command line.
        command: String,
        /// Where it runs.
        #[serde(default)]
        cwd: Option<String>,
        /// inProgress | completed | failed | declined.
        status: ItemStatus,
        /// stdout and stderr, on completion.
        #[serde(default)]
        aggregated_output: Option<String>,
        /// Exit code, on completion.
        #[serde(default)]
        exit_code: Option<i64>,
        /// Codex's process id while it runs (a background terminal's id).
        #[serde(default)]
        process_id: Option<String>,
    },
    /// A patch to files.
    #[serde(rename_all = "camelCase")]
    FileChange {
        /// Item id.
        id: String,
        /// The changes.
        #[serde(default)]
        changes: Vec<Value>,
        /// inProgress | completed | failed | declined.
        status: ItemStatus,
    },
    /// A call to an MCP tool (our pair tools arrive this way).
    #[serde(rename_all = "camelCase")]
    McpToolCall {
        /// Item id.
        id: String,
        /// MCP server name.
        server: String,
        /// Tool name.
        tool: String,
        /// Arguments.
        #[serde(default)]
        arguments: Value,
        /// inProgress | completed | failed.
        status: ItemStatus,
        /// MCP result (`content`, ...), on success.
        #[serde(default)]
        result: Option<Value>,
        /// Why it failed.
        #[serde(default)]
        error: Option<McpToolCallError>,
    },
    /// A call to a client-provided dynamic tool.
    #[serde(rename_all = "camelCase")]
    DynamicToolCall {
        /// Item id.
        id: String,
        /// Tool name.
        tool: String,
        /// Arguments.
        #[serde(default)]
        arguments: Value,
        /// inProgress | completed | failed.
        status: ItemStatus,
        /// Output content, on completion.
        #[serde(default)]
        content_items: Option<Value>,
        /// Whether it succeeded.
        #[serde(default)]
        success: Option<bool>,
    },
    /// A web search.
    #[serde(rename_all = "camelCase")]
    WebSearch {
        /// Item id.
        id: String,
        /// The query.
        #[serde(default)]
        query: String,
    },
    /// Anything else (user messages, plans, compaction, ...).
    #[serde(other)]
    Other,
}

/// Status of a tool-like item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ItemStatus {
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Refused by the person.
    Declined,
}

/// An MCP tool call's error.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpToolCallError {
    /// What went wrong.
    pub message: String,
}

// ---------------------------------------------------------------------------
// Server → client requests and our answers
// ---------------------------------------------------------------------------

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The command's item.
    pub item_id: String,
    /// The command.
    #[serde(default)]
    pub command: Option<String>,
    /// Where it would run.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Why the model wants it.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `item/fileChange/requestApproval` params.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The patch's item.
    pub item_id: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
    /// A root it wants write access under.
    #[serde(default)]
    pub grant_root: Option<String>,
}

/// `item/permissions/requestApproval` params.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item_id: String,
    /// Requested permission profile, granted back as is when allowed.
    pub permissions: Value,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `mcpServer/elicitation/request` params (an MCP tool asking for approval or input).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationParams {
    /// The thread.
    pub thread_id: String,
    /// The MCP server.
    pub server_name: String,
    /// The question.
    #[serde(default)]
    pub message: Option<String>,
    /// Details (for a tool-call approval: the tool and its arguments).
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}

/// Our answer to a command or file-change approval.
#[derive(Debug, Serialize, Deserialize)]
pub struct ApprovalResponse {
    /// The decision.
    pub decision: ApprovalDecision,
}

/// Decisions we give (app-server offers more; we use these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    /// Run it once.
    Accept,
    /// Run it, and do not ask again for the same in this session ("always allow").
    AcceptForSession,
    /// Do not run it; the turn goes on.
    Decline,
    /// Do not run it; the turn stops.
    Cancel,
}

/// Our answer to `item/permissions/requestApproval`.
#[derive(Debug, Serialize, Deserialize)]
pub struct PermissionsApprovalResponse {
    /// Granted permissions (`{}` grants nothing).
    pub permissions: Value,
}

/// Our answer to `mcpServer/elicitation/request`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ElicitationResponse {
    /// The answer.
    pub action: ElicitationAction,
    /// Form content when accepting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// Elicitation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ElicitationAction {
    /// Yes.
    Accept,
    /// No.
    Decline,
    /// Withdrawn.
    Cancel,
}

/// Notification and request method names we handle.
pub mod method {
    /// Client → server.
    pub const INITIALIZE: &str = "initialize";
    /// Client → server notification after `initialize`.
    pub const INITIALIZED: &str = "initialized";
    /// Client → server.
    pub const THREAD_START: &str = "thread/start";
    /// Client → server.
    pub const THREAD_RESUME: &str = "thread/resume";
    /// Client → server.
    pub const TURN_START: &str = "turn/start";
    /// Client → server.
    pub const TURN_INTERRUPT: &str = "turn/interrupt";
    /// Client → server (experimental).
    pub const TERMINALS_LIST: &str = "thread/backgroundTerminals/list";
    /// Client → server (experimental).
    pub const TERMINALS_TERMINATE: &str = "thread/backgroundTerminals/terminate";
    /// Client → server.
    pub const MODEL_LIST: &str = "model/list";

    /// Server notification.
    pub const TURN_STARTED: &str = "turn/started";
    /// Server notification.
    pub const TURN_COMPLETED: &str = "turn/completed";
    /// Server notification.
    pub const ITEM_STARTED: &str = "item/started";
    /// Server notification.
    pub const ITEM_COMPLETED: &str = "item/completed";
    /// Server notification.
    pub const AGENT_MESSAGE_DELTA: &str = "item/agentMessage/delta";
    /// Server notification.
    pub const REASONING_SUMMARY_DELTA: &str = "item/reasoning/summaryTextDelta";
    /// Server notification.
    pub const REASONING_TEXT_DELTA: &str = "item/reasoning/textDelta";
    /// Server notification.
    pub const TOKEN_USAGE: &str = "thread/tokenUsage/updated";
    /// Server notification.
    pub const ERROR: &str = "error";
    /// Server notification.
    pub const REQUEST_RESOLVED: &str = "serverRequest/resolved";

    /// Server request.
    pub const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
    /// Server request.
    pub const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";
    /// Server request.
    pub const PERMISSIONS_APPROVAL: &str = "item/permissions/requestApproval";
    /// Server request.
    pub const ELICITATION: &str = "mcpServer/elicitation/request";

    /// Notifications we never read; app-server is asked not to send them.
    pub const OPTED_OUT: &[&str] = &[
        "account/rateLimits/updated",
        "thread/readState/changed",
        "remoteControl/status/changed",
        "item/commandExecution/outputDelta",
        "item/fileChange/outputDelta",
        "thread/status/changed",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_items_seen_from_the_pinned_binary() {
        let cmd = json!({"type":"commandExecution","id":"call_1","pluginId":null,
            "command":"/bin/bash -lc 'echo hi'","cwd":"/tmp","processId":"79502",
            "source":"unifiedExecStartup","status":"failed","commandActions":[],
            "aggregatedOutput":"out\n","exitCode":3,"durationMs":0,"startedAtMs":1});
        match serde_json::from_value::<ThreadItem>(cmd) {
            Ok(ThreadItem::CommandExecution {
                status, exit_code, ..
            }) => {
                assert_eq!(status, ItemStatus::Failed);
                assert_eq!(exit_code, Some(3));
            }
            other => panic!("{other:?}"),
        }
        let user = json!({"type":"userMessage","id":"u","content":[]});
        assert!(matches!(
            serde_json::from_value::<ThreadItem>(user),
            Ok(ThreadItem::Other)
        ));
        let raw: RawMessage =
            serde_json::from_str(r#"{"id":0,"method":"x","params":{"threadId":"t"}}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(raw.id, Some(RequestId::Number(0)));
    }

    #[test]
    fn serializes_policies_as_app_server_spells_them() {
        assert_eq!(
            serde_json::to_value(ApprovalPolicy::OnRequest).ok(),
            Some(json!("on-request"))
        );
        assert_eq!(
            serde_json::to_value(SandboxPolicy::WorkspaceWrite).ok(),
            Some(json!({"type": "workspaceWrite"}))
        );
        assert_eq!(
            serde_json::to_value(SandboxMode::DangerFullAccess).ok(),
            Some(json!("danger-full-access"))
        );
    }
}
