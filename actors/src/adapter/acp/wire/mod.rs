//! Typed serde shapes of the Agent Client Protocol messages tandem sends and reads
//! (protocol version 1, JSON-RPC 2.0, one JSON object per line on stdio). Only what
//! the adapter uses is typed; the rest of a message is ignored, and the parts tandem
//! only passes on (tool content, diffs, locations, plan entries) stay JSON values.
//!
//! This is the one hand-written ACP wire of the client side (framing, `RpcError`,
//! `Implementation`, the requests tandem sends and the answers it reads). `tandem acp`
//! (the HTTP crate's `acp_agent`) shares only the framing, `RpcError` and
//! `Implementation`; it builds its answers as JSON values, which its tests check
//! against the ACP JSON schema the pinned TypeScript SDK ships. The official crate,
//! `agent-client-protocol` 5.2.0 (with `agent-client-protocol-schema` 1.17.0), was
//! measured and not adopted:
//! - it enables `serde_json`'s `preserve_order`, which Cargo's feature unification
//!   would turn on for the whole workspace, changing the key order of every frame,
//!   REST body and snapshot;
//! - its enums are closed: a `session/update` kind or content block the pinned schema
//!   lacks fails the whole message, where these shapes read what tandem uses and skip
//!   the rest;
//! - it costs 64 crates, 23 new to the tree, and with the `stdio` and `process`
//!   features a second runtime (smol's) beside tokio and actix;
//! - its connection owns the JSON-RPC loop, while the adapter is an actor on the
//!   shared process supervisor (confinement, restart generations, `ProcessHub`).
//!
//! Worth revisiting for the schema crate's types once they can be used without
//! `preserve_order` and read unknown variants.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version tandem speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// JSON-RPC "method not found": the answer to agent requests tandem does not serve
/// (it advertises no file-system or terminal capability).
pub const METHOD_NOT_FOUND: i64 = -32601;

/// One line from the agent, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// The agent asks tandem something (`session/request_permission`, ...); answer with
    /// the same `id`, which may be a number or a string.
    Request {
        /// Echoed in the answer.
        id: Value,
        /// What it asks.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// A notification (`session/update`).
    Notification {
        /// What it tells.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// The answer to one of tandem's requests (ids are the numbers tandem gave).
    Response {
        /// The request answered.
        id: u64,
        /// Its result, or the agent's error.
        outcome: Result<Value, RpcError>,
    },
}

/// Why a line is not a frame tandem can use (logged and skipped).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FrameError {
    /// Not a JSON object.
    #[error("not JSON: {0}")]
    Json(String),
    /// JSON, but neither a request, a notification nor a response to one of ours.
    #[error("not a JSON-RPC message tandem expects")]
    Shape,
}

/// The raw JSON-RPC envelope, before it is classified.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// What went wrong, as the agent says it.
    pub message: String,
    /// Details the agent added (often the real reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, ": {data}")?;
        }
        Ok(())
    }
}

/// Classifies one line the agent wrote.
pub fn parse_frame(line: &str) -> Result<Frame, FrameError> {
    let env: Envelope = serde_json::from_str(line).map_err(|e| FrameError::Json(e.to_string()))?;
    let id = env.id.filter(|v| !v.is_null());
    match (env.method, id) {
        (Some(method), Some(id)) => Ok(Frame::Request {
            id,
            method,
            params: env.params.unwrap_or(Value::Null),
        }),
        (Some(method), None) => Ok(Frame::Notification {
            method,
            params: env.params.unwrap_or(Value::Null),
        }),
        (None, Some(id)) => {
            let id = id.as_u64().ok_or(FrameError::Shape)?;
            let outcome = match (env.result, env.error) {
                (_, Some(error)) => Err(error),
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            Ok(Frame::Response { id, outcome })
        }
        (None, None) => Err(FrameError::Shape),
    }
}

/// A request tandem sends.
#[derive(Debug, Serialize)]
pub struct OutRequest<'a, P: Serialize> {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// Tandem's id for the request; the response carries it.
    pub id: u64,
    /// The method.
    pub method: &'a str,
    /// Its parameters.
    pub params: P,
}

/// A notification tandem sends (`session/cancel`).
#[derive(Debug, Serialize)]
pub struct OutNotification<'a, P: Serialize> {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// The method.
    pub method: &'a str,
    /// Its parameters.
    pub params: P,
}

