//! What is Claude Code's own, against the real `claude` binary (pinned in
//! `.vendor-clis`) and a mock Messages API: commands and thinking, model and mode
//! changes, a lost session, background tasks, the running view, idle processes,
//! forks, limits, transcripts, MCP servers. What every vendor does (turns, approvals,
//! resume, faults, images, a Driver) is in `conformance`, whose `vendors::claude`
//! holds the setup used here.
//!
//! Each test gets its own server, mock and private HOME for the CLI.

use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::events::{of_kind, status, texts};
use tandem_tests::mock_anthropic::{claude_config, MockAnthropic};
use tandem_tests::procs::is_alive;
use tandem_tests::vendor_clis::{claude_bin, require};
use tandem_tests::{eventually, ConfiguredServer, TempDir, WsClient};

use crate::conformance::vendors::claude::{fake_claude, World};

/// The CLI's slash commands and version, and thinking streamed as `thinking`.
/// (Deltas and usage: `conformance::turns`.)
#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn commands_version_and_thinking() {
    let w = World::start("claude-text");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    let events = ws.turn(&id, "say hello from claude").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    // The CLI's slash commands (its `init` line's) are the session's.
    let listed = ws
        .ok(json!({"type": "session.commands", "sessionId": id}))
        .await;
    let names: Vec<&str> = listed["commands"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(names.contains(&"compact"), "{listed}");
    let version = eventually("the CLI version", || async {
        let (_, body) = w.server().get("/api/v1/vendors").await;
        let claude = body["vendors"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["id"] == "claude").cloned())
            .unwrap();
        assert_eq!(claude["installed"], true, "{claude}");
        claude["version"].as_str().map(str::to_string)
    })
    .await;
    assert!(version.contains("Claude Code"), "{version}");
    // Thinking streams as `thinking` events, once.
    let events = ws.turn(&id, "think pondering deeply").await;
    assert_eq!(texts(&events, "thinking").concat(), "pondering deeply");
    assert_eq!(texts(&events, "assistant_message"), ["thought"]);
}

