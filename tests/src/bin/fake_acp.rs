//! `fake-acp`: a tiny ACP agent (JSON-RPC 2.0 over stdio) for the adapter's fault
//! cases, which the real agents rarely show: malformed frames, an agent that dies
//! mid-turn or never answers `initialize`, permission requests, cancel.
//!
//! The environment picks how it starts: `FAKE_ACP_INIT=silent` never answers
//! `initialize`; `FAKE_ACP_INIT=garbage` writes malformed lines first. Each prompt's
//! text scripts its turn:
//!
//! - `say TEXT` → TEXT, a chunk per word, then `end_turn`;
//! - `garbage` → malformed lines (not JSON, JSON that is no JSON-RPC message, an
//!   answer to no request), then `survived`;
//! - `die` → one chunk, a line on stderr, exit code 3 mid-turn;
//! - `ask` → a tool call and a permission request with the options `allow_once`,
//!   `allow_always` and `reject_once` (labels deliberately odd), then the text
//!   `answer: OPTION_ID` (or `cancelled`, which ends the turn `cancelled`);
//! - `hang` → one chunk, then nothing until `session/cancel` (then `cancelled`);
//! - `plan` → a plan update with two entries;
//! - `mode` → the mode last set with `session/set_mode`;
//! - `effort` → the effort level in force (`effort: LEVEL`);
//! - `history` → how many prompts this agent session has seen (across `session/load`,
//!   which replays them as updates the client must not show);
//! - `read PATH` → `read: CONTENT`, or `read failed: ERROR` (the OS's words);
//! - `write PATH TEXT` → writes TEXT to PATH: `wrote PATH`, or `write failed: ERROR`;
//! - `run COMMAND` → runs `sh -c COMMAND` (a child of the agent, as an agent's shell
//!   is): `ran: STATUS STDOUT STDERR`;
//! - anything else → `echo: TEXT`.
//!
//! `FAKE_ACP_SESSIONS=resume-close` offers `session/resume` (reopens a session without
//! a replay), `session/close` and `session/list` (the sessions in `FAKE_ACP_STATE`, one
//! per page, in name order), and a `thought_level` option `effort` (`low`, `medium`,
//! `high`; `medium` at first) set with `session/set_config_option`; every `session/…`
//! method it is sent is then logged as a line `METHOD SESSION_ID` to
//! `FAKE_ACP_STATE/methods.log`. Each turn's `usage_update` carries the session's cost
//! so far, 0.25 USD a prompt. `FAKE_ACP_LIST_DELAY_MS` makes each list page that slow.
//!
//! A relative `FAKE_ACP_STATE` is resolved against the agent's working directory, and
//! the directory is made if missing.
//!
//! Sessions live in the process only; `session/load` of an id this process never
//! created answers an error (the way an agent that lost its transcript does), except
//! ids starting `fake-` whose prompt count is read from `FAKE_ACP_STATE` (a directory)
//! when set.

use std::io::{BufRead, Write};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// What the prompt thread waits for.
enum Signal {
    /// The answer to our permission request.
    Answer(Value),
    /// `session/cancel`.
    Cancel,
}

/// Stdout, shared by the reader and the prompt thread.
#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn raw(&self, line: &str) {
        if let Ok(mut out) = self.0.lock() {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    fn send(&self, value: Value) {
        self.raw(&value.to_string());
    }

    fn update(&self, session: &str, update: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session, "update": update}}));
    }

    fn chunk(&self, session: &str, text: &str) {
        self.update(
            session,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}),
        );
    }
}

/// Prompt counts per session, kept in `FAKE_ACP_STATE` when set so a restarted
/// process can "load" a session.
fn state_file(session: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("FAKE_ACP_STATE").map(|d| std::path::PathBuf::from(d).join(session))
}

/// Appends `METHOD SESSION` to `FAKE_ACP_STATE/methods.log`.
fn log_method(method: &str, session: &str) {
    if let Some(dir) = std::env::var_os("FAKE_ACP_STATE") {
        let dir = std::path::PathBuf::from(dir);
        let _ = std::fs::create_dir_all(&dir);
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("methods.log"))
        {
            let _ = writeln!(f, "{method} {session}");
        }
    }
}

/// The effort level in force (`FAKE_ACP_SESSIONS=resume-close`).
static EFFORT: Mutex<String> = Mutex::new(String::new());

