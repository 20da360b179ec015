//! What is Codex's own, against the real, pinned `codex` binary, which talks to a mock
//! Responses API on loopback ([`MockOpenAi`]): model and effort, confinement,
//! background commands, file-change approvals, the shared app-server, forks, limits,
//! rollouts. What every vendor does (turns, approvals, resume, faults, images, a
//! Driver) is in `conformance`, whose `vendors::codex` holds the setup used here.
//! Each test scripts the model by what it sends (see `tests/src/mock_openai.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_actors::clock::now_ms;
use tandem_tests::events::{kinds, last_of, of_kind, texts};
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::vendor_clis::{codex_bin, require};
use tandem_tests::{eventually, Server, ServerOptions, TempDir, WsClient};

use crate::conformance::vendors::codex::{
    app_servers, codex_session, last_input, processes_with_home, start, start_tuned, start_with,
    the_app_server, write_config, Codex,
};

/// Model and effort from the session reach the model and stay; reasoning is recorded
/// as `thinking` before the answer. (Deltas and usage: `conformance::turns`.)
#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn model_effort_and_reasoning_reach_the_model() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;

    let events = ws.turn(&id, "say hello from the mock model").await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    // The thread id is recorded as vendorSessionId.
    let (status, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200);
    let thread = info["vendorSessionId"].as_str().unwrap().to_string();
    assert!(!thread.is_empty(), "{info}");

    // Model and effort from the session apply to the next turn. The vendor check
    // (version, login, models) runs in the background from start-up: wait for it.
    let entry = eventually("the Codex check to report a version", async || {
        let (status, vendors) = codex.get("/api/v1/vendors").await;
        assert_eq!(status, 200);
        let entry = vendors["vendors"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["id"] == "codex").cloned())
            .unwrap();
        entry["version"].is_string().then_some(entry)
    })
    .await;
    assert_eq!(entry["installed"], true, "{entry}");
    assert!(
        entry["version"].as_str().unwrap().contains("0.171.0"),
        "{entry}"
    );
    let model = entry["models"][0].as_str().unwrap().to_string();
    assert!(!model.is_empty(), "model/list gave no models: {entry}");
    ws.ok(json!({"type": "session.configure", "sessionId": id, "model": model, "effort": "high"}))
        .await;
    let events = ws.turn(&id, "say again").await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    let requests = codex.mock.requests();
    let last = requests.last().cloned().unwrap();
    assert_eq!(last["model"], json!(model), "{last}");
    assert_eq!(last["reasoning"]["effort"], "high", "{last}");
    // The same thread carried on: the first message is in the second request.
    assert!(last["input"]
        .to_string()
        .contains("say hello from the mock model"));
    let (_, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["vendorSessionId"], json!(thread));

    // Reasoning is recorded as `thinking`, before the answer.
    let events = ws.turn(&id, "think about the question first").await;
    let order = kinds(&events);
    let thinking = last_of(&events, "thinking");
    assert_eq!(thinking["text"], "about the question first", "{thinking}");
    assert!(
        order.iter().position(|k| k == "thinking")
            < order.iter().position(|k| k == "assistant_message"),
        "{order:?}"
    );
    assert_eq!(last_of(&events, "assistant_message")["text"], "thought");
    // Model and effort stay without being sent again (the adapter sends a turn only
    // the settings that changed; Codex keeps overrides for the following turns).
    let requests = codex.mock.requests();
    let last = requests.last().cloned().unwrap();
    assert_eq!(last["model"], json!(model), "{last}");
    assert_eq!(last["reasoning"]["effort"], "high", "{last}");
}

