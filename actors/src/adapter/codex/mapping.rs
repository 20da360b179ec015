//! How one Codex turn's notifications become our history events.
//!
//! - `item/agentMessage/delta` → `text_delta`; a completed `agentMessage` →
//!   `assistant_message`;
//! - a completed `reasoning` item → `thinking` (its summary, else its raw text);
//! - `commandExecution` (name `shell`), `fileChange` (`apply_patch`), `mcpToolCall`
//!   (`mcp__SERVER__TOOL`), `dynamicToolCall` and `webSearch` → `tool_call` when they
//!   start and `tool_result` when they complete;
//! - `thread/tokenUsage/updated` → summed into the turn's usage.
//!
//! app-server sends no `item/completed` for items an interrupt cut off; [`TurnMapper::close`]
//! ends them with an error result so every `tool_call` has its `tool_result`.

use std::collections::HashMap;

use serde_json::Value;
use tandem_protocol::history::ContextUsage;
use tandem_protocol::{EventBody, FileChange, TurnUsage};

use super::shown;
use super::wire::{
    method, DeltaNotification, ItemNotification, ItemStatus, ThreadItem, TokenUsageBreakdown,
    TokenUsageNotification,
};

/// Result text for a tool an interrupt cut off.
const CUT_OFF: &str = "the turn ended before this tool finished";

/// Per-turn mapping state.
#[derive(Debug, Default)]
pub struct TurnMapper {
    /// Tool calls reported and not yet answered, in order.
    open_tools: Vec<String>,
    /// Reasoning text streamed so far per item (used when the item has no summary).
    reasoning: HashMap<String, String>,
    /// Sum of the turn's model requests.
    usage: Option<TokenUsageBreakdown>,
    /// The model's context window, when reported.
    context_window: Option<i64>,
    /// Tokens of the turn's latest model request (its input and output): what the
    /// context holds after it.
    context_used: i64,
    /// Set by any sign of progress; the unreachable-model guard reads and clears it.
    progressed: bool,
    /// The changes of the turn's file-change items, by item id: Codex asks to apply
    /// one by its id alone.
    file_changes: HashMap<String, Vec<FileChange>>,
}

/// A shell command seen starting in this turn (for background task descriptions).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandStarted {
    /// The item id.
    pub item_id: String,
    /// The command line.
    pub command: String,
}

/// True for the notifications [`TurnMapper::notification`] reads.
pub fn maps(method_name: &str) -> bool {
    matches!(
        method_name,
        method::AGENT_MESSAGE_DELTA
            | method::REASONING_SUMMARY_DELTA
            | method::REASONING_TEXT_DELTA
            | method::ITEM_STARTED
            | method::ITEM_COMPLETED
            | method::TOKEN_USAGE
    )
}

impl TurnMapper {
    /// Maps one notification; returns the events to append, and a shell command that
    /// started (so the caller can remember when background terminals began).
    pub fn notification(
        &mut self,
        method_name: &str,
        params: Value,
    ) -> (Vec<EventBody>, Option<CommandStarted>) {
        let mut out = Vec::new();
        let mut started = None;
        match method_name {
            method::AGENT_MESSAGE_DELTA => {
                if let Ok(d) = serde_json::from_value::<DeltaNotification>(params) {
                    self.progressed = true;
                    if !d.delta.is_empty() {
                        out.push(EventBody::TextDelta { text: d.delta });
                    }
                }
            }
            method::REASONING_SUMMARY_DELTA | method::REASONING_TEXT_DELTA => {
                if let Ok(d) = serde_json::from_value::<DeltaNotification>(params) {
                    self.progressed = true;
                    self.reasoning
                        .entry(d.item_id)
                        .or_default()
                        .push_str(&d.delta);
                }
            }
            method::ITEM_STARTED => {
                if let Ok(n) = serde_json::from_value::<ItemNotification>(params) {
                    self.progressed = true;
                    if let ThreadItem::CommandExecution { id, command, .. } = &n.item {
                        started = Some(CommandStarted {
                            item_id: id.clone(),
                            command: command.clone(),
                        });
                    }
                    if let Some(call) = tool_call(&n.item) {
                        self.open(&mut out, call);
                    }
                }
            }
            method::ITEM_COMPLETED => {
                if let Ok(n) = serde_json::from_value::<ItemNotification>(params) {
                    self.progressed = true;
                    self.completed(n.item, &mut out);
                }
            }
            method::TOKEN_USAGE => {
                if let Ok(n) = serde_json::from_value::<TokenUsageNotification>(params) {
                    let last = n.token_usage.last;
                    let sum = self.usage.get_or_insert_with(TokenUsageBreakdown::default);
                    sum.input_tokens += last.input_tokens;
                    sum.cached_input_tokens += last.cached_input_tokens;
                    sum.output_tokens += last.output_tokens;
                    sum.reasoning_output_tokens += last.reasoning_output_tokens;
                    sum.total_tokens += last.total_tokens;
                    self.context_used = last.total_tokens;
                    if n.token_usage.model_context_window.is_some() {
                        self.context_window = n.token_usage.model_context_window;
                    }
                }
            }
            _ => {}
        }
        (out, started)
    }

