//! Subscriptions: replay then live, no gaps and no duplicates, many clients.

use serde_json::{json, Value};
use tandem_tests::Server;

use crate::assert_contiguous;

#[actix_rt::test]
async fn two_clients_see_identical_sequences() {
    let server = Server::start();
    let mut a = server.ws().await;
    let mut b = server.ws().await;
    let sid = a.create_session().await;
    a.subscribe(&sid, 0).await;
    b.subscribe(&sid, 0).await;
    assert_eq!(a.recv().await["kind"], "chat_subscribed");
    assert_eq!(b.recv().await["kind"], "chat_subscribed");
    a.chat(&sid, "/stream 2000\nend").await;
    let seen_a = a.events_until_turn_end(&sid).await;
    let seen_b = b.events_until_turn_end(&sid).await;
    // turn_started, user_message, 2000 deltas + message, 3 deltas + message, turn_completed
    assert_eq!(seen_a.len(), 2 + 2001 + 4 + 1);
    assert_contiguous(&seen_a, 1);
    assert_eq!(seen_a, seen_b);
}

/// Subscribing with `lastSeq` resumes exactly after it, whether the turn is still
/// running or already over.
#[actix_rt::test]
async fn reconnect_with_last_seq_mid_turn_and_after() {
    let server = Server::start();
    let mut driver = server.ws().await;
    let sid = driver.create_session().await;
    let mut first = server.ws().await;
    first.subscribe(&sid, 0).await;
    assert_eq!(first.recv().await["kind"], "chat_subscribed");
    driver
        .chat(&sid, "/stream 300\n/hold mid\n/stream 300")
        .await;
    // Read part of the turn, then drop the connection mid-turn.
    let mut got: Vec<Value> = Vec::new();
    while got.len() < 150 {
        let v = first.recv().await;
        if v.get("seq").is_some() {
            got.push(v);
        }
    }
    first.close().await;
    let resume = got.last().and_then(|v| v["seq"].as_u64()).unwrap_or(0);

    // A new connection resumes from where the old one stopped, while the turn runs.
    let mut second = server.ws().await;
    second.subscribe(&sid, resume).await;
    let ack = second.recv().await;
    assert_eq!(ack["kind"], "chat_subscribed");
    assert_eq!(ack["status"], "running");
    server.release("mid").await;
    got.extend(second.events_until_turn_end(&sid).await);
    assert_contiguous(&got, 1);
    assert_eq!(
        got.last().map(|v| v["kind"].clone()),
        Some(json!("turn_completed"))
    );
    assert_eq!(got, server.all_events(&sid).await);

    // After the turn: replay from the start, the middle, the last event and past it
    // (from the store), then live with nothing in between. Each round adds a turn.
    for point in [Some(0), Some(resume), None, Some(u64::MAX)] {
        let total = got.len() as u64;
        let from = match point {
            // Just past the end: the newest seq itself.
            Some(u64::MAX) => total,
            Some(p) => p,
            None => total - 1,
        };
        let mut late = server.ws().await;
        late.subscribe(&sid, from).await;
        let ack = late.recv().await;
        assert_eq!(ack["lastSeq"], total);
        assert_eq!(ack["status"], "idle");
        let mut replay = Vec::new();
        for _ in from..total {
            replay.push(late.recv().await);
        }
        assert_eq!(replay, got[from as usize..].to_vec());
        late.chat(&sid, "next").await;
        let live = late.events_until_turn_end(&sid).await;
        assert_contiguous(&live, total + 1);
        got.extend(live);
    }
}