/// Under tandem's Landlock ruleset Codex's own sandbox (bubblewrap) cannot start, so
/// the adapter runs commands unsandboxed inside the ruleset: a command Codex runs
/// unasked (accept-edits) works in the session's directory, and neither it nor a
/// bypassed one reads the data directory.
#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
#[cfg_attr(not(has_landlock), ignore = "the kernel does not enforce Landlock")]
async fn a_confined_codex_works_in_its_directory_and_reads_no_token() {
    let codex = start(&[]);
    let work = codex.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let token = codex.dir.path().join("data").join("admin-token");
    assert!(token.exists());
    let (_, vendors) = codex.get("/api/v1/vendors").await;
    let entry = vendors["vendors"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["id"] == "codex"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["confinement"], "landlock", "{entry}");
    let mut ws = codex.ws().await;
    let id = codex_session(
        &mut ws,
        json!({"permissionMode": "acceptEdits", "cwd": work}),
    )
    .await;
    let events = unasked_turn(&mut ws, &id, "shell echo made-here > made.txt").await;
    let result = last_of(&events, "tool_result");
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt")).unwrap_or_default(),
        "made-here\n"
    );
    ws.ok(json!({"type": "session.configure", "sessionId": id, "permissionMode": "bypassPermissions"}))
        .await;
    let events = unasked_turn(&mut ws, &id, &format!("shell cat {}", token.display())).await;
    let result = last_of(&events, "tool_result");
    let output = result["output"]["output"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(output.contains("Permission denied"), "{result}");
    assert!(!output.contains("tdm_"), "{result}");
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn interrupted_shell_command_becomes_a_stoppable_background_task() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({"permissionMode": "bypassPermissions"})).await;
    ws.chat(&id, "shell echo begun; sleep 41.5").await;
    ws.recv_until(|v| v["kind"] == "tool_call" && v["sessionId"] == json!(id))
        .await;
    ws.ok(json!({"type": "chat.abort", "sessionId": id})).await;
    let events = ws.events_until_turn_end(&id).await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "interrupted");
    // The open command got a result from us.
    let result = last_of(&events, "tool_result");
    assert_eq!(result["isError"], true, "{result}");

    let frames = ws
        .recv_until(|v| v["kind"] == "background_tasks" && v["sessionId"] == json!(id))
        .await;
    let tasks = frames.last().cloned().unwrap()["tasks"].clone();
    assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{tasks}");
    assert_eq!(tasks[0]["taskType"], "shell");
    assert!(
        tasks[0]["description"]
            .as_str()
            .unwrap()
            .contains("sleep 41.5"),
        "{tasks}"
    );
    let task_id = tasks[0]["taskId"].as_str().unwrap().to_string();

    let (status, running) = codex.get("/api/v1/sessions/running").await;
    assert_eq!(status, 200);
    let entry = running["sessions"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["sessionId"] == json!(id)).cloned())
        .unwrap();
    assert_eq!(entry["background"], true, "{running}");
    assert_eq!(entry["tasks"][0]["taskId"], json!(task_id), "{running}");

    ws.ok(json!({"type": "chat.stop-task", "sessionId": id, "taskId": task_id}))
        .await;
    let frames = ws
        .recv_until(|v| v["kind"] == "background_tasks" && v["sessionId"] == json!(id))
        .await;
    let tasks = frames.last().cloned().unwrap()["tasks"].clone();
    assert_eq!(tasks, json!([]), "stopping the task empties the set");
    let (_, running) = codex.get("/api/v1/sessions/running").await;
    assert!(
        !running.to_string().contains(&id),
        "no longer running: {running}"
    );
    let home = codex.home.clone();
    eventually("the stopped command is gone", async || {
        let running = processes_with_home(&home).iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("sleep 41.5"))
        });
        (!running).then_some(())
    })
    .await;
}

/// Answers a permission request (its `requestId` is the permission's id, so the
/// generic request helper cannot be used), waits for the reply, then for the turn's
/// end; returns the session's events after the request, in order.
async fn answer_until_turn_end(
    ws: &mut WsClient,
    session: &str,
    request: &Value,
    allow: bool,
) -> Vec<Value> {
    let id = request["requestId"].clone();
    ws.send(&json!({"type": "chat.permission-response", "requestId": id, "allow": allow}))
        .await;
    let mut frames = ws
        .recv_until(|v| {
            v["requestId"] == id && (v["kind"] == "reply" || v["kind"] == "protocol_error")
        })
        .await;
    let reply = frames.pop().unwrap();
    assert_eq!(reply["kind"], "reply", "{reply}");
    let mut events: Vec<Value> = frames
        .into_iter()
        .filter(|v| v["sessionId"] == json!(session) && v.get("seq").is_some())
        .collect();
    if !events.iter().any(|e| e["kind"] == "turn_completed") {
        events.extend(ws.events_until_turn_end(session).await);
    }
    events
}

/// Runs `content` as a turn that needs no approval: no `permission_request` reaches
/// anyone, and it completes. Returns its events.
async fn unasked_turn(ws: &mut WsClient, id: &str, content: &str) -> Vec<Value> {
    let events = ws.turn(id, content).await;
    assert!(
        of_kind(&events, "permission_request").is_empty(),
        "{events:?}"
    );
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    events
}