    /// True if anything happened since the last call (and resets the flag).
    pub fn take_progress(&mut self) -> bool {
        std::mem::take(&mut self.progressed)
    }

    fn open(&mut self, out: &mut Vec<EventBody>, call: EventBody) {
        if let EventBody::ToolCall {
            call_id, changes, ..
        } = &call
        {
            if self.open_tools.contains(call_id) {
                return;
            }
            self.open_tools.push(call_id.clone());
            if !changes.is_empty() {
                self.file_changes.insert(call_id.clone(), changes.clone());
            }
        }
        out.push(call);
    }

    /// The changes of the file-change item `item_id` of this turn (empty when none
    /// was seen).
    pub fn file_changes(&self, item_id: &str) -> Vec<FileChange> {
        self.file_changes.get(item_id).cloned().unwrap_or_default()
    }

    fn completed(&mut self, item: ThreadItem, out: &mut Vec<EventBody>) {
        match &item {
            ThreadItem::AgentMessage { text, .. } => {
                if !text.is_empty() {
                    out.push(EventBody::AssistantMessage { text: text.clone() });
                }
                return;
            }
            ThreadItem::Reasoning {
                id,
                summary,
                content,
            } => {
                let streamed = self.reasoning.remove(id).unwrap_or_default();
                let text = if !summary.is_empty() {
                    summary.join("\n\n")
                } else if !content.is_empty() {
                    content.join("\n\n")
                } else {
                    streamed
                };
                if !text.trim().is_empty() {
                    out.push(EventBody::Thinking { text });
                }
                return;
            }
            _ => {}
        }
        let Some(call) = tool_call(&item) else { return };
        let EventBody::ToolCall { call_id, .. } = &call else {
            return;
        };
        let call_id = call_id.clone();
        // A tool that completes without having started (declined before it ran)
        // still gets its call first.
        self.open(out, call);
        self.open_tools.retain(|c| *c != call_id);
        let (output, is_error) = tool_output(&item);
        out.push(EventBody::ToolResult {
            call_id,
            output,
            is_error,
        });
    }

    /// Ends the turn: results for tools still open, and the turn's usage.
    pub fn close(&mut self) -> (Vec<EventBody>, Option<TurnUsage>) {
        let out = self
            .open_tools
            .drain(..)
            .map(|call_id| EventBody::ToolResult {
                call_id,
                output: Value::String(CUT_OFF.into()),
                is_error: true,
            })
            .collect();
        let tokens = |n: i64| u64::try_from(n).unwrap_or(0);
        let usage = self.usage.map(|sum| TurnUsage {
            input_tokens: tokens(sum.input_tokens),
            cached_input_tokens: tokens(sum.cached_input_tokens),
            cache_write_tokens: None,
            output_tokens: tokens(sum.output_tokens),
            reasoning_tokens: Some(tokens(sum.reasoning_output_tokens)),
            context: self.context_window.map(|size| ContextUsage {
                used: tokens(self.context_used),
                size: tokens(size),
            }),
            cost_usd: None,
            session_cost: None,
        });
        (out, usage)
    }
}