/// Tandem's answer to a request of the agent.
#[derive(Debug, Serialize)]
pub struct OutResponse<R: Serialize> {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// The agent's id, echoed.
    pub id: Value,
    /// The answer, when tandem serves the method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<R>,
    /// The refusal, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

/// Serializes `value` as one line (with its newline); empty when it cannot be written.
pub fn line<T: Serialize>(value: &T) -> Vec<u8> {
    match serde_json::to_vec(value) {
        Ok(mut bytes) => {
            bytes.push(b'\n');
            bytes
        }
        // The messages are plain structs and JSON values, which cannot fail to be
        // written; were one to, nothing is sent (rather than an empty line the agent
        // would take for a message) and the log says why.
        Err(e) => {
            tracing::error!(error = %e, message = std::any::type_name::<T>(), "cannot serialize an ACP message; not sent");
            Vec::new()
        }
    }
}

/// `initialize` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// [`PROTOCOL_VERSION`].
    pub protocol_version: u16,
    /// What tandem serves to the agent: nothing beyond permission answers (no file
    /// system, no terminal), so the agent uses its own tools.
    pub client_capabilities: ClientCapabilities,
    /// Tandem's name and version.
    pub client_info: Implementation,
}

/// The client capabilities tandem advertises.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// File-system methods served by the client (none).
    pub fs: FsCapabilities,
    /// `terminal/*` served by the client (no).
    pub terminal: bool,
}

/// `fs/*` methods tandem serves (none).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FsCapabilities {
    /// `fs/read_text_file`.
    pub read_text_file: bool,
    /// `fs/write_text_file`.
    pub write_text_file: bool,
}

/// A program's name and version (ours in `initialize`, the agent's in its answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Machine name (`codex-acp`).
    pub name: String,
    /// Name for people (`Codex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The agent's answer to `initialize`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the agent chose; tandem speaks only 1.
    pub protocol_version: u16,
    /// What it can do.
    #[serde(default)]
    pub agent_capabilities: AgentCapabilities,
    /// Its name and version (absent in older agents).
    #[serde(default)]
    pub agent_info: Option<Implementation>,
}

/// What an agent can do, as far as tandem cares.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `session/load` is served (replays the conversation as updates).
    #[serde(default)]
    pub load_session: bool,
    /// Which MCP transports the agent can connect to.
    #[serde(default)]
    pub mcp_capabilities: McpCapabilities,
    /// Session methods beyond the base protocol.
    #[serde(default)]
    pub session_capabilities: SessionCapabilities,
    /// Which prompt content besides text it takes.
    #[serde(default)]
    pub prompt_capabilities: PromptCapabilities,
}

/// MCP transports an agent supports besides stdio.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct McpCapabilities {
    /// Streamable HTTP: tandem's `/mcp` can be passed.
    #[serde(default)]
    pub http: bool,
    /// Server-sent events.
    #[serde(default)]
    pub sse: bool,
}

/// Session methods an agent offers beyond `new`, `load` and `prompt`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SessionCapabilities {
    /// `session/resume`: reopen a session without replaying it.
    #[serde(default)]
    pub resume: Option<Value>,
    /// `session/fork`: a new session holding a copy of one's conversation.
    #[serde(default)]
    pub fork: Option<Value>,
    /// `session/close`: the agent frees a session the client is done with.
    #[serde(default)]
    pub close: Option<Value>,
    /// `session/list`: the sessions the agent knows, a page at a time.
    #[serde(default)]
    pub list: Option<Value>,
}

/// Prompt content an agent takes besides text.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// Images.
    #[serde(default)]
    pub image: bool,
    /// Embedded resources.
    #[serde(default)]
    pub embedded_context: bool,
}

/// An MCP server handed to the agent: tandem's own `/mcp` over HTTP (when the agent
/// takes HTTP), and the user's, each as declared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum McpServer {
    /// A streamable HTTP server.
    Http {
        /// `http`.
        #[serde(rename = "type")]
        kind: &'static str,
        /// Its name: the model sees its tools as `mcp__NAME__…` in most agents.
        name: String,
        /// Its endpoint.
        url: String,
        /// Sent with every request (tandem's: the session's bearer token).
        headers: Vec<HttpHeader>,
    },
    /// A program the agent starts, speaking MCP on stdio.
    Stdio {
        /// Its name.
        name: String,
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment.
        env: Vec<HttpHeader>,
    },
}

/// One HTTP header (or environment variable) for an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpHeader {
    /// Its name.
    pub name: String,
    /// Header value (holds a secret: never logged).
    pub value: String,
}

