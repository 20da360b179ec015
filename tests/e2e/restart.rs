//! Killing the server (SIGKILL, no clean shutdown) loses nothing a client saw, and no
//! session comes back running.

use serde_json::json;
use tandem_tests::{Server, ServerOptions};

use crate::assert_contiguous;

#[actix_rt::test]
async fn kill_mid_turn_then_restart() {
    let server = Server::start_process(Default::default());
    let mut ws = server.ws().await;
    let done = ws.create_session().await;
    let busy = ws.create_session().await;
    ws.subscribe(&done, 0).await;
    ws.subscribe(&busy, 0).await;
    ws.chat(&done, "/stream 500\nfinished").await;
    let finished = ws.events_until_turn_end(&done).await;
    ws.chat(&busy, "/stream 200\n/hold never").await;
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

    let server = Server::start_process_in(dir, Default::default());
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
    let server = Server::start_process(Default::default());
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/hold never").await;
    let queued = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": "queued before the crash", "queue": true}))
        .await;
    assert_eq!(queued["position"], 1);
    ws.recv_until(|v| v["kind"] == "user_message" && v["text"] == "/hold never")
        .await;
    let dir = server.kill();
    let server = Server::start_process_in(dir, Default::default());
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

/// `tandem_session_actors_started_total` from `/metrics`.
async fn actors_started(server: &Server) -> u64 {
    let (status, text) = server.get_text("/metrics").await;
    assert_eq!(status, 200);
    text.lines()
        .find_map(|l| l.strip_prefix("tandem_session_actors_started_total "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no actor count in {text}"))
}

/// Idle sessions come back from a restart without actors (what a million idle sessions
/// would cost otherwise); a session with work of its own (a pending schedule) gets its
/// actor at start. An idle one gets its actor at the first request that needs it,
/// once even when requests come together, and carries on where its history ended.
#[actix_rt::test]
async fn idle_sessions_start_their_actor_at_first_use() {
    let server = Server::start_process(Default::default());
    let mut ws = server.ws().await;
    let talked = ws.create_session().await;
    let renamed = ws.create_session().await;
    let scheduled = ws.create_session().await;
    ws.subscribe(&talked, 0).await;
    ws.chat(&talked, "before").await;
    let before = ws.events_until_turn_end(&talked).await;
    let in_a_day = crate::schedule::now_ms() + 86_400_000;
    ws.ok(json!({"type": "session.schedule", "sessionId": scheduled, "content": "later", "at": crate::schedule::rfc3339(in_a_day)}))
        .await;
    let dir = server.kill();

    let server = Server::start_in(dir, ServerOptions::default());
    assert_eq!(
        actors_started(&server).await,
        1,
        "only the scheduled session"
    );
    // Listing, metadata, history and schedules read what the session published.
    let (_, list) = server.get("/api/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(3));
    let (_, info) = server.get(&format!("/api/v1/sessions/{talked}")).await;
    assert_eq!(info["turnCount"], 1);
    let stored = server.all_events(&talked).await;
    assert_eq!(stored, before);
    let (_, schedules) = server
        .get(&format!("/api/v1/sessions/{scheduled}/schedules"))
        .await;
    assert_eq!(schedules["schedules"][0]["status"], "pending");
    assert_eq!(actors_started(&server).await, 1);

    // Ten renames at once: one actor starts, every rename is answered.
    let path = format!("/api/v1/sessions/{renamed}");
    let renames = (0..10).map(|i| {
        let (server, path) = (&server, path.clone());
        async move {
            server
                .patch(&path, &json!({"title": format!("name {i}")}))
                .await
        }
    });
    for (status, body) in futures_util::future::join_all(renames).await {
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(actors_started(&server).await, 2);
    let (_, info) = server.get(&path).await;
    assert!(info["title"]
        .as_str()
        .is_some_and(|t| t.starts_with("name ")));

    // A turn on the other idle session continues its history and its turn count.
    let mut ws = server.ws().await;
    ws.subscribe(&talked, stored.len() as u64).await;
    let reply = ws
        .ok(json!({"type": "chat.send", "sessionId": talked, "content": "after"}))
        .await;
    assert_eq!(reply["turnId"], "turn_2");
    let next = ws.events_until_turn_end(&talked).await;
    assert_contiguous(&next, stored.len() as u64 + 1);
    assert_eq!(actors_started(&server).await, 3);
}
