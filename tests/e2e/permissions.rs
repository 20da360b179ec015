//! Tool approvals: an adapter's `permission_request`, answered by
//! `chat.permission-response`, driven with the scripted vendor's `/ask`.

use serde_json::{json, Value};
use tandem_tests::events::{status, texts};
use tandem_tests::{Server, WsClient};

/// A scripted turn that asks to run `ls` with the `Bash` tool.
const ASK_LS: &str = "/ask Bash {\"command\":\"ls\"}";

/// True when the scripted agent said `text` among `events`.
fn said(events: &[Value], text: &str) -> bool {
    texts(events, "assistant_message").iter().any(|t| t == text)
}

/// True when `events` hold the `permission_resolved` of request `id`.
fn resolved(events: &[Value], id: &str) -> bool {
    events
        .iter()
        .any(|e| e["kind"] == "permission_resolved" && e["requestId"] == id)
}

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
    ws.chat(&id, &format!("{ASK_LS}\n{ASK_LS}")).await;

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
    assert_eq!(status(&events), "completed");
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
    ws.chat(&id, ASK_LS).await;
    let pending = next_request(&mut ws).await;
    ws.ok(json!({"type": "chat.abort", "sessionId": id})).await;
    let events = ws.events_until_turn_end(&id).await;
    assert!(
        resolved(&events, &pending),
        "the interrupted turn withdraws its request: {events:?}"
    );
    assert_eq!(status(&events), "interrupted");
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
    ws.chat(&id, ASK_LS).await;
    let events = ws.events_until_turn_end(&id).await;
    assert!(events.iter().all(|e| e["kind"] != "permission_request"));
    assert!(said(&events, "allowed Bash"));
}

/// Answers permission request `id` with `fields` (`allow`, `remember`, ...); returns
/// the answer frame.
async fn respond(ws: &mut WsClient, id: &str, fields: Value) -> Value {
    let mut body = json!({"type": "chat.permission-response", "requestId": id});
    if let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) {
        body.extend(fields.clone());
    }
    ws.send(&body).await;
    let mut frames = ws
        .recv_until(|v| {
            v["requestId"] == json!(id) && (v["kind"] == "reply" || v["kind"] == "protocol_error")
        })
        .await;
    let answer = frames.pop().unwrap_or_else(|| panic!("no answer to {id}"));
    ws.requeue(frames);
    answer
}

/// "Always allow": the answer's `remember: "session"` is recorded once as
/// `permission_remembered`, listed to new subscribers, answers later requests for the
/// same tool without asking (also after a restart), and covers only that tool.
#[actix_rt::test]
async fn always_allow_is_remembered_for_the_session() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    ws.chat(&id, ASK_LS).await;
    let request = next_request(&mut ws).await;
    let reply = respond(
        &mut ws,
        &request,
        json!({"allow": true, "remember": "session"}),
    )
    .await;
    assert_eq!(reply["kind"], "reply", "{reply}");
    let events = ws.events_until_turn_end(&id).await;
    let remembered: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "permission_remembered")
        .collect();
    assert_eq!(remembered.len(), 1, "{events:?}");
    assert_eq!(
        remembered[0]["rule"],
        json!({"toolName": "Bash", "scope": "session"})
    );
    assert!(said(&events, "allowed Bash"));

    // The same tool again: allowed without a request.
    let again = ws.turn(&id, "/ask Bash {\"command\":\"pwd\"}").await;
    assert!(
        again.iter().all(|e| e["kind"] != "permission_request"),
        "{again:?}"
    );
    assert!(said(&again, "allowed Bash"));

    // Another tool still asks; denying with `remember` records no rule.
    ws.chat(&id, "/ask Edit {\"file\":\"a\"}").await;
    let frames = ws.recv_until(|v| v["kind"] == "permission_request").await;
    let edit = frames
        .last()
        .and_then(|v| v["requestId"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no Edit request in {frames:?}"));
    let reply = respond(
        &mut ws,
        &edit,
        json!({"allow": false, "remember": "session"}),
    )
    .await;
    assert_eq!(reply["kind"], "reply", "{reply}");
    let denied = ws.events_until_turn_end(&id).await;
    assert!(denied.iter().all(|e| e["kind"] != "permission_remembered"));

    // A new subscriber is told the rules in force.
    let mut late = server.ws().await;
    late.subscribe(&id, 0).await;
    let ack = late.recv_until(|v| v["kind"] == "chat_subscribed").await;
    let ack = ack.last().unwrap_or_else(|| panic!("no chat_subscribed"));
    assert_eq!(
        ack["permissionRules"],
        json!([{"toolName": "Bash", "scope": "session"}]),
        "{ack}"
    );
    drop(late);
    drop(ws);

    // After a restart the rule still answers.
    let dir = server.terminate();
    let server = Server::start_in(dir, Default::default());
    let mut ws = server.ws().await;
    let (status, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{info}");
    let last = info["lastSeq"]
        .as_u64()
        .unwrap_or_else(|| panic!("no lastSeq in {info}"));
    ws.subscribe(&id, last).await;
    let after = ws.turn(&id, ASK_LS).await;
    assert!(
        after.iter().all(|e| e["kind"] != "permission_request"),
        "{after:?}"
    );
    assert!(said(&after, "allowed Bash"));
}

/// An answer a client sends just before it closes its socket still counts: a request
/// that was read runs to its end whatever the connection does next. (Before, it ran
/// inside the connection's actor and was dropped with it, now and then.)
#[actix_rt::test]
async fn an_answer_sent_just_before_closing_still_counts() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    for round in 0..20 {
        ws.chat(&id, ASK_LS).await;
        let pending = next_request(&mut ws).await;
        let mut answering = server.ws().await;
        answering
            .send(&json!({"type": "chat.permission-response",
                "requestId": pending, "allow": true}))
            .await;
        answering.close().await;
        let events = ws.events_until_turn_end(&id).await;
        assert!(
            resolved(&events, &pending),
            "round {round}: the answer was applied: {events:?}"
        );
        assert_eq!(status(&events), "completed", "round {round}");
    }
}