/// The next `permission_request` of `id`.
async fn permission_request(ws: &mut WsClient, id: &str) -> Value {
    let frames = ws
        .recv_until(|v| v["kind"] == "permission_request" && v["sessionId"] == json!(id))
        .await;
    frames.last().cloned().unwrap()
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn file_change_approval_allow_and_deny() {
    let codex = start(&[]);
    let dir = codex.dir.path().to_path_buf();
    let mut ws = codex.ws().await;
    // Codex offers its `apply_patch` tool only for models its catalog knows: take one
    // that `model/list` reported (the listing starts with placeholders until then).
    let model = eventually("model/list to replace the placeholder models", async || {
        let (status, vendors) = codex.get("/api/v1/vendors").await;
        assert_eq!(status, 200);
        let codex_vendor = vendors["vendors"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["id"] == "codex"))
            .unwrap_or_else(|| panic!("no codex vendor in {vendors}"));
        let models: Vec<String> = codex_vendor["models"]
            .as_array()
            .unwrap_or_else(|| panic!("no models in {codex_vendor}"))
            .iter()
            .map(|m| {
                m.as_str()
                    .unwrap_or_else(|| panic!("model {m}"))
                    .to_string()
            })
            .collect();
        let placeholder = models.is_empty() || models.iter().any(|m| m == "gpt-5-codex");
        (!placeholder).then(|| models[0].clone())
    })
    .await;
    // Default mode asks before a patch, even inside the workspace.
    let id = codex_session(
        &mut ws,
        json!({"cwd": dir.display().to_string(), "model": model}),
    )
    .await;

    ws.chat(&id, "patch patched.txt hello patch").await;
    // Codex reports the file change (our `tool_call`) before it asks.
    let asked = ws
        .recv_until(|v| v["kind"] == "permission_request" && v["sessionId"] == json!(id))
        .await;
    let request = asked.last().cloned().unwrap();
    assert_eq!(request["toolName"], "apply_patch", "{request}");
    assert!(!dir.join("patched.txt").exists());
    let call = last_of(&asked, "tool_call").clone();
    let events = answer_until_turn_end(&mut ws, &id, &request, true).await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    assert_eq!(call["name"], "apply_patch", "{events:?}");
    assert!(call["input"].to_string().contains("patched.txt"), "{call}");
    // The file change, typed, on the call and on the request Codex made by item id.
    assert_eq!(call["changes"][0]["kind"], "add", "{call}");
    assert!(
        call["changes"][0]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("patched.txt")),
        "{call}"
    );
    assert_eq!(request["changes"], call["changes"], "{request}");
    let result = last_of(&events, "tool_result");
    assert_eq!(result["callId"], call["callId"], "{events:?}");
    assert_eq!(result["isError"], false, "{result}");
    let written = std::fs::read_to_string(dir.join("patched.txt")).unwrap();
    assert_eq!(written.trim_end(), "hello patch");

    ws.chat(&id, "patch refused.txt no").await;
    let request = permission_request(&mut ws, &id).await;
    assert_eq!(request["toolName"], "apply_patch", "{request}");
    let events = answer_until_turn_end(&mut ws, &id, &request, false).await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    assert!(!dir.join("refused.txt").exists());
    assert_eq!(
        last_of(&events, "tool_result")["isError"],
        true,
        "{events:?}"
    );
    // The model heard that the patch was refused.
    let requests = codex.mock.requests();
    let last = requests.last().cloned().unwrap();
    let input = last["input"].to_string();
    assert!(input.contains("custom_tool_call_output"), "{input}");
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn an_unreachable_model_fails_the_turn() {
    let bin = require(codex_bin(), "the pinned codex CLI");
    // A port nobody listens on: Codex retries forever, the adapter gives up.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9);
    let dir = Arc::new(TempDir::new("codex-down"));
    let home = dir.path().join("codex-home");
    let _ = std::fs::create_dir_all(&home);
    let args: Vec<String> = MockOpenAi::codex_args_for(&format!("http://127.0.0.1:{closed}/v1"));
    let config = write_config(dir.path(), &bin, &args, &home);
    let env = vec![(
        "TANDEM_CODEX_UNREACHABLE_MS".to_string(),
        "1500".to_string(),
    )];
    let server = Server::start_in_env(dir, ServerOptions::with_config(&config), &env);
    let mut ws = server.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    let events = ws.turn(&id, "say anything").await;
    let done = last_of(&events, "turn_completed");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        done["error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{done}"
    );

    // A model that answers with an error fails the turn too.
    drop(server);
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_model_error_fails_the_turn() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    let events = ws.turn(&id, "fail").await;
    let done = last_of(&events, "turn_completed");
    assert_eq!(done["status"], "failed", "{done}");
    // Codex words an HTTP 500 its own way; the turn carries its message.
    assert!(!done["error"].as_str().unwrap().is_empty(), "{done}");
    let events = ws.turn(&id, "say fine again").await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
}

