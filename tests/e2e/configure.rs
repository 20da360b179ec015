//! Per-session settings: model, effort clamping, vendor rules, title.

use serde_json::json;
use tandem_tests::Server;

#[actix_rt::test]
async fn configure_changes_one_session_only_and_clamps_effort() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let a = ws.create_session().await;
    let b = ws.create_session().await;
    ws.subscribe(&a, 0).await;
    let reply = ws
        .ok(json!({"type": "session.configure", "sessionId": a, "model": "scripted-1", "effort": "max", "title": "Renamed", "permissionMode": "plan"}))
        .await;
    let s = &reply["session"];
    assert_eq!(s["model"], "scripted-1");
    assert_eq!(
        s["effort"], "high",
        "max clamps to the scripted vendor's highest level"
    );
    assert_eq!(s["title"], "Renamed");
    assert_eq!(s["permissionMode"], "plan");
    let change = ws.recv_until(|v| v["kind"] == "config_changed").await;
    let change = change.last().cloned().unwrap();
    assert_eq!(change["effort"], "high");
    assert_eq!(change["seq"], 1);
    let low = ws
        .ok(json!({"type": "session.configure", "sessionId": a, "effort": "minimal"}))
        .await;
    assert_eq!(low["session"]["effort"], "low");
    // The other session is untouched.
    let (_, other) = server.get(&format!("/api/v1/sessions/{b}")).await;
    assert_eq!(other["model"], "");
    assert_eq!(other["effort"], "");
    assert_eq!(other["title"], "test");

    for (body, code) in [
        (
            json!({"type": "session.configure", "sessionId": a, "effort": "ludicrous"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.configure", "sessionId": a, "vendor": "codex"}),
            "VENDOR_NOT_INSTALLED",
        ),
        (
            json!({"type": "session.configure", "sessionId": a, "vendor": "nobody"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.configure", "sessionId": a, "title": "  "}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.configure", "sessionId": a, "permissionMode": "yolo"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.configure", "sessionId": "ses_x", "title": "t"}),
            "SESSION_NOT_FOUND",
        ),
    ] {
        let answer = ws.request(body.clone()).await;
        assert_eq!(answer["code"], code, "{body}: {answer}");
    }
    // Options on chat.send stick to the session.
    ws.ok(json!({"type": "chat.send", "sessionId": a, "content": "hi", "options": {"effort": "medium"}}))
        .await;
    ws.events_until_turn_end(&a).await;
    let (_, info) = server.get(&format!("/api/v1/sessions/{a}")).await;
    assert_eq!(info["effort"], "medium");
}

#[actix_rt::test]
async fn vendors_lists_what_can_run() {
    let server = Server::start();
    let (status, body) = server.get("/api/v1/vendors").await;
    assert_eq!(status, 200);
    let vendors = body["vendors"].as_array().cloned().unwrap();
    let scripted = vendors
        .iter()
        .find(|v| v["id"] == "scripted")
        .cloned()
        .unwrap();
    assert_eq!(scripted["installed"], true);
    assert_eq!(scripted["effortLevels"], json!(["low", "medium", "high"]));
    let codex = vendors
        .iter()
        .find(|v| v["id"] == "codex")
        .cloned()
        .unwrap();
    assert_eq!(
        codex["effortLevels"],
        json!(["minimal", "low", "medium", "high", "xhigh"])
    );
}

#[actix_rt::test]
async fn on_limit_is_kept_listed_and_survives_a_restart() {
    let server = Server::start_process(Default::default());
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.ok(json!({"type": "session.configure", "sessionId": id, "onLimit": "wait"}))
        .await;
    let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["onLimit"], "wait", "{info}");
    drop(ws);
    let dir = server.kill();
    let server = Server::start_in(dir, tandem_tests::ServerOptions::default());
    let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["onLimit"], "wait", "{info}");
}
