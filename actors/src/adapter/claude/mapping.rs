//! stream-json → history events: the pure part of the adapter, unit-tested here.
//!
//! - `stream_event` text deltas → `text_delta`; thinking deltas → `thinking` (one event
//!   per delta, so reasoning streams like text does);
//! - `assistant` text blocks → `assistant_message` (the complete text of the block; the
//!   session uses it as the authoritative text), thinking blocks → `thinking` only when
//!   no delta streamed them, `tool_use` → `tool_call`;
//! - `user` `tool_result` blocks → `tool_result`;
//! - a sub-agent's lines (`parent_tool_use_id` set) and the CLI's own synthetic
//!   messages (API error notes, model `<synthetic>`) are not the session's text and
//!   are skipped; a failed turn carries the error instead.

use serde_json::Value;
use tandem_protocol::{EventBody, TurnStatus, TurnUsage};

use super::wire::{
    AssistantMessage, CliMessage, ContentBlock, Delta, MessageContent, ResultMessage, StreamEvent,
    UserMessage,
};

/// Per-process mapping state.
#[derive(Debug, Default)]
pub struct StreamMapper {
    /// Thinking deltas streamed for the current message: its complete thinking block
    /// is then not repeated.
    thinking_streamed: bool,
    /// The process's cost as its previous result said it, US dollars.
    cost_so_far: f64,
}

impl StreamMapper {
    /// The history events one stdout line maps to (empty for lines that are not
    /// content: system, result, control).
    pub fn events(&mut self, msg: &CliMessage) -> Vec<EventBody> {
        match msg {
            CliMessage::StreamEvent(ev) if ev.parent_tool_use_id.is_none() => match &ev.event {
                StreamEvent::MessageStart {} => {
                    self.thinking_streamed = false;
                    Vec::new()
                }
                StreamEvent::ContentBlockDelta {
                    delta: Delta::TextDelta { text },
                } if !text.is_empty() => vec![EventBody::TextDelta { text: text.clone() }],
                StreamEvent::ContentBlockDelta {
                    delta: Delta::ThinkingDelta { thinking },
                } if !thinking.is_empty() => {
                    self.thinking_streamed = true;
                    vec![EventBody::Thinking {
                        text: thinking.clone(),
                    }]
                }
                _ => Vec::new(),
            },
            CliMessage::Assistant(a) => self.assistant(a),
            CliMessage::User(u) => user_events(u),
            _ => Vec::new(),
        }
    }

    fn assistant(&mut self, a: &AssistantMessage) -> Vec<EventBody> {
        if a.parent_tool_use_id.is_some() || a.message.model.as_deref() == Some("<synthetic>") {
            return Vec::new();
        }
        a.message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } if !text.is_empty() => {
                    Some(EventBody::AssistantMessage { text: text.clone() })
                }
                ContentBlock::Thinking { thinking }
                    if !thinking.is_empty() && !self.thinking_streamed =>
                {
                    Some(EventBody::Thinking {
                        text: thinking.clone(),
                    })
                }
                ContentBlock::ToolUse { id, name, input } => Some(EventBody::ToolCall {
                    call_id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                    changes: crate::adapter::edits::claude(name, input),
                }),
                _ => None,
            })
            .collect()
    }
}

fn user_events(u: &UserMessage) -> Vec<EventBody> {
    if u.parent_tool_use_id.is_some() {
        return Vec::new();
    }
    let MessageContent::Blocks(blocks) = &u.message.content else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some(EventBody::ToolResult {
                call_id: tool_use_id.clone(),
                output: tool_output(content),
                is_error: is_error.unwrap_or(false),
            }),
            _ => None,
        })
        .collect()
}

/// A tool result's content as one value: text parts are joined into a string; other
/// content (images) is kept as the CLI gave it.
pub fn tool_output(content: &Value) -> Value {
    match content {
        Value::Array(parts)
            if parts
                .iter()
                .all(|p| p["type"] == "text" && p["text"].is_string()) =>
        {
            Value::String(
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        }
        other => other.clone(),
    }
}

/// How a turn ended, from its `result` line. `interrupting` is true when we sent an
/// interrupt for it: an error result then means the interrupt took effect.
pub fn turn_outcome(result: &ResultMessage, interrupting: bool) -> (TurnStatus, Option<String>) {
    if result.subtype == "success" && !result.is_error {
        return (TurnStatus::Completed, None);
    }
    if interrupting {
        return (TurnStatus::Interrupted, None);
    }
    let error = result
        .result
        .clone()
        .filter(|r| !r.trim().is_empty())
        .or_else(|| result.errors.as_ref().map(|e| e.join("; ")))
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| format!("Claude Code ended the turn: {}", result.subtype));
    let limited = result.api_error_status == Some(429)
        || result.api_error.as_ref().and_then(Value::as_str) == Some("usage_limit_reached");
    match limited {
        true => (TurnStatus::Limited, Some(error)),
        false => (TurnStatus::Failed, Some(error)),
    }
}

