//! The basic turn flow over WebSocket and REST.

use serde_json::{json, Value};
use tandem_tests::Server;

use crate::{assert_contiguous, kinds};

#[actix_rt::test]
async fn create_send_stream_complete() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    let ack = ws.recv().await;
    assert_eq!(ack["kind"], "chat_subscribed");
    assert_eq!(ack["sessionId"], sid.as_str());
    assert_eq!(ack["status"], "idle");
    assert_eq!(ack["lastSeq"], 0);

    let reply = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": "hello there\n/stream 5"}))
        .await;
    assert_eq!(reply["turnId"], "turn_1");
    let events = ws.events_until_turn_end(&sid).await;
    assert_contiguous(&events, 1);
    let mut expected = vec![
        "turn_started",
        "user_message",
        "text_delta",
        "text_delta",
        "text_delta",
        "assistant_message",
    ];
    expected.extend(["text_delta"; 5]);
    expected.extend(["assistant_message", "turn_completed"]);
    assert_eq!(kinds(&events), expected);
    assert_eq!(events[1]["text"], "hello there\n/stream 5");
    assert_eq!(events[5]["text"], "hello there");
    assert_eq!(events[6]["text"], "chunk 0 ");
    assert_eq!(
        events[11]["text"],
        "chunk 0 chunk 1 chunk 2 chunk 3 chunk 4 "
    );
    let last = events.last().cloned().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["turnId"], "turn_1");
    assert!(events.iter().all(|e| e["turnId"] == "turn_1"));

    // REST agrees with what was streamed, event for event.
    let stored = server.all_events(&sid).await;
    assert_eq!(stored, events);
    let (status, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200);
    assert_eq!(info["status"], "idle");
    assert_eq!(info["turnCount"], 1);
    assert_eq!(info["lastSeq"], events.len() as u64);

    // A second turn continues the sequence.
    ws.chat(&sid, "again").await;
    let second = ws.events_until_turn_end(&sid).await;
    assert_contiguous(&second, events.len() as u64 + 1);
    assert!(second.iter().all(|e| e["turnId"] == "turn_2"));
}

#[actix_rt::test]
async fn second_send_during_a_turn_is_refused_then_queue_runs_after() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/hold first\ndone").await;
    let refused = ws
        .request(json!({"type": "chat.send", "sessionId": sid, "content": "too soon"}))
        .await;
    assert_eq!(refused["kind"], "protocol_error");
    assert_eq!(refused["code"], "RUN_IN_PROGRESS");
    assert_eq!(refused["sessionId"], sid.as_str());

    let queued = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": "later", "queue": true}))
        .await;
    assert_eq!(queued["queued"], true);
    server.release("first").await;
    // The queued message runs as turn 2 right after turn 1 completes.
    let first = ws.events_until_turn_end(&sid).await;
    assert_eq!(
        first.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
    let second = ws.events_until_turn_end(&sid).await;
    assert_eq!(second[0]["turnId"], "turn_2");
    assert_eq!(second[1]["text"], "later");
    // REST refuses the same way.
    ws.chat(&sid, "/hold never").await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": "x"}),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["error"]["code"], "RUN_IN_PROGRESS");
}

#[actix_rt::test]
async fn interrupt_mid_stream_keeps_partial_text() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/stream 3\n/stream 50000000").await;
    // Wait until the long stream is under way, then interrupt.
    ws.recv_until(|v| v["kind"] == "text_delta" && v["text"] == "chunk 100 ")
        .await;
    let started = std::time::Instant::now();
    ws.ok(json!({"type": "chat.abort", "sessionId": sid})).await;
    let rest = ws.events_until_turn_end(&sid).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "interrupt took {:?}",
        started.elapsed()
    );
    let end = rest.last().cloned().unwrap();
    assert_eq!(end["kind"], "turn_completed");
    assert_eq!(end["status"], "interrupted");
    // The partial stream is kept as an assistant message right before the end.
    let partial = &rest[rest.len() - 2];
    assert_eq!(partial["kind"], "assistant_message");
    let text = partial["text"].as_str().unwrap();
    assert!(
        text.starts_with("chunk 0 chunk 1 "),
        "partial text: {}",
        &text[..40.min(text.len())]
    );
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["status"], "interrupted");

    // Nothing to interrupt now.
    let none = ws
        .request(json!({"type": "chat.abort", "sessionId": sid}))
        .await;
    assert_eq!(none["code"], "NO_ACTIVE_RUN");
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{sid}/interrupt"), &json!({}))
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["error"]["code"], "NO_ACTIVE_RUN");
}