/// Every stored event of the turn that `end` (frames up to its `turn_completed`)
/// finished.
async fn turn_events(w: &World, id: &str, end: &[Value]) -> Vec<Value> {
    let turn = end.last().map(|e| e["turnId"].clone()).unwrap();
    w.server()
        .all_events(id)
        .await
        .into_iter()
        .filter(|e| e["turnId"] == turn)
        .collect()
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn model_and_mode_changes_reach_the_live_process() {
    let w = World::start("claude-configure");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    ws.turn(&id, "say one").await;
    let pids = w.registry_pids();
    ws.ok(
        json!({"type": "session.configure", "sessionId": id, "model": "claude-haiku-4-5",
                 "permissionMode": "acceptEdits"}),
    )
    .await;
    // acceptEdits lets a file write in the working directory through without asking.
    let events = ws.turn(&id, "bash touch edited.txt").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        of_kind(&events, "permission_request").is_empty(),
        "{events:?}"
    );
    let last = w
        .mock
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.user_text == "bash touch edited.txt")
        .map(|r| r.model)
        .unwrap();
    assert_eq!(last, "claude-haiku-4-5");
    assert_eq!(w.registry_pids(), pids, "no restart for model or mode");
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn a_lost_claude_session_continues_in_a_new_one() {
    let mut w = World::start("claude-lost");
    let id = {
        let mut ws = w.server().ws().await;
        let id = w.session(&mut ws, "default").await;
        ws.subscribe(&id, 0).await;
        ws.turn(&id, "say first").await;
        id
    };
    let before = w.info(&id).await["vendorSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    w.restart();
    // The transcript is gone (deleted by hand, another machine's HOME, ...).
    let projects = w.home.join(".claude").join("projects");
    for project in std::fs::read_dir(&projects).into_iter().flatten().flatten() {
        let _ = std::fs::remove_file(project.path().join(format!("{before}.jsonl")));
    }
    let mut ws = w.server().ws().await;
    let info = w.info(&id).await;
    ws.subscribe(&id, info["lastSeq"].as_u64().unwrap_or(0))
        .await;
    let events = ws.turn(&id, "say second").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        texts(&events, "info")
            .iter()
            .any(|t| t.contains("could not resume")),
        "{events:?}"
    );
    assert_eq!(texts(&events, "assistant_message"), ["second"]);
    let after = w.info(&id).await["vendorSessionId"].clone();
    assert!(
        after.is_string() && after != json!(before),
        "a new Claude session: {after}"
    );
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn stopping_the_server_leaves_no_cli_behind() {
    let mut w = World::start("claude-stop");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "hold").await;
    ws.recv_until(|v| v["kind"] == "text_delta").await;
    let pids = w.registry_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    ws.close().await;
    w.server.terminate();
    // Left alone, this CLI would wait for the held reply for two minutes.
    let pid = pids[0];
    eventually("the CLI to exit with the server", || async {
        (!is_alive(pid)).then_some(())
    })
    .await;
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn a_background_task_outlives_its_turn_until_stopped() {
    let w = World::start("claude-background");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "bypassPermissions").await;
    ws.subscribe(&id, 0).await;
    let events = ws.turn(&id, "bgbash sleep 120").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let tasks = {
        let all = w.server().all_events(&id).await;
        of_kind(&all, "background_tasks")
            .last()
            .map(|e| e["tasks"].clone())
            .unwrap()
    };
    assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{tasks}");
    assert_eq!(tasks[0]["taskType"], "shell");
    let task_id = tasks[0]["taskId"].as_str().unwrap().to_string();

    w.idle(&id).await;
    let running = w.running().await;
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0]["sessionId"], json!(id));
    assert_eq!(running[0]["background"], true);
    assert_eq!(running[0]["canInterrupt"], false);
    assert_eq!(running[0]["startedAt"], tasks[0]["startedAt"]);

    // A queued message waits for the background work.
    let queued = ws
        .ok(
            json!({"type": "chat.send", "sessionId": id, "content": "say after the task",
                   "queue": true}),
        )
        .await;
    assert!(queued.to_string().contains("queued"), "{queued}");
    ws.ok(json!({"type": "chat.stop-task", "sessionId": id, "taskId": task_id}))
        .await;
    let frames = ws
        .recv_until(|v| v["kind"] == "turn_completed" && v["sessionId"] == json!(id))
        .await;
    let emptied = frames
        .iter()
        .position(|v| v["kind"] == "background_tasks" && v["tasks"] == json!([]));
    let started = frames.iter().position(|v| v["kind"] == "turn_started");
    assert!(
        emptied.is_some() && started.is_some() && emptied < started,
        "the queued turn starts after the task is gone: {frames:?}"
    );
    assert_eq!(
        texts(&frames, "assistant_message")
            .last()
            .map(String::as_str),
        Some("after the task")
    );
    let unknown = ws
        .request(json!({"type": "chat.stop-task", "sessionId": id, "taskId": "nope"}))
        .await;
    assert_eq!(unknown["code"], "NO_SUCH_TASK", "{unknown}");
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn what_claude_says_after_a_task_ends_stays_out_of_the_next_turn() {
    let w = World::start("claude-notified");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "bypassPermissions").await;
    ws.subscribe(&id, 0).await;
    // The task runs until the test makes the file it waits for (not for a second the
    // queued message below would race).
    let go = w.home.join("go");
    let events = ws
        .turn(
            &id,
            &format!(
                "bgbash while [ ! -f {} ]; do sleep 0.05; done",
                go.display()
            ),
        )
        .await;
    assert_eq!(status(&events), "completed", "{events:?}");
    // Queued behind the task: sent the moment the task ends, which is also when the
    // CLI starts a turn of its own to tell the model about it.
    let queued = ws
        .ok(
            json!({"type": "chat.send", "sessionId": id, "content": "say queued reply",
                 "queue": true}),
        )
        .await;
    assert!(queued.to_string().contains("queued"), "{queued}");
    std::fs::write(&go, "").unwrap();
    let end = ws
        .recv_until(|v| v["kind"] == "turn_completed" && v["sessionId"] == json!(id))
        .await;
    let queued = turn_events(&w, &id, &end).await;
    assert_eq!(status(&queued), "completed", "{queued:?}");
    assert_eq!(texts(&queued, "assistant_message"), ["queued reply"]);
    // The CLI's own turn was recorded outside any turn.
    let notice = eventually("the CLI's own reply", || async {
        let all = w.server().all_events(&id).await;
        all.iter()
            .find(|e| {
                e["kind"] == "assistant_message"
                    && e.get("turnId").is_none()
                    && e["text"].as_str().is_some_and(|t| t.starts_with("result:"))
            })
            .cloned()
    })
    .await;
    assert!(notice["text"].is_string());
}