/// The `thought_level` option as it stands.
fn effort_option() -> Value {
    let current = EFFORT.lock().map(|e| e.clone()).unwrap_or_default();
    json!({"id": "effort", "name": "Effort", "category": "thought_level", "type": "select",
        "currentValue": current, "options": [
            {"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"},
            {"value": "high", "name": "High"}]})
}

/// One page of `session/list`: the sessions in `FAKE_ACP_STATE` (its files other
/// than the log), one a page; the cursor is the next one's index.
fn list_page(cwd: &str, cursor: Option<&str>) -> Value {
    let mut ids: Vec<String> = std::env::var_os("FAKE_ACP_STATE")
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.starts_with("fake-"))
        .collect();
    ids.sort();
    let at: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    let sessions: Vec<Value> = ids
        .iter()
        .skip(at)
        .take(1)
        .map(|id| json!({"sessionId": id, "cwd": cwd}))
        .collect();
    match at + 1 < ids.len() {
        true => json!({"sessions": sessions, "nextCursor": (at + 1).to_string()}),
        false => json!({"sessions": sessions}),
    }
}

fn prompts_seen(session: &str) -> Option<u64> {
    let path = state_file(session)?;
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn count_prompt(session: &str) -> u64 {
    let n = prompts_seen(session).unwrap_or(0) + 1;
    if let Some(path) = state_file(session) {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(path, n.to_string());
    }
    n
}

fn main() {
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    let init = std::env::var("FAKE_ACP_INIT").unwrap_or_default();
    let more = std::env::var("FAKE_ACP_SESSIONS").is_ok_and(|v| v == "resume-close");
    let mode = Arc::new(Mutex::new("default".to_string()));
    if let Ok(mut effort) = EFFORT.lock() {
        *effort = "medium".into();
    }
    let mut waiting: Option<Sender<Signal>> = None;
    let mut sessions = 0u64;
    let mut permission_id = 100u64;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("fake-acp: unreadable line");
            continue;
        };
        let id = msg.get("id").cloned();
        let method = msg["method"].as_str().unwrap_or("").to_string();
        let params = msg["params"].clone();
        if more && method.starts_with("session/") {
            log_method(&method, params["sessionId"].as_str().unwrap_or("-"));
        }
        match (method.as_str(), id) {
            ("initialize", Some(id)) => {
                if init == "silent" {
                    continue;
                }
                if init == "garbage" {
                    out.raw("this is not json");
                    out.raw(r#"{"jsonrpc":"2.0","note":"no method, no id"}"#);
                }
                let sessions = if more {
                    json!({"resume": {}, "close": {}, "list": {}})
                } else {
                    json!({})
                };
                out.send(json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": true,
                        "mcpCapabilities": {"http": false, "sse": false},
                        "sessionCapabilities": sessions},
                    "agentInfo": {"name": "fake-acp", "title": "Fake ACP", "version": "1.0.0"},
                    "authMethods": []}}));
            }
            ("session/new", Some(id)) => {
                sessions += 1;
                let session = format!("fake-{}-{sessions}", std::process::id());
                let options = match more {
                    true => json!([effort_option()]),
                    false => json!([]),
                };
                out.send(
                    json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session,
                    "modes": {"currentModeId": "default", "availableModes": [
                        {"id": "default", "name": "Ask"}, {"id": "plan", "name": "Plan"},
                        {"id": "bypassPermissions", "name": "Yolo"}]},
                    "configOptions": options}}),
                );
                // Its slash commands, as agents send them: between turns, once.
                out.update(
                    &session,
                    json!({"sessionUpdate": "available_commands_update", "availableCommands": [
                        {"name": "review", "description": "Review the changes",
                            "input": {"hint": "what to look at"}},
                        {"name": "init", "description": "Write AGENTS.md"}]}),
                );
            }
            ("session/load", Some(id)) => {
                let session = params["sessionId"].as_str().unwrap_or("").to_string();
                match prompts_seen(&session) {
                    Some(n) => {
                        // The replay a client must not show again.
                        for i in 0..n {
                            out.update(
                                &session,
                                json!({"sessionUpdate": "user_message_chunk",
                                "content": {"type": "text", "text": format!("old prompt {i}")}}),
                            );
                            out.chunk(&session, &format!("old answer {i}"));
                        }
                        out.send(json!({"jsonrpc": "2.0", "id": id, "result": {
                            "modes": {"currentModeId": "default", "availableModes": [
                                {"id": "default", "name": "Ask"}, {"id": "plan", "name": "Plan"}]}}}));
                    }
                    None => out.send(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32002, "message": "Session not found"}})),
                }
            }
            ("session/resume", Some(id)) if more => {
                let session = params["sessionId"].as_str().unwrap_or("");
                if prompts_seen(session).is_some() {
                    out.send(json!({"jsonrpc": "2.0", "id": id, "result": {
                        "modes": {"currentModeId": "default", "availableModes": [
                            {"id": "default", "name": "Ask"}, {"id": "plan", "name": "Plan"}]}}}));
                } else {
                    out.send(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32002, "message": "Session not found"}}));
                }
            }
            ("session/list", Some(id)) if more => {
                // `FAKE_ACP_LIST_DELAY_MS`: each page takes that long (a slow agent).
                if let Some(ms) = std::env::var("FAKE_ACP_LIST_DELAY_MS")
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
                let page = list_page(
                    params["cwd"].as_str().unwrap_or(""),
                    params["cursor"].as_str(),
                );
                out.send(json!({"jsonrpc": "2.0", "id": id, "result": page}));
            }
            ("session/set_config_option", Some(id)) if more => {
                let value = params["value"].as_str().unwrap_or("");
                if params["configId"] != "effort" || !["low", "medium", "high"].contains(&value) {
                    out.send(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32602, "message": "no such option or value"}}));
                    continue;
                }
                if let Ok(mut effort) = EFFORT.lock() {
                    *effort = value.to_string();
                }
                out.send(json!({"jsonrpc": "2.0", "id": id,
                    "result": {"configOptions": [effort_option()]}}));
            }
            ("session/close", Some(id)) if more => {
                out.send(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
            }
            ("session/set_mode", Some(id)) => {
                if let (Ok(mut m), Some(new)) = (mode.lock(), params["modeId"].as_str()) {
                    *m = new.to_string();
                }
                out.send(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
            }
            ("session/prompt", Some(id)) => {
                let session = params["sessionId"].as_str().unwrap_or("").to_string();
                let text = params["prompt"]
                    .as_array()
                    .and_then(|blocks| blocks.last())
                    .and_then(|b| b["text"].as_str())
                    .unwrap_or("")
                    .to_string();
                let (tx, rx) = channel();
                waiting = Some(tx);
                permission_id += 1;
                let (out, mode, perm) = (out.clone(), mode.clone(), permission_id);
                std::thread::spawn(move || prompt(&out, id, &session, &text, &mode, perm, &rx));
            }
            ("session/cancel", None) => {
                if let Some(tx) = &waiting {
                    let _ = tx.send(Signal::Cancel);
                }
            }
            ("", Some(_)) => {
                // An answer to our permission request.
                if let Some(tx) = &waiting {
                    let _ = tx.send(Signal::Answer(msg["result"].clone()));
                }
            }
            (_, Some(id)) => out.send(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}})),
            _ => {}
        }
    }
    // `FAKE_ACP_LINGER=SECS`: stays that long after its stdin closed, as agents that
    // wait on their own children do (claude-code-acp, codex-acp), so a test can see
    // whether the server's death ends it.
    if let Some(secs) = std::env::var("FAKE_ACP_LINGER")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_secs(secs));
    }
}