#[actix_rt::test]
async fn interrupt_ends_a_sleep_at_once_over_rest() {
    let server = Server::start();
    let (status, session) = server
        .post("/api/v1/sessions", &json!({"title": "rest"}))
        .await;
    assert_eq!(status, 201);
    let sid = session["id"].as_str().unwrap().to_string();
    // The `/sleep` step itself is the subject here (a hold's interrupt is tested in
    // holds.rs): a minute's sleep that the interrupt must end at once, so the turn
    // surely still runs when the test acts.
    let (status, accepted) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": "/sleep 60000"}),
        )
        .await;
    assert_eq!(status, 202);
    assert_eq!(accepted["turnId"], "turn_1");
    let (_, running) = server.get("/api/v1/sessions/running").await;
    assert_eq!(running["sessions"][0]["sessionId"], sid.as_str());
    assert_eq!(running["sessions"][0]["canInterrupt"], true);
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(running["sessions"][0]["startedAt"], info["turnStartedAt"]);
    assert!(info["turnStartedAt"]
        .as_u64()
        .is_some_and(|t| t >= session["createdAt"].as_u64().unwrap_or(0)));
    let interrupted = std::time::Instant::now();
    let (status, _) = server
        .post(&format!("/api/v1/sessions/{sid}/interrupt"), &json!({}))
        .await;
    assert_eq!(status, 202);
    let mut ws = server.ws().await;
    ws.subscribe(&sid, 0).await;
    let events = ws.events_until_turn_end(&sid).await;
    assert!(
        interrupted.elapsed() < std::time::Duration::from_secs(20),
        "the interrupt took {:?}",
        interrupted.elapsed()
    );
    let end = events.last().cloned().unwrap();
    assert_eq!(end["status"], "interrupted");
    // The agent confirmed the interrupt itself: the session's fallback (which says
    // why it closed the turn) did not have to step in.
    assert!(end.get("error").is_none(), "{end}");
    let (_, running) = server.get("/api/v1/sessions/running").await;
    assert_eq!(running["sessions"], json!([]));
}

#[actix_rt::test]
async fn fail_directive_fails_the_turn_and_the_session_recovers() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "before\n/fail the disk is full\nnever").await;
    let events = ws.events_until_turn_end(&sid).await;
    let end = events.last().cloned().unwrap();
    assert_eq!(end["status"], "failed");
    assert_eq!(end["error"], "the disk is full");
    assert!(!events.iter().any(|e| e["text"] == "never"));
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["status"], "failed");
    // A failed session takes the next turn normally.
    ws.chat(&sid, "fine").await;
    let next = ws.events_until_turn_end(&sid).await;
    assert_eq!(
        next.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
}

#[actix_rt::test]
async fn background_tasks_are_reported_and_stoppable() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(
        &sid,
        "/background build 60000 cargo build\n/background lint 100 clippy",
    )
    .await;
    ws.events_until_turn_end(&sid).await;
    // The session is idle but listed as running in the background.
    let (_, running) = server.get("/api/v1/sessions/running").await;
    let entry = &running["sessions"][0];
    assert_eq!(entry["sessionId"], sid.as_str());
    assert_eq!(entry["background"], true);
    assert_eq!(entry["canInterrupt"], false);
    // `lint` ends by itself; the set shrinks to `build`.
    let frames = ws
        .recv_until(|v| {
            v["kind"] == "background_tasks" && v["tasks"].as_array().map(Vec::len) == Some(1)
        })
        .await;
    let last = frames.last().cloned().unwrap();
    assert_eq!(last["tasks"][0]["taskId"], "build");
    assert_eq!(last["tasks"][0]["taskType"], "shell");

    let missing = ws
        .request(json!({"type": "chat.stop-task", "sessionId": sid, "taskId": "nope"}))
        .await;
    assert_eq!(missing["code"], "NO_SUCH_TASK");
    let no_id = ws
        .request(json!({"type": "chat.stop-task", "sessionId": sid}))
        .await;
    assert_eq!(no_id["code"], "TASK_ID_REQUIRED");
    ws.ok(json!({"type": "chat.stop-task", "sessionId": sid, "taskId": "build"}))
        .await;
    let frames = ws
        .recv_until(|v| v["kind"] == "background_tasks" && v["tasks"] == json!([]))
        .await;
    // The empty set is a stored event like any other, and the last one stored.
    let emptied = frames.last().cloned().unwrap();
    let history = server.all_events(&sid).await;
    let stored: Vec<&Value> = history
        .iter()
        .filter(|e| e["kind"] == "background_tasks")
        .collect();
    assert_eq!(stored.last(), Some(&&emptied), "{stored:?}");
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["backgroundTasks"], json!([]), "{info}");
    let (_, running) = server.get("/api/v1/sessions/running").await;
    assert_eq!(running["sessions"], json!([]));
}