/// The `tool_call` an item stands for, if it is a tool.
fn tool_call(item: &ThreadItem) -> Option<EventBody> {
    let (call_id, name, input) = match item {
        ThreadItem::CommandExecution {
            id, command, cwd, ..
        } => (
            id.clone(),
            "shell".to_string(),
            shown::value(shown::Shell {
                command: Some(command),
                cwd: cwd.as_deref(),
                reason: None,
            }),
        ),
        ThreadItem::FileChange { id, changes, .. } => (
            id.clone(),
            "apply_patch".to_string(),
            shown::value(shown::Patch { changes }),
        ),
        ThreadItem::McpToolCall {
            id,
            server,
            tool,
            arguments,
            ..
        } => (
            id.clone(),
            format!("mcp__{server}__{tool}"),
            arguments.clone(),
        ),
        ThreadItem::DynamicToolCall {
            id,
            tool,
            arguments,
            ..
        } => (id.clone(), tool.clone(), arguments.clone()),
        ThreadItem::WebSearch { id, query } => (
            id.clone(),
            "web_search".to_string(),
            shown::value(shown::Search { query }),
        ),
        _ => return None,
    };
    let changes = match item {
        ThreadItem::FileChange { changes, .. } => crate::adapter::edits::codex(changes),
        _ => Vec::new(),
    };
    Some(EventBody::ToolCall {
        call_id,
        name,
        input,
        changes,
    })
}