/// `session/new` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams<'a> {
    /// The session's working directory (absolute).
    pub cwd: &'a str,
    /// MCP servers the agent connects to.
    pub mcp_servers: &'a [McpServer],
}

/// `session/load`, `session/resume` and `session/fork` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenSessionParams<'a> {
    /// The agent's session to reopen.
    pub session_id: &'a str,
    /// The session's working directory.
    pub cwd: &'a str,
    /// MCP servers the agent connects to.
    pub mcp_servers: &'a [McpServer],
}

/// `session/list` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsParams<'a> {
    /// Only the sessions of this working directory.
    pub cwd: &'a str,
    /// Where the previous page ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<&'a str>,
}

/// The answer to `session/list`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionPage {
    /// This page's sessions.
    #[serde(default)]
    pub sessions: Vec<ListedSession>,
    /// Where the next page starts; absent on the last.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One session in a [`SessionPage`] (its title, working directory and update time
/// are not read).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedSession {
    /// The agent's session id.
    pub session_id: String,
}

/// The answer to `session/new`, `session/load` and `session/resume`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOpened {
    /// The agent's session id (only `session/new` has one).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The modes the agent offers, when it has any.
    #[serde(default)]
    pub modes: Option<ModeState>,
    /// The models it offers through the unstable session-model API (`session/set_model`),
    /// when it has that API (claude-code-acp).
    #[serde(default)]
    pub models: Option<SessionModelState>,
    /// Its session configuration options (`session/set_config_option`); one whose
    /// `category` is `model` chooses the model (codex-acp). Kept as JSON and read by
    /// [`super::models`], since an option's `options` may be flat or grouped.
    #[serde(default)]
    pub config_options: Vec<Value>,
}

/// The unstable session-model API's state.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionModelState {
    /// The model in force.
    #[serde(default)]
    pub current_model_id: String,
    /// Every model it offers.
    #[serde(default)]
    pub available_models: Vec<ModelInfo>,
}

/// One model an agent offers.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// Its id, sent in `session/set_model`.
    pub model_id: String,
}

/// `session/set_model` parameters (unstable session-model API).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModelParams<'a> {
    /// The agent's session.
    pub session_id: &'a str,
    /// The model to switch to.
    pub model_id: &'a str,
}

/// `session/set_config_option` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionParams<'a> {
    /// The agent's session.
    pub session_id: &'a str,
    /// The option's id.
    pub config_id: &'a str,
    /// The value chosen.
    pub value: &'a str,
}

/// An agent's modes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeState {
    /// The mode in force.
    #[serde(default)]
    pub current_mode_id: String,
    /// Every mode it offers.
    #[serde(default)]
    pub available_modes: Vec<Mode>,
}

/// One mode.
#[derive(Debug, Clone, Deserialize)]
pub struct Mode {
    /// Its id, sent in `session/set_mode`.
    pub id: String,
}

/// `session/set_mode` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeParams<'a> {
    /// The agent's session.
    pub session_id: &'a str,
    /// The mode to switch to.
    pub mode_id: &'a str,
}

/// `session/prompt` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams<'a> {
    /// The agent's session.
    pub session_id: &'a str,
    /// The user message.
    pub prompt: Vec<PromptBlock<'a>>,
}

/// A block of a prompt: text, or an image (for agents that advertise
/// `promptCapabilities.image`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PromptBlock<'a> {
    /// `{type: "text", text}`.
    Text(TextBlock<'a>),
    /// `{type: "image", mimeType, data}`.
    Image(ImageBlock),
}

/// An image content block.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageBlock {
    /// `image`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The image's media type.
    pub mime_type: String,
    /// Its bytes, base64.
    pub data: String,
}

/// A text content block.
#[derive(Debug, Serialize)]
pub struct TextBlock<'a> {
    /// `text`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text.
    pub text: &'a str,
}

impl<'a> TextBlock<'a> {
    /// A text block holding `text`.
    pub fn new(text: &'a str) -> Self {
        TextBlock { kind: "text", text }
    }
}