#[actix_rt::test]
async fn unsubscribe_stops_delivery_and_unknown_sessions_are_refused() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let other = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    // A witness that stays subscribed: once it has the whole turn, the gateway has
    // handled every commit of that turn.
    let mut witness = server.ws().await;
    witness.subscribe(&sid, 0).await;
    assert_eq!(witness.recv().await["kind"], "chat_subscribed");
    ws.ok(json!({"type": "chat.unsubscribe", "sessionIds": [sid]}))
        .await;
    ws.chat(&sid, "quiet").await;
    let turn = witness.events_until_turn_end(&sid).await;
    assert_eq!(
        turn.last().map(|e| e["kind"].clone()),
        Some(json!("turn_completed"))
    );
    // The gateway handles messages in order: this subscription's ack is queued for the
    // client after anything the turn's commits could have queued, and a client's
    // frames arrive in the order they were queued. So everything the client got up to
    // the ack is everything it will ever get of that turn: none of it may be an event
    // of the unsubscribed session.
    ws.subscribe(&other, 0).await;
    let frames = ws
        .recv_until(|v| v["kind"] == "chat_subscribed" && v["sessionId"] == other.as_str())
        .await;
    let leaked: Vec<&Value> = frames
        .iter()
        .filter(|v| v["sessionId"] == sid.as_str() && v.get("seq").is_some())
        .collect();
    assert!(leaked.is_empty(), "events after unsubscribe: {leaked:?}");
    let reply = ws
        .request(json!({"type": "chat.subscribe", "sessions": [{"sessionId": "ses_missing"}]}))
        .await;
    assert_eq!(reply["kind"], "protocol_error");
    assert_eq!(reply["code"], "SESSION_NOT_FOUND");
    assert_eq!(reply["sessionId"], "ses_missing");
}

/// Positions are never wrapped: `lastSeq` and REST `after` past the largest position
/// the store can hold (2^63 - 1) are refused with `INVALID_ARGUMENT`; the largest one
/// is accepted and simply names the end of the history.
#[actix_rt::test]
async fn positions_past_the_store_are_refused_never_wrapped() {
    const MAX: u64 = i64::MAX as u64;
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    ws.chat(&sid, "one\ntwo").await;
    let history = ws.events_until_turn_end(&sid).await;
    let total = history.len() as u64;
    assert_eq!(server.all_events(&sid).await, history);

    for last in [MAX + 1, u64::MAX] {
        let mut late = server.ws().await;
        let answer = late
            .request(json!({"type": "chat.subscribe", "sessions": [{"sessionId": sid, "lastSeq": last}]}))
            .await;
        assert_eq!(answer["kind"], "protocol_error", "lastSeq {last}: {answer}");
        assert_eq!(
            answer["code"], "INVALID_ARGUMENT",
            "lastSeq {last}: {answer}"
        );
        assert_eq!(answer["sessionId"], sid.as_str());
        // The refused entry subscribed nothing: a later subscription at the end of the
        // history (whose ack the gateway queues after anything it had queued for this
        // client) is the first frame to arrive, with no replayed event before it.
        let witness = late
            .request(json!({"type": "chat.subscribe", "sessions": [{"sessionId": sid, "lastSeq": total}]}))
            .await;
        assert_eq!(witness["kind"], "reply", "{witness}");
        let frames = late.recv_until(|v| v["kind"] == "chat_subscribed").await;
        assert_eq!(frames.len(), 1, "frames before the ack: {frames:?}");
    }

    // The largest position is accepted and replays nothing.
    let mut edge = server.ws().await;
    let answer = edge
        .request(
            json!({"type": "chat.subscribe", "sessions": [{"sessionId": sid, "lastSeq": MAX}]}),
        )
        .await;
    assert_eq!(answer["kind"], "reply", "{answer}");
    let ack = edge.recv().await;
    assert_eq!(ack["kind"], "chat_subscribed");
    assert_eq!(ack["lastSeq"], total);

    for after in [MAX + 1, 1 << 63 | 5, u64::MAX] {
        let (status, body) = server
            .get(&format!("/api/v1/sessions/{sid}/events?after={after}"))
            .await;
        assert_eq!(status, 400, "after={after}: {body}");
        assert_eq!(body["error"]["code"], "INVALID_ARGUMENT", "after={after}");
    }
    let (status, body) = server
        .get(&format!("/api/v1/sessions/{sid}/events?after={MAX}"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["events"], json!([]));
    assert_eq!(body["lastSeq"], total);
    assert_eq!(body["hasMore"], false);
}