/// Runs one prompt's script and answers it.
fn prompt(
    out: &Out,
    id: Value,
    session: &str,
    text: &str,
    mode: &Mutex<String>,
    perm: u64,
    signals: &Receiver<Signal>,
) {
    let n = count_prompt(session);
    let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
    let mut stop = "end_turn";
    match word {
        "say" => {
            for w in rest.split(' ') {
                out.chunk(session, &format!("{w} "));
            }
        }
        "garbage" => {
            out.raw("{{{ definitely not json");
            out.raw(r#"{"jsonrpc":"2.0"}"#);
            out.raw(r#"{"jsonrpc":"2.0","id":987654,"result":{}}"#);
            out.raw(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk"}}}"#);
            out.chunk(session, "survived");
        }
        "die" => {
            out.chunk(session, "about to die ");
            eprintln!("fake-acp: dying on purpose");
            std::process::exit(3);
        }
        "ask" => {
            out.update(
                session,
                json!({"sessionUpdate": "tool_call", "toolCallId": "call-1",
                "title": "touch /tmp/x", "kind": "execute", "status": "pending",
                "rawInput": {"command": "touch /tmp/x"}}),
            );
            out.send(json!({"jsonrpc": "2.0", "id": format!("perm-{perm}"),
                "method": "session/request_permission", "params": {"sessionId": session,
                "toolCall": {"toolCallId": "call-1", "title": "touch /tmp/x",
                    "rawInput": {"command": "touch /tmp/x"}},
                "options": [
                    {"optionId": "yes-once", "name": "Sure, why not", "kind": "allow_once"},
                    {"optionId": "yes-forever", "name": "Go ahead always", "kind": "allow_always"},
                    {"optionId": "nope", "name": "Please don't", "kind": "reject_once"}]}}));
            let answer = loop {
                match signals.recv() {
                    Ok(Signal::Answer(v)) => break v,
                    Ok(Signal::Cancel) => continue,
                    Err(_) => return,
                }
            };
            let picked = match answer["outcome"]["outcome"].as_str() {
                Some("selected") => answer["outcome"]["optionId"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string(),
                _ => "cancelled".to_string(),
            };
            if picked == "cancelled" {
                stop = "cancelled";
            } else {
                let status = if picked == "nope" {
                    "failed"
                } else {
                    "completed"
                };
                out.update(
                    session,
                    json!({"sessionUpdate": "tool_call_update",
                    "toolCallId": "call-1", "status": status,
                    "content": [{"type": "content", "content": {"type": "text", "text": "ran"}}]}),
                );
                out.chunk(session, &format!("answer: {picked}"));
            }
        }
        "hang" => {
            out.chunk(session, "waiting ");
            loop {
                match signals.recv() {
                    Ok(Signal::Cancel) | Err(_) => break,
                    Ok(Signal::Answer(_)) => {}
                }
            }
            stop = "cancelled";
        }
        "plan" => {
            out.update(
                session,
                json!({"sessionUpdate": "plan", "entries": [
                {"content": "look", "status": "completed", "priority": "high"},
                {"content": "fix", "status": "pending", "priority": "medium"}]}),
            );
            out.chunk(session, "planned");
        }
        "mode" => {
            let m = mode.lock().map(|m| m.clone()).unwrap_or_default();
            out.chunk(session, &format!("mode: {m}"));
        }
        "history" => out.chunk(session, &format!("prompts: {n}")),
        "effort" => {
            let e = EFFORT.lock().map(|e| e.clone()).unwrap_or_default();
            out.chunk(session, &format!("effort: {e}"));
        }
        "read" => match std::fs::read_to_string(rest) {
            Ok(text) => out.chunk(session, &format!("read: {text}")),
            Err(e) => out.chunk(session, &format!("read failed: {e}")),
        },
        "write" => {
            let (path, text) = rest.split_once(' ').unwrap_or((rest, ""));
            match std::fs::write(path, text) {
                Ok(()) => out.chunk(session, &format!("wrote {path}")),
                Err(e) => out.chunk(session, &format!("write failed: {e}")),
            }
        }
        "run" => match std::process::Command::new("sh").args(["-c", rest]).output() {
            Ok(o) => out.chunk(
                session,
                &format!(
                    "ran: {} {} {}",
                    o.status.code().unwrap_or(-1),
                    String::from_utf8_lossy(&o.stdout).trim(),
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            ),
            Err(e) => out.chunk(session, &format!("run failed: {e}")),
        },
        // A command whose result comes after the prompt's answer (`late`), or never
        // (`unfinished`), as codex-acp now and then sends it.
        "late" | "unfinished" => {
            out.update(
                session,
                json!({"sessionUpdate": "tool_call", "toolCallId": "call-late",
                "title": "sleep 0", "kind": "execute", "status": "in_progress",
                "rawInput": {"command": "sleep 0"}}),
            );
            out.send(json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": stop}}));
            if word == "late" {
                std::thread::sleep(std::time::Duration::from_millis(200));
                out.update(
                    session,
                    json!({"sessionUpdate": "tool_call_update",
                    "toolCallId": "call-late", "status": "completed",
                    "content": [{"type": "content",
                        "content": {"type": "text", "text": "late result"}}]}),
                );
            }
            return;
        }
        _ => out.chunk(session, &format!("echo: {text}")),
    }
    out.update(
        session,
        json!({"sessionUpdate": "usage_update", "used": 10 * n, "size": 1000,
            "cost": {"amount": 0.25 * n as f64, "currency": "USD"}}),
    );
    out.send(json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": stop}}));
}
