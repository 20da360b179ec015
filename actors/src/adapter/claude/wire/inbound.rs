//! What the CLI writes on stdout: stream-json messages and control requests.

use serde::Deserialize;
use serde_json::Value;

/// One line the CLI writes on stdout.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CliMessage {
    /// Session facts (`init`), background-task changes, status notes.
    System(SystemMessage),
    /// One complete assistant content block (the CLI sends one message per block).
    Assistant(AssistantMessage),
    /// Tool results, interrupt notes, replays of local commands.
    User(UserMessage),
    /// The end of one turn.
    Result(ResultMessage),
    /// A raw Messages API SSE event (only with `--include-partial-messages`).
    StreamEvent(StreamEventMessage),
    /// The CLI asks us something (`can_use_tool`).
    ControlRequest(InboundControlRequest),
    /// The CLI answers one of our control requests.
    ControlResponse(InboundControlResponse),
    /// The CLI withdraws a request it sent (after an interrupt).
    ControlCancelRequest(ControlCancel),
    /// A user message we sent (with a `uuid`) was queued, started or completed.
    CommandLifecycle(CommandLifecycle),
    /// The account's rate-limit state (`rate_limit_info {status, resetsAt, ...}`).
    RateLimitEvent(RateLimitEvent),
    /// Anything else; ignored.
    #[serde(other)]
    Other,
}

/// A `system` line. Only some subtypes carry each field.
#[derive(Debug, Default, Deserialize)]
pub struct SystemMessage {
    /// `init`, `background_tasks_changed`, `task_started`, `task_updated`,
    /// `task_notification`, `status`, ...
    #[serde(default)]
    pub subtype: String,
    /// The Claude session id (on every system line that has one).
    #[serde(default)]
    pub session_id: Option<String>,
    /// `background_tasks_changed`: the complete set of background tasks.
    #[serde(default)]
    pub tasks: Option<Vec<CliTask>>,
    /// `task_*`: the task concerned.
    #[serde(default)]
    pub task_id: Option<String>,
    /// `task_notification`: the final status (`completed`, `failed`, `stopped`, ...).
    #[serde(default)]
    pub status: Option<Value>,
    /// `task_updated`: the changed fields (`status`, `end_time`).
    #[serde(default)]
    pub patch: Option<Value>,
    /// `api_retry`: the HTTP status of the failed request; null when no response came
    /// (the API could not be reached).
    #[serde(default)]
    pub error_status: Option<Value>,
    /// `api_retry`: the CLI's word for the failure.
    #[serde(default)]
    pub error: Option<String>,
    /// `init`: the slash commands the CLI offers, by name.
    #[serde(default)]
    pub slash_commands: Option<Vec<String>>,
}

/// One background task as `background_tasks_changed` lists it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct CliTask {
    /// The id `stop_task` takes.
    pub task_id: String,
    /// `local_bash`, `local_agent`, ...
    #[serde(default)]
    pub task_type: String,
    /// What the task does.
    #[serde(default)]
    pub description: String,
}

/// An `assistant` line.
#[derive(Debug, Deserialize)]
pub struct AssistantMessage {
    /// The Messages API message (one content block).
    pub message: ApiMessage,
    /// Set when a sub-agent produced it; such lines are not the session's own text.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// The message's id in the CLI's transcript (what `--resume-session-at` takes).
    #[serde(default)]
    pub uuid: Option<String>,
}

/// The Messages API message inside `assistant` lines.
#[derive(Debug, Deserialize)]
pub struct ApiMessage {
    /// `<synthetic>` for messages the CLI made up itself (API error notes).
    #[serde(default)]
    pub model: Option<String>,
    /// Text, thinking and tool calls here become history events; other kinds are skipped.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
}

/// A content block of a message.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The block's complete text; becomes an assistant message unless empty.
        text: String,
    },
    /// Visible reasoning.
    Thinking {
        /// The complete reasoning; dropped when its deltas were already streamed.
        #[serde(default)]
        thinking: String,
    },
    /// The model calls a tool.
    ToolUse {
        /// Pairs the call with its result.
        id: String,
        /// Tool name (`Bash`, `mcp__tandem__send_to_partner`, ...).
        name: String,
        /// The tool's arguments as the model wrote them, kept verbatim on the tool call.
        #[serde(default)]
        input: Value,
    },
    /// A tool's answer (in `user` lines).
    ToolResult {
        /// The [`ContentBlock::ToolUse`] `id` of the call this answers.
        tool_use_id: String,
        /// A string or a list of content parts.
        #[serde(default)]
        content: Value,
        /// True when the tool failed or was denied.
        #[serde(default)]
        is_error: Option<bool>,
    },
    /// Any other block kind; ignored.
    #[serde(other)]
    Other,
}

/// A `user` line.
#[derive(Debug, Deserialize)]
pub struct UserMessage {
    /// The message; its content may be a string (replays) or blocks.
    pub message: UserContent,
    /// Set for a sub-agent's messages.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// The message's id in the CLI's transcript (what `--resume-session-at` takes).
    #[serde(default)]
    pub uuid: Option<String>,
}

/// The message inside a `user` line.
#[derive(Debug, Deserialize)]
pub struct UserContent {
    /// A string or a list of blocks.
    #[serde(default)]
    pub content: MessageContent,
}

/// Content that is either a plain string or a list of blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Tool results arrive this way; the only form the adapter reads.
    Blocks(Vec<ContentBlock>),
    /// Replays of local commands; carries no tool result, so it is ignored.
    Text(String),
}

