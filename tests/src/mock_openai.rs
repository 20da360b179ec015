//! A mock OpenAI Responses API (`POST /v1/responses`, server-sent events) on a loopback
//! port, so the real `codex` binary runs full turns offline.
//!
//! The reply is chosen from the last user text of the request (tests script a turn by
//! what they send):
//!
//! - `say TEXT` → TEXT streamed word by word, then the whole message;
//! - `slow N MS` → N words `wI`, one every MS milliseconds (to interrupt mid-stream);
//! - `think TEXT` → a reasoning item whose summary is TEXT, then the text `thought`;
//! - `shell CMD` → a call to the `exec_command` tool running CMD;
//! - `escalate CMD` → the same, asking to run outside the sandbox (an approval under
//!   `on-request`);
//! - `tool NAME {json}` → a call to the MCP tool NAME of the `tandem` server (a
//!   `function_call` in the `mcp__tandem` namespace);
//! - `mcp SERVER NAME {json}` → a call to the tool NAME of the MCP server SERVER;
//! - `patch FILE TEXT` → a call to the freeform `apply_patch` tool (a
//!   `custom_tool_call`) adding FILE with the line TEXT. Codex offers that tool only
//!   for models its catalog knows (not for `mock-model`): tests pick one;
//! - `fail` → HTTP 500;
//! - `limit N` → the first time this text comes, HTTP 429 as ChatGPT's usage limit
//!   answers it (`usage_limit_reached`, with the `x-codex-primary-*` headers saying
//!   the window is used up and resets in N seconds); afterwards `Hello after the
//!   limit.`;
//! - `review JSON` (first line) → a reviewer's answer: a sentence, then JSON in a
//!   ```json block;
//! - anything else → `Hello from mock.`
//!
//! Text blocks starting with `<instructions>` (the standing instruction an ACP client
//! sends before the user's text) are not part of the script.
//!
//! When the request's last input item is a tool's output, the reply is the text
//! `tool output: OUTPUT` (its first 2,000 characters), which closes the tool round trip.
//!
//! Every request body is kept ([`MockOpenAi::requests`]) so tests can check what the
//! CLI sent (model, effort). The server stops when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

/// A running mock model server; stopped on drop.
#[derive(Debug)]
pub struct MockOpenAi {
    port: u16,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    /// Response ids, so each reply is distinct.
    counter: AtomicU64,
    /// Every `POST /v1/responses` body received, in order.
    requests: Mutex<Vec<Value>>,
    /// The `limit N` texts answered 429 already.
    limited: Mutex<Vec<String>>,
}