#[actix_rt::test]
async fn sessions_watch_sees_creations_and_changes() {
    let server = Server::start();
    let mut watcher = server.ws().await;
    let initial = watcher.ok(json!({"type": "sessions.watch"})).await;
    assert_eq!(initial["sessions"], json!([]));
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let upsert = watcher
        .recv_until(|v| v["kind"] == "session_upserted")
        .await;
    assert_eq!(
        upsert.last().map(|v| v["session"]["id"].clone()),
        Some(json!(sid))
    );
    ws.chat(&sid, "hi").await;
    watcher
        .recv_until(|v| v["kind"] == "session_upserted" && v["session"]["status"] == "running")
        .await;
    watcher
        .recv_until(|v| v["kind"] == "session_upserted" && v["session"]["status"] == "idle")
        .await;
}

#[actix_rt::test]
async fn the_queue_is_bounded() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.chat(&sid, "/hold never").await;
    for i in 0..100 {
        let r = ws
            .ok(json!({"type": "chat.send", "sessionId": sid, "content": format!("q{i}"), "queue": true}))
            .await;
        assert_eq!(r["position"], i + 1);
    }
    let full = ws
        .request(json!({"type": "chat.send", "sessionId": sid, "content": "one too many", "queue": true}))
        .await;
    assert_eq!(full["code"], "LIMIT_EXCEEDED", "{full}");
}

/// An agent that never confirms an interrupt does not keep the session running: the
/// session closes the turn itself after its grace period (5 s), as `interrupted` with
/// the reason, ignores whatever the agent still says for that turn, and takes the
/// next message.
#[actix_rt::test]
async fn an_interrupt_the_agent_ignores_is_closed_by_the_session() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.ok(
        json!({"type": "chat.send", "sessionId": sid, "content": "before\n/stubborn 60000\nafter"}),
    )
    .await;
    ws.recv_until(|v| v["kind"] == "assistant_message" && v["text"] == "before")
        .await;
    ws.ok(json!({"type": "chat.abort", "sessionId": sid})).await;
    // A second abort while the first is pending is accepted and changes nothing.
    ws.ok(json!({"type": "chat.abort", "sessionId": sid})).await;
    let turn = ws.events_until_turn_end(&sid).await;
    let end = turn.last().cloned().unwrap();
    assert_eq!(end["turnId"], "turn_1");
    assert_eq!(end["status"], "interrupted");
    assert_eq!(end["error"], "the agent did not stop in time", "{end}");
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["status"], "interrupted");
    let (_, running) = server.get("/api/v1/sessions/running").await;
    assert_eq!(running["sessions"], json!([]));

    // The session is free: the next message runs (and the stubborn script, still
    // sleeping, is superseded without a word in the history).
    ws.chat(&sid, "next").await;
    let next = ws.events_until_turn_end(&sid).await;
    assert_eq!(
        next.last()
            .map(|e| (e["turnId"].clone(), e["status"].clone())),
        Some((json!("turn_2"), json!("completed")))
    );
    let history = server.all_events(&sid).await;
    assert_contiguous(&history, 1);
    let ends: Vec<&Value> = history
        .iter()
        .filter(|e| e["kind"] == "turn_completed")
        .collect();
    assert_eq!(ends.len(), 2, "one turn_completed per turn: {ends:?}");
    let closed_at = end["seq"].as_u64().unwrap_or(0);
    assert!(
        history
            .iter()
            .filter(|e| e["seq"].as_u64() > Some(closed_at))
            .all(|e| e["turnId"] != "turn_1"),
        "turn_1 said something after it was closed"
    );
}
