//! A mock Anthropic Messages API on 127.0.0.1 for driving the real `claude` CLI offline.
//!
//! One small HTTP/1.1 server per test (std `TcpListener`, a thread per connection,
//! `Connection: close` on every answer), stopped when dropped. It answers
//! `POST /v1/messages` with a streamed (SSE) or plain JSON message and
//! `POST /v1/messages/count_tokens` with a fixed count; everything else is a 404.
//!
//! The reply is scripted by the user text of the conversation's last user message
//! that holds text (tool results and `<system-reminder>` blocks are skipped). Each line
//! of that text is one model response, in order; the response index is the number of
//! assistant messages sent after that user message. Lines:
//!
//! - `say TEXT` → TEXT in three `text_delta`s, `end_turn`
//! - `think TEXT` → a thinking block with TEXT, then the text `thought`
//! - `slow N MS` → N deltas `"chunk i "`, MS apart
//! - `hold` → one delta `"holding "`, then waits until the client goes away, the
//!   test calls [`MockAnthropic::release`], or two minutes pass; then `" released"`
//! - `bash CMD` → a `Bash` tool call running CMD
//! - `bgbash CMD` → a `Bash` tool call with `run_in_background: true`
//! - `tool NAME JSON` → a call to tool NAME with the JSON input
//! - `review JSON` → a reviewer's answer: a sentence, then JSON in a ```json block
//! - `limit` → HTTP 429, a `rate_limit_error` (the API's per-minute rate limit)
//! - any other line → `echo: LINE`
//!
//! When the lines run out, the reply is `result: ` followed by the text of the newest
//! tool result in the conversation (so a test sees what a tool returned, or the
//! denial message), or `done` when there is none.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The longest a `hold` reply waits before it finishes by itself.
const HOLD_LIMIT: Duration = Duration::from_secs(120);

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// The request path with its query.
    pub path: String,
    /// The `model` field.
    pub model: String,
    /// The script text the reply was chosen from (empty for other requests).
    pub user_text: String,
    /// The whole JSON body.
    pub body: Value,
}

/// State shared between the server threads and the handle.
#[derive(Debug, Default)]
struct Shared {
    /// Set on drop: the accept loop ends.
    stop: AtomicBool,
    /// Bumped by [`MockAnthropic::release`]: holding replies finish.
    releases: AtomicU64,
    /// Every request, in arrival order.
    seen: Mutex<Vec<SeenRequest>>,
    /// Counter for message and tool ids.
    ids: AtomicU64,
}

