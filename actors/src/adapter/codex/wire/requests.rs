//! Client → server requests we send, and their results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// `thread/turns/list` params: the newest turns first (the default direction).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListParams {
    /// The thread.
    pub thread_id: String,
    /// Turns per page.
    pub limit: u32,
    /// `desc`: newest first.
    pub sort_direction: &'static str,
}

/// `thread/turns/list` result (only the turn ids are read).
#[derive(Debug, Serialize, Deserialize)]
pub struct ThreadTurnsListResponse {
    /// The page of turns, in the requested order.
    pub data: Vec<TurnRef>,
}

/// A turn as listed (we only need its id).
#[derive(Debug, Serialize, Deserialize)]
pub struct TurnRef {
    /// Codex's turn id.
    pub id: String,
}

/// `thread/fork` params: a new thread holding the turns before `before_turn_id`; the
/// source thread stays as it was (so the superseded branch stays resumable).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadForkParams {
    /// The thread forked.
    pub thread_id: String,
    /// The first turn left out, with every later one; `None` forks every turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_turn_id: Option<String>,
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
    /// An image, as a `data:` URL holding its bytes (base64).
    Image {
        /// `data:MIME;base64,...`.
        url: String,
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
    /// Codex's kind of error: a name (`usageLimitExceeded`, `rateLimitExceeded`,
    /// ...) or an object (`{responseTooManyFailedAttempts: {httpStatusCode}}`, ...).
    #[serde(default)]
    pub codex_error_info: Option<serde_json::Value>,
}

impl TurnError {
    /// Whether the vendor's usage or rate limit is what failed the turn.
    pub fn is_limit(&self) -> bool {
        match &self.codex_error_info {
            Some(serde_json::Value::String(kind)) => {
                matches!(kind.as_str(), "usageLimitExceeded" | "rateLimitExceeded")
            }
            Some(serde_json::Value::Object(kinds)) => kinds
                .values()
                .any(|v| v["httpStatusCode"].as_u64() == Some(429)),
            _ => false,
        }
    }
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

/// `account/read` params.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetAccountParams {
    /// Ask for a token refresh first; never (a doctor check must not change state).
    pub refresh_token: bool,
}

/// `account/read` result: the account Codex would use, and whether its model provider
/// needs an OpenAI login at all (a provider with its own key does not).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetAccountResponse {
    /// The signed-in account (API key, ChatGPT, cloud); absent or null when none.
    #[serde(default)]
    pub account: Option<serde_json::Value>,
    /// True when the configured provider is OpenAI's and needs a login.
    pub requires_openai_auth: bool,
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
    /// The model Codex uses when none is named.
    #[serde(default)]
    pub is_default: bool,
}
