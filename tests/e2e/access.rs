//! Multi-user mode: each user sees, subscribes to and drives only what they may.

use serde_json::json;
use tandem_tests::{Server, ServerOptions};

#[actix_rt::test]
async fn users_see_and_drive_only_what_they_may() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let bob = server.add_user("bob");
    let mut admin = server.ws().await;
    let private = admin.create_session().await;
    let shared = admin
        .ok(json!({"type": "session.create", "title": "team", "visibility": "shared"}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    admin.chat(&shared, "hello team").await;

    // Listing and reading.
    let (_, list) = bob.get("/api/v1/sessions").await;
    let ids: Vec<String> = list["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().map(String::from))
                .collect()
        })
        .unwrap();
    assert_eq!(ids, vec![shared.clone()]);
    let (status, body) = bob.get(&format!("/api/v1/sessions/{private}")).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (404, json!("SESSION_NOT_FOUND"))
    );
    let (status, _) = bob.get(&format!("/api/v1/sessions/{private}/events")).await;
    assert_eq!(status, 404);
    let (status, _) = bob.get(&format!("/api/v1/sessions/{shared}/events")).await;
    assert_eq!(status, 200);

    // Subscribing: the shared session yes, the private one no.
    let mut b = bob.ws().await;
    b.subscribe(&private, 0).await;
    let refused = b.recv().await;
    assert_eq!(refused["code"], "SESSION_NOT_FOUND");
    b.subscribe(&shared, 0).await;
    assert_eq!(b.recv().await["kind"], "chat_subscribed");

    // Driving: never someone else's session, shared or not.
    for (body, code) in [
        (
            json!({"type": "chat.send", "sessionId": shared, "content": "mine now"}),
            "ACCESS_DENIED",
        ),
        (
            json!({"type": "chat.abort", "sessionId": shared}),
            "ACCESS_DENIED",
        ),
        (
            json!({"type": "session.configure", "sessionId": shared, "title": "x"}),
            "ACCESS_DENIED",
        ),
        (
            json!({"type": "tool.call", "sessionId": shared, "name": "read_partner"}),
            "ACCESS_DENIED",
        ),
        (
            json!({"type": "chat.send", "sessionId": private, "content": "x"}),
            "SESSION_NOT_FOUND",
        ),
        (
            json!({"type": "pair.create", "driverId": private, "worker": {"vendor": "scripted"}}),
            "SESSION_NOT_FOUND",
        ),
        (
            json!({"type": "pair.create", "driverId": shared, "worker": {"vendor": "scripted"}}),
            "ACCESS_DENIED",
        ),
    ] {
        let answer = b.request(body.clone()).await;
        assert_eq!(answer["code"], code, "{body}: {answer}");
    }
    let (status, _) = bob
        .post(
            &format!("/api/v1/sessions/{shared}/messages"),
            &json!({"content": "x"}),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = bob
        .post(&format!("/api/v1/sessions/{private}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 404);

    // Bob's own session is his; the admin sees it, watchers see only what they may.
    let mut bob_watch = bob.ws().await;
    bob_watch.ok(json!({"type": "sessions.watch"})).await;
    let mine = b.create_session().await;
    let (_, info) = server.get(&format!("/api/v1/sessions/{mine}")).await;
    assert_eq!(info["ownerId"], "bob");
    admin
        .ok(json!({"type": "session.configure", "sessionId": private, "title": "secret"}))
        .await;
    admin
        .ok(json!({"type": "session.configure", "sessionId": shared, "title": "team 2"}))
        .await;
    let seen = bob_watch
        .recv_until(|v| v["kind"] == "session_upserted" && v["session"]["title"] == "team 2")
        .await;
    assert!(seen.iter().all(|v| v["session"]["id"] != private.as_str()));
    assert!(seen.iter().any(|v| v["session"]["id"] == mine.as_str()));

    // A token for one user is not another's; unknown tokens get nothing.
    let stranger = server.as_user("tdm_not_a_token");
    let (status, _) = stranger.get("/api/v1/sessions").await;
    assert_eq!(status, 401);
}