/// A running mock Messages API; stops when dropped.
#[derive(Debug)]
pub struct MockAnthropic {
    port: u16,
    shared: Arc<Shared>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl MockAnthropic {
    /// Starts the mock on a free loopback port.
    pub fn start() -> MockAnthropic {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("local_addr: {e}"))
            .port();
        let shared = Arc::new(Shared::default());
        let accept_shared = shared.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = accept_shared.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        MockAnthropic {
            port,
            shared,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`: the CLI's `ANTHROPIC_BASE_URL` (no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment the CLI needs to use this mock offline.
    pub fn cli_env(&self) -> Vec<(String, String)> {
        vec![
            ("ANTHROPIC_BASE_URL".into(), self.base_url()),
            ("ANTHROPIC_API_KEY".into(), "mock-key".into()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
        ]
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.shared
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Lets every `hold` reply in progress (and the next ones) finish.
    pub fn release(&self) {
        self.shared.releases.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for MockAnthropic {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.release();
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// One parsed request.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { method, path, body })
}

fn serve(mut stream: TcpStream, shared: &Shared) {
    let Some(req) = read_request(&stream) else {
        return;
    };
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let route = req.path.split('?').next().unwrap_or_default().to_string();
    match (req.method.as_str(), route.as_str()) {
        ("POST", "/v1/messages/count_tokens") => {
            record(shared, &req.path, &body, String::new());
            respond_json(&mut stream, 200, &json!({"input_tokens": 42}));
        }
        ("POST", "/v1/messages") => {
            let (script_text, step) = script_position(&body);
            record(shared, &req.path, &body, script_text.clone());
            let reply = choose(&script_text, step, &body);
            if matches!(reply, Reply::Limit) {
                respond_json(
                    &mut stream,
                    429,
                    &json!({"type": "error", "error": {"type": "rate_limit_error",
                        "message": "Number of request tokens has exceeded your per-minute rate limit"}}),
                );
                let _ = stream.shutdown(Shutdown::Both);
                return;
            }
            let model = body["model"].as_str().unwrap_or("mock-model").to_string();
            if body["stream"].as_bool().unwrap_or(false) {
                stream_reply(&mut stream, shared, &model, reply);
            } else {
                respond_json(&mut stream, 200, &whole_message(shared, &model, &reply));
            }
        }
        _ => respond_json(
            &mut stream,
            404,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": "no such route"}}),
        ),
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn record(shared: &Shared, path: &str, body: &Value, user_text: String) {
    if let Ok(mut seen) = shared.seen.lock() {
        seen.push(SeenRequest {
            path: path.to_string(),
            model: body["model"].as_str().unwrap_or_default().to_string(),
            user_text,
            body: body.clone(),
        });
    }
}

fn respond_json(stream: &mut TcpStream, status: u16, body: &Value) {
    let text = body.to_string();
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        _ => "Not Found",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// The text blocks of a message's content (a string or a list of blocks).
fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// The script (the newest user text) and how many responses were already given to it.
fn script_position(body: &Value) -> (String, usize) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for (i, m) in messages.iter().enumerate().rev() {
        if m["role"] != "user" {
            continue;
        }
        let found = texts(&m["content"]);
        if let Some(text) = found.last() {
            let step = messages[i + 1..]
                .iter()
                .filter(|m| m["role"] == "assistant")
                .count();
            return (text.clone(), step);
        }
    }
    (String::new(), 0)
}

/// The newest tool result's text in the conversation.
fn last_tool_result(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    for m in messages.iter().rev() {
        let Some(blocks) = m["content"].as_array() else {
            continue;
        };
        for b in blocks.iter().rev() {
            if b["type"] == "tool_result" {
                return Some(match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => other.to_string(),
                });
            }
        }
    }
    None
}

/// What the model answers.
#[derive(Debug, Clone)]
enum Reply {
    Text(Vec<String>),
    Slow {
        n: u64,
        ms: u64,
    },
    Hold,
    Think(String),
    Tool {
        name: String,
        input: Value,
    },
    /// HTTP 429.
    Limit,
}

fn thirds(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(3).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// A reviewer's answer holding `json` as its review (what `session.review-by` reads).
pub fn review_answer(json: &str) -> String {
    format!("I read the change.\n```json\n{json}\n```\n")
}

fn choose(script: &str, step: usize, body: &Value) -> Reply {
    let lines: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let Some(line) = lines.get(step) else {
        return Reply::Text(thirds(&match last_tool_result(body) {
            Some(result) => format!("result: {result}"),
            None => "done".into(),
        }));
    };
    let (head, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    match head {
        "say" => Reply::Text(thirds(rest)),
        "review" => Reply::Text(thirds(&review_answer(rest))),
        "think" => Reply::Think(rest.to_string()),
        "hold" => Reply::Hold,
        "limit" => Reply::Limit,
        "slow" => {
            let mut nums = rest.split_whitespace().map(|n| n.parse::<u64>().ok());
            match (nums.next().flatten(), nums.next().flatten()) {
                (Some(n), Some(ms)) => Reply::Slow { n, ms },
                _ => Reply::Text(thirds(&format!("echo: {line}"))),
            }
        }
        "bash" => Reply::Tool {
            name: "Bash".into(),
            input: json!({"command": rest, "description": "Run a command"}),
        },
        "bgbash" => Reply::Tool {
            name: "Bash".into(),
            input: json!({"command": rest, "description": "Run a command in the background",
                          "run_in_background": true}),
        },
        // Writes REST as the plan, at the plan file the CLI names in plan mode.
        "plan" => Reply::Tool {
            name: "Write".into(),
            input: json!({"file_path": plan_path(body).unwrap_or_default(), "content": rest}),
        },
        "tool" => {
            let (name, input) = rest.split_once(' ').unwrap_or((rest, "{}"));
            Reply::Tool {
                name: name.to_string(),
                input: serde_json::from_str(input).unwrap_or_else(|_| json!({})),
            }
        }
        _ => Reply::Text(thirds(&format!("echo: {line}"))),
    }
}

/// The plan file Claude Code asks the model to write in plan mode ("create your plan
/// at PATH using the Write tool"), from anywhere in the request.
fn plan_path(body: &Value) -> Option<String> {
    let text = body.to_string();
    let start = text.find("create your plan at ")? + "create your plan at ".len();
    let rest = &text[start..];
    let end = rest.find(" using")?;
    Some(rest[..end].to_string())
}

fn next_id(shared: &Shared, prefix: &str) -> String {
    format!("{prefix}{:06}", shared.ids.fetch_add(1, Ordering::SeqCst))
}

fn usage(output: u64) -> Value {
    json!({"input_tokens": 10, "output_tokens": output, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": 0})
}

/// The whole reply as one non-streamed message (for `stream: false` requests).
fn whole_message(shared: &Shared, model: &str, reply: &Reply) -> Value {
    let (content, stop) = match reply {
        Reply::Text(parts) => (
            json!([{"type": "text", "text": parts.concat()}]),
            "end_turn",
        ),
        Reply::Slow { n, .. } => (
            json!([{"type": "text", "text": (0..*n).map(|i| format!("chunk {i} ")).collect::<String>()}]),
            "end_turn",
        ),
        Reply::Hold => (
            json!([{"type": "text", "text": "holding  released"}]),
            "end_turn",
        ),
        Reply::Think(t) => (
            json!([{"type": "thinking", "thinking": t, "signature": "sig"},
                   {"type": "text", "text": "thought"}]),
            "end_turn",
        ),
        Reply::Tool { name, input } => (
            json!([{"type": "tool_use", "id": next_id(shared, "toolu_mock"), "name": name, "input": input}]),
            "tool_use",
        ),
        // Answered as a 429 before any message is made.
        Reply::Limit => (json!([]), "end_turn"),
    };
    json!({"id": next_id(shared, "msg_mock"), "type": "message", "role": "assistant",
           "model": model, "content": content, "stop_reason": stop, "stop_sequence": null,
           "usage": usage(5)})
}

/// Writes SSE events to the client; false once the client is gone.
struct Sse<'a> {
    stream: &'a mut TcpStream,
}

impl Sse<'_> {
    fn event(&mut self, data: Value) -> bool {
        let name = data["type"].as_str().unwrap_or("message").to_string();
        let frame = format!("event: {name}\ndata: {data}\n\n");
        let chunk = format!("{:x}\r\n{frame}\r\n", frame.len());
        self.stream.write_all(chunk.as_bytes()).is_ok() && self.stream.flush().is_ok()
    }

    fn text_block(&mut self, index: u64, parts: &[String]) -> bool {
        self.event(json!({"type": "content_block_start", "index": index,
                          "content_block": {"type": "text", "text": ""}}))
            && parts.iter().all(|p| {
                self.event(json!({"type": "content_block_delta", "index": index,
                                  "delta": {"type": "text_delta", "text": p}}))
            })
            && self.event(json!({"type": "content_block_stop", "index": index}))
    }

    /// True when the client closed its side (checked without blocking).
    fn client_gone(&self) -> bool {
        let _ = self.stream.set_nonblocking(true);
        let mut byte = [0u8; 1];
        let gone = matches!(self.stream.peek(&mut byte), Ok(0));
        let _ = self.stream.set_nonblocking(false);
        gone
    }
}

fn stream_reply(stream: &mut TcpStream, shared: &Shared, model: &str, reply: Reply) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let releases_at_start = shared.releases.load(Ordering::SeqCst);
    let mut sse = Sse { stream };
    let message = json!({"id": next_id(shared, "msg_mock"), "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": usage(1)});
    if !sse.event(json!({"type": "message_start", "message": message})) {
        return;
    }
    let ok = match &reply {
        Reply::Text(parts) => sse.text_block(0, parts),
        // Answered as a 429 before any stream starts.
        Reply::Limit => true,
        Reply::Slow { n, ms } => {
            sse.event(json!({"type": "content_block_start", "index": 0,
                             "content_block": {"type": "text", "text": ""}}))
                && (0..*n).all(|i| {
                    if i > 0 {
                        std::thread::sleep(Duration::from_millis(*ms));
                    }
                    sse.event(json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": format!("chunk {i} ")}}))
                })
                && sse.event(json!({"type": "content_block_stop", "index": 0}))
        }
        Reply::Hold => {
            let started = Instant::now();
            let first = sse.event(json!({"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}))
                && sse.event(json!({"type": "content_block_delta", "index": 0,
                                    "delta": {"type": "text_delta", "text": "holding "}}));
            if !first {
                return;
            }
            while shared.releases.load(Ordering::SeqCst) == releases_at_start
                && started.elapsed() < HOLD_LIMIT
            {
                if sse.client_gone() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            sse.event(json!({"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": " released"}}))
                && sse.event(json!({"type": "content_block_stop", "index": 0}))
        }
        Reply::Think(text) => {
            sse.event(json!({"type": "content_block_start", "index": 0,
                             "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
                && thirds(text).iter().all(|p| {
                    sse.event(json!({"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "thinking_delta", "thinking": p}}))
                })
                && sse.event(json!({"type": "content_block_delta", "index": 0,
                                    "delta": {"type": "signature_delta", "signature": "mock-signature"}}))
                && sse.event(json!({"type": "content_block_stop", "index": 0}))
                && sse.text_block(1, &["thought".to_string()])
        }
        Reply::Tool { name, input } => {
            let id = next_id(shared, "toolu_mock");
            let json_text = input.to_string();
            sse.event(json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}))
                && sse.event(json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": json_text}}))
                && sse.event(json!({"type": "content_block_stop", "index": 0}))
        }
    };
    if !ok {
        return;
    }
    let stop = if matches!(reply, Reply::Tool { .. }) {
        "tool_use"
    } else {
        "end_turn"
    };
    if sse.event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}))
        && sse.event(json!({"type": "message_stop"}))
    {
        let _ = sse.stream.write_all(b"0\r\n\r\n");
    }
}

/// Writes a `tandem serve --config` file under `dir` that runs the `claude` binary
/// `bin` against `mock`, with `home` as the CLI's private HOME (its transcripts and
/// process registry live there) and `idle_secs` as the idle-close time. Returns the
/// file's path.
pub fn claude_config(
    dir: &std::path::Path,
    bin: &std::path::Path,
    mock: &MockAnthropic,
    home: &std::path::Path,
    idle_secs: u64,
) -> std::path::PathBuf {
    if let Err(e) = std::fs::create_dir_all(home) {
        panic!("cannot create {}: {e}", home.display());
    }
    let mut env: Vec<(String, String)> = mock.cli_env();
    env.push(("HOME".into(), home.display().to_string()));
    let env = env
        .iter()
        .map(|(k, v)| format!("{k} = {}", toml_string(v)))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "[vendors.claude]\nbin = {}\nidle_secs = {idle_secs}\nenv = {{ {env} }}\n",
        toml_string(&bin.display().to_string())
    );
    let path = dir.join("tandem.toml");
    if let Err(e) = std::fs::write(&path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
    path
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_position_counts_assistant_replies_after_the_text() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "bash ls\nsay ok"},
                                         {"type": "text", "text": "<system-reminder>x</system-reminder>"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "files"}]},
        ]});
        let (text, step) = script_position(&body);
        assert_eq!(text, "bash ls\nsay ok");
        assert_eq!(step, 1);
        assert!(matches!(choose(&text, step, &body), Reply::Text(p) if p.concat() == "ok"));
        assert!(matches!(choose(&text, 2, &body), Reply::Text(p) if p.concat() == "result: files"));
    }
}