/// A stand-in `codex` that records the environment it was given and never answers.
fn silent_codex(dir: &Path) -> (PathBuf, PathBuf) {
    let env_file = dir.join("codex-env.txt");
    let script = dir.join("silent-codex");
    let text = format!(
        "#!/bin/sh\ntr '\\0' '\\n' < /proc/$$/environ > {}\nexec sleep 300\n",
        env_file.display()
    );
    if let Err(e) = std::fs::write(&script, text) {
        panic!("cannot write {}: {e}", script.display());
    }
    let made_executable = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status();
    assert!(made_executable.is_ok_and(|s| s.success()));
    (script, env_file)
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_request_without_answer_times_out_and_the_process_gets_no_tandem_variable() {
    let dir = Arc::new(TempDir::new("codex-silent"));
    let (script, env_file) = silent_codex(dir.path());
    let home = dir.path().join("codex-home");
    let config = write_config(dir.path(), &script, &[], &home);
    let env = vec![
        (
            "TANDEM_CODEX_REQUEST_TIMEOUT_MS".to_string(),
            "1000".to_string(),
        ),
        ("TANDEM_TEST_SECRET".to_string(), "do-not-leak".to_string()),
        ("OTHER_SETTING".to_string(), "inherited".to_string()),
    ];
    let server = Server::start_in_env(dir.clone(), ServerOptions::with_config(&config), &env);
    let mut ws = server.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    let events = ws.turn(&id, "hello?").await;
    let done = last_of(&events, "turn_completed");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        done["error"]
            .as_str()
            .unwrap()
            .contains("did not answer initialize"),
        "{done}"
    );

    let vars = std::fs::read_to_string(&env_file).unwrap();
    let names: Vec<&str> = vars
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(names.contains(&"CODEX_HOME"), "{names:?}");
    // The server's own environment is inherited, tandem's variables are not.
    assert!(vars.contains("OTHER_SETTING=inherited"), "{vars}");
    assert!(!vars.contains("do-not-leak"), "{vars}");
    for name in &names {
        assert!(
            !name.starts_with("TANDEM_"),
            "tandem's {name} reached the vendor's environment"
        );
    }
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn stopping_the_server_leaves_no_codex_process() {
    let codex = start(&[]);
    let home = codex.home.clone();
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({"permissionMode": "bypassPermissions"})).await;
    ws.chat(&id, "shell sleep 43.5").await;
    ws.recv_until(|v| v["kind"] == "tool_call" && v["sessionId"] == json!(id))
        .await;
    ws.ok(json!({"type": "chat.abort", "sessionId": id})).await;
    ws.recv_until(|v| v["kind"] == "background_tasks" && v["sessionId"] == json!(id))
        .await;
    the_app_server(&home).await;
    assert!(
        processes_with_home(&home).len() >= 2,
        "app-server and the command"
    );
    drop(ws);
    let Codex { server, mock, .. } = codex;
    let _dir = server.kill();
    eventually("no process of this Codex home remains", async || {
        processes_with_home(&home).is_empty().then_some(())
    })
    .await;
    drop(mock);
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_background_command_that_ends_by_itself_leaves_the_set() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({"permissionMode": "bypassPermissions"})).await;
    // Runs until the test makes the file it waits for (not for a time the abort below
    // would race), then ends by itself.
    let go = codex.home.join("go");
    ws.chat(
        &id,
        &format!("shell while [ ! -f {} ]; do sleep 0.05; done", go.display()),
    )
    .await;
    ws.recv_until(|v| v["kind"] == "tool_call" && v["sessionId"] == json!(id))
        .await;
    ws.ok(json!({"type": "chat.abort", "sessionId": id})).await;
    let frames = ws
        .recv_until(|v| v["kind"] == "background_tasks" && v["sessionId"] == json!(id))
        .await;
    let tasks = frames.last().cloned().unwrap()["tasks"].clone();
    assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{tasks}");
    // Nobody stops it: when it exits, the set is reported empty.
    std::fs::write(&go, "").unwrap();
    let frames = ws
        .recv_until(|v| v["kind"] == "background_tasks" && v["sessionId"] == json!(id))
        .await;
    let tasks = frames.last().cloned().unwrap()["tasks"].clone();
    assert_eq!(tasks, json!([]));
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn one_app_server_serves_an_owners_sessions_and_routes_by_thread() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let a = codex_session(&mut ws, json!({"title": "a"})).await;
    let b = codex_session(&mut ws, json!({"title": "b"})).await;
    // Both turns run at once; each session must get only its own thread's text.
    ws.chat(&a, "slow 30 20").await;
    ws.chat(&b, "say only for b").await;
    let mut done = std::collections::HashMap::new();
    let mut texts: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    while done.len() < 2 {
        let v = ws.recv().await;
        let sid = v["sessionId"].as_str().unwrap().to_string();
        if v["kind"] == "text_delta" {
            texts
                .entry(sid.clone())
                .or_default()
                .push_str(v["text"].as_str().unwrap());
        }
        if v["kind"] == "turn_completed" {
            assert_eq!(v["status"], "completed", "{v}");
            done.insert(sid, true);
        }
    }
    let expected_a: Vec<String> = (0..30).map(|i| format!("w{i}")).collect();
    assert_eq!(texts.get(&a).cloned().unwrap(), expected_a.join(" "));
    assert_eq!(texts.get(&b).cloned().unwrap(), "only for b");
    the_app_server(&codex.home).await;
    let (_, ia) = codex.get(&format!("/api/v1/sessions/{a}")).await;
    let (_, ib) = codex.get(&format!("/api/v1/sessions/{b}")).await;
    assert_ne!(ia["vendorSessionId"], ib["vendorSessionId"]);
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn an_idle_app_server_is_closed_and_the_next_turn_resumes() {
    let codex = start_tuned(&[], "idle_secs = 1");
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    let events = ws.turn(&id, "say the word is kestrel").await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    let home = codex.home.clone();
    eventually("the idle app-server is closed", async || {
        app_servers(&home).is_empty().then_some(())
    })
    .await;

    let events = ws.turn(&id, "say and again").await;
    assert_eq!(
        last_of(&events, "turn_completed")["status"],
        "completed",
        "{events:?}"
    );
    let last = codex.mock.requests().last().cloned().unwrap();
    assert!(
        last["input"].to_string().contains("the word is kestrel"),
        "resumed: {last}"
    );
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_thread_codex_no_longer_has_starts_anew_with_a_note() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    let events = ws.turn(&id, "say before the loss").await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    let (_, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    let old_thread = info["vendorSessionId"].clone();
    ws.close().await;

    // Codex's own state is lost while the server is down.
    let Codex {
        server,
        mock,
        home,
        config,
        env,
    } = codex;
    let dir = server.kill();
    let _ = std::fs::remove_dir_all(&home);
    if let Err(e) = std::fs::create_dir_all(&home) {
        panic!("cannot create {}: {e}", home.display());
    }
    let codex = Codex {
        server: Server::start_in_env(dir, ServerOptions::with_config(&config), &env),
        mock,
        home,
        config,
        env,
    };
    let mut ws = codex.ws().await;
    let (_, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    ws.subscribe(&id, info["lastSeq"].as_u64().unwrap_or(0))
        .await;
    let events = ws.turn(&id, "say after the loss").await;
    assert_eq!(
        last_of(&events, "turn_completed")["status"],
        "completed",
        "{events:?}"
    );
    let note = last_of(&events, "info");
    assert!(
        note["text"].as_str().unwrap().contains("could not resume"),
        "{note}"
    );
    let (_, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    assert_ne!(
        info["vendorSessionId"], old_thread,
        "a new thread is recorded"
    );
    assert!(info["vendorSessionId"]
        .as_str()
        .is_some_and(|t| !t.is_empty()));
}

/// `session.fork` on Codex: the source's thread is forked before the turn after the
/// anchor's (`thread/fork`), the fork's session resumes that thread, so the model's
/// next request holds the turns up to the anchor and none after; the source stays on
/// its thread with every turn.
#[cfg_attr(not(has_codex), ignore = "needs the pinned codex CLI (.vendor-clis)")]
#[actix_rt::test]
async fn a_fork_continues_a_codex_fork_of_the_turns_up_to_its_anchor() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    for word in ["heron", "walrus", "ferret"] {
        let events = ws.turn(&id, &format!("say remember the word {word}")).await;
        assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    }
    let (_, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    let thread = info["vendorSessionId"].clone();
    let anchor = codex
        .all_events(&id)
        .await
        .iter()
        .find(|e| e["kind"] == "user_message" && e["text"] == "say remember the word walrus")
        .and_then(|e| e["seq"].as_u64())
        .unwrap();
    let forked = ws
        .ok(json!({"type": "session.fork", "sessionId": id, "anchorSeq": anchor}))
        .await;
    assert_eq!(forked["conversation"], "vendor", "{forked}");
    let fork = forked["session"].clone();
    assert!(fork["vendorSessionId"].is_string(), "{fork}");
    assert_ne!(fork["vendorSessionId"], thread);
    let fork = fork["id"].as_str().unwrap().to_string();
    ws.subscribe(&fork, 0).await;
    let events = ws.turn(&fork, "say remember the word otter").await;
    assert_eq!(
        last_of(&events, "turn_completed")["status"],
        "completed",
        "{events:?}"
    );
    let input = last_input(&codex);
    assert!(input.contains("remember the word heron"), "{input}");
    assert!(input.contains("remember the word walrus"), "{input}");
    assert!(input.contains("remember the word otter"), "{input}");
    assert!(!input.contains("ferret"), "{input}");

    // The source is untouched: its next request still holds all three turns.
    ws.turn(&id, "say what were the words").await;
    let input = codex.mock.requests().last().cloned().unwrap()["input"].to_string();
    assert!(
        input.contains("ferret") && !input.contains("otter"),
        "{input}"
    );
    let (_, info) = codex.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["vendorSessionId"], thread);
}

/// Codex's entry in `GET /vendors` once its background check has reported a version.
async fn checked_codex_entry(server: &Server) -> Value {
    eventually("the Codex check to report a version", async || {
        let (status, vendors) = server.get("/api/v1/vendors").await;
        assert_eq!(status, 200);
        let entry = vendors["vendors"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["id"] == "codex").cloned())
            .unwrap_or_else(|| panic!("no codex vendor in {vendors}"));
        entry["version"].is_string().then_some(entry)
    })
    .await
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn the_model_list_survives_a_restart_where_app_server_cannot_list() {
    let codex = start(&[]);
    let listed = eventually("model/list to replace the placeholder models", async || {
        let entry = checked_codex_entry(&codex).await;
        let models = entry["models"].clone();
        let placeholder = models == json!([]) || models == json!(["gpt-5-codex", "gpt-5"]);
        (!placeholder).then_some(entry)
    })
    .await;
    assert!(
        codex.dir.path().join("data/vendor-models.json").is_file(),
        "the list was not kept"
    );

    // The same data directory, but a `codex` whose app-server exits at once: the
    // version still answers, the model list cannot come from it.
    let real = require(codex_bin(), "the pinned codex CLI");
    let wrapper = codex.dir.path().join("codex-without-app-server");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = app-server ] && exit 1; done\nexec {} \"$@\"\n",
        json!(real.display().to_string())
    );
    std::fs::write(&wrapper, script).unwrap();
    let made_executable = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status();
    assert!(made_executable.is_ok_and(|s| s.success()));
    let text = std::fs::read_to_string(&codex.config).unwrap();
    let bin_line = text.lines().find(|l| l.starts_with("bin = ")).unwrap();
    let text = text.replace(
        bin_line,
        &format!("bin = {}", json!(wrapper.display().to_string())),
    );
    std::fs::write(&codex.config, text).unwrap();
    let codex = codex.restart();

    let entry = checked_codex_entry(&codex).await;
    assert_eq!(entry["models"], listed["models"], "{entry}");
    assert_eq!(entry["defaultModel"], listed["defaultModel"], "{entry}");
}

