//! Pairs in a cluster, with a real `nats-server` and scripted agents: requests that
//! name a pair or a permission request but no session (`pair.close`, `DELETE
//! /api/v1/pairs/{id}`, `chat.permission-response` without `sessionId`) find the node
//! that holds it.

use serde_json::{json, Value};
use tandem_tests::{eventually, NatsServer, Server, ServerOptions, WsClient};

fn start_node(nats: &NatsServer, node: &str) -> Server {
    Server::start_with(ServerOptions {
        args: vec!["--nats".into(), nats.url(), "--node".into(), node.into()],
        ..ServerOptions::default()
    })
}

/// Waits until `server` lists session `id` (`GET /api/v1/sessions`, which merges
/// every node's sessions) and `ok` holds for it; returns it.
async fn listed_as(server: &Server, id: &str, ok: impl Fn(&Value) -> bool) -> Value {
    eventually(&format!("session {id} listed as expected"), async || {
        let (status, page) = server.get("/api/v1/sessions?limit=500").await;
        assert_eq!(status, 200, "{page}");
        page["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"] == id && ok(s)))
            .cloned()
    })
    .await
}

/// Waits for the next `permission_request` of `session` on `ws`; returns its id.
async fn next_permission(ws: &mut WsClient, session: &str) -> String {
    let frames = ws
        .recv_until(|v| v["kind"] == "permission_request" && v["sessionId"] == session)
        .await;
    let last = frames.last().cloned().unwrap();
    last["requestId"].as_str().unwrap().to_string()
}

/// Sends `chat.permission-response` (no `sessionId`) for permission request `id`,
/// whose id is the frame's `requestId`; returns the answer.
async fn answer_permission(ws: &mut WsClient, id: &str) -> Value {
    ws.send(&json!({"type": "chat.permission-response", "requestId": id, "allow": true}))
        .await;
    let frames = ws
        .recv_until(|v| {
            v["requestId"] == id && (v["kind"] == "reply" || v["kind"] == "protocol_error")
        })
        .await;
    frames.last().cloned().unwrap()
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn requests_without_a_session_find_the_node_that_holds_them() {
    let nats = NatsServer::start();
    let a = start_node(&nats, "a");
    let b = start_node(&nats, "b");
    let c = start_node(&nats, "c");
    let mut on_a = a.ws().await;
    let mut on_c = c.ws().await;

    // A permission request pending on A, answered through C without `sessionId`
    // (B is asked too and has no such request).
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    on_a.ok(json!({"type": "chat.send", "sessionId": id,
        "content": "/ask Bash {\"command\":\"ls\"}"}))
        .await;
    let asked = next_permission(&mut on_a, &id).await;
    let answered = answer_permission(&mut on_c, &asked).await;
    assert_eq!(answered["kind"], "reply", "{answered}");
    assert_eq!(answered["permissionId"], asked.as_str(), "{answered}");
    let turn = on_a.events_until_turn_end(&id).await;
    assert!(
        turn.iter()
            .any(|e| e["kind"] == "assistant_message" && e["text"] == "allowed Bash"),
        "{turn:?}"
    );
    // Answered already, and one no node has: the single node's error.
    for missing in [asked.as_str(), "perm_nowhere"] {
        let again = answer_permission(&mut on_c, missing).await;
        assert_eq!(again["code"], "NO_SUCH_PERMISSION", "{again}");
        let here = answer_permission(&mut on_a, missing).await;
        assert_eq!(again["error"], here["error"]);
    }

    // Two pairs on A: one closed over C's socket, one over B's REST route.
    let mut pairs = Vec::new();
    for _ in 0..2 {
        let driver = on_a.create_session().await;
        let created = on_a
            .ok(json!({"type": "pair.create", "driverId": driver, "worker": {"vendor": "scripted"}}))
            .await;
        let pair_id = created["pair"]["pairId"].as_str().unwrap().to_string();
        // The other nodes know the pair once the directory lists its Driver in it.
        listed_as(&b, &driver, |s| s["pairId"] == pair_id.as_str()).await;
        listed_as(&c, &driver, |s| s["pairId"] == pair_id.as_str()).await;
        pairs.push((driver, pair_id));
    }
    let (d1, p1) = pairs[0].clone();
    let closed = on_c.ok(json!({"type": "pair.close", "pairId": p1})).await;
    assert_eq!(
        (closed["pairId"].clone(), closed["interrupted"].clone()),
        (json!(p1), json!(false)),
        "{closed}"
    );
    let (_, info) = a.get(&format!("/api/v1/sessions/{d1}")).await;
    assert!(info.get("pairId").is_none(), "{info}");
    let (d2, p2) = pairs[1].clone();
    let (status, closed) = b.delete(&format!("/api/v1/pairs/{p2}")).await;
    assert_eq!(status, 200, "{closed}");
    assert_eq!(closed["pairId"], p2.as_str());
    let (_, info) = a.get(&format!("/api/v1/sessions/{d2}")).await;
    assert!(info.get("pairId").is_none(), "{info}");
    // Closed (once the directory has caught up) or never there: NO_SUCH_PAIR, as on A.
    listed_as(&b, &d2, |s| s.get("pairId").is_none()).await;
    let (status, gone) = b.delete(&format!("/api/v1/pairs/{p2}")).await;
    assert_eq!(
        (status, gone["error"]["code"].clone()),
        (404, json!("NO_SUCH_PAIR")),
        "{gone}"
    );
    let gone = on_c
        .request(json!({"type": "pair.close", "pairId": "pair_nowhere"}))
        .await;
    assert_eq!(gone["code"], "NO_SUCH_PAIR", "{gone}");

    // A pair whose node is down: NODE_UNAVAILABLE, on the socket and over REST.
    let d3 = on_a.create_session().await;
    let created = on_a
        .ok(json!({"type": "pair.create", "driverId": d3, "worker": {"vendor": "scripted"}}))
        .await;
    let p3 = created["pair"]["pairId"].as_str().unwrap().to_string();
    listed_as(&c, &d3, |s| s["pairId"] == p3.as_str()).await;
    on_a.close().await;
    let _dir = a.kill();
    listed_as(&c, &d3, |s| s["status"] == "unavailable").await;
    let down = on_c
        .request(json!({"type": "pair.close", "pairId": p3}))
        .await;
    assert_eq!(down["code"], "NODE_UNAVAILABLE", "{down}");
    let (status, down) = c.delete(&format!("/api/v1/pairs/{p3}")).await;
    assert_eq!(
        (status, down["error"]["code"].clone()),
        (503, json!("NODE_UNAVAILABLE")),
        "{down}"
    );
}
