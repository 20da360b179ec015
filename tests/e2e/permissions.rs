//! Tool approvals: an adapter's `permission_request`, answered by
//! `chat.permission-response`, driven with the scripted vendor's `/ask`.

use serde_json::{json, Value};
use tandem_tests::{Server, WsClient};

/// Sends `chat.permission-response` for `id` and returns the answer frame; frames that
/// came before it are added to `seen`.
async fn answer_seen(
    ws: &mut WsClient,
    id: &str,
    allow: bool,
    message: Option<&str>,
    seen: &mut Vec<Value>,
) -> Value {
    let mut body = json!({"type": "chat.permission-response", "requestId": id, "allow": allow});
    if let Some(m) = message {
        body["message"] = json!(m);
    }
    ws.send(&body).await;
    let mut frames = ws
        .recv_until(|v| {
            v["requestId"] == json!(id) && (v["kind"] == "reply" || v["kind"] == "protocol_error")
        })
        .await;
    let last = frames.pop().unwrap();
    seen.extend(frames);
    last
}

/// [`answer_seen`] for a test that does not look at what came before.
async fn answer(ws: &mut WsClient, id: &str, allow: bool, message: Option<&str>) -> Value {
    answer_seen(ws, id, allow, message, &mut Vec::new()).await
}

/// The next `permission_request` (from `seen` first, else the socket) and its id.
async fn next_request_after(ws: &mut WsClient, seen: &mut Vec<Value>) -> String {
    let last = match seen.iter().position(|v| v["kind"] == "permission_request") {
        Some(pos) => seen.drain(..=pos).next_back().unwrap(),
        None => {
            let frames = ws.recv_until(|v| v["kind"] == "permission_request").await;
            frames.last().cloned().unwrap()
        }
    };
    assert_eq!(last["toolName"], "Bash", "{last}");
    assert_eq!(last["input"]["command"], "ls", "{last}");
    last["requestId"].as_str().unwrap().to_string()
}

/// Waits for the next `permission_request` and returns its id.
async fn next_request(ws: &mut WsClient) -> String {
    next_request_after(ws, &mut Vec::new()).await
}

#[actix_rt::test]
async fn allow_deny_and_unknown_requests() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": id,
        "content": "/ask Bash {\"command\":\"ls\"}\n/ask Bash {\"command\":\"ls\"}"}))
        .await;

    let first = next_request(&mut ws).await;
    assert!(first.starts_with("perm_"), "{first}");
    // A second client subscribing now is told what is pending.
    let mut late = server.ws().await;
    late.subscribe(&id, 0).await;
    let ack = late.recv_until(|v| v["kind"] == "chat_subscribed").await;
    let ack = ack.last().cloned().unwrap();
    assert_eq!(ack["pendingPermissions"][0]["requestId"], json!(first));
    assert_eq!(ack["pendingPermissions"][0]["toolName"], "Bash");

    let mut seen = Vec::new();
    let reply = answer_seen(&mut ws, &first, true, None, &mut seen).await;
    assert_eq!(reply["kind"], "reply", "{reply}");
    let again = answer_seen(&mut ws, &first, true, None, &mut seen).await;
    assert_eq!(
        again["code"], "NO_SUCH_PERMISSION",
        "answered twice: {again}"
    );

    let second = next_request_after(&mut ws, &mut seen).await;
    assert_ne!(second, first);
    let reply = answer_seen(&mut ws, &second, false, Some("not today"), &mut seen).await;
    assert_eq!(reply["kind"], "reply", "{reply}");
    let mut events: Vec<Value> = seen
        .into_iter()
        .filter(|v| v.get("seq").is_some())
        .collect();
    if events.last().is_none_or(|e| e["kind"] != "turn_completed") {
        events.extend(ws.events_until_turn_end(&id).await);
    }
    assert_eq!(
        events.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
    let all = server.all_events(&id).await;
    let texts: Vec<&str> = all
        .iter()
        .filter(|e| e["kind"] == "assistant_message")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(texts, vec!["allowed Bash", "denied Bash: not today"]);
    let resolved: Vec<&Value> = all
        .iter()
        .filter(|e| e["kind"] == "permission_resolved")
        .collect();
    assert_eq!(resolved.len(), 2, "one resolution per request");

    let unknown = answer(&mut ws, "perm_nope", true, None).await;
    assert_eq!(unknown["code"], "NO_SUCH_PERMISSION", "{unknown}");
    ws.send(&json!({"type": "chat.permission-response", "allow": true}))
        .await;
    let missing = ws.recv_until(|v| v["kind"] == "protocol_error").await;
    assert_eq!(
        missing.last().map(|v| v["code"].clone()),
        Some(json!("INVALID_ARGUMENT"))
    );
}

#[actix_rt::test]
async fn interrupt_withdraws_a_pending_request() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": id,
        "content": "/ask Bash {\"command\":\"ls\"}"}))
        .await;
    let pending = next_request(&mut ws).await;
    ws.ok(json!({"type": "chat.abort", "sessionId": id})).await;
    let events = ws.events_until_turn_end(&id).await;
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "permission_resolved" && e["requestId"] == json!(pending)),
        "the interrupted turn withdraws its request: {events:?}"
    );
    assert_eq!(
        events.last().map(|e| e["status"].clone()),
        Some(json!("interrupted"))
    );
    let late = answer(&mut ws, &pending, true, None).await;
    assert_eq!(late["code"], "NO_SUCH_PERMISSION", "{late}");
}

#[actix_rt::test]
async fn bypass_mode_never_asks() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "permissionMode": "bypassPermissions"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": id,
        "content": "/ask Bash {\"command\":\"ls\"}"}))
        .await;
    let events = ws.events_until_turn_end(&id).await;
    assert!(events.iter().all(|e| e["kind"] != "permission_request"));
    assert!(events
        .iter()
        .any(|e| e["kind"] == "assistant_message" && e["text"] == "allowed Bash"));
}