/// A completed tool item's output and whether it failed.
fn tool_output(item: &ThreadItem) -> (Value, bool) {
    match item {
        ThreadItem::CommandExecution {
            status,
            aggregated_output,
            exit_code,
            ..
        } => (
            shown::value(shown::ShellOutput {
                output: aggregated_output.as_deref().unwrap_or_default(),
                exit_code: *exit_code,
                status,
            }),
            *status != ItemStatus::Completed || exit_code.is_some_and(|c| c != 0),
        ),
        ThreadItem::FileChange { status, .. } => (
            shown::value(shown::Status { status }),
            *status != ItemStatus::Completed,
        ),
        ThreadItem::McpToolCall {
            status,
            result,
            error,
            ..
        } => {
            if let Some(e) = error {
                return (Value::String(e.message.clone()), true);
            }
            let failed = *status != ItemStatus::Completed
                || result
                    .as_ref()
                    .and_then(|r| r.get("isError"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
            (mcp_text(result.as_ref()), failed)
        }
        ThreadItem::DynamicToolCall {
            status,
            content_items,
            success,
            ..
        } => (
            content_items.clone().unwrap_or(Value::Null),
            *status != ItemStatus::Completed || *success == Some(false),
        ),
        ThreadItem::WebSearch { query, .. } => (shown::value(shown::Search { query }), false),
        _ => (Value::Null, false),
    }
}

/// An MCP result as we show it: its text content (parsed when it is JSON, as our pair
/// tools return), else the raw result.
fn mcp_text(result: Option<&Value>) -> Value {
    let Some(result) = result else {
        return Value::Null;
    };
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    match texts.as_slice() {
        [] => result.clone(),
        [one] => serde_json::from_str(one).unwrap_or_else(|_| Value::String(one.to_string())),
        many => Value::String(many.join("\n")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn item(method_name: &str, item: Value) -> (&str, Value) {
        (
            method_name,
            json!({"threadId": "t", "turnId": "u", "item": item}),
        )
    }

    #[test]
    fn a_shell_turn_maps_to_call_result_and_text() {
        let mut m = TurnMapper::default();
        let steps = vec![
            item(
                method::ITEM_STARTED,
                json!({"type": "userMessage", "id": "x", "content": []}),
            ),
            item(
                method::ITEM_STARTED,
                json!({"type": "commandExecution", "id": "c1", "command": "ls", "cwd": "/w",
                       "status": "inProgress", "commandActions": []}),
            ),
            item(
                method::ITEM_COMPLETED,
                json!({"type": "commandExecution", "id": "c1", "command": "ls", "cwd": "/w",
                       "status": "completed", "aggregatedOutput": "a\n", "exitCode": 0,
                       "commandActions": []}),
            ),
            (
                method::AGENT_MESSAGE_DELTA,
                json!({"threadId": "t", "turnId": "u", "itemId": "m", "delta": "done"}),
            ),
            item(
                method::ITEM_COMPLETED,
                json!({"type": "agentMessage", "id": "m", "text": "done"}),
            ),
        ];
        let mut events = Vec::new();
        for (name, params) in steps {
            events.extend(m.notification(name, params).0);
        }
        let kinds: Vec<&str> = events.iter().map(EventBody::kind).collect();
        assert_eq!(
            kinds,
            [
                "tool_call",
                "tool_result",
                "text_delta",
                "assistant_message"
            ]
        );
        assert!(
            matches!(&events[1], EventBody::ToolResult { is_error: false, output, .. } if output["output"] == "a\n")
        );
        assert!(m.close().0.is_empty());
    }

    #[test]
    fn close_answers_tools_an_interrupt_cut_off_and_sums_usage() {
        let mut m = TurnMapper::default();
        let (name, params) = item(
            method::ITEM_STARTED,
            json!({"type": "commandExecution", "id": "c1", "command": "sleep 9",
                   "status": "inProgress", "commandActions": []}),
        );
        let (_, started) = m.notification(name, params);
        assert_eq!(started.map(|s| s.item_id), Some("c1".to_string()));
        for _ in 0..2 {
            m.notification(
                method::TOKEN_USAGE,
                json!({"threadId": "t", "turnId": "u", "tokenUsage": {
                    "total": {}, "modelContextWindow": 100,
                    "last": {"inputTokens": 10, "cachedInputTokens": 1, "outputTokens": 5,
                             "reasoningOutputTokens": 0, "totalTokens": 15}}}),
            );
        }
        let (events, usage) = m.close();
        assert!(
            matches!(&events[..], [EventBody::ToolResult { is_error: true, call_id, .. }] if call_id == "c1")
        );
        let usage = usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (20, 10));
        assert_eq!(
            (usage.cached_input_tokens, usage.reasoning_tokens),
            (2, Some(0))
        );
        assert_eq!(
            usage.context,
            Some(ContextUsage {
                used: 15,
                size: 100
            })
        );
    }

    #[test]
    fn mcp_results_show_their_json_text() {
        let mut m = TurnMapper::default();
        let (name, params) = item(
            method::ITEM_COMPLETED,
            json!({"type": "mcpToolCall", "id": "k", "server": "tandem", "tool": "send_to_partner",
                   "arguments": {"message": "x"}, "status": "completed",
                   "result": {"content": [{"type": "text", "text": "{\"status\":\"completed\"}"}]}}),
        );
        let (events, _) = m.notification(name, params);
        assert!(
            matches!(&events[0], EventBody::ToolCall { name, .. } if name == "mcp__tandem__send_to_partner")
        );
        assert!(
            matches!(&events[1], EventBody::ToolResult { output, is_error: false, .. } if output["status"] == "completed")
        );
    }

    #[test]
    fn reasoning_becomes_thinking() {
        let mut m = TurnMapper::default();
        m.notification(
            method::REASONING_SUMMARY_DELTA,
            json!({"threadId": "t", "turnId": "u", "itemId": "r", "delta": "hmm", "summaryIndex": 0}),
        );
        let (name, params) = item(
            method::ITEM_COMPLETED,
            json!({"type": "reasoning", "id": "r", "summary": [], "content": []}),
        );
        let (events, _) = m.notification(name, params);
        assert!(matches!(&events[..], [EventBody::Thinking { text }] if text == "hmm"));
    }
}
