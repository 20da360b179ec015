//! How each CLI's transcript lines read (as the pinned CLIs write them; the tests make
//! them with the real CLIs against the mock models).
//!
//! - Claude Code, `<config>/projects/<project>/<session>.jsonl`: one JSON object a
//!   line; `user` lines hold a person's prompt (a string or text blocks; tool results
//!   are `user` lines too, and `isMeta` ones are the CLI's own), `assistant` lines one
//!   content block each of an answer (text, thinking, tool use); every line carries
//!   `sessionId` and `cwd`; `summary` and `custom-title` lines name it.
//! - Codex, `<home>/sessions/YYYY/MM/DD/rollout-*.jsonl`: `{timestamp, type, payload}`;
//!   `session_meta` names the thread and its `cwd`; `response_item` messages are the
//!   conversation (`user` ones that are the CLI's own context start with `<`), and
//!   `function_call` / `custom_tool_call` / `local_shell_call` items are tool calls.

use serde_json::Value;

use super::transcript::{content_text, first, Summary};

/// One message of a conversation, as a transcript line holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A person's prompt.
    Prompt(String),
    /// The agent's answer text.
    Answer(String),
    /// The agent called a tool.
    Call {
        /// Pairs it with its result.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// A tool's result.
    Result {
        /// The call it answers.
        id: String,
        /// What it said.
        output: Value,
        /// It failed.
        is_error: bool,
    },
}

/// Counts `items` into `s`: prompts, answers and calls are messages.
fn count(s: &mut Summary, items: &[Item]) {
    for item in items {
        match item {
            Item::Prompt(text) => {
                s.messages += 1;
                first(&mut s.first_prompt, Some(text.as_str()));
            }
            Item::Answer(_) | Item::Call { .. } => s.messages += 1,
            Item::Result { .. } => {}
        }
    }
}

/// Folds one Claude Code transcript line.
pub fn claude(s: &mut Summary, v: &Value) {
    first(
        &mut s.session_id,
        v.get("sessionId").and_then(Value::as_str),
    );
    first(&mut s.cwd, v.get("cwd").and_then(Value::as_str));
    match v.get("type").and_then(Value::as_str) {
        Some("summary") => s.title = v["summary"].as_str().map(str::to_string).or(s.title.take()),
        Some("custom-title") => {
            s.title = v["customTitle"]
                .as_str()
                .map(str::to_string)
                .or(s.title.take())
        }
        _ => count(s, &claude_items(v)),
    }
}

/// The conversation in one Claude Code line.
pub fn claude_items(v: &Value) -> Vec<Item> {
    let content = &v["message"]["content"];
    let blocks = content.as_array().map(Vec::as_slice).unwrap_or_default();
    match v.get("type").and_then(Value::as_str) {
        Some("user") if v.get("isMeta").and_then(Value::as_bool) != Some(true) => {
            let mut items = Vec::new();
            let text = content_text(content);
            if !text.trim().is_empty() {
                items.push(Item::Prompt(text.trim().to_string()));
            }
            items.extend(
                blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .map(|b| Item::Result {
                        id: b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                        output: b["content"].clone(),
                        is_error: b["is_error"].as_bool().unwrap_or(false),
                    }),
            );
            items
        }
        Some("assistant") => blocks
            .iter()
            .filter_map(|b| match b["type"].as_str() {
                Some("text") => b["text"]
                    .as_str()
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| Item::Answer(t.to_string())),
                Some("tool_use") => Some(Item::Call {
                    id: b["id"].as_str().unwrap_or_default().to_string(),
                    name: b["name"].as_str().unwrap_or("tool").to_string(),
                    input: b["input"].clone(),
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Folds one Codex rollout line.
pub fn codex(s: &mut Summary, v: &Value) {
    if v["type"] == "session_meta" {
        first(&mut s.session_id, v["payload"]["id"].as_str());
        first(&mut s.cwd, v["payload"]["cwd"].as_str());
    }
    count(s, &codex_items(v));
}

/// The conversation in one Codex rollout line.
pub fn codex_items(v: &Value) -> Vec<Item> {
    if v["type"] != "response_item" {
        return Vec::new();
    }
    let p = &v["payload"];
    let id = || p["call_id"].as_str().unwrap_or_default().to_string();
    let item = match p["type"].as_str() {
        Some("message") => {
            let text = content_text(&p["content"]);
            let text = text.trim();
            match p["role"].as_str() {
                // The CLI's own context (environment, instructions) starts with a tag.
                Some("user") if !text.is_empty() && !text.starts_with('<') => {
                    Some(Item::Prompt(text.to_string()))
                }
                Some("assistant") if !text.is_empty() => Some(Item::Answer(text.to_string())),
                _ => None,
            }
        }
        Some("function_call") => Some(Item::Call {
            id: id(),
            name: p["name"].as_str().unwrap_or("tool").to_string(),
            input: p["arguments"]
                .as_str()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_else(|| p["arguments"].clone()),
        }),
        Some("custom_tool_call") => Some(Item::Call {
            id: id(),
            name: p["name"].as_str().unwrap_or("tool").to_string(),
            input: p["input"].clone(),
        }),
        Some("local_shell_call") => Some(Item::Call {
            id: id(),
            name: "shell".into(),
            input: p["action"].clone(),
        }),
        Some("function_call_output" | "custom_tool_call_output") => Some(Item::Result {
            id: id(),
            output: p["output"].clone(),
            is_error: false,
        }),
        _ => None,
    };
    item.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claude_lines_count_prompts_answers_and_tool_calls() {
        let mut s = Summary::default();
        for line in [
            json!({"type": "queue-operation", "sessionId": "c1"}),
            json!({"type": "user", "sessionId": "c1", "cwd": "/w", "message": {"role": "user", "content": [{"type": "text", "text": "say hi"}]}}),
            json!({"type": "user", "isMeta": true, "message": {"content": "<command-name>"}}),
            json!({"type": "assistant", "message": {"content": [{"type": "thinking", "thinking": "hm"}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": "ok"}]}}),
            json!({"type": "summary", "summary": "Greeting"}),
        ] {
            claude(&mut s, &line);
        }
        assert_eq!(s.session_id.as_deref(), Some("c1"));
        assert_eq!(s.cwd.as_deref(), Some("/w"));
        assert_eq!(s.first_prompt.as_deref(), Some("say hi"));
        assert_eq!(s.title.as_deref(), Some("Greeting"));
        assert_eq!(s.messages, 3);
    }

    #[test]
    fn codex_lines_skip_the_clis_own_context() {
        let mut s = Summary::default();
        for line in [
            json!({"type": "session_meta", "payload": {"id": "x1", "cwd": "/w"}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>"}]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run ls"}]}}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "shell"}}),
            json!({"type": "response_item", "payload": {"type": "function_call_output", "output": "a"}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}}),
            json!({"type": "event_msg", "payload": {"type": "agent_message", "message": "done"}}),
        ] {
            codex(&mut s, &line);
        }
        assert_eq!(
            (
                s.session_id.as_deref(),
                s.cwd.as_deref(),
                s.first_prompt.as_deref(),
                s.messages
            ),
            (Some("x1"), Some("/w"), Some("run ls"), 3)
        );
    }
}
