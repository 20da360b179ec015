//! The Codex adapter against the real, pinned `codex` binary, which talks to a mock
//! Responses API on loopback ([`MockOpenAi`]). Each test scripts the model by what it
//! sends (see `tests/src/mock_openai.rs`). Without the binary the tests print why and
//! return, except under CI, where they fail.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::vendor_clis::{codex_bin, require};
use tandem_tests::{Server, ServerOptions, TempDir, WsClient};

use crate::kinds;

/// A server whose Codex vendor is the pinned binary pointed at a mock model.
struct Codex {
    server: Server,
    mock: MockOpenAi,
    /// Codex's `CODEX_HOME`, private to the test.
    home: PathBuf,
    config: PathBuf,
    env: Vec<(String, String)>,
}

impl std::ops::Deref for Codex {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

/// Writes the config file and starts the server; `None` (after printing why) when the
/// binary is absent outside CI.
fn start(env: &[(&str, &str)]) -> Option<Codex> {
    let bin = require(codex_bin(), "the pinned codex CLI")?;
    let mock = MockOpenAi::start();
    let dir = Arc::new(TempDir::new("codex"));
    let home = dir.path().join("codex-home");
    if let Err(e) = std::fs::create_dir_all(&home) {
        panic!("cannot create {}: {e}", home.display());
    }
    let config = write_config(dir.path(), &bin, &mock.codex_args(), &home);
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let server = Server::start_in(dir, options(&config, &env));
    Some(Codex {
        server,
        mock,
        home,
        config,
        env,
    })
}

fn options(config: &Path, env: &[(String, String)]) -> ServerOptions {
    ServerOptions {
        args: vec!["--config".into(), config.display().to_string()],
        env: env.to_vec(),
        ..ServerOptions::default()
    }
}

/// `[vendors.codex]` with `bin`, `args` and a private `CODEX_HOME`.
fn write_config(dir: &Path, bin: &Path, args: &[String], home: &Path) -> PathBuf {
    let args: Vec<String> = args.iter().map(|a| json!(a).to_string()).collect();
    let text = format!(
        "[vendors.codex]\nbin = {}\nargs = [{}]\nenv = {{ CODEX_HOME = {} }}\n",
        json!(bin.display().to_string()),
        args.join(", "),
        json!(home.display().to_string()),
    );
    let path = dir.join("tandem.toml");
    if let Err(e) = std::fs::write(&path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
    path
}

impl Codex {
    /// Stops the server (SIGKILL) and starts it again on the same data and config.
    fn restart(self) -> Codex {
        let Codex {
            server,
            mock,
            home,
            config,
            env,
        } = self;
        let dir = server.kill();
        let server = Server::start_in(dir, options(&config, &env));
        Codex {
            server,
            mock,
            home,
            config,
            env,
        }
    }
}

/// Creates a Codex session (with `extra` fields) and subscribes to it.
async fn codex_session(ws: &mut WsClient, extra: Value) -> String {
    let mut body = json!({"type": "session.create", "vendor": "codex", "title": "codex"});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let reply = ws.ok(body).await;
    let id = reply["session"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!id.is_empty(), "{reply}");
    ws.subscribe(&id, 0).await;
    id
}

/// Sends a message and returns the turn's events through `turn_completed`.
async fn turn(ws: &mut WsClient, id: &str, content: &str) -> Vec<Value> {
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": content}))
        .await;
    ws.events_until_turn_end(id).await
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

fn last_of<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    match events.iter().rev().find(|e| e["kind"] == kind) {
        Some(e) => e,
        None => panic!("no {kind} in {:?}", kinds(events)),
    }
}

/// Ids of live processes whose environment holds `CODEX_HOME=home` (the app-server
/// and everything it started).
fn processes_with_home(home: &Path) -> Vec<u32> {
    let needle = format!("CODEX_HOME={}", home.display());
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            // Zombies count as gone.
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().unwrap_or("").trim().chars().next();
            if state != Some('Z') {
                out.push(pid);
            }
        }
    }
    out
}

/// The app-server process of this test (the one running `app-server`).
fn app_server_pid(home: &Path) -> Option<u32> {
    processes_with_home(home).into_iter().find(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| c.split(|b| *b == 0).any(|arg| arg == b"app-server"))
            .unwrap_or(false)
    })
}

/// Polls (bounded) until `done`.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

#[actix_rt::test]
async fn text_turn_streams_deltas_and_applies_model_and_effort() {
    let Some(codex) = start(&[]) else { return };
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;

    let events = turn(&mut ws, &id, "say hello from the mock model").await;
    let deltas: String = of_kind(&events, "text_delta")
        .iter()
        .map(|e| e["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(deltas, "hello from the mock model", "{events:?}");
    assert!(of_kind(&events, "text_delta").len() > 1, "{events:?}");
    assert_eq!(
        last_of(&events, "assistant_message")["text"],
        "hello from the mock model"
    );
    let done = last_of(&events, "turn_completed");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["usage"]["inputTokens"], 12, "{done}");
    assert_eq!(done["usage"]["outputTokens"], 7, "{done}");

    // The thread id is recorded as vendorSessionId.
    let (status, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200);
    let thread = info["vendorSessionId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!thread.is_empty(), "{info}");

    // Model and effort from the session apply to the next turn.
    let (status, vendors) = codex.get("/api/v1/vendors").await;
    assert_eq!(status, 200);
    let entry = vendors["vendors"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["id"] == "codex").cloned())
        .unwrap_or_default();
    assert_eq!(entry["installed"], true, "{entry}");
    assert!(
        entry["version"]
            .as_str()
            .unwrap_or_default()
            .contains("0.171.0"),
        "{entry}"
    );
    let model = entry["models"][0].as_str().unwrap_or_default().to_string();
    assert!(!model.is_empty(), "model/list gave no models: {entry}");
    ws.ok(json!({"type": "session.configure", "sessionId": id, "model": model, "effort": "high"}))
        .await;
    let events = turn(&mut ws, &id, "say again").await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    let requests = codex.mock.requests();
    let last = requests.last().cloned().unwrap_or_default();
    assert_eq!(last["model"], json!(model), "{last}");
    assert_eq!(last["reasoning"]["effort"], "high", "{last}");
    // The same thread carried on: the first message is in the second request.
    assert!(last["input"]
        .to_string()
        .contains("say hello from the mock model"));
    let (_, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["vendorSessionId"], json!(thread));
}