/// A worktree session's port reaches the commands Codex runs for it (the app-server is
/// shared by the owner's sessions, so it goes in the thread's config), added to the
/// user's own shell environment policy rather than replacing it.
#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_worktree_threads_commands_see_its_port() {
    let codex = start(&[]);
    let repo = codex.dir.path().join("proj");
    std::fs::create_dir_all(&repo).unwrap();
    crate::workspaces::git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    crate::workspaces::git(&repo, &["add", "."]);
    crate::workspaces::git(&repo, &["commit", "-q", "-m", "first"]);
    let mut ws = codex.ws().await;
    let reply = ws
        .ok(
            json!({"type": "session.create", "vendor": "codex", "cwd": repo,
                   "workspace": "worktree", "permissionMode": "bypassPermissions"}),
        )
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    let port = reply["session"]["workspace"]["port"].as_u64().unwrap();
    ws.subscribe(&id, 0).await;
    let events = ws
        .turn(&id, "shell echo port=$TANDEM_PORT home=${HOME:+set}")
        .await;
    let result = last_of(&events, "tool_result");
    let output = result["output"]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains(&format!("port={port} home=set")),
        "{result}"
    );
}

/// ChatGPT's usage limit as the real CLI reports it (a 429 `usage_limit_reached`,
/// the rate-limit headers saying when the window resets): the turn ends `limited`
/// with `resetsAt`; with `onLimit: wait` its message is scheduled for then and runs
/// again once the limit lifted.
#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_usage_limit_ends_the_turn_limited_and_wait_sends_it_again_when_it_lifts() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    ws.chat(&id, "limit 600").await;
    let events = ws.events_until_turn_end(&id).await;
    let end = last_of(&events, "turn_completed");
    assert_eq!(end["status"], "limited", "{end}");
    let resets = end["resetsAt"].as_u64().unwrap_or_else(|| panic!("{end}"));
    let from_now = resets.saturating_sub(now_ms());
    assert!((590_000..=601_000).contains(&from_now), "{end}");
    assert!(
        end["error"].as_str().unwrap().contains("usage limit"),
        "{end}"
    );
    // `fail`, the default, leaves it.
    let listed = ws
        .ok(json!({"type": "session.schedules", "sessionId": id}))
        .await;
    assert_eq!(listed["schedules"], json!([]), "{listed}");

    let configured = ws
        .ok(json!({"type": "session.configure", "sessionId": id, "onLimit": "wait"}))
        .await;
    assert_eq!(configured["session"]["onLimit"], "wait", "{configured}");
    ws.chat(&id, "limit 2").await;
    let events = ws.events_until_turn_end(&id).await;
    let end = last_of(&events, "turn_completed");
    assert_eq!(end["status"], "limited", "{end}");
    let resets = end["resetsAt"].as_u64().unwrap_or_else(|| panic!("{end}"));
    let listed = ws
        .ok(json!({"type": "session.schedules", "sessionId": id}))
        .await;
    let schedules = listed["schedules"].as_array().cloned().unwrap_or_default();
    assert_eq!(schedules.len(), 1, "{listed}");
    assert_eq!(schedules[0]["content"], "limit 2");
    assert_eq!(schedules[0]["at"], resets, "{listed}");
    // Once the limit lifted, the message runs again and the model answers it.
    let events = ws.events_until_turn_end(&id).await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    assert_eq!(
        last_of(&events, "user_message")["text"],
        "limit 2",
        "{events:?}"
    );
    assert_eq!(
        last_of(&events, "assistant_message")["text"],
        "Hello after the limit."
    );
    assert!(
        now_ms() + 100 >= resets,
        "sent again only once the limit lifted"
    );
}