/// A session with a Claude session id (after one real turn) and that id.
async fn session_with_claude_id(w: &World, ws: &mut WsClient) -> (String, String) {
    let id = w.session(ws, "default").await;
    ws.subscribe(&id, 0).await;
    let events = ws.turn(&id, "say ready").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    w.idle(&id).await;
    let claude = w.info(&id).await["vendorSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!claude.is_empty());
    (id, claude)
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn running_view_lists_an_outside_claude_process() {
    let w = World::start("claude-outside");
    let mut ws = w.server().ws().await;
    let (id, claude) = session_with_claude_id(&w, &mut ws).await;
    // Our own idle CLI has a registry file saying busy: it is not an outside process.
    assert!(!w.registry_pids().is_empty());
    assert_eq!(w.running().await, Vec::<Value>::new());
    let me = std::process::id();
    w.write_registry(
        &format!("{me}.json"),
        &json!({"pid": me, "sessionId": claude, "status": "busy", "entrypoint": "cli",
                "startedAt": 4000})
        .to_string(),
    );
    let running = w.running().await;
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0]["sessionId"], json!(id));
    assert_eq!(running[0]["startedAt"], 4000);
    assert_eq!(running[0]["canInterrupt"], false);
    assert!(running[0]["statusText"].is_string());
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn running_view_skips_dead_and_idle_processes() {
    let w = World::start("claude-stale");
    let mut ws = w.server().ws().await;
    let (_, claude) = session_with_claude_id(&w, &mut ws).await;
    let me = std::process::id();
    w.write_registry(
        "4194302.json",
        &json!({"pid": 4194302, "sessionId": claude, "status": "busy", "startedAt": 1000})
            .to_string(),
    );
    w.write_registry(
        &format!("{me}.json"),
        &json!({"pid": me, "sessionId": claude, "status": "idle", "startedAt": 2000}).to_string(),
    );
    assert_eq!(w.running().await, Vec::<Value>::new());
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn running_view_prefers_our_own_turn() {
    let w = World::start("claude-both");
    let mut ws = w.server().ws().await;
    let (id, claude) = session_with_claude_id(&w, &mut ws).await;
    let me = std::process::id();
    w.write_registry(
        &format!("{me}.json"),
        &json!({"pid": me, "sessionId": claude, "status": "busy", "startedAt": 3000}).to_string(),
    );
    ws.chat(&id, "hold").await;
    ws.recv_until(|v| v["kind"] == "text_delta").await;
    let running = w.running().await;
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0]["canInterrupt"], true, "our turn's entry wins");
    assert!(running[0].get("statusText").is_none());
    w.mock.release();
    let events = ws.events_until_turn_end(&id).await;
    assert_eq!(status(&events), "completed");
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn running_view_survives_a_half_written_registry_file() {
    let w = World::start("claude-broken");
    let mut ws = w.server().ws().await;
    let (id, claude) = session_with_claude_id(&w, &mut ws).await;
    let me = std::process::id();
    w.write_registry("broken.json", "{\"pid\":");
    w.write_registry(
        &format!("{me}.json"),
        &json!({"pid": me, "sessionId": claude, "status": "busy", "startedAt": 5000}).to_string(),
    );
    let running = w.running().await;
    let ids: Vec<&Value> = running.iter().map(|r| &r["sessionId"]).collect();
    assert_eq!(ids, [&json!(id)]);
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn running_view_lists_a_turn_in_flight() {
    let w = World::start("claude-inflight");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "hold").await;
    ws.recv_until(|v| v["kind"] == "text_delta").await;
    let running = w.running().await;
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0]["sessionId"], json!(id));
    assert_eq!(running[0]["vendor"], "claude");
    assert_eq!(running[0]["canInterrupt"], true);
    w.mock.release();
    let events = ws.events_until_turn_end(&id).await;
    assert_eq!(status(&events), "completed");
    assert_eq!(texts(&events, "assistant_message"), ["holding  released"]);
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn an_idle_process_is_closed_and_the_next_turn_resumes() {
    let w = World::start_idle("claude-idle", 1);
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    ws.turn(&id, "say the password is swordfish").await;
    let first = w.registry_pids();
    assert_eq!(first.len(), 1);
    eventually("the idle process to close", || async {
        (!is_alive(first[0])).then_some(())
    })
    .await;
    let events = ws.turn(&id, "say what was it").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let body = w
        .mock
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.user_text == "say what was it")
        .map(|r| r.body.to_string())
        .unwrap();
    assert!(body.contains("swordfish"), "resumed the conversation");
    assert_ne!(w.registry_pids(), first, "a new process");
}