impl MockOpenAi {
    /// Starts the server on a free loopback port.
    pub fn start() -> MockOpenAi {
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("mock model server cannot bind: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let shared = Arc::new(Shared::default());
        let for_thread = shared.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if for_thread.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = for_thread.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        MockOpenAi {
            port,
            shared,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the provider's base URL.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// `codex` flags that point it at this server with a model called `mock-model`,
    /// no retries, and no background network use.
    pub fn codex_args(&self) -> Vec<String> {
        MockOpenAi::codex_args_for(&self.base_url())
    }

    /// [`MockOpenAi::codex_args`] for any provider base URL (tests point Codex at a
    /// port nobody listens on this way).
    pub fn codex_args_for(base_url: &str) -> Vec<String> {
        let mut args = Vec::new();
        for kv in [
            "model=mock-model".to_string(),
            "model_provider=mock".into(),
            "model_providers.mock.name=Mock".into(),
            format!("model_providers.mock.base_url={base_url}"),
            "model_providers.mock.wire_api=responses".into(),
            "model_providers.mock.request_max_retries=0".into(),
            "model_providers.mock.stream_max_retries=0".into(),
        ] {
            args.push("-c".into());
            args.push(kv);
        }
        args.push("--disable".into());
        args.push("plugins".into());
        args
    }
}

impl Drop for MockOpenAi {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

/// The text of the last user message in a Responses API `input` array.
fn last_user_text(input: &[Value]) -> String {
    for item in input.iter().rev() {
        if item["type"] == "message" && item["role"] == "user" {
            if let Some(parts) = item["content"].as_array() {
                // An ACP client's standing instruction travels as a text block of
                // its own before the user's; it is not the script.
                let text: Vec<&str> = parts
                    .iter()
                    .filter(|p| p["type"] == "input_text")
                    .filter_map(|p| p["text"].as_str())
                    .filter(|t| !t.starts_with("<instructions>"))
                    .collect();
                return text.join("\n");
            }
        }
    }
    String::new()
}

/// What the mock answers to one request.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Text {
        words: Vec<String>,
        pause_ms: u64,
    },
    Think(String),
    Call {
        namespace: Option<String>,
        name: String,
        arguments: Value,
    },
    /// A freeform (custom) tool call: its input is plain text, not JSON.
    Custom {
        name: String,
        input: String,
    },
    Fail,
    /// The usage limit, lifting in this many seconds.
    Limit(u64),
}

fn choose(body: &Value) -> Reply {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    if let Some(last) = input.last() {
        if last["type"] == "function_call_output" || last["type"] == "custom_tool_call_output" {
            let output = match &last["output"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let output: String = output.chars().take(2000).collect();
            return Reply::Text {
                words: words(&format!("tool output: {output}")),
                pause_ms: 0,
            };
        }
    }
    let text = last_user_text(&input);
    let text = text.trim();
    let (head, rest) = text.split_once(' ').unwrap_or((text, ""));
    let rest = rest.trim();
    match head {
        "say" => Reply::Text {
            words: words(rest),
            pause_ms: 0,
        },
        "slow" => {
            let mut parts = rest.split_whitespace();
            let n = parts.next().and_then(|n| n.parse().ok()).unwrap_or(50u64);
            let ms = parts.next().and_then(|n| n.parse().ok()).unwrap_or(100u64);
            Reply::Text {
                words: words(
                    &(0..n)
                        .map(|i| format!("w{i}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                pause_ms: ms,
            }
        }
        "think" => Reply::Think(rest.to_string()),
        "shell" => Reply::Call {
            namespace: None,
            name: "exec_command".into(),
            arguments: json!({ "cmd": rest }),
        },
        "escalate" => Reply::Call {
            namespace: None,
            name: "exec_command".into(),
            arguments: json!({
                "cmd": rest,
                "sandbox_permissions": "require_escalated",
                "justification": "the test asks for it",
            }),
        },
        "tool" => {
            let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
            Reply::Call {
                namespace: Some("mcp__tandem".into()),
                name: name.to_string(),
                arguments: serde_json::from_str(args).unwrap_or_else(|_| json!({})),
            }
        }
        "mcp" => {
            let (server, call) = rest.split_once(' ').unwrap_or((rest, ""));
            let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
            Reply::Call {
                namespace: Some(format!("mcp__{server}")),
                name: name.to_string(),
                arguments: serde_json::from_str(args).unwrap_or_else(|_| json!({})),
            }
        }
        "patch" => {
            let (file, line) = rest.split_once(' ').unwrap_or((rest, ""));
            Reply::Custom {
                name: "apply_patch".into(),
                input: format!("*** Begin Patch\n*** Add File: {file}\n+{line}\n*** End Patch\n"),
            }
        }
        "fail" => Reply::Fail,
        "limit" => Reply::Limit(rest.parse().unwrap_or(60)),
        // Only the first line: the rest is the reviewer's prompt.
        "review" => Reply::Text {
            words: words(&crate::mock_anthropic::review_answer(
                rest.lines().next().unwrap_or_default(),
            )),
            pause_ms: 0,
        },
        _ => Reply::Text {
            words: words("Hello from mock."),
            pause_ms: 0,
        },
    }
}

/// Splits text into deltas that rejoin to it: each word after the first keeps its
/// leading space.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, w) in text.split(' ').enumerate() {
        if i == 0 {
            out.push(w.to_string());
        } else {
            out.push(format!(" {w}"));
        }
    }
    out
}

fn usage() -> Value {
    json!({
        "input_tokens": 12,
        "input_tokens_details": { "cached_tokens": 2 },
        "output_tokens": 7,
        "output_tokens_details": { "reasoning_tokens": 1 },
        "total_tokens": 19,
    })
}

/// Reads one HTTP request; returns (method, path, body).
fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<(String, String, Vec<u8>)> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim();
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0u8; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    Ok((method, path, body))
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    if shared.stop.load(Ordering::SeqCst) {
        return Ok(());
    }
    let mut reader = BufReader::new(stream.try_clone()?);
    let (method, path, body) = read_request(&mut reader)?;
    let mut out = stream;
    if method != "POST" || !path.ends_with("/responses") {
        out.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        return Ok(());
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Ok(mut list) = shared.requests.lock() {
        list.push(body.clone());
    }
    let mut reply = choose(&body);
    if let Reply::Limit(seconds) = reply {
        let text = last_user_text(
            body["input"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default(),
        );
        let first = shared
            .limited
            .lock()
            .map(|mut seen| match seen.contains(&text) {
                true => false,
                false => {
                    seen.push(text);
                    true
                }
            })
            .unwrap_or(false);
        if !first {
            reply = Reply::Text {
                words: words("Hello after the limit."),
                pause_ms: 0,
            };
        } else {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default();
            let resets = now + seconds;
            let text = format!(
                r#"{{"error":{{"type":"usage_limit_reached","message":"the mock's usage limit","plan_type":"plus","resets_at":{resets}}}}}"#
            );
            write!(
                out,
                "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nx-codex-primary-used-percent: 100\r\nx-codex-primary-window-minutes: 300\r\nx-codex-primary-reset-at: {resets}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            )?;
            return Ok(());
        }
    }
    if reply == Reply::Fail {
        let text = r#"{"error":{"message":"the mock model failed","type":"server_error"}}"#;
        write!(
            out,
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        )?;
        return Ok(());
    }
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )?;
    let n = shared.counter.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("resp_{n}");
    let mut sse = Sse { out };
    sse.event(
        "response.created",
        json!({"type": "response.created", "response": {"id": id, "status": "in_progress", "output": []}}),
    )?;
    let output = match reply {
        Reply::Text { words, pause_ms } => vec![sse.message(&id, 0, &words, pause_ms)?],
        Reply::Think(summary) => {
            let reasoning = json!({
                "type": "reasoning",
                "id": format!("rs_{id}"),
                "summary": [{"type": "summary_text", "text": summary}],
            });
            sse.event(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0,
                       "item": {"type": "reasoning", "id": format!("rs_{id}"), "summary": []}}),
            )?;
            sse.event(
                "response.reasoning_summary_part.added",
                json!({"type": "response.reasoning_summary_part.added", "item_id": format!("rs_{id}"),
                       "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            )?;
            sse.event(
                "response.reasoning_summary_text.delta",
                json!({"type": "response.reasoning_summary_text.delta", "item_id": format!("rs_{id}"),
                       "output_index": 0, "summary_index": 0, "delta": summary}),
            )?;
            sse.event(
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
            )?;
            let message = sse.message(&id, 1, &words("thought"), 0)?;
            vec![reasoning, message]
        }
        Reply::Call {
            namespace,
            name,
            arguments,
        } => {
            let mut item = json!({
                "type": "function_call",
                "id": format!("fc_{id}"),
                "call_id": format!("call_{id}"),
                "name": name,
                "arguments": arguments.to_string(),
            });
            if let Some(ns) = namespace {
                item["namespace"] = Value::String(ns);
            }
            sse.event(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
            )?;
            sse.event(
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            )?;
            vec![item]
        }
        Reply::Custom { name, input } => {
            let item = json!({
                "type": "custom_tool_call",
                "id": format!("ctc_{id}"),
                "call_id": format!("call_{id}"),
                "name": name,
                "input": input,
            });
            sse.event(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
            )?;
            sse.event(
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            )?;
            vec![item]
        }
        Reply::Fail | Reply::Limit(_) => Vec::new(),
    };
    sse.event(
        "response.completed",
        json!({"type": "response.completed",
               "response": {"id": id, "status": "completed", "output": output, "usage": usage()}}),
    )?;
    sse.out.write_all(b"0\r\n\r\n")?;
    sse.out.flush()
}

/// Writes server-sent events as HTTP chunks.
struct Sse {
    out: TcpStream,
}

impl Sse {
    fn event(&mut self, name: &str, data: Value) -> std::io::Result<()> {
        let text = format!("event: {name}\ndata: {data}\n\n");
        write!(self.out, "{:x}\r\n{text}\r\n", text.len())?;
        self.out.flush()
    }

    /// Streams an assistant message; returns its final item.
    fn message(
        &mut self,
        id: &str,
        index: u64,
        words: &[String],
        pause_ms: u64,
    ) -> std::io::Result<Value> {
        let item_id = format!("msg_{id}");
        self.event(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": index,
                   "item": {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}}),
        )?;
        self.event(
            "response.content_part.added",
            json!({"type": "response.content_part.added", "item_id": item_id, "output_index": index,
                   "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        )?;
        for word in words {
            self.event(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": index,
                       "content_index": 0, "delta": word}),
            )?;
            if pause_ms > 0 {
                std::thread::sleep(Duration::from_millis(pause_ms));
            }
        }
        let text = words.concat();
        self.event(
            "response.output_text.done",
            json!({"type": "response.output_text.done", "item_id": item_id, "output_index": index,
                   "content_index": 0, "text": text}),
        )?;
        let item = json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]});
        self.event(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        )?;
        Ok(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Value {
        json!({"input": [{"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": text}]}]})
    }

    #[test]
    fn chooses_replies_from_the_last_user_text() {
        assert_eq!(
            choose(&body("say hi there")),
            Reply::Text {
                words: vec!["hi".into(), " there".into()],
                pause_ms: 0
            }
        );
        assert!(
            matches!(choose(&body("shell ls -l")), Reply::Call { name, .. } if name == "exec_command")
        );
        assert!(matches!(
            choose(&body("tool send_to_partner {\"message\":\"x\"}")),
            Reply::Call { namespace: Some(ns), arguments, .. } if ns == "mcp__tandem" && arguments["message"] == "x"
        ));
        assert_eq!(
            choose(&body("patch a.txt hello there")),
            Reply::Custom {
                name: "apply_patch".into(),
                input: "*** Begin Patch\n*** Add File: a.txt\n+hello there\n*** End Patch\n".into()
            }
        );
        let mut with_output = body("shell ls");
        if let Some(input) = with_output["input"].as_array_mut() {
            input.push(json!({"type": "function_call_output", "call_id": "c", "output": "ok"}));
        }
        assert!(
            matches!(choose(&with_output), Reply::Text { words, .. } if words.concat() == "tool output: ok")
        );
    }
}