/// `onLimit: {handoff: VENDOR}`: the limited conversation goes on in a session of
/// that vendor, as `session.handoff` makes it (its request is the limited message).
#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_usage_limit_hands_the_conversation_to_another_vendor() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({})).await;
    let refused = ws
        .request(json!({"type": "session.configure", "sessionId": id,
            "onLimit": {"handoff": "nobody"}}))
        .await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
    ws.ok(json!({"type": "session.configure", "sessionId": id,
        "onLimit": {"handoff": "scripted"}}))
        .await;
    ws.chat(&id, "limit 600").await;
    let events = ws.events_until_turn_end(&id).await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "limited");
    let created = ws
        .recv_until(|v| v["kind"] == "handoff_created" && v["sessionId"] == json!(id))
        .await;
    let target = created.last().unwrap()["targetSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(created.last().unwrap()["targetVendor"], "scripted");
    let context = eventually("the handoff's context in the new session", async || {
        codex
            .server
            .all_events(&target)
            .await
            .into_iter()
            .find(|e| e["kind"] == "handoff_context")
    })
    .await;
    assert_eq!(context["request"], "limit 600", "{context}");
    assert_eq!(context["sourceSessionId"], id.as_str());
}

/// `GET /external-sessions` as JSON, with `query` (`?…` or empty).
async fn external(server: &Server, query: &str) -> Vec<Value> {
    let (status, body) = server
        .get(&format!("/api/v1/external-sessions{query}"))
        .await;
    assert_eq!(status, 200, "{body}");
    body["sessions"].as_array().cloned().unwrap()
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn codex_rollouts_on_the_machine_are_listed_and_follow_new_turns() {
    let codex = start(&[]);
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({"permissionMode": "bypassPermissions"})).await;
    ws.turn(&id, "say hello from the mock model").await;
    let thread = codex.get(&format!("/api/v1/sessions/{id}")).await.1["vendorSessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // The CLI's rollout for that thread: its prompt, its answer.
    let listed = external(&codex, "").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let s = &listed[0];
    tandem_tests::transcripts::assert_listed(s, "codex", &thread, &id);
    assert_eq!(s["title"], "say hello from the mock model", "{s}");
    assert_eq!(
        (s["messages"].as_u64(), s["skippedLines"].as_u64()),
        (Some(2), Some(0)),
        "{s}"
    );
    assert_eq!(
        s["cwd"],
        codex.get(&format!("/api/v1/sessions/{id}")).await.1["cwd"],
        "{s}"
    );

    // A turn with a tool call later: the rollout grew, and so does the count.
    ws.turn(&id, "shell echo hi").await;
    let again = external(&codex, "").await;
    let after = again[0]["messages"].as_u64().unwrap();
    assert!(after >= 5, "prompt, call and answer added: {}", again[0]);
    assert!(
        again[0]["lastActivity"].as_u64() >= s["lastActivity"].as_u64(),
        "{again:?}"
    );

    // Filters: another vendor, a directory it is not under, the one it is in.
    assert_eq!(
        external(&codex, "?vendor=claude").await,
        Vec::<Value>::new()
    );
    assert_eq!(
        external(&codex, "?cwd=/nonexistent").await,
        Vec::<Value>::new()
    );
    let cwd = s["cwd"].as_str().unwrap().to_string();
    assert_eq!(
        external(&codex, &format!("?vendor=codex&cwd={cwd}"))
            .await
            .len(),
        1
    );

    // A line that is not JSON (a crash mid-write, say) is skipped and counted.
    let rollout = find_rollout(&codex.home.join("sessions")).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&rollout)
        .unwrap();
    std::io::Write::write_all(&mut f, b"{not json\n").unwrap();
    drop(f);
    let skipped = external(&codex, "").await;
    assert_eq!(
        (
            skipped[0]["messages"].as_u64(),
            skipped[0]["skippedLines"].as_u64()
        ),
        (Some(after), Some(1)),
        "{skipped:?}"
    );

    // Archived in tandem, then continued from the machine: the history holds the
    // conversation with its tool call, and the next turn resumes the thread.
    let (status, body) = codex.delete(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{body}");
    let (status, made) = codex
        .post(
            "/api/v1/external-sessions/import",
            &json!({"vendor": "codex", "vendorSessionId": thread}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let new_id = made["id"].as_str().unwrap().to_string();
    assert_eq!(made["vendorSessionId"], thread.as_str(), "{made}");
    let history = codex.all_events(&new_id).await;
    let imported = history.iter().find(|e| e["kind"] == "imported").unwrap();
    assert_eq!(
        (
            imported["messages"].as_u64(),
            imported["skippedLines"].as_u64()
        ),
        (Some(after), Some(1)),
        "{imported}"
    );
    let kinds: Vec<&str> = history.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"tool_call") && kinds.contains(&"tool_result"),
        "{kinds:?}"
    );
    assert!(
        history
            .iter()
            .any(|e| e["kind"] == "user_message" && e["text"] == "say hello from the mock model"),
        "{history:?}"
    );
    ws.subscribe(&new_id, 0).await;
    let events = ws.turn(&new_id, "say once more").await;
    assert_eq!(
        last_of(&events, "turn_completed")["status"],
        "completed",
        "{events:?}"
    );
    let last = codex.mock.requests().last().cloned().unwrap();
    assert!(
        last["input"]
            .to_string()
            .contains("say hello from the mock model"),
        "resumed: {last}"
    );
    // The CLI appended the continued turn to the same rollout: listed with it.
    let relisted = external(&codex, "").await;
    assert_eq!(relisted.len(), 1, "{relisted:?}");
    assert_eq!(
        relisted[0]["messages"].as_u64(),
        Some(after + 2),
        "{relisted:?}"
    );
    assert_eq!(relisted[0]["sessionId"], new_id.as_str(), "{relisted:?}");
}

/// The first `rollout-*.jsonl` under `dir`.
fn find_rollout(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_rollout(&path) {
                return Some(found);
            }
        } else if path.file_name()?.to_str()?.starts_with("rollout-") {
            return Some(path);
        }
    }
    None
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
#[cfg_attr(
    not(has_mcp_everything),
    ignore = "the MCP test server is not installed"
)]
async fn a_declared_mcp_server_reaches_the_model_through_codex() {
    let codex = start_tuned(&[], &crate::mcp_servers::everything_section());
    let mut ws = codex.ws().await;
    let id = codex_session(&mut ws, json!({"permissionMode": "bypassPermissions"})).await;
    let events = ws
        .turn(&id, r#"mcp everything echo {"message":"hi from tandem"}"#)
        .await;
    assert_eq!(
        last_of(&events, "turn_completed")["status"],
        "completed",
        "{events:?}"
    );
    let last = codex.mock.requests().last().cloned().unwrap();
    assert!(
        last["input"].to_string().contains("Echo: hi from tandem"),
        "the tool's result reached the model: {last}"
    );
}

/// Sessions shown in `GET /fleet`'s processes, with their vendors.
async fn fleet_sessions(codex: &Codex) -> Vec<(String, String)> {
    let (status, fleet) = codex.get("/api/v1/fleet").await;
    assert_eq!(status, 200, "{fleet}");
    fleet["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["sessionId"].as_str().unwrap().to_string(),
                p["vendor"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Under `--max-live-processes 1`, the Codex app-server takes the one place: another
/// vendor's turn closes it while idle, and the Codex session's next turn resumes its
/// thread in a new app-server, says so, and the model sees the earlier turn.
#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn an_idle_app_server_makes_room_and_its_thread_resumes() {
    let codex = start_with(
        &[],
        &crate::fleet::fake_vendor_section(),
        &["--max-live-processes", "1"],
    );
    let mut ws = codex.ws().await;
    let c = codex_session(&mut ws, json!({})).await;
    let events = ws.turn(&c, "say remember the word heron").await;
    assert_eq!(last_of(&events, "turn_completed")["status"], "completed");
    let first = the_app_server(&codex.home).await;
    assert_eq!(fleet_sessions(&codex).await, [(c.clone(), "codex".into())]);
    let (_, fleet) = codex.get("/api/v1/fleet").await;
    assert_eq!(fleet["processes"][0]["pid"], first, "{fleet}");

    // Another vendor's turn needs the place: the idle app-server is closed for it.
    let work = codex.home.with_file_name("fake-work");
    std::fs::create_dir_all(&work).unwrap();
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "fake", "cwd": work.display().to_string()}))
        .await;
    let f = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&f, 0).await;
    let events = ws.turn(&f, "say one").await;
    assert_eq!(
        last_of(&events, "turn_completed")["status"],
        "completed",
        "{events:?}"
    );
    assert!(
        !Path::new(&format!("/proc/{first}")).exists(),
        "the app-server {first} still runs"
    );
    assert_eq!(fleet_sessions(&codex).await, [(f.clone(), "fake".into())]);

    // The Codex session's next turn resumes its thread in a new app-server.
    let events = ws.turn(&c, "say what was the word").await;
    assert_eq!(
        last_of(&events, "turn_completed")["status"],
        "completed",
        "{events:?}"
    );
    assert!(
        texts(&events, "info")
            .iter()
            .any(|t| t.starts_with("resumed: its codex app-server")
                && t.contains("at most 1 agent processes")),
        "{events:?}"
    );
    let input = last_input(&codex);
    assert!(input.contains("remember the word heron"), "{input}");
    let second = the_app_server(&codex.home).await;
    assert_ne!(second, first);
    eventually("one process: the new app-server", async || {
        (fleet_sessions(&codex).await == [(c.clone(), "codex".to_string())]).then_some(())
    })
    .await;
}
