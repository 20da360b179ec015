//! The queue on the server (`GET .../queue`, `chat.queue-cancel`, `chat.queue-edit`,
//! `chat_subscribed.queued`) and usage totals (`GET .../usage`).

use serde_json::{json, Value};
use tandem_protocol::client::{
    ChatQueueCancelParams, ChatQueueEditParams, ChatSendParams, SessionCreateParams,
};
use tandem_protocol::rest::ChatQueueResult;
use tandem_protocol::results::ChatSendResult;
use tandem_protocol::server::{QueuedEntry, ServerFrame};
use tandem_protocol::{Event, EventBody, SessionId};
use tandem_tests::{eventually, Server, ServerOptions};

fn texts(queued: &Value) -> Vec<String> {
    queued
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|q| q["text"].as_str().map(String::from))
                .collect()
        })
        .unwrap()
}

/// `chat.send` of `text` to `session`, queued behind a running turn when `queue`.
fn send(session: &SessionId, text: &str, queue: bool) -> ChatSendParams {
    ChatSendParams {
        session_id: session.clone(),
        content: text.to_string().into(),
        options: None,
        queue,
    }
}

/// The texts of a queue, in order.
fn queued_texts(queued: &[QueuedEntry]) -> Vec<&str> {
    queued.iter().map(|q| q.text.as_str()).collect()
}