/// Under `--max-live-processes 1`, a second session's turn closes the first's idle
/// `claude`; the first's next turn starts another, which resumes its conversation.
#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn a_full_fleet_closes_an_idle_claude_and_its_session_resumes_it() {
    let w = World::start_with(
        "claude-fleet",
        600,
        vec!["--max-live-processes".into(), "1".into()],
    );
    let mut ws = w.server().ws().await;
    let a = w.session(&mut ws, "default").await;
    ws.subscribe(&a, 0).await;
    let events = ws.turn(&a, "say the password is swordfish").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let first = w.registry_pids();
    assert_eq!(first.len(), 1, "{first:?}");
    let b = w.session(&mut ws, "default").await;
    ws.subscribe(&b, 0).await;
    let events = ws.turn(&b, "say hello from b").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        !is_alive(first[0]),
        "A's claude was closed before B's started"
    );
    let events = ws.turn(&a, "say what was it").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        texts(&events, "info")
            .iter()
            .any(|t| t.starts_with("resumed: Claude Code was closed")),
        "{events:?}"
    );
    let body = w
        .mock
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.user_text == "say what was it")
        .map(|r| r.body.to_string())
        .unwrap();
    assert!(body.contains("swordfish"), "resumed the conversation");
    let (_, fleet) = w.server().get("/api/v1/fleet").await;
    let sessions: Vec<&Value> = fleet["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["sessionId"])
        .collect();
    assert_eq!(sessions, [&json!(a)], "{fleet}");
}

/// A stand-in `claude` that dies mid-turn after complaining on stderr.
#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn a_cli_exiting_mid_turn_fails_the_turn_with_its_stderr() {
    let (_server, mut ws, id) = fake_claude(
        r#"#!/bin/sh
read line
echo '{"type":"system","subtype":"init","session_id":"fake-dying"}'
echo 'the model backend exploded' >&2
exit 3
"#,
    )
    .await;
    let events = ws.turn(&id, "anything").await;
    let end = events.last().cloned().unwrap();
    assert_eq!(end["status"], "failed", "{end}");
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains("exit code 3") && error.contains("the model backend exploded"),
        "{end}"
    );
}

/// `session.fork` on Claude Code: the fork's first process resumes the source's
/// Claude session at the anchor turn's newest message and forks it, so the model's
/// next request holds the turns up to the anchor and none after; the source stays on
/// its own Claude session and still has every turn.
#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn a_fork_continues_a_claude_fork_of_the_turns_up_to_its_anchor() {
    let w = World::start("claude-fork");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    for word in ["heron", "walrus", "ferret"] {
        let events = ws.turn(&id, &format!("say remember the word {word}")).await;
        assert_eq!(status(&events), "completed", "{events:?}");
    }
    let source_claude = w.info(&id).await["vendorSessionId"].clone();
    let anchor = w
        .server()
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
    let fork = forked["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&fork, 0).await;
    let events = ws.turn(&fork, "say remember the word otter").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let request = w
        .mock
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.user_text == "say remember the word otter")
        .map(|r| r.body.to_string())
        .unwrap();
    assert!(request.contains("remember the word heron"), "{request}");
    assert!(request.contains("remember the word walrus"), "{request}");
    assert!(!request.contains("ferret"), "{request}");
    let fork_claude = eventually("the fork's Claude session id", || async {
        let v = w.info(&fork).await["vendorSessionId"].clone();
        (v.is_string() && v != source_claude).then_some(v)
    })
    .await;
    assert_ne!(fork_claude, source_claude);

    // The source is untouched: its next request still holds all three turns.
    let events = ws.turn(&id, "say what were the words").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let request = w
        .mock
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.user_text == "say what were the words")
        .map(|r| r.body.to_string())
        .unwrap();
    assert!(
        request.contains("ferret") && !request.contains("otter"),
        "{request}"
    );
    assert_eq!(w.info(&id).await["vendorSessionId"], source_claude);
}

