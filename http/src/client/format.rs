//! Events as readable lines for a terminal: one line (or one block, for multi-line
//! text) per event, each starting with its `seq` in brackets so a person can resume
//! with `tandem tail --from SEQ`.

use serde_json::Value;

/// Longest tool input or output shown, in characters.
const SHOWN_CHARS: usize = 300;

/// The line for one event frame; `None` for streaming pieces (`text_delta`) whose
/// whole text arrives again as `assistant_message`.
pub fn event_line(ev: &Value) -> Option<String> {
    let seq = ev["seq"].as_u64().unwrap_or(0);
    let kind = ev["kind"].as_str().unwrap_or("?");
    let text = |key: &str| ev[key].as_str().unwrap_or_default().to_string();
    let body = match kind {
        "text_delta" => return None,
        "user_message" => {
            let who = if ev["delegatedBy"].is_string() {
                "driver"
            } else if ev["internal"] == true {
                "tandem"
            } else {
                "you"
            };
            format!("{who}: {}", text("text"))
        }
        "assistant_message" => format!("agent: {}", text("text")),
        "thinking" => format!("thinking: {}", text("text")),
        "turn_started" => "turn started".to_string(),
        "turn_completed" => match ev["status"].as_str().unwrap_or_default() {
            "completed" => "turn completed".to_string(),
            "interrupted" => "turn interrupted".to_string(),
            other => match ev["error"].as_str() {
                Some(error) => format!("turn {other}: {error}"),
                None => format!("turn {other}"),
            },
        },
        "tool_call" => format!("tool {}: {}", text("name"), shown(&ev["input"])),
        "tool_result" => {
            let mark = if ev["isError"] == true {
                " (error)"
            } else {
                ""
            };
            format!("tool result{mark}: {}", shown(&ev["output"]))
        }
        "permission_request" => format!(
            "permission request {}: {} {} (answer with `tandem approve|deny {} {}`)",
            text("requestId"),
            text("toolName"),
            shown(&ev["input"]),
            ev["sessionId"].as_str().unwrap_or_default(),
            text("requestId"),
        ),
        "permission_resolved" => format!("permission {} settled", text("requestId")),
        "error" => format!("error: {}", text("message")),
        "info" => format!("info: {}", text("message")),
        other => {
            let mut rest = ev.clone();
            if let Some(map) = rest.as_object_mut() {
                for key in ["seq", "kind", "sessionId", "ts", "turnId"] {
                    map.remove(key);
                }
            }
            match rest.as_object().is_some_and(|m| !m.is_empty()) {
                true => format!("{other} {}", shown(&rest)),
                false => other.to_string(),
            }
        }
    };
    Some(format!("[{seq}] {body}"))
}

/// A value on one line, cut to [`SHOWN_CHARS`].
fn shown(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let one_line = text.replace('\n', " ⏎ ");
    match one_line.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_read_as_lines() {
        let line = |v: Value| event_line(&v).unwrap_or_default();
        assert_eq!(
            line(json!({"seq": 3, "kind": "user_message", "text": "hi"})),
            "[3] you: hi"
        );
        assert_eq!(
            line(json!({"seq": 4, "kind": "assistant_message", "text": "a\nb"})),
            "[4] agent: a\nb"
        );
        assert_eq!(
            line(json!({"seq": 5, "kind": "turn_completed", "status": "failed", "error": "boom"})),
            "[5] turn failed: boom"
        );
        assert!(event_line(&json!({"seq": 6, "kind": "text_delta", "text": "x"})).is_none());
        let long = "x".repeat(1000);
        let tool = line(
            json!({"seq": 7, "kind": "tool_call", "name": "shell", "input": {"command": long}}),
        );
        assert!(
            tool.starts_with("[7] tool shell: {\"command\"") && tool.ends_with('…'),
            "{tool}"
        );
        assert_eq!(
            line(json!({"seq": 8, "kind": "pair_created", "sessionId": "s", "pairId": "p"})),
            "[8] pair_created {\"pairId\":\"p\"}"
        );
        let ask = line(
            json!({"seq": 9, "kind": "permission_request", "sessionId": "ses_1",
            "requestId": "perm_1", "toolName": "shell", "input": "ls"}),
        );
        assert!(ask.contains("tandem approve|deny ses_1 perm_1"), "{ask}");
    }
}
