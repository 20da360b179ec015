//! Killing the server (SIGKILL, no clean shutdown) loses nothing a client saw, and no
//! session comes back running.

use serde_json::json;
use tandem_tests::{Server, ServerOptions};

use crate::assert_contiguous;

#[actix_rt::test]
async fn kill_mid_turn_then_restart() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let done = ws.create_session().await;
    let busy = ws.create_session().await;
    ws.subscribe(&done, 0).await;
    ws.subscribe(&busy, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": done, "content": "/stream 500\nfinished"}))
        .await;
    let finished = ws.events_until_turn_end(&done).await;
    ws.ok(json!({"type": "chat.send", "sessionId": busy, "content": "/stream 200\n/hold never"}))
        .await;
    // Everything a client has seen must survive the kill.
    let seen = ws
        .recv_until(|v| v["sessionId"] == busy.as_str() && v["text"] == "chunk 199 ")
        .await;
    let seen: Vec<_> = seen
        .into_iter()
        .filter(|v| v["sessionId"] == busy.as_str())
        .collect();
    let seen_last = seen.last().and_then(|v| v["seq"].as_u64()).unwrap_or(0);
    let dir = server.kill();

    let server = Server::start_in(dir, ServerOptions::default());
    let (_, list) = server.get("/api/v1/sessions").await;
    let sessions = list["sessions"].as_array().cloned().unwrap();
    assert_eq!(sessions.len(), 2);
    assert!(sessions.iter().all(|s| s["status"] != "running"));
    let (_, info) = server.get(&format!("/api/v1/sessions/{busy}")).await;
    assert_eq!(info["status"], "interrupted");
    let (_, info_done) = server.get(&format!("/api/v1/sessions/{done}")).await;
    assert_eq!(info_done["status"], "idle");
    assert_eq!(server.all_events(&done).await, finished);

    let stored = server.all_events(&busy).await;
    assert_contiguous(&stored, 1);
    assert!(stored.len() as u64 > seen_last, "seen events were lost");
    assert_eq!(stored[..seen.len()], seen[..]);
    let end = stored.last().cloned().unwrap();
    assert_eq!(end["kind"], "turn_completed");
    assert_eq!(end["status"], "interrupted");
    assert_eq!(end["turnId"], "turn_1");
    assert_eq!(info["lastSeq"], stored.len() as u64);

    // Replay after the restart, then a new turn continues the sequence.
    let mut ws = server.ws().await;
    ws.subscribe(&busy, 0).await;
    assert_eq!(ws.recv().await["status"], "interrupted");
    let mut replay = Vec::new();
    for _ in 0..stored.len() {
        replay.push(ws.recv().await);
    }
    assert_eq!(replay, stored);
    let reply = ws
        .ok(json!({"type": "chat.send", "sessionId": busy, "content": "after restart"}))
        .await;
    assert_eq!(reply["turnId"], "turn_2");
    let next = ws.events_until_turn_end(&busy).await;
    assert_contiguous(&next, stored.len() as u64 + 1);

    // A second kill while idle changes nothing.
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    let (_, info) = server.get(&format!("/api/v1/sessions/{busy}")).await;
    assert_eq!(info["status"], "idle");
    assert_eq!(info["turnCount"], 2);
    assert_eq!(info["lastSeq"], (stored.len() + next.len()) as u64);
}

#[actix_rt::test]
async fn queued_messages_survive_a_kill_and_run_once() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": "/hold never"}))
        .await;
    let queued = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": "queued before the crash", "queue": true}))
        .await;
    assert_eq!(queued["position"], 1);
    ws.recv_until(|v| v["kind"] == "user_message" && v["text"] == "/hold never")
        .await;
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    let mut ws = server.ws().await;
    ws.subscribe(&sid, 0).await;
    let events = ws
        .recv_until(|v| v["kind"] == "turn_completed" && v["turnId"] == "turn_2")
        .await;
    assert!(events
        .iter()
        .any(|e| e["kind"] == "user_message" && e["text"] == "queued before the crash"));
    let stored = server.all_events(&sid).await;
    let sent = stored
        .iter()
        .filter(|e| e["text"] == "queued before the crash" && e["kind"] == "user_message")
        .count();
    assert_eq!(sent, 1);
    // And not again after another restart.
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["turnCount"], 2);
}
