//! Web Push in a cluster: a device registered on one node is listed and reached from
//! every node (the `tandem_push` bucket), every node signs with one VAPID key (a push
//! service takes only pushes signed with the key the device subscribed with), and the
//! node that runs a session sends its pushes; a device removed on another node is
//! gone everywhere.

use serde_json::json;
use tandem_tests::{eventually, NatsServer, PushService};

/// A scripted session on node b, made through `ws` (a client of node a), subscribed.
async fn created_on_b(ws: &mut tandem_tests::WsClient, title: &str) -> String {
    let created = ws
        .ok(json!({"type": "session.create", "title": title, "node": "b"}))
        .await;
    let sid = created["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&sid, 0).await;
    sid
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_device_registered_on_one_node_hears_from_a_session_on_another() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let service = PushService::start(&["phone"]);
    let (_, key_a) = a.get("/api/v1/push/key").await;
    let (_, key_b) = b.get("/api/v1/push/key").await;
    assert_eq!(key_a, key_b, "one key for the whole cluster");

    let (status, made) = a
        .post("/api/v1/push/subscriptions", &service.subscription("phone"))
        .await;
    assert_eq!(status, 201, "{made}");
    let id = made["subscription"]["id"].as_str().unwrap().to_string();
    let (_, listed) = b.get("/api/v1/push/subscriptions").await;
    assert_eq!(listed["subscriptions"][0]["id"], id.as_str(), "{listed}");

    // A session on b, asked for through a, waits for a permission: b pushes.
    let mut ws = a.ws().await;
    let created = ws
        .ok(json!({"type": "session.create", "title": "on b", "node": "b"}))
        .await;
    let sid = created["session"]["id"].as_str().unwrap().to_string();
    assert_eq!(created["session"]["node"], "b");
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/ask Bash {\"command\":\"make\"}").await;
    let push = service.next().await;
    assert_eq!(push["device"], "phone");
    assert_eq!(push["status"], 201);
    assert_eq!(
        push["k"], key_a["publicKey"],
        "signed with the key the device knows"
    );
    assert_eq!(push["payload"]["sessionId"], sid.as_str());
    assert_eq!(push["payload"]["attention"], "needs_input");

    // A page on a shows a session b runs: b pushes nothing about it (the next push
    // is another session's); once that page is gone, b pushes about it again.
    let shown = created_on_b(&mut ws, "shown").await;
    let other = created_on_b(&mut ws, "other").await;
    let mut page = a.ws().await;
    // Answered once b was told.
    page.ok(json!({"type": "client.visible", "sessionIds": [shown]}))
        .await;
    ws.turn(&shown, "/fail while shown").await;
    ws.turn(&other, "/fail elsewhere").await;
    let push = service.next().await;
    assert_eq!(push["payload"]["sessionId"], other.as_str(), "{push}");
    page.ok(json!({"type": "client.visible", "sessionIds": []}))
        .await;
    ws.chat(&shown, "/ask Bash {\"command\":\"ls\"}").await;
    let push = service.next().await;
    assert_eq!(push["payload"]["sessionId"], shown.as_str(), "{push}");
    assert_eq!(push["payload"]["attention"], "needs_input");

    // Removed on b: gone on a too.
    let (status, _) = b.delete(&format!("/api/v1/push/subscriptions/{id}")).await;
    assert_eq!(status, 200);
    eventually("the device gone on a", async || {
        let (_, listed) = a.get("/api/v1/push/subscriptions").await;
        (listed["subscriptions"] == json!([])).then_some(())
    })
    .await;
}