impl Default for MessageContent {
    fn default() -> Self {
        MessageContent::Blocks(Vec::new())
    }
}

/// A `result` line: the end of one turn.
#[derive(Debug, Deserialize)]
pub struct ResultMessage {
    /// `success`, `error_during_execution`, `error_max_turns`, ...
    #[serde(default)]
    pub subtype: String,
    /// True when the turn did not end normally (also for API errors with `success`).
    #[serde(default)]
    pub is_error: bool,
    /// The Claude session id (the adapter takes it from `init` instead).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The final text, or the error text.
    #[serde(default)]
    pub result: Option<String>,
    /// Diagnostic errors, joined as the turn's error when `result` is empty.
    #[serde(default)]
    pub errors: Option<Vec<String>>,
    /// Token usage of the turn.
    #[serde(default)]
    pub usage: Option<Value>,
    /// The process's cumulative cost so far.
    #[serde(default)]
    pub total_cost_usd: Option<f64>,
    /// Wall time of the turn.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Model round trips in the turn.
    #[serde(default)]
    pub num_turns: Option<u64>,
    /// Set when the CLI started the turn itself (`{kind: "task-notification"}` after
    /// a background task finished); absent for turns we sent.
    #[serde(default)]
    pub origin: Option<Value>,
    /// The HTTP status of the API error that ended the turn (429 for a rate or
    /// usage limit).
    #[serde(default)]
    pub api_error_status: Option<u64>,
    /// The CLI's name for that error (`usage_limit_reached`).
    #[serde(default)]
    pub api_error: Option<Value>,
}

/// A `rate_limit_event` line.
#[derive(Debug, Default, Deserialize)]
pub struct RateLimitEvent {
    /// `{status: allowed | allowed_warning | rejected, resetsAt?: epoch s, ...}`.
    #[serde(default)]
    pub rate_limit_info: Option<Value>,
}

impl RateLimitEvent {
    /// When a rejecting limit lifts, epoch ms.
    pub fn rejected_until(&self) -> Option<u64> {
        let info = self.rate_limit_info.as_ref()?;
        (info["status"] == "rejected")
            .then(|| info["resetsAt"].as_u64())
            .flatten()
            .map(|s| s.saturating_mul(1000))
    }
}

impl ResultMessage {
    /// True when the CLI started this turn by itself rather than for a user message.
    pub fn is_self_started(&self) -> bool {
        self.origin.is_some()
    }
}

/// A `stream_event` line.
#[derive(Debug, Deserialize)]
pub struct StreamEventMessage {
    /// Only `message_start` and text/thinking deltas are read; the rest is `Other`.
    pub event: StreamEvent,
    /// Set for a sub-agent's stream.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

/// The SSE events the adapter reads; the rest are `Other`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A new message begins.
    MessageStart {},
    /// A piece of a content block.
    ContentBlockDelta {
        /// Text and thinking deltas are streamed out; tool-input deltas are ignored.
        delta: Delta,
    },
    /// Anything else.
    #[serde(other)]
    Other,
}

/// A content-block delta.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// More text.
    TextDelta {
        /// Streamed out as a text delta unless empty.
        text: String,
    },
    /// More reasoning.
    ThinkingDelta {
        /// Streamed out as thinking; marks the message's thinking as already sent.
        thinking: String,
    },
    /// Tool input JSON, signatures, ...
    #[serde(other)]
    Other,
}

/// A control request from the CLI.
#[derive(Debug, Deserialize)]
pub struct InboundControlRequest {
    /// Echoed in our answer.
    pub request_id: String,
    /// What it asks.
    pub request: InboundRequest,
}

/// The requests the CLI may send us.
#[derive(Debug, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum InboundRequest {
    /// May the model run this tool (only with `--permission-prompt-tool stdio`)?
    CanUseTool {
        /// Shown to the person who approves (`Bash`, `Edit`, ...).
        tool_name: String,
        /// Shown for approval and sent back as `updatedInput` when allowed unchanged.
        #[serde(default)]
        input: Value,
        /// The tool_use block it belongs to.
        #[serde(default)]
        tool_use_id: Option<String>,
    },
    /// Anything else (answered with an error).
    #[serde(other)]
    Other,
}

/// The CLI's answer to one of our control requests.
#[derive(Debug, Deserialize)]
pub struct InboundControlResponse {
    /// Only a non-`success` answer is acted on: it is logged as a refusal.
    pub response: ControlResponseBody,
}

/// The body of a control response.
#[derive(Debug, Deserialize)]
pub struct ControlResponseBody {
    /// `success` or `error`.
    pub subtype: String,
    /// Our request's id (`tandem_N`); logged when the CLI refuses it.
    pub request_id: String,
    /// The error text, for `error`.
    #[serde(default)]
    pub error: Option<String>,
    /// The answer, for `success` (read for `get_plan`).
    #[serde(default)]
    pub response: Option<Value>,
}

/// The CLI withdraws a request (its turn was interrupted).
#[derive(Debug, Deserialize)]
pub struct ControlCancel {
    /// The CLI's id of the withdrawn `can_use_tool`; its pending approval is resolved.
    pub request_id: String,
}

/// Progress of one user message we sent: `queued`, `started`, `completed`.
#[derive(Debug, Deserialize)]
pub struct CommandLifecycle {
    /// The `uuid` we gave the message.
    pub command_uuid: String,
    /// `queued`, `started` or `completed`; `started` marks our turn as running.
    pub state: String,
}