/// The API's rate limit as the real CLI reports it (a 429 `rate_limit_error`, not
/// retried with `CLAUDE_CODE_MAX_RETRIES=0`): the turn ends `limited`, with the
/// CLI's words; with `onLimit: wait` and no reset time said, the message is
/// scheduled 15 minutes ahead.
#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn a_rate_limit_ends_the_turn_limited() {
    let bin = require(claude_bin(), "the claude CLI");
    let mock = MockAnthropic::start();
    let dir = Arc::new(TempDir::new("claude-limit"));
    let home = dir.path().join("home");
    let config = claude_config(dir.path(), &bin, &mock, &home, 600);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("env = { ", "env = { CLAUDE_CODE_MAX_RETRIES = \"0\", "),
    )
    .unwrap();
    let w = World {
        server: ConfiguredServer::start(dir, config),
        mock,
        home,
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    ws.ok(json!({"type": "session.configure", "sessionId": id, "onLimit": "wait"}))
        .await;
    let before = tandem_actors::clock::now_ms();
    let events = ws.turn(&id, "limit").await;
    let end = events.last().cloned().unwrap();
    assert_eq!(end["status"], "limited", "{end}");
    assert!(
        end["error"].as_str().unwrap().contains("429"),
        "the CLI's words: {end}"
    );
    assert!(end.get("resetsAt").is_none(), "{end}");
    let listed = ws
        .ok(json!({"type": "session.schedules", "sessionId": id}))
        .await;
    let schedules = listed["schedules"].as_array().cloned().unwrap_or_default();
    assert_eq!(schedules.len(), 1, "{listed}");
    assert_eq!(schedules[0]["content"], "limit");
    let ahead = schedules[0]["at"].as_u64().unwrap().saturating_sub(before);
    assert!((890_000..=910_000).contains(&ahead), "{listed}");
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn claude_transcripts_on_the_machine_are_listed_and_follow_new_turns() {
    let w = World::start("claude-external");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.subscribe(&id, 0).await;
    ws.turn(&id, "say first").await;
    let vendor_id = w.info(&id).await["vendorSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let list = || async {
        let (status, body) = w.server().get("/api/v1/external-sessions").await;
        assert_eq!(status, 200, "{body}");
        body["sessions"].as_array().cloned().unwrap()
    };

    // The CLI's transcript of that session: the prompt and the answer.
    let listed = list().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let s = &listed[0];
    tandem_tests::transcripts::assert_listed(s, "claude", &vendor_id, &id);
    assert_eq!(
        (s["title"].as_str(), s["messages"].as_u64()),
        (Some("say first"), Some(2)),
        "{s}"
    );
    assert_eq!(s["cwd"], w.info(&id).await["cwd"], "{s}");

    // The CLI appends the next turn to it: listed again with the new count.
    ws.turn(&id, "say second").await;
    let again = list().await;
    assert_eq!(again[0]["messages"], 4, "{again:?}");
    let (status, body) = w
        .server()
        .get("/api/v1/external-sessions?vendor=codex")
        .await;
    assert_eq!(
        (status, body["sessions"].clone()),
        (200, json!([])),
        "{body}"
    );

    // Once the tandem session is archived, the CLI's session is continued in a new
    // one: its history holds the conversation, its next turn resumes the CLI's.
    let (status, body) = w.server().delete(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(list().await[0]["sessionId"].is_null());
    let import = json!({"vendor": "claude", "vendorSessionId": vendor_id});
    let (status, made) = w
        .server()
        .post("/api/v1/external-sessions/import", &import)
        .await;
    assert_eq!(status, 201, "{made}");
    let new_id = made["id"].as_str().unwrap().to_string();
    assert_eq!(
        (
            made["vendor"].as_str(),
            made["vendorSessionId"].as_str(),
            made["title"].as_str()
        ),
        (Some("claude"), Some(vendor_id.as_str()), Some("say first")),
        "{made}"
    );
    let history: Vec<Value> = w
        .server()
        .all_events(&new_id)
        .await
        .into_iter()
        .filter(|e| e["kind"] != "session_configured")
        .collect();
    assert_eq!(history[0]["kind"], "imported", "{history:?}");
    assert_eq!(
        (
            history[0]["messages"].as_u64(),
            history[0]["shown"].as_u64()
        ),
        (Some(4), Some(4))
    );
    let said: Vec<(&str, &str)> = history[1..]
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap(),
                e["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("user_message", "say first"),
            ("assistant_message", "first"),
            ("user_message", "say second"),
            ("assistant_message", "second"),
        ]
    );
    // Importing it again answers the same session.
    let (status, again) = w
        .server()
        .post("/api/v1/external-sessions/import", &import)
        .await;
    assert_eq!(
        (status, again["id"].as_str()),
        (201, Some(new_id.as_str())),
        "{again}"
    );
    assert_eq!(list().await[0]["sessionId"], new_id.as_str());
    // Its next turn goes to the CLI's session: the model gets the earlier turns.
    ws.subscribe(&new_id, 0).await;
    let events = ws.turn(&new_id, "say third").await;
    assert_eq!(
        tandem_tests::events::status(&events),
        "completed",
        "{events:?}"
    );
    let request = w
        .mock
        .requests()
        .into_iter()
        .find(|r| r.user_text == "say third")
        .map(|r| r.body.to_string())
        .unwrap();
    assert!(
        request.contains("say first") && request.contains("say second"),
        "{request}"
    );
    assert_eq!(w.info(&new_id).await["vendorSessionId"], vendor_id.as_str());
    // The CLI appended the continued turn to the same transcript: listed with it.
    let after = list().await;
    assert_eq!(
        (after.len(), after[0]["messages"].as_u64()),
        (1, Some(6)),
        "{after:?}"
    );
    // An unknown one is 404; a vendor this server lacks finds nothing either.
    let (status, body) = w
        .server()
        .post(
            "/api/v1/external-sessions/import",
            &json!({"vendor": "claude", "vendorSessionId": "nope"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
#[cfg_attr(
    not(has_mcp_everything),
    ignore = "the MCP test server is not installed"
)]
async fn a_declared_mcp_server_reaches_the_model_through_claude() {
    let bin = require(claude_bin(), "the claude CLI");
    let mock = MockAnthropic::start();
    let dir = Arc::new(TempDir::new("claude-mcp"));
    let home = dir.path().join("home");
    let config = claude_config(dir.path(), &bin, &mock, &home, 600);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text + &crate::mcp_servers::everything_section()).unwrap();
    let w = World {
        server: ConfiguredServer::start(dir, config),
        mock,
        home,
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "bypassPermissions").await;
    ws.subscribe(&id, 0).await;
    let events = ws
        .turn(
            &id,
            r#"tool mcp__everything__echo {"message":"hi from tandem"}"#,
        )
        .await;
    assert_eq!(
        tandem_tests::events::status(&events),
        "completed",
        "{events:?}"
    );
    let call = of_kind(&events, "tool_call")
        .into_iter()
        .find(|e| e["name"] == "mcp__everything__echo")
        .unwrap_or_else(|| panic!("no call of the echo tool: {events:?}"));
    assert_eq!(call["input"]["message"], "hi from tandem", "{call}");
    // The tool's answer went back to the model, whose next reply quotes it.
    assert!(
        texts(&events, "assistant_message")
            .iter()
            .any(|t| t.contains("Echo: hi from tandem")),
        "{events:?}"
    );
    // The MCP config (tandem's token, the server's env values) reached the CLI in a
    // file, never in its arguments, which every process of the machine may read.
    // (This test's CLIs only, working under its directory: other tests' agents run
    // beside it.)
    let ours = w.home.parent().unwrap().canonicalize().unwrap();
    let cmdlines: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&ours))
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("--mcp-config"))
        .collect();
    assert!(!cmdlines.is_empty(), "the CLI runs with --mcp-config");
    for c in &cmdlines {
        assert!(
            !c.contains("s3cret-value") && !c.contains("Bearer") && c.contains("mcp.json"),
            "{c}"
        );
    }
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
#[cfg_attr(
    not(has_mcp_everything),
    ignore = "the MCP test server is not installed"
)]
async fn a_session_gets_the_mcp_servers_it_chose_and_no_others() {
    let w = World::start("claude-mcp-choice");
    let js = tandem_tests::vendor_clis::mcp_everything_path()
        .display()
        .to_string();
    // One the user adds, started confined by the CLI like its agent.
    let (added, body) = w
        .server()
        .post(
            "/api/v1/mcp-servers",
            &json!({"name": "mine", "command": "node", "args": [js, "stdio"]}),
        )
        .await;
    assert_eq!(added, 201, "{body}");
    let mut ws = w.server().ws().await;
    let create = |choice: Value| {
        json!({"type": "session.create", "vendor": "claude", "title": "mcp choice",
               "permissionMode": "bypassPermissions", "mcpServers": choice})
    };
    let echo =
        |server: &str| format!(r#"tool mcp__{server}__echo {{"message":"hi from {server}"}}"#);
    let echoed = |events: &[Value], server: &str| {
        texts(events, "assistant_message")
            .iter()
            .any(|t| t.contains(&format!("Echo: hi from {server}")))
    };

    // An entry of the session's own, and no other.
    let reply = ws
        .ok(create(
            json!([{"name": "inline", "command": "node", "args": [js, "stdio"]}]),
        ))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    let events = ws.turn(&id, &echo("inline")).await;
    assert!(echoed(&events, "inline"), "{events:?}");
    let tools = w.mock.requests().last().unwrap().body["tools"].to_string();
    assert!(
        tools.contains("mcp__inline__echo") && !tools.contains("mcp__mine__"),
        "{tools}"
    );

    // None at all: tandem's own tools only.
    let reply = ws.ok(create(json!([]))).await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    let events = ws.turn(&id, "hello").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let tools = w.mock.requests().last().unwrap().body["tools"].to_string();
    assert!(
        tools.contains("mcp__tandem__") && !tools.contains("mcp__mine__"),
        "{tools}"
    );

    // No choice: every server the owner may use, the added one among them.
    let id = w.session(&mut ws, "bypassPermissions").await;
    ws.subscribe(&id, 0).await;
    let events = ws.turn(&id, &echo("mine")).await;
    assert!(echoed(&events, "mine"), "{events:?}");
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
#[cfg_attr(
    not(has_mcp_everything),
    ignore = "the MCP test server is not installed"
)]
async fn an_editors_mcp_servers_reach_claude_through_tandem_acp() {
    use crate::acp_agent::{answer, prompt, Acp};
    let w = World::start("claude-acp-mcp");
    // Where sessions work by default.
    let mut ws = w.server().ws().await;
    let probe = w.session(&mut ws, "default").await;
    let (_, info) = w.server().get(&format!("/api/v1/sessions/{probe}")).await;
    let cwd = info["cwd"].as_str().unwrap().to_string();

    let js = tandem_tests::vendor_clis::mcp_everything_path()
        .display()
        .to_string();
    let mut acp = Acp::start(&w.server().base, "no-token-needed");
    acp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd,
            "mcpServers": [{"name": "Editor Everything", "command": "node", "args": [js, "stdio"],
                            "env": [{"name": "EDITOR_TOKEN", "value": "s3cret"}]}]}})
        .to_string(),
    );
    let (answers, _) = acp.answers(&[json!(1), json!(2)]);
    assert_eq!(
        answer(&answers, &json!(1))["result"]["agentCapabilities"]["mcpCapabilities"]["http"],
        true
    );
    let sid = answer(&answers, &json!(2))["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {answers:?}"))
        .to_string();
    let (_, info) = w.server().get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["mcpServers"], json!(["Editor-Everything"]), "{info}");
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_config_option",
            "params": {"sessionId": sid, "configId": "vendor", "value": "claude"}})
        .to_string(),
    );
    let (answers, _) = acp.answers(&[json!(3)]);
    assert!(
        answer(&answers, &json!(3)).get("result").is_some(),
        "{answers:?}"
    );
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "session/set_mode",
            "params": {"sessionId": sid, "modeId": "bypassPermissions"}})
        .to_string(),
    );
    let (answers, _) = acp.answers(&[json!(4)]);
    assert!(
        answer(&answers, &json!(4)).get("result").is_some(),
        "{answers:?}"
    );
    let (done, said) = prompt(
        &mut acp,
        5,
        &sid,
        r#"tool mcp__Editor-Everything__echo {"message":"hi from the editor"}"#,
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(said.contains("Echo: hi from the editor"), "{said}");
}
