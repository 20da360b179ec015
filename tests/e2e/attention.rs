//! A session's `attention`, kept by the server: `done_unseen` after a turn ends until a
//! client of the owner reports it seen (`client.seen`), `failed` likewise after a
//! failed turn, `needs_input` while an approval waits (seen or not), the same after a
//! restart; another user's `seen` changes nothing.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions};

/// The session as REST lists it.
async fn info(server: &Server, sid: &str) -> Value {
    let (status, body) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Waits until the session's attention is `want`.
async fn attention_is(server: &Server, sid: &str, want: &str) -> Value {
    eventually(&format!("attention {want}"), async || {
        let info = info(server, sid).await;
        (info["attention"] == want).then_some(info)
    })
    .await
}

/// `client.seen` up to the session's last event; the attention it answers.
async fn seen(server: &Server, sid: &str) -> Value {
    let last = info(server, sid).await["lastSeq"].clone();
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/seen"),
            &json!({"seq": last}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["attention"].clone()
}

#[actix_rt::test]
async fn a_turn_asks_for_attention_until_it_is_seen_and_it_survives_a_restart() {
    let server = Server::start_process(Default::default());
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(info(&server, &sid).await["attention"], "none");

    // Another client hears it in the session's update.
    let mut watcher = server.ws().await;
    watcher.request(json!({"type": "sessions.watch"})).await;
    ws.turn(&sid, "hello").await;
    attention_is(&server, &sid, "done_unseen").await;
    watcher
        .recv_until(|v| {
            v["kind"] == "session_upserted" && v["session"]["attention"] == "done_unseen"
        })
        .await;
    // Seen up to an earlier event: still unseen.
    let (_, body) = server
        .post(&format!("/api/v1/sessions/{sid}/seen"), &json!({"seq": 1}))
        .await;
    assert_eq!(body["attention"], "done_unseen");
    assert_eq!(seen(&server, &sid).await, "none");

    // A failed turn asks for attention as failed, until seen.
    ws.turn(&sid, "/fail it broke").await;
    attention_is(&server, &sid, "failed").await;
    // Kept across a restart.
    let dir = server.kill();
    let server = Server::start_process_in(dir, Default::default());
    assert_eq!(info(&server, &sid).await["attention"], "failed");
    assert_eq!(seen(&server, &sid).await, "none");
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    assert_eq!(info(&server, &sid).await["attention"], "none");
}

#[actix_rt::test]
async fn an_approval_waiting_needs_input_even_when_seen() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/ask Bash {\"command\":\"ls\"}").await;
    let frames = ws.recv_until(|v| v["kind"] == "permission_request").await;
    let request = frames.last().unwrap()["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    attention_is(&server, &sid, "needs_input").await;
    assert_eq!(seen(&server, &sid).await, "needs_input");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/permissions/{request}"),
            &json!({"allow": true}),
        )
        .await;
    assert!(status < 300, "{body}");
    ws.events_until_turn_end(&sid).await;
    attention_is(&server, &sid, "done_unseen").await;
}

#[actix_rt::test]
async fn only_the_owner_marks_a_session_seen() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    let sid = ws
        .ok(json!({"type": "session.create", "visibility": "shared"}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    ws.turn(&sid, "hello").await;
    attention_is(&server, &sid, "done_unseen").await;
    let other = server.add_user("bob");
    let (status, body) = other
        .post(
            &format!("/api/v1/sessions/{sid}/seen"),
            &json!({"seq": 100}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(info(&server, &sid).await["attention"], "done_unseen");
}
