//! The scripted vendor's `/hold NAME` step and its test-only control
//! (`GET /debug/holds`, `POST /debug/holds/{name}/release`): what the other tests use
//! to put a turn in a state instead of racing a `/sleep` window.

use std::time::{Duration, Instant};

use serde_json::json;
use tandem_tests::{Server, ServerOptions};

use crate::kinds;

#[actix_rt::test]
async fn a_turn_waits_at_a_hold_until_released() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "before\n/hold h1\nafter").await;
    server.wait_held("h1").await;
    let (_, list) = server.get("/debug/holds").await;
    assert_eq!(list, json!({"holds": [{"name": "h1", "waiting": 1}]}));
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["status"], "running");
    let history = server.all_events(&sid).await;
    assert_eq!(
        history.last().map(|e| e["text"].clone()),
        Some(json!("before"))
    );

    assert_eq!(server.release("h1").await, 1);
    let events = ws.events_until_turn_end(&sid).await;
    let said: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "assistant_message")
        .map(|e| e["text"].clone())
        .collect();
    assert_eq!(said, vec![json!("before"), json!("after")]);
    assert_eq!(events.last().unwrap()["status"], "completed");
    let (_, list) = server.get("/debug/holds").await;
    assert_eq!(list, json!({"holds": []}));
}

#[actix_rt::test]
async fn a_release_before_the_turn_reaches_the_hold_lets_it_pass() {
    let server = Server::start();
    assert_eq!(server.release("early").await, 0);
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    // Released for good: both holds pass at once.
    ws.ok(
        json!({"type": "chat.send", "sessionId": sid, "content": "/hold early\n/hold early\ndone"}),
    )
    .await;
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(events.last().unwrap()["status"], "completed");
    assert_eq!(
        kinds(&events)
            .iter()
            .filter(|k| **k == "assistant_message")
            .count(),
        1
    );
}

#[actix_rt::test]
async fn an_interrupt_ends_a_held_turn_at_once() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/hold never\nnot said").await;
    server.wait_held("never").await;
    let started = Instant::now();
    ws.ok(json!({"type": "chat.abort", "sessionId": sid})).await;
    let events = ws.events_until_turn_end(&sid).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "interrupt took {:?}",
        started.elapsed()
    );
    assert_eq!(events.last().unwrap()["status"], "interrupted");
    assert!(!events.iter().any(|e| e["text"] == "not said"));
    // The interrupted script no longer waits there.
    let (_, list) = server.get("/debug/holds").await;
    assert_eq!(list, json!({"holds": []}));
}

#[actix_rt::test]
async fn holds_are_for_admins_with_url_safe_names() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let user = server.add_user("ann");
    let (status, body) = user.get("/debug/holds").await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = user.post("/debug/holds/x/release", &json!({})).await;
    assert_eq!(status, 403, "{body}");
    let long = "x".repeat(65);
    let (status, body) = server
        .post(&format!("/debug/holds/{long}/release"), &json!({}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENT");
    // A line that is not `/hold TOKEN` is plain text.
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/hold a b").await;
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(events.last().unwrap()["status"], "completed");
    assert!(events
        .iter()
        .any(|e| e["kind"] == "assistant_message" && e["text"] == "/hold a b"));
}