impl StreamMapper {
    /// The turn's usage in the neutral shape. Claude Code counts input apart from cache
    /// reads and writes: all three are the turn's input. Its `total_cost_usd` is the
    /// process's cost so far (every turn the process ran), so the turn's cost is what
    /// it grew by since the process's previous result.
    pub fn usage(&mut self, result: &ResultMessage) -> TurnUsage {
        let n = |key: &str| {
            result
                .usage
                .as_ref()
                .and_then(|u| u[key].as_u64())
                .unwrap_or(0)
        };
        let (read, write) = (
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        );
        let mut cost_usd = None;
        if let Some(total) = result.total_cost_usd {
            cost_usd = Some((total - self.cost_so_far).max(0.0));
            self.cost_so_far = total;
        }
        TurnUsage {
            input_tokens: n("input_tokens") + read + write,
            cached_input_tokens: read,
            cache_write_tokens: Some(write),
            output_tokens: n("output_tokens"),
            reasoning_tokens: None,
            context: None,
            cost_usd,
            session_cost: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(v: Value) -> CliMessage {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn result(v: Value) -> ResultMessage {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn text_turn_maps_to_deltas_then_the_message() {
        let mut m = StreamMapper::default();
        let mut out = Vec::new();
        for line in [
            json!({"type":"stream_event","event":{"type":"message_start","message":{}},"parent_tool_use_id":null}),
            json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,
                   "delta":{"type":"text_delta","text":"hel"}},"parent_tool_use_id":null}),
            json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,
                   "delta":{"type":"text_delta","text":"lo"}},"parent_tool_use_id":null}),
            json!({"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"hello"}]},
                   "parent_tool_use_id":null}),
            json!({"type":"stream_event","event":{"type":"message_stop"},"parent_tool_use_id":null}),
        ] {
            out.extend(m.events(&parse(line)));
        }
        assert_eq!(
            out,
            vec![
                EventBody::TextDelta { text: "hel".into() },
                EventBody::TextDelta { text: "lo".into() },
                EventBody::AssistantMessage {
                    text: "hello".into()
                },
            ]
        );
    }

    #[test]
    fn thinking_streams_once() {
        let mut m = StreamMapper::default();
        let delta = json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,
            "delta":{"type":"thinking_delta","thinking":"hmm"}},"parent_tool_use_id":null});
        let block = json!({"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm",
            "signature":"s"}]},"parent_tool_use_id":null});
        let start = json!({"type":"stream_event","event":{"type":"message_start","message":{}}});
        assert_eq!(
            m.events(&parse(delta)),
            vec![EventBody::Thinking { text: "hmm".into() }]
        );
        assert!(m.events(&parse(block.clone())).is_empty());
        // A message without deltas (no partial messages) still shows its thinking.
        m.events(&parse(start));
        assert_eq!(
            m.events(&parse(block)),
            vec![EventBody::Thinking { text: "hmm".into() }]
        );
    }

    #[test]
    fn tool_calls_and_results() {
        let mut m = StreamMapper::default();
        let call = json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1",
            "name":"Bash","input":{"command":"ls"}}]},"parent_tool_use_id":null});
        assert_eq!(
            m.events(&parse(call)),
            vec![EventBody::ToolCall {
                call_id: "t1".into(),
                name: "Bash".into(),
                input: json!({"command":"ls"}),
                changes: Vec::new(),
            }]
        );
        let res = json!({"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1",
            "type":"tool_result","content":"a\nb","is_error":false}]},"parent_tool_use_id":null});
        assert_eq!(
            m.events(&parse(res)),
            vec![EventBody::ToolResult {
                call_id: "t1".into(),
                output: json!("a\nb"),
                is_error: false
            }]
        );
        let mcp = json!({"type":"user","message":{"role":"user","content":[{"tool_use_id":"t2",
            "type":"tool_result","content":[{"type":"text","text":"{\"status\":\"complete\"}"}]}]}});
        assert_eq!(
            m.events(&parse(mcp)),
            vec![EventBody::ToolResult {
                call_id: "t2".into(),
                output: json!("{\"status\":\"complete\"}"),
                is_error: false
            }]
        );
    }

    #[test]
    fn sub_agent_and_synthetic_lines_are_skipped() {
        let mut m = StreamMapper::default();
        for line in [
            json!({"type":"assistant","message":{"content":[{"type":"text","text":"sub"}]},
                   "parent_tool_use_id":"toolu_1"}),
            json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,
                   "delta":{"type":"text_delta","text":"sub"}},"parent_tool_use_id":"toolu_1"}),
            json!({"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text",
                   "text":"API Error: Connection refused"}]},"parent_tool_use_id":null}),
            json!({"type":"user","message":{"role":"user","content":[{"type":"text",
                   "text":"[Request interrupted by user]"}]},"parent_tool_use_id":null}),
        ] {
            assert!(m.events(&parse(line)).is_empty());
        }
    }

    #[test]
    fn outcomes() {
        let ok = result(json!({"subtype":"success","is_error":false}));
        assert_eq!(turn_outcome(&ok, true), (TurnStatus::Completed, None));
        let stopped = result(
            json!({"subtype":"error_during_execution","is_error":true,"errors":["[ede_diagnostic]"]}),
        );
        assert_eq!(
            turn_outcome(&stopped, true),
            (TurnStatus::Interrupted, None)
        );
        assert_eq!(
            turn_outcome(&stopped, false),
            (TurnStatus::Failed, Some("[ede_diagnostic]".into()))
        );
        let api = result(json!({"subtype":"success","is_error":true,
            "result":"API Error: Connection refused"}));
        assert_eq!(
            turn_outcome(&api, false),
            (
                TurnStatus::Failed,
                Some("API Error: Connection refused".into())
            )
        );
        let bare = result(json!({"subtype":"error_max_turns","is_error":true}));
        assert!(turn_outcome(&bare, false)
            .1
            .is_some_and(|e| e.contains("error_max_turns")));
        let mut m = StreamMapper::default();
        let first = m.usage(&result(json!({"subtype":"success",
            "usage":{"input_tokens":3,"cache_read_input_tokens":10,
                "cache_creation_input_tokens":2,"output_tokens":5},
            "total_cost_usd":0.5})));
        assert_eq!(
            (
                first.input_tokens,
                first.cached_input_tokens,
                first.cache_write_tokens
            ),
            (15, 10, Some(2))
        );
        assert_eq!((first.output_tokens, first.cost_usd), (5, Some(0.5)));
        // The process's cost so far: the second turn cost what it grew by.
        let second = m.usage(&result(json!({"subtype":"success",
            "usage":{"output_tokens":1},"total_cost_usd":0.75})));
        assert_eq!(second.cost_usd, Some(0.25));
    }

    /// The lines claude 2.1.332 printed for a 429 (API key: a rate limit; OAuth: the
    /// 5-hour usage limit with its `rate_limit_event`), recorded against a mock.
    #[test]
    fn limits_end_a_turn_limited_with_the_reset_time() {
        let rate = result(json!({"terminal_reason":"api_error","is_error":true,
            "subtype":"success","api_error_status":429,"api_error_type":"rate_limit_error",
            "result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"}));
        assert_eq!(turn_outcome(&rate, false).0, TurnStatus::Limited);
        let usage = result(json!({"terminal_reason":"api_error","is_error":true,
            "subtype":"success","api_error_status":429,"api_error_type":"rate_limit_error",
            "api_error":"usage_limit_reached",
            "result":"You've hit your 5-hour limit · resets 5:41pm (UTC)"}));
        assert_eq!(
            turn_outcome(&usage, false),
            (
                TurnStatus::Limited,
                Some("You've hit your 5-hour limit · resets 5:41pm (UTC)".into())
            )
        );
        let line = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796578871,"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"2415abf5-2744-42f5-bba4-d2331e70fc0e","session_id":"b82b4d88-78d9-4ec9-8b40-b9df91977b9f"}"#;
        let Ok(crate::adapter::claude::wire::CliMessage::RateLimitEvent(event)) =
            serde_json::from_str(line)
        else {
            panic!("not a rate_limit_event: {line}");
        };
        assert_eq!(event.rejected_until(), Some(1_796_578_871_000));
        let warning = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1796578878,"utilization":0.92}}"#;
        let Ok(crate::adapter::claude::wire::CliMessage::RateLimitEvent(event)) =
            serde_json::from_str(warning)
        else {
            panic!("not a rate_limit_event: {warning}");
        };
        assert_eq!(event.rejected_until(), None);
    }
}
