//! Server → client notifications we read, and the thread items they carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{RequestId, Turn, TurnError};

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