#[actix_rt::test]
async fn queued_messages_are_listed_edited_cancelled_and_survive_a_restart() {
    let dir = std::sync::Arc::new(tandem_tests::TempDir::new("queue"));
    let server = Server::start_in(dir.clone(), ServerOptions::default());
    let mut ws = server.ws().await;
    let created = ws.call_ok(SessionCreateParams::default()).await;
    let sid = created.session.id;
    ws.call_ok(send(&sid, "/hold busy", false)).await;
    for (text, place) in [("first", 1), ("second", 2), ("third", 3)] {
        let answer = ws.call_ok(send(&sid, text, true)).await;
        assert!(
            matches!(answer, ChatSendResult::Queued { queued: true, position, .. } if position == place),
            "{answer:?}"
        );
    }
    let (status, list) = server.get(&format!("/api/v1/sessions/{sid}/queue")).await;
    assert_eq!(status, 200);
    let list: ChatQueueResult = serde_json::from_value(list).unwrap();
    assert_eq!(list.session_id, sid);
    assert_eq!(queued_texts(&list.queued), ["first", "second", "third"]);
    let ids: Vec<String> = list.queued.iter().map(|q| q.queue_id.clone()).collect();
    assert!(ids.iter().all(|id| id.starts_with("q_")), "{ids:?}");

    // Edit keeps the place; cancel takes it out; both answer with the queue.
    let edited = ws
        .call_ok(ChatQueueEditParams {
            session_id: sid.clone(),
            queue_id: ids[1].clone(),
            content: "second, edited".into(),
        })
        .await;
    assert_eq!(edited.queue_id, ids[1]);
    assert_eq!(
        queued_texts(&edited.queued),
        ["first", "second, edited", "third"]
    );
    let cancelled = ws
        .call_ok(ChatQueueCancelParams {
            session_id: sid.clone(),
            queue_id: ids[0].clone(),
        })
        .await;
    assert_eq!(queued_texts(&cancelled.queued), ["second, edited", "third"]);

    // chat_subscribed lists the queue.
    let mut other = server.ws().await;
    other.subscribe(&sid, 0).await;
    match serde_json::from_value(other.recv().await) {
        Ok(ServerFrame::ChatSubscribed { queued, .. }) => {
            assert_eq!(queued_texts(&queued), ["second, edited", "third"])
        }
        other => panic!("not chat_subscribed: {other:?}"),
    }

    // A restart keeps the queue as edited: the turn in flight is closed, and the
    // session, free again, sends what is queued, in order.
    drop(ws);
    drop(other);
    server.terminate();
    let server = Server::start_in(dir, ServerOptions::default());
    let mut ws = server.ws().await;
    ws.subscribe(&sid, 0).await;
    ws.recv_until(|v| v["kind"] == "user_message" && v["text"] == "third")
        .await;
    let users: Vec<String> = server
        .all_events(&sid)
        .await
        .into_iter()
        .filter_map(|e| match serde_json::from_value::<Event>(e) {
            Ok(Event {
                body: EventBody::UserMessage { text, .. },
                ..
            }) => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["/hold busy", "second, edited", "third"]);
}

#[actix_rt::test]
async fn queue_requests_refuse_wrong_ids_malformed_frames_and_other_users() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.chat(&sid, "/hold busy").await;
    let queued = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": "keep me", "queue": true}))
        .await;
    assert_eq!(queued["position"], 1);
    let (_, list) = server.get(&format!("/api/v1/sessions/{sid}/queue")).await;
    let qid = list["queued"][0]["queueId"].as_str().unwrap().to_string();

    for (body, code) in [
        (
            json!({"type": "chat.queue-cancel", "sessionId": sid, "queueId": "q_nope"}),
            "NO_SUCH_QUEUED_MESSAGE",
        ),
        (
            json!({"type": "chat.queue-edit", "sessionId": sid, "queueId": "q_nope", "content": "x"}),
            "NO_SUCH_QUEUED_MESSAGE",
        ),
        (
            json!({"type": "chat.queue-edit", "sessionId": sid, "queueId": qid, "content": "  "}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "chat.queue-cancel", "sessionId": sid}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "chat.queue-edit", "sessionId": sid, "queueId": qid}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "chat.queue-cancel", "sessionId": sid, "queueId": 7}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "chat.queue-cancel", "queueId": qid}),
            "SESSION_ID_REQUIRED",
        ),
        (
            json!({"type": "chat.queue-cancel", "sessionId": "ses_missing", "queueId": qid}),
            "SESSION_NOT_FOUND",
        ),
    ] {
        let answer = ws.request(body.clone()).await;
        assert_eq!(answer["kind"], "protocol_error", "{body}: {answer}");
        assert_eq!(answer["code"], code, "{body}: {answer}");
    }
    let (status, body) = server.get("/api/v1/sessions/ses_missing/queue").await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (404, json!("SESSION_NOT_FOUND"))
    );

    // Someone else's session: private is missing, shared is readable but not theirs
    // to change.
    let bob = server.add_user("bob");
    let mut b = bob.ws().await;
    let answer = b
        .request(json!({"type": "chat.queue-cancel", "sessionId": sid, "queueId": qid}))
        .await;
    assert_eq!(answer["code"], "SESSION_NOT_FOUND", "{answer}");
    let (status, _) = bob.get(&format!("/api/v1/sessions/{sid}/queue")).await;
    assert_eq!(status, 404);
    let shared = ws
        .ok(json!({"type": "session.create", "title": "team", "visibility": "shared"}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.chat(&shared, "/hold busy").await;
    ws.ok(json!({"type": "chat.send", "sessionId": shared, "content": "shared queued", "queue": true}))
        .await;
    let (status, list) = bob.get(&format!("/api/v1/sessions/{shared}/queue")).await;
    assert_eq!(status, 200);
    assert_eq!(texts(&list["queued"]), ["shared queued"]);
    let shared_qid = list["queued"][0]["queueId"].clone();
    for body in [
        json!({"type": "chat.queue-cancel", "sessionId": shared, "queueId": shared_qid}),
        json!({"type": "chat.queue-edit", "sessionId": shared, "queueId": shared_qid, "content": "mine"}),
    ] {
        let answer = b.request(body.clone()).await;
        assert_eq!(answer["code"], "ACCESS_DENIED", "{body}: {answer}");
    }

    // Nothing was lost by the refusals.
    let (_, list) = server.get(&format!("/api/v1/sessions/{sid}/queue")).await;
    assert_eq!(texts(&list["queued"]), ["keep me"]);
    let (_, list) = server
        .get(&format!("/api/v1/sessions/{shared}/queue"))
        .await;
    assert_eq!(texts(&list["queued"]), ["shared queued"]);
}

#[actix_rt::test]
async fn a_queued_message_leaves_the_queue_when_it_is_sent() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/hold first").await;
    let queued = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": "next", "queue": true}))
        .await;
    assert_eq!(queued["queued"], true, "{queued}");
    server.release("first").await;
    ws.events_until_turn_end(&sid).await;
    let second = ws.events_until_turn_end(&sid).await;
    assert_eq!(second[1]["text"], "next");
    let (_, list) = server.get(&format!("/api/v1/sessions/{sid}/queue")).await;
    assert_eq!(list["queued"], json!([]));
}

