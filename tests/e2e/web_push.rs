//! Web Push against a push service stand-in (tests/python/push_service.py) that checks
//! every push with implementations no one here wrote: py_vapid verifies the VAPID
//! token against the key it carries (which must be the server's), http_ece decrypts
//! the body with the device's private key. A waiting permission reaches every device
//! of the owner with its request; a device its push service calls gone is removed; a
//! 503 is tried again; `notify` chooses the moments; nothing is pushed about a
//! session a client of the owner shows; a push service that never answers holds up
//! nothing; bad subscriptions are refused, and another user's are not theirs.

use serde_json::{json, Value};
use tandem_tests::{eventually, PushService, Server, ServerOptions};

/// Registers `body` for the server's caller; the subscription.
async fn subscribe(api: &tandem_tests::server::Api, body: &Value) -> Value {
    let (status, created) = api.post("/api/v1/push/subscriptions", body).await;
    assert_eq!(status, 201, "{created}");
    created["subscription"].clone()
}

/// Sends `/ask` in `sid` and returns the permission's request id.
async fn ask(ws: &mut tandem_tests::WsClient, sid: &str, input: &str) -> String {
    ws.chat(sid, &format!("/ask Bash {input}")).await;
    let frames = ws.recv_until(|v| v["kind"] == "permission_request").await;
    frames.last().unwrap()["requestId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[actix_rt::test]
async fn a_waiting_permission_reaches_every_device_and_gone_ones_are_removed() {
    let service = PushService::start(&["phone", "gone1", "flaky1"]);
    let server = Server::start();
    let (status, key) = server.get("/api/v1/push/key").await;
    assert_eq!(status, 200, "{key}");
    let public_key = key["publicKey"].as_str().unwrap().to_string();
    let phone = subscribe(&server, &service.subscription("phone")).await;
    assert_eq!(phone["label"], "phone's browser");
    assert!(
        phone.get("keys").is_none(),
        "keys are never given back: {phone}"
    );
    // The same endpoint again is the same device, renewed.
    assert_eq!(
        subscribe(&server, &service.subscription("phone")).await["id"],
        phone["id"]
    );
    subscribe(&server, &service.subscription("gone1")).await;
    subscribe(&server, &service.subscription("flaky1")).await;
    let (_, list) = server.get("/api/v1/push/subscriptions").await;
    assert_eq!(list["subscriptions"].as_array().unwrap().len(), 3, "{list}");

    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    let request = ask(&mut ws, &sid, r#"{"command":"rm -rf build"}"#).await;

    let mut others = Vec::new();
    let push = service.next_to("phone", &mut others).await;
    assert_eq!(push["status"], 201);
    assert_eq!(
        push["k"],
        public_key.as_str(),
        "signed with the server's key"
    );
    assert_eq!(push["aud"], format!("http://127.0.0.1:{}", service.port));
    let payload = &push["payload"];
    assert_eq!(payload["sessionId"], sid.as_str());
    assert_eq!(payload["attention"], "needs_input");
    assert_eq!(payload["requestId"], request.as_str());
    assert_eq!(payload["title"], "test");
    assert_eq!(payload["body"], "Permission: Bash(rm -rf build)");
    assert_eq!(payload["url"], format!("/#/s/{sid}"));
    assert_eq!(payload["tag"], format!("tandem-{sid}"));
    assert!(push["bytes"].as_u64().unwrap() <= 4096);
    let headers = &push["headers"];
    assert_eq!(headers["Urgency"], "high");
    assert_eq!(headers["TTL"], "86400");
    assert_eq!(headers["Content-Encoding"], "aes128gcm");
    let topic = headers["Topic"].as_str().unwrap();
    assert_eq!(topic.len(), 32, "{topic}");

    // The flaky device answered 503 first and gets the same message again.
    let mut flaky: Vec<Value> = others
        .iter()
        .filter(|p| p["device"] == "flaky1")
        .cloned()
        .collect();
    while flaky.len() < 2 {
        let push = service.next().await;
        if push["device"] == "flaky1" {
            flaky.push(push);
        }
    }
    assert_eq!(flaky[0]["status"], 503, "{flaky:?}");
    assert_eq!(flaky[1]["status"], 201, "{flaky:?}");
    assert_eq!(
        flaky.last().unwrap()["payload"]["requestId"],
        request.as_str()
    );
    // The device whose service said 410 is gone from the list.
    eventually("the gone device to be removed", async || {
        let (_, list) = server.get("/api/v1/push/subscriptions").await;
        let names: Vec<String> = list["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["label"].as_str().unwrap().to_string())
            .collect();
        (names == ["phone's browser", "flaky1's browser"]).then_some(())
    })
    .await;

    // Answered: the turn ends unseen, which the default `notify` does not push. A
    // failed turn is pushed, with normal urgency.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/permissions/{request}"),
            &json!({"allow": true}),
        )
        .await;
    assert!(status < 300, "{body}");
    ws.events_until_turn_end(&sid).await;
    ws.turn(&sid, "/fail it broke").await;
    let push = service.next_to("phone", &mut others).await;
    assert_eq!(push["payload"]["attention"], "failed", "{push}");
    assert_eq!(push["headers"]["Urgency"], "normal");
    assert!(push["payload"].get("requestId").is_none());

    // `notify: all` pushes a turn that ended unseen too.
    let (status, info) = server
        .patch(
            &format!("/api/v1/sessions/{sid}"),
            &json!({"notify": "all"}),
        )
        .await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["notify"], "all");
    ws.turn(&sid, "all done").await;
    let push = service.next_to("phone", &mut others).await;
    assert_eq!(push["payload"]["attention"], "done_unseen", "{push}");
    assert_eq!(push["payload"]["body"], "all done");
    assert_eq!(push["headers"]["Urgency"], "low");

    // While a client of the owner shows the session, nothing is pushed about it: the
    // next push is the other session's failure.
    let shown = ws
        .ok(json!({"type": "client.visible", "sessionIds": [sid]}))
        .await;
    assert_eq!(shown["sessionIds"], json!([sid]));
    ws.turn(&sid, "unseen but shown").await;
    let other = ws.create_session().await;
    ws.subscribe(&other, 0).await;
    ws.turn(&other, "/fail elsewhere").await;
    let push = service.next_to("phone", &mut others).await;
    assert_eq!(push["payload"]["sessionId"], other.as_str(), "{push}");
    // Hidden again (none shown): pushed again.
    ws.ok(json!({"type": "client.visible", "sessionIds": []}))
        .await;
    ws.turn(&sid, "now hidden").await;
    let push = service.next_to("phone", &mut others).await;
    assert_eq!(push["payload"]["body"], "now hidden", "{push}");
    // `notify: none` pushes nothing: the next push is the other session's.
    server
        .patch(
            &format!("/api/v1/sessions/{sid}"),
            &json!({"notify": "none"}),
        )
        .await;
    ws.turn(&sid, "/fail quiet").await;
    ws.turn(&other, "/fail loud").await;
    let push = service.next_to("phone", &mut others).await;
    assert_eq!(push["payload"]["sessionId"], other.as_str(), "{push}");
}

#[actix_rt::test]
async fn a_push_service_that_never_answers_holds_up_nothing() {
    let service = PushService::start(&["hang1", "phone"]);
    let server = Server::start();
    subscribe(&server, &service.subscription("hang1")).await;
    subscribe(&server, &service.subscription("phone")).await;
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    let request = ask(&mut ws, &sid, r#"{"command":"ls"}"#).await;
    let mut others = Vec::new();
    service.next_to("phone", &mut others).await;
    // The hanging service has the request and has not answered; the session goes on.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/permissions/{request}"),
            &json!({"allow": true}),
        )
        .await;
    assert!(status < 300, "{body}");
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(events.last().unwrap()["status"], "completed");
    ws.turn(&sid, "/fail next").await;
    service.next_to("phone", &mut others).await;
}

#[actix_rt::test]
async fn bad_subscriptions_are_refused_and_each_user_has_their_own() {
    let service = PushService::start(&["phone"]);
    let server = Server::start_process(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let good = service.subscription("phone");
    let with = |path: &str, value: Value| {
        let mut body = good.clone();
        let mut at = &mut body;
        let parts: Vec<&str> = path.split('.').collect();
        for part in &parts[..parts.len() - 1] {
            at = &mut at[*part];
        }
        at[parts[parts.len() - 1]] = value;
        body
    };
    for (body, why) in [
        (
            with("endpoint", json!("http://example.com/push")),
            "plain http off loopback",
        ),
        (with("endpoint", json!("ftp://127.0.0.1/x")), "not http"),
        (
            with("endpoint", json!(format!("https://h/{}", "a".repeat(2048)))),
            "too long",
        ),
        (with("keys.p256dh", json!("AAAA")), "short key"),
        (
            with("keys.auth", json!("not base64url!!!!!!!!!")),
            "bad auth",
        ),
        (with("label", json!("l".repeat(101))), "long label"),
        (json!({"endpoint": good["endpoint"]}), "no keys"),
    ] {
        let (status, answer) = server.post("/api/v1/push/subscriptions", &body).await;
        assert_eq!(status, 400, "{why}: {answer}");
        assert_eq!(
            answer["error"]["code"], "INVALID_ARGUMENT",
            "{why}: {answer}"
        );
    }
    // Well-formed, but not a point of the curve: 422.
    let mut key = good["keys"]["p256dh"].as_str().unwrap().to_string();
    key.replace_range(
        40..44,
        if &key[40..44] == "AAAA" {
            "BBBB"
        } else {
            "AAAA"
        },
    );
    let (status, answer) = server
        .post(
            "/api/v1/push/subscriptions",
            &with("keys.p256dh", json!(key)),
        )
        .await;
    assert_eq!(status, 422, "{answer}");

    let mine = subscribe(&server, &good).await;
    let bob = server.add_user("bob");
    let (_, list) = bob.get("/api/v1/push/subscriptions").await;
    assert_eq!(list["subscriptions"], json!([]), "{list}");
    let id = mine["id"].as_str().unwrap();
    let (status, answer) = bob
        .delete(&format!("/api/v1/push/subscriptions/{id}"))
        .await;
    assert_eq!(status, 404, "{answer}");
    assert_eq!(answer["error"]["code"], "NOT_FOUND");
    let (status, answer) = server
        .delete(&format!("/api/v1/push/subscriptions/{id}"))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"subscriptionId": id, "removed": true}));
    let (status, _) = server
        .delete(&format!("/api/v1/push/subscriptions/{id}"))
        .await;
    assert_eq!(status, 404);
    // The WebSocket: a session the caller cannot see is not shown by them.
    let mut ws = bob.ws().await;
    let answer = ws
        .request(json!({"type": "client.visible", "sessionIds": ["ses_nope"]}))
        .await;
    assert_eq!(answer["code"], "SESSION_NOT_FOUND", "{answer}");
    let nine: Vec<String> = (0..9).map(|i| format!("ses_{i}")).collect();
    let answer = ws
        .request(json!({"type": "client.visible", "sessionIds": nine}))
        .await;
    assert_eq!(answer["code"], "INVALID_ARGUMENT", "{answer}");

    // The key is made once, 0600, and kept across restarts.
    let (_, key) = server.get("/api/v1/push/key").await;
    let path = server.dir.path().join("data/vapid-key.p8");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let dir = server.kill();
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            ..ServerOptions::default()
        },
    );
    let (_, again) = server.get("/api/v1/push/key").await;
    assert_eq!(again, key);
}