/// The answer to `session/prompt`: the turn is over.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResult {
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`.
    pub stop_reason: String,
    /// Token usage, when the agent reports it here.
    #[serde(default)]
    pub usage: Option<PromptUsage>,
}

/// `PromptResponse.usage`: the turn's tokens (ACP's unstable usage report).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptUsage {
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Reasoning tokens.
    #[serde(default)]
    pub thought_tokens: Option<u64>,
    /// Input read from the cache.
    #[serde(default)]
    pub cached_read_tokens: Option<u64>,
    /// Input written to the cache.
    #[serde(default)]
    pub cached_write_tokens: Option<u64>,
}

/// A cost an agent reports (`usage_update.cost`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AgentCost {
    /// The amount.
    pub amount: f64,
    /// ISO 4217 code.
    pub currency: String,
}

/// `session/cancel` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelParams<'a> {
    /// The agent's session.
    pub session_id: &'a str,
}

/// `session/update` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The agent's session it is about.
    pub session_id: String,
    /// What happened.
    pub update: SessionUpdate,
}

/// One `session/update`, by its `sessionUpdate` tag.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// A piece of the assistant's answer.
    AgentMessageChunk {
        /// The piece.
        content: ContentBlock,
    },
    /// A piece of the agent's reasoning.
    AgentThoughtChunk {
        /// The piece.
        content: ContentBlock,
    },
    /// A piece of a user message (replayed by `session/load`).
    UserMessageChunk {
        /// The piece.
        #[allow(dead_code)]
        content: ContentBlock,
    },
    /// A tool call started (or is announced again with more detail).
    ToolCall(ToolCallFields),
    /// A tool call changed (status, output, content).
    ToolCallUpdate(ToolCallFields),
    /// The agent's plan, complete each time.
    Plan {
        /// Every entry.
        #[serde(default)]
        entries: Vec<Value>,
    },
    /// Context usage.
    UsageUpdate {
        /// Tokens in context.
        #[serde(default)]
        used: u64,
        /// The context window.
        #[serde(default)]
        size: u64,
        /// The session's cost so far, when reported.
        #[serde(default)]
        cost: Option<AgentCost>,
    },
    /// The agent switched mode by itself.
    CurrentModeUpdate {
        /// The mode now in force.
        #[serde(default, rename = "currentModeId")]
        current_mode_id: String,
    },
    /// The slash commands the agent offers, complete.
    AvailableCommandsUpdate {
        /// Every command.
        #[serde(default, rename = "availableCommands")]
        available_commands: Vec<AvailableCommand>,
    },
    /// Anything else (config options, session info): not shown.
    #[serde(other)]
    Other,
}

/// One slash command an ACP agent offers.
#[derive(Debug, Clone, Deserialize)]
pub struct AvailableCommand {
    /// Its name, without the slash.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// What it takes (`{hint}` for free text).
    #[serde(default)]
    pub input: Option<Value>,
}

/// A content block as the agent sends it; only text is shown as text.
#[derive(Debug, Clone, Deserialize)]
pub struct ContentBlock {
    /// `text`, `image`, `resource_link`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The text of a `text` block.
    #[serde(default)]
    pub text: Option<String>,
}

/// The fields of `tool_call` and `tool_call_update`; all but the id are optional in
/// an update (absent = unchanged).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallFields {
    /// Identifies the call within the session.
    pub tool_call_id: String,
    /// What it does, for people.
    #[serde(default)]
    pub title: Option<String>,
    /// `read`, `edit`, `execute`, ... (`other` when absent).
    #[serde(default)]
    pub kind: Option<String>,
    /// `pending`, `in_progress`, `completed` or `failed`.
    #[serde(default)]
    pub status: Option<String>,
    /// What it produced: text, diffs (`{type: diff, path, oldText, newText}`) and
    /// terminals, kept as the agent sent them.
    #[serde(default)]
    pub content: Option<Vec<Value>>,
    /// Files it touches (`{path, line?}`), kept as sent.
    #[serde(default)]
    pub locations: Option<Vec<Value>>,
    /// Its input, as the agent gave it.
    #[serde(default)]
    pub raw_input: Option<Value>,
    /// Its output, as the agent gave it.
    #[serde(default)]
    pub raw_output: Option<Value>,
}

/// `session/request_permission` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionParams {
    /// The agent's session.
    pub session_id: String,
    /// The call waiting for an answer.
    pub tool_call: ToolCallFields,
    /// The choices, each with a `kind` tandem maps answers by.
    pub options: Vec<PermissionOption>,
}

/// One choice of a permission request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// Sent back to select it.
    pub option_id: String,
    /// Its label (varies by agent: never matched on).
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// Tandem's answer to `session/request_permission`.
#[derive(Debug, Serialize)]
pub struct PermissionAnswer {
    /// The choice, or `cancelled`.
    pub outcome: PermissionOutcome,
}

/// What was chosen.
#[derive(Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// The turn was cancelled before anyone answered.
    Cancelled,
    /// An option was picked.
    Selected {
        /// The option's id.
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

#[cfg(test)]
mod tests;