#[actix_rt::test]
async fn usage_totals_per_session_and_per_delegation() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let driver = ws.create_session().await;
    ws.subscribe(&driver, 0).await;
    // Two turns with usage (one with a cost, one without), one without usage.
    ws.ok(json!({"type": "chat.send", "sessionId": driver,
        "content": "/usage {\"inputTokens\": 120, \"cachedInputTokens\": 20, \"outputTokens\": 30, \"costUsd\": 0.5}\nhi"}))
        .await;
    ws.events_until_turn_end(&driver).await;
    ws.ok(json!({"type": "chat.send", "sessionId": driver,
        "content": "/usage {\"inputTokens\": 10, \"cachedInputTokens\": 1, \"outputTokens\": 5}\nagain"}))
        .await;
    ws.events_until_turn_end(&driver).await;
    ws.chat(&driver, "no usage here").await;
    ws.events_until_turn_end(&driver).await;

    // A Worker turn delegated by the Driver, with its own usage.
    let pair = ws
        .ok(json!({"type": "pair.create", "driverId": driver, "worker": {"vendor": "scripted"}}))
        .await;
    let worker = pair["pair"]["workerId"].as_str().unwrap().to_string();
    let (output, is_error) = ws
        .scripted_tool(
            &driver,
            "send_to_partner",
            json!({"message": "/usage {\"inputTokens\": 7, \"cachedInputTokens\": 0, \"outputTokens\": 3, \"costUsd\": 0.25}\ndone"}),
        )
        .await;
    assert!(!is_error, "{output}");
    assert_eq!(output["status"], "complete", "{output}");

    let (status, usage) = server
        .get(&format!("/api/v1/sessions/{driver}/usage"))
        .await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage["sessionId"], driver.as_str());
    let total = &usage["total"];
    // Four Driver turns reported nothing but the two with /usage.
    assert_eq!(total["turns"], 2, "{usage}");
    assert_eq!(total["inputTokens"], 130, "{usage}");
    assert_eq!(total["cachedInputTokens"], 21, "{usage}");
    assert_eq!(total["outputTokens"], 35, "{usage}");
    assert_eq!(total["costUsd"], 0.5, "{usage}");
    let delegations = usage["delegations"].as_array().cloned().unwrap();
    assert_eq!(delegations.len(), 1, "{usage}");
    assert_eq!(delegations[0]["workerId"], worker.as_str());
    assert_eq!(delegations[0]["driverId"], driver.as_str());
    assert_eq!(delegations[0]["usage"]["inputTokens"], 7);
    assert_eq!(delegations[0]["usage"]["costUsd"], 0.25);

    // The Worker sees the same delegation from its side, in its own total.
    let (_, usage) = server
        .get(&format!("/api/v1/sessions/{worker}/usage"))
        .await;
    assert_eq!(usage["total"]["outputTokens"], 3, "{usage}");
    assert_eq!(usage["delegations"][0]["turnId"], delegations[0]["turnId"]);

    // `since` counts only turns that ended at or after it.
    let (_, all) = server
        .get(&format!("/api/v1/sessions/{driver}/usage?since=0"))
        .await;
    assert_eq!(all["total"]["turns"], 2);
    let (_, none) = server
        .get(&format!(
            "/api/v1/sessions/{driver}/usage?since=99999999999999"
        ))
        .await;
    assert_eq!(none["total"]["turns"], 0, "{none}");
    assert_eq!(none["total"].get("costUsd"), None, "{none}");
    assert_eq!(none["delegations"], json!([]), "{none}");
    let (status, body) = server
        .get(&format!("/api/v1/sessions/{driver}/usage?since=yesterday"))
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("INVALID_ARGUMENT"))
    );

    let (status, body) = server.get("/api/v1/sessions/ses_missing/usage").await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (404, json!("SESSION_NOT_FOUND"))
    );
}

#[actix_rt::test]
async fn a_result_the_server_queued_cannot_be_edited_or_cancelled() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let driver = ws.create_session().await;
    ws.subscribe(&driver, 0).await;
    ws.ok(json!({"type": "pair.create", "driverId": driver, "worker": {"vendor": "scripted"}}))
        .await;
    // A detached delegation whose result comes back while the Driver is busy (the
    // same turn stands at a hold): it is queued as a server-written (internal)
    // message.
    let delegate = json!({"message": "worker done", "wait": false});
    ws.ok(json!({"type": "chat.send", "sessionId": driver,
        "content": format!("/tool send_to_partner {delegate}\n/hold busy")}))
        .await;
    let queue = format!("/api/v1/sessions/{driver}/queue");
    let queued = eventually("the result to be queued", async || {
        let (_, queued) = server.get(&queue).await;
        (queued["queued"][0]["internal"] == true).then_some(queued)
    })
    .await;
    let qid = queued["queued"][0]["queueId"].clone();
    for body in [
        json!({"type": "chat.queue-cancel", "sessionId": driver, "queueId": qid}),
        json!({"type": "chat.queue-edit", "sessionId": driver, "queueId": qid, "content": "forged"}),
    ] {
        let answer = ws.request(body.clone()).await;
        assert_eq!(answer["code"], "CONFLICT", "{body}: {answer}");
    }
    let (_, after) = server.get(&queue).await;
    assert_eq!(after["queued"], queued["queued"], "nothing changed");
}
