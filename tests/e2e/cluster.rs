//! Nodes joined through a real `nats-server` with JetStream: two or three `tandem
//! serve --nats URL --node NAME` processes on one machine.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_tests::{eventually_within, NatsServer, Server, WsClient};

use crate::assert_contiguous;

/// Every session `ws` lists, all pages.
async fn listed(ws: &mut WsClient) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut req = json!({"type": "sessions.list", "limit": 2});
        if let Some(c) = &cursor {
            req["cursor"] = json!(c);
        }
        let page = ws.ok(req).await;
        out.extend(page["sessions"].as_array().cloned().unwrap());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return out,
        }
    }
}

/// Polls `ws`'s session list (at most `limit`) until session `id` is listed and `ok`
/// holds for it; returns it and how long that took.
async fn wait_listed(
    ws: &mut WsClient,
    id: &str,
    limit: Duration,
    ok: impl Fn(&Value) -> bool,
) -> (Value, Duration) {
    let start = Instant::now();
    let what = format!("session {id} listed as expected");
    let found = eventually_within(&what, limit, async || {
        listed(ws)
            .await
            .into_iter()
            .find(|s| s["id"] == id && ok(s))
    })
    .await;
    (found, start.elapsed())
}

/// A client of `node` subscribed from the start to session `id` of another node,
/// once `node` lists it.
async fn following(node: &Server, id: &str) -> WsClient {
    let mut ws = node.ws().await;
    wait_listed(&mut ws, id, Duration::from_secs(10), |_| true).await;
    ws.subscribe(id, 0).await;
    ws
}

/// Waits (at most 20 s) until JetStream holds `last` events for the session, the
/// same in two reads in a row (a read is not a snapshot: a publisher mending the
/// stream may change it meanwhile), and checks they are seqs 1..=`last`, each once,
/// in messages with the id `<session>:<first seq>`. (A hole the publisher filled
/// after a broken connection is stored after later seqs, so the stream's order is
/// not checked.)
async fn assert_published(nats: &NatsServer, session: &str, last: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut previous = Vec::new();
    loop {
        let published = nats.published(session).await;
        let held: u64 = published.iter().map(|m| m.last + 1 - m.first).sum();
        let settled = held == last && published == previous;
        previous = published.clone();
        if settled || Instant::now() > deadline {
            for m in &published {
                assert_eq!(m.id, format!("{session}:{}", m.first));
            }
            let mut seqs: Vec<u64> = published.iter().flat_map(|m| m.first..=m.last).collect();
            let stored = seqs.len();
            seqs.sort_unstable();
            seqs.dedup();
            assert_eq!(stored, seqs.len(), "JetStream holds a seq twice");
            let wrong = seqs
                .iter()
                .enumerate()
                .find(|(i, s)| **s != *i as u64 + 1)
                .map(|(i, s)| format!("position {i} holds seq {s}"));
            assert!(
                wrong.is_none() && seqs.len() as u64 == last,
                "JetStream holds {} events for 1..={last}: {wrong:?}",
                seqs.len()
            );
            return;
        }
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn committed_events_are_published_once_and_sessions_are_pinned() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let mut ws = a.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": "on a"}))
        .await;
    assert_eq!(reply["session"]["node"], "a");
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "/stream 300\ndone").await;
    let events = ws.events_until_turn_end(&id).await;
    assert_contiguous(&events, 1);
    let last = events.len() as u64;
    assert_published(&nats, &id, last).await;

    // The directory says who owns it; the node holds a lease.
    let entry = nats.kv("tandem_sessions", &id).await;
    assert_eq!(entry.as_ref().map(|e| e["node"].clone()), Some(json!("a")));
    assert!(nats.kv("tandem_nodes", "a").await.is_some());

    // A restart republishes nothing twice: the publisher starts after the stream's
    // last seq.
    ws.close().await;
    let dir = a.terminate();
    let a = nats.restart_node(dir, "a");
    let mut ws = a.ws().await;
    ws.subscribe(&id, last).await;
    ws.chat(&id, "again").await;
    let more = ws.events_until_turn_end(&id).await;
    assert_contiguous(&more, last + 1);
    assert_published(&nats, &id, last + more.len() as u64).await;

    // A node that is not in the cluster is refused by name.
    let answer = ws
        .request(json!({"type": "session.create", "node": "nowhere"}))
        .await;
    assert_eq!(answer["code"], "INVALID_ARGUMENT", "{answer}");
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn any_node_serves_any_client() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let c = nats.node("c");
    let mut on_a = a.ws().await;
    let mut on_b = b.ws().await;
    let mut on_c = c.ws().await;

    // A session of A with some history, and one created through A on C.
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    on_a.chat(&id, "/stream 50\nfirst").await;
    let first = on_a.events_until_turn_end(&id).await;
    let made = on_a
        .ok(json!({"type": "session.create", "title": "made on c", "node": "c"}))
        .await;
    assert_eq!(made["session"]["node"], "c", "{made}");
    let on_c_id = made["session"]["id"].as_str().unwrap().to_string();

    // B lists both, each with its node's name; C has the one made through A.
    let (listed_a, _) = wait_listed(&mut on_b, &id, Duration::from_secs(10), |s| {
        s["lastSeq"].as_u64() == Some(first.len() as u64)
    })
    .await;
    assert_eq!(listed_a["node"], "a");
    let (listed_c, _) = wait_listed(&mut on_b, &on_c_id, Duration::from_secs(10), |_| true).await;
    assert_eq!(listed_c["node"], "c");
    let (local_c, _) = wait_listed(&mut on_c, &on_c_id, Duration::from_secs(1), |_| true).await;
    assert_eq!(local_c["title"], "made on c");

    // B replays A's session from JetStream, then follows a turn B itself starts.
    on_b.subscribe(&id, 0).await;
    let ack = on_b.recv_until(|v| v["kind"] == "chat_subscribed").await;
    assert_eq!(ack.last().map(|v| v["sessionId"].clone()), Some(json!(id)));
    let mut replayed = Vec::new();
    while (replayed.len()) < first.len() {
        let v = on_b.recv().await;
        if v["sessionId"] == id.as_str() && v.get("seq").is_some() {
            replayed.push(v);
        }
    }
    assert_eq!(replayed, first, "replay on B differs from A's history");
    let sent = on_b
        .ok(json!({"type": "chat.send", "sessionId": id, "content": "/hold from-b\nfrom b"}))
        .await;
    assert_eq!(sent["turnId"], "turn_2");
    // The same errors as on the owner: a second send while the turn runs (held on A,
    // which runs the session).
    let busy = on_b
        .request(json!({"type": "chat.send", "sessionId": id, "content": "x"}))
        .await;
    assert_eq!(busy["code"], "RUN_IN_PROGRESS", "{busy}");
    a.release("from-b").await;
    let live = on_b.events_until_turn_end(&id).await;
    assert_contiguous(&live, first.len() as u64 + 1);
    let on_owner = on_a.events_until_turn_end(&id).await;
    assert_eq!(live, on_owner, "B saw other events than A");
    let none = on_b
        .request(json!({"type": "chat.abort", "sessionId": id}))
        .await;
    assert_eq!(none["code"], "NO_ACTIVE_RUN", "{none}");
    let configured = on_b
        .ok(json!({"type": "session.configure", "sessionId": id, "title": "renamed from b"}))
        .await;
    assert_eq!(configured["session"]["title"], "renamed from b");
    assert_eq!(configured["session"]["node"], "a");
    let bad = on_b
        .request(json!({"type": "session.configure", "sessionId": id, "effort": "enormous"}))
        .await;
    assert_eq!(bad["code"], "INVALID_ARGUMENT", "{bad}");
    let missing = on_b
        .request(json!({"type": "chat.send", "sessionId": "ses_nowhere", "content": "x"}))
        .await;
    assert_eq!(missing["code"], "SESSION_NOT_FOUND", "{missing}");
    wait_listed(&mut on_c, &id, Duration::from_secs(10), |s| {
        s["title"] == "renamed from b"
    })
    .await;
    // A tool call runs as the session on its owner.
    let tool = on_b
        .ok(json!({"type": "tool.call", "sessionId": id, "name": "check_spawned_sessions", "arguments": {}}))
        .await;
    assert_eq!(tool["isError"], false, "{tool}");
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_killed_node_is_unavailable_within_its_lease_and_comes_back() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut on_a = a.ws().await;
    let mut on_b = b.ws().await;
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    // Killed mid-turn: events committed but maybe not yet published are published
    // after the restart, each once.
    on_a.chat(&id, "/stream 400\n/hold never").await;
    on_a.recv_until(|v| v["sessionId"] == id.as_str() && v["text"] == "chunk 399 ")
        .await;
    wait_listed(&mut on_b, &id, Duration::from_secs(10), |s| {
        s["node"] == "a" && s["status"] == "running"
    })
    .await;
    let dir = a.kill();
    let (down, took) = wait_listed(&mut on_b, &id, Duration::from_secs(10), |s| {
        s["nodeUnavailable"] == true
    })
    .await;
    eprintln!("node a noticed down after {took:?}");
    assert_eq!(down["node"], "a");
    // Availability is the node's, beside the session's own status: the last one
    // its node published.
    assert_eq!(down["status"], "running", "{down}");
    let refused = on_b
        .request(json!({"type": "chat.send", "sessionId": id, "content": "x"}))
        .await;
    assert_eq!(refused["code"], "NODE_UNAVAILABLE", "{refused}");
    assert_eq!(refused["sessionId"], id.as_str());
    let refused = on_b
        .request(json!({"type": "session.create", "node": "a"}))
        .await;
    assert_eq!(refused["code"], "NODE_UNAVAILABLE", "{refused}");

    // Back: the turn a kill cut off is closed, the session is listed again, and the
    // stream holds the whole history once.
    let a = nats.restart_node(dir, "a");
    let (back, _) = wait_listed(&mut on_b, &id, Duration::from_secs(15), |s| {
        s["status"] == "interrupted"
    })
    .await;
    let stored = a.all_events(&id).await;
    assert_contiguous(&stored, 1);
    assert_eq!(back["lastSeq"].as_u64(), Some(stored.len() as u64));
    assert_published(&nats, &id, stored.len() as u64).await;
    let sent = on_b
        .ok(json!({"type": "chat.send", "sessionId": id, "content": "after the restart"}))
        .await;
    assert_eq!(sent["turnId"], "turn_2");
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_nats_restart_loses_no_committed_event() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut ws = a.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    // A client of B follows the session through JetStream all along.
    let mut on_b = following(&b, &id).await;
    ws.chat(&id, "/stream 2000\n/hold nats-down\n/stream 2000\ndone")
        .await;
    ws.recv_until(|v| v["sessionId"] == id.as_str() && v["text"] == "chunk 1999 ")
        .await;
    // Down while the session commits the rest of the turn; up again on the same store.
    let mut nats = nats;
    nats.kill();
    a.release("nats-down").await;
    let events = ws.events_until_turn_end(&id).await;
    let nats = nats.start_again();
    let stored = a.all_events(&id).await;
    assert_contiguous(&stored, 1);
    assert_eq!(stored.last(), events.last());
    assert_published(&nats, &id, stored.len() as u64).await;
    // B's client got every event once, in order, whatever order the stream holds.
    let followed = on_b.events_until_turn_end(&id).await;
    assert_eq!(
        followed, stored,
        "B's client saw other events than A stored"
    );
}

/// Many events committed while the publisher waits for acks (NATS paused with
/// SIGSTOP for the time it takes 10 sessions to stream 1,000 each) reach the clients
/// of another node, every one once and in order, and the owner's lease holds. They
/// come to the publisher as one merged batch of more than 10,000 events, which it
/// sends as runs of consecutive events (see `actors/src/cluster/batch.rs`), far fewer
/// messages than events. (The cap on unacknowledged publishes, `IN_FLIGHT` in
/// `publish.rs`, that keeps async-nats's 5,000 permits from being held by the
/// publisher itself is not reached here any more: that takes more than 1,000 runs in
/// one batch, i.e. as many sessions.)
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_burst_of_events_reaches_other_nodes_and_the_lease_holds() {
    const SESSIONS: usize = 10;
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut on_a = a.ws().await;
    let mut ids = Vec::new();
    for _ in 0..SESSIONS {
        let id = on_a.create_session().await;
        on_a.subscribe(&id, 0).await;
        ids.push(id);
    }
    // A first turn each, published, so the publisher follows each session live.
    for id in &ids {
        on_a.chat(id, "warm up").await;
    }
    let mut first = Vec::new();
    for id in &ids {
        first.push(on_a.events_until_turn_end(id).await.len() as u64);
    }
    for (id, last) in ids.iter().zip(&first) {
        assert_published(&nats, id, *last).await;
    }
    // One client of B per session, each following it through JetStream.
    let mut on_b = b.ws().await;
    let mut followers = Vec::new();
    for (id, last) in ids.iter().zip(&first) {
        wait_listed(&mut on_b, id, Duration::from_secs(10), |_| true).await;
        let mut ws = b.ws().await;
        ws.subscribe(id, *last).await;
        ws.recv_until(|v| v["kind"] == "chat_subscribed").await;
        followers.push(ws);
    }
    nats.pause();
    for id in &ids {
        on_a.chat(id, "/stream 1000\ndone").await;
    }
    let mut ended = std::collections::HashSet::new();
    on_a.recv_until(|v| {
        if v["kind"] == "turn_completed" {
            ended.insert(v["sessionId"].as_str().map(str::to_string));
        }
        ended.len() == SESSIONS
    })
    .await;
    nats.resume();
    let followed = futures_util::future::join_all(
        followers
            .iter_mut()
            .zip(&ids)
            .map(|(ws, id)| ws.events_until_turn_end(id)),
    )
    .await;
    for ((id, events), last) in ids.iter().zip(followed).zip(&first) {
        let stored = a.all_events(id).await;
        assert_contiguous(&stored, 1);
        assert_eq!(
            events,
            stored[*last as usize..],
            "B's client saw other events than A stored"
        );
        assert_published(&nats, id, stored.len() as u64).await;
        // Committed together, the burst travels in runs of events, not one message
        // per event.
        let messages = nats.published(id).await.len();
        assert!(
            messages * 4 <= stored.len(),
            "{messages} messages carry {} events",
            stored.len()
        );
    }
    // A's lease holds: B forwards commands to it.
    let sent = on_b
        .ok(json!({"type": "chat.send", "sessionId": ids[0], "content": "after the burst"}))
        .await;
    assert_eq!(sent["turnId"], "turn_3");
}

/// A backlog that reaches node B at once (NATS paused while A commits a long turn,
/// then let go) goes into B's copy no faster than B's clients take it, as a local
/// session's events do: a client of B that reads along is never told it lagged, even
/// with the smallest byte budget, and gets every event once, in order. (B's mirror
/// waits at its copy's flow gate, `actors/src/cluster/mirror.rs`; before it did, the
/// backlog was written as fast as it was read, committed in batches of a thousand
/// events and more, and the second such batch found the first still queued for the
/// client and lagged it: `a_nats_restart_loses_no_committed_event` then waited for
/// frames that never came.)
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_backlog_reaches_a_client_of_another_node_that_reads_along_without_a_lag() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node_with(
        "b",
        &["--client-queue-bytes".into(), (64 << 10).to_string()],
    );
    let mut on_a = a.ws().await;
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    let mut on_b = following(&b, &id).await;
    on_b.recv_until(|v| v["kind"] == "chat_subscribed").await;
    // Everything is committed on A while NATS is stopped, and reaches B together.
    nats.pause();
    on_a.chat(&id, "/stream 4000\ndone").await;
    let committed = on_a.events_until_turn_end(&id).await;
    nats.resume();
    let frames = on_b
        .recv_until(|v| {
            v["kind"] == "lagged"
                || (v["kind"] == "turn_completed" && v["sessionId"] == id.as_str())
        })
        .await;
    let lagged = frames.iter().find(|v| v["kind"] == "lagged");
    assert!(lagged.is_none(), "B's client lagged: {lagged:?}");
    let followed: Vec<Value> = frames
        .into_iter()
        .filter(|v| v["sessionId"] == id.as_str() && v.get("seq").is_some())
        .collect();
    let stored = a.all_events(&id).await;
    assert_contiguous(&stored, 1);
    assert_eq!(stored.last(), committed.last());
    assert_eq!(
        followed, stored,
        "B's client saw other events than A stored"
    );
    assert_eq!(b.metric("tandem_lagged_notices_total").await, 0);
}

/// A commit that fails on node B while B copies a session of node A leaves no hole in
/// B's copy. B's writer drops the copy's writes from the failed commit on until B's
/// mirror has restarted from what B's store holds (as a local session reloads before
/// it writes again), so the lost events are written again before any later one: B's
/// client that follows along gets every event once, in order, without a lag, and a
/// client that subscribes afterwards replays the same from B's store.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_failed_commit_on_the_copying_node_leaves_no_hole_in_its_copy() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut on_a = a.ws().await;
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    let mut on_b = following(&b, &id).await;
    on_b.recv_until(|v| v["kind"] == "chat_subscribed").await;
    // B's next commit fails: the first of the copy's, while the turn streams.
    b.failpoint("store.commit", "1*return").await;
    on_a.chat(&id, "/stream 3000\ndone").await;
    let committed = on_a.events_until_turn_end(&id).await;
    let stored = a.all_events(&id).await;
    assert_contiguous(&stored, 1);
    assert_eq!(stored.last(), committed.last());
    let frames = on_b
        .recv_until(|v| {
            v["kind"] == "lagged"
                || (v["kind"] == "turn_completed" && v["sessionId"] == id.as_str())
        })
        .await;
    assert!(
        b.metric("tandem_store_failed_events_total").await > 0,
        "no commit of the copy failed on B"
    );
    let lagged = frames.iter().find(|v| v["kind"] == "lagged");
    assert!(lagged.is_none(), "B's client lagged: {lagged:?}");
    let followed: Vec<Value> = frames
        .into_iter()
        .filter(|v| v["sessionId"] == id.as_str() && v.get("seq").is_some())
        .collect();
    assert_eq!(
        followed, stored,
        "B's client saw other events than A stored"
    );
    // B's store holds the copy whole.
    let mut late = b.ws().await;
    late.subscribe(&id, 0).await;
    let replayed = late
        .recv_until(|v| {
            v["kind"] == "lagged"
                || (v["kind"] == "turn_completed" && v["sessionId"] == id.as_str())
        })
        .await;
    let replayed: Vec<Value> = replayed
        .into_iter()
        .filter(|v| v["sessionId"] == id.as_str() && v.get("seq").is_some())
        .collect();
    assert_eq!(replayed, stored, "B's copy differs from what A stored");
}

/// Waits for the next `permission_request` of `session` on `ws`; returns its id.
async fn next_permission(ws: &mut WsClient, session: &str) -> String {
    let frames = ws
        .recv_until(|v| v["kind"] == "permission_request" && v["sessionId"] == session)
        .await;
    let last = frames.last().cloned().unwrap();
    last["requestId"].as_str().unwrap().to_string()
}

/// The `chat_subscribed` a fresh client of `server` gets for `session`.
async fn first_ack(server: &Server, session: &str) -> Value {
    let mut ws = server.ws().await;
    ws.subscribe(session, 0).await;
    let frames = ws
        .recv_until(|v| v["kind"] == "chat_subscribed" && v["sessionId"] == session)
        .await;
    frames.last().cloned().unwrap()
}

/// A client of B subscribing to A's session is told what a client of A is: the
/// pending permission request, the remembered rule and the queued message, which
/// live only on A (B asks A for them). And answering the request from B (routed by
/// `sessionId`) lets the turn go on.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_remote_subscription_starts_as_a_local_one() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut on_a = a.ws().await;
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    // A rule: Bash always allowed in this session.
    on_a.ok(
        json!({"type": "chat.send", "sessionId": id, "content": "/ask Bash {\"command\":\"ls\"}"}),
    )
    .await;
    let asked = next_permission(&mut on_a, &id).await;
    let answer = on_a
        .request_with_id(
            json!({"type": "chat.permission-response", "requestId": asked,
            "sessionId": id, "allow": true, "remember": "session"}),
        )
        .await;
    assert_eq!(answer["kind"], "reply", "{answer}");
    on_a.events_until_turn_end(&id).await;
    // A request left pending, and a message queued behind it.
    on_a.chat(&id, "/ask Edit {\"file\":\"a\"}").await;
    let pending = next_permission(&mut on_a, &id).await;
    let queued = on_a
        .ok(json!({"type": "chat.send", "sessionId": id, "content": "later", "queue": true}))
        .await;
    assert_eq!(queued["queued"], true, "{queued}");

    let local = first_ack(&a, &id).await;
    assert_eq!(
        local["pendingPermissions"][0]["requestId"],
        pending.as_str()
    );
    assert_eq!(
        local["permissionRules"].as_array().map(Vec::len),
        Some(1),
        "{local}"
    );
    assert_eq!(local["queued"].as_array().map(Vec::len), Some(1), "{local}");
    let mut on_b = b.ws().await;
    wait_listed(&mut on_b, &id, Duration::from_secs(10), |_| true).await;
    let remote = first_ack(&b, &id).await;
    assert_eq!(remote, local, "B's chat_subscribed differs from A's");

    // Answered from B: the turn goes on, then the queued message runs.
    on_b.subscribe(&id, local["lastSeq"].as_u64().unwrap())
        .await;
    let answer = on_b
        .request_with_id(
            json!({"type": "chat.permission-response", "requestId": pending,
            "sessionId": id, "allow": true}),
        )
        .await;
    assert_eq!(answer["kind"], "reply", "{answer}");
    let rest = on_b.events_until_turn_end(&id).await;
    assert!(
        rest.iter()
            .any(|e| e["kind"] == "assistant_message" && e["text"] == "allowed Edit"),
        "{rest:?}"
    );
    let next = on_b.events_until_turn_end(&id).await;
    assert_eq!(
        next.first().map(|e| e["turnId"].clone()),
        Some(json!("turn_3"))
    );
}

/// REST reads and commands on B for a session of A answer as A answers them (the
/// request runs on A), errors included; with A down they are `503 NODE_UNAVAILABLE`.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn rest_for_a_remote_session_runs_on_its_owner() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut on_a = a.ws().await;
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    on_a.chat(&id, "/stream 30\nfirst").await;
    let first = on_a.events_until_turn_end(&id).await;
    let mut on_b = b.ws().await;
    wait_listed(&mut on_b, &id, Duration::from_secs(10), |s| {
        s["lastSeq"].as_u64() == Some(first.len() as u64)
    })
    .await;
    let session = format!("/api/v1/sessions/{id}");

    // Reads: the session, history pages, their errors, queue and usage.
    for path in [
        session.clone(),
        format!("{session}/events?after=5&limit=10"),
        format!("{session}/events?after=99999999999999999999"),
        format!("{session}/queue"),
        format!("{session}/usage"),
        format!("{session}/schedules"),
        "/api/v1/sessions/ses_nowhere/events".to_string(),
    ] {
        let on_owner = a.get(&path).await;
        assert_eq!(b.get(&path).await, on_owner, "GET {path}");
    }
    let (status, page) = b.get(&format!("{session}/events?after=5&limit=10")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["events"].as_array().map(Vec::len), Some(10), "{page}");
    assert_eq!(b.all_events(&id).await, first);

    // Commands: a message, the same refusal while its turn runs, an interrupt.
    let (status, sent) = b
        .post(
            &format!("{session}/messages"),
            &json!({"content": "/hold never\nslow"}),
        )
        .await;
    assert_eq!(
        (status, sent["turnId"].clone()),
        (202, json!("turn_2")),
        "{sent}"
    );
    let (status, busy) = b
        .post(&format!("{session}/messages"), &json!({"content": "x"}))
        .await;
    assert_eq!(
        (status, busy["error"]["code"].clone()),
        (409, json!("RUN_IN_PROGRESS")),
        "{busy}"
    );
    let (status, bad) = b
        .post_raw(&format!("{session}/messages"), "{not json")
        .await;
    assert_eq!(
        (status, bad["error"]["code"].clone()),
        (400, json!("INVALID_JSON")),
        "{bad}"
    );
    let (status, stopped) = b.post(&format!("{session}/interrupt"), &json!({})).await;
    assert_eq!(status, 202, "{stopped}");
    let turn = on_a.events_until_turn_end(&id).await;
    assert_eq!(
        turn.last().map(|e| e["status"].clone()),
        Some(json!("interrupted"))
    );

    // Configure, and a permission answered over REST on B.
    let (status, info) = b.patch(&session, &json!({"title": "renamed on b"})).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(
        (info["title"].clone(), info["node"].clone()),
        (json!("renamed on b"), json!("a"))
    );
    let (status, bad) = b.patch(&session, &json!({"effort": "enormous"})).await;
    assert_eq!(
        (status, bad["error"]["code"].clone()),
        (400, json!("INVALID_ARGUMENT")),
        "{bad}"
    );
    b.post(
        &format!("{session}/messages"),
        &json!({"content": "/ask Bash {\"command\":\"ls\"}"}),
    )
    .await;
    let asked = next_permission(&mut on_a, &id).await;
    let (status, answered) = b
        .post(
            &format!("{session}/permissions/{asked}"),
            &json!({"allow": true}),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    let turn = on_a.events_until_turn_end(&id).await;
    assert!(
        turn.iter()
            .any(|e| e["kind"] == "assistant_message" && e["text"] == "allowed Bash"),
        "{turn:?}"
    );
    let (status, again) = b
        .post(
            &format!("{session}/permissions/{asked}"),
            &json!({"allow": true}),
        )
        .await;
    assert_eq!(
        (status, again["error"]["code"].clone()),
        (404, json!("NO_SUCH_PERMISSION")),
        "{again}"
    );

    // The owner down: its session's routes say so.
    let _dir = a.kill();
    wait_listed(&mut on_b, &id, Duration::from_secs(15), |s| {
        s["nodeUnavailable"] == true
    })
    .await;
    let (status, down) = b.get(&session).await;
    assert_eq!(
        (status, down["error"]["code"].clone()),
        (503, json!("NODE_UNAVAILABLE")),
        "{down}"
    );
    let (status, down) = b
        .post(&format!("{session}/messages"), &json!({"content": "x"}))
        .await;
    assert_eq!(
        (status, down["error"]["code"].clone()),
        (503, json!("NODE_UNAVAILABLE")),
        "{down}"
    );
}

/// NATS down for a whole turn: what the node committed meanwhile is published once
/// NATS is back (from SQLite, after the last seq JetStream holds), each event once,
/// and a client of another node gets all of it in order. (The restart test above
/// brings NATS back at once, so the node may publish everything live; here nothing
/// can be.)
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn events_committed_while_nats_is_down_are_published_when_it_is_back() {
    let mut nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut ws = a.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "/stream 100\nbefore").await;
    let before = ws.events_until_turn_end(&id).await;
    assert_published(&nats, &id, before.len() as u64).await;
    let mut on_b = following(&b, &id).await;
    let replayed = on_b.events_until_turn_end(&id).await;
    assert_eq!(replayed, before);

    nats.kill();
    ws.chat(&id, "/stream 500\nwhile down").await;
    let during = ws.events_until_turn_end(&id).await;
    assert_contiguous(&during, before.len() as u64 + 1);
    let nats = nats.start_again();
    let stored = a.all_events(&id).await;
    assert_contiguous(&stored, 1);
    assert_published(&nats, &id, stored.len() as u64).await;
    let followed = on_b.events_until_turn_end(&id).await;
    assert_eq!(
        followed, during,
        "B's client saw other events than A committed"
    );
}

/// A node that crashed right after a broken NATS connection can leave a hole below
/// the last seq JetStream holds for a session (the messages in flight on the broken
/// connection are lost, later ones went out on the next), and a resend after the
/// duplicate window can leave a second copy. When the node starts again, it finds
/// both from the stream itself: the missing seqs are published, the extra copy is
/// deleted, and a client of another node follows the session without a gap.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_restarted_node_fills_the_holes_its_crash_left_in_the_stream() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let mut ws = a.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "/stream 50\ndone").await;
    ws.events_until_turn_end(&id).await;
    let stored = a.all_events(&id).await;
    let last = stored.len() as u64;
    assert_published(&nats, &id, last).await;
    drop(ws);
    let dir = a.kill();
    nats.damage(&id, &[3, 4, 40], 2).await;
    let a = nats.restart_node(dir, "a");
    assert_published(&nats, &id, last).await;
    // A node that copies the session from JetStream gets it whole.
    let b = nats.node("b");
    let mut on_b = b.ws().await;
    wait_listed(&mut on_b, &id, Duration::from_secs(10), |s| {
        s["nodeUnavailable"] != true
    })
    .await;
    on_b.subscribe(&id, 0).await;
    let copied = on_b.events_until_turn_end(&id).await;
    assert_eq!(copied, stored, "B's copy differs from what A stored");
    drop(a);
}

/// Uploads belong to the node that took them and a message is resolved on its
/// session's node: a client of node B attaches B's uploads to a message for a
/// session of node A (over WebSocket and REST), and the page's thumbnails of that
/// session are served through B. The image is larger than a NATS message (1 MiB by
/// default), so it moves in parts both ways.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn uploads_on_one_node_reach_a_session_on_another() {
    use tandem_tests::images::PNG;
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let id = a.ws().await.create_session().await;
    let mut on_b = following(&b, &id).await;

    // A PNG of 2.5 MB: the signature and header of a real one, then filler.
    let mut big = PNG.to_vec();
    big.extend((0..2_500_000u32).map(|i| (i % 251) as u8));
    let (status, png) = b
        .post_bytes("/api/v1/uploads?name=big.png", "image/png", big.clone())
        .await;
    assert_eq!(status, 201, "{png}");
    let png_id = png["uploadId"].as_str().unwrap().to_string();
    on_b.ok(json!({"type": "chat.send", "sessionId": id, "content": [
        {"type": "text", "text": "look"},
        {"type": "image", "uploadId": png_id},
    ]}))
    .await;
    let events = on_b.events_until_turn_end(&id).await;
    assert_eq!(events.last().unwrap()["status"], "completed", "{events:?}");
    let said = format!("received image {png_id} (image/png, {} bytes)", big.len());
    assert!(
        events.iter().any(|e| e["text"] == said.as_str()),
        "the agent on A did not get the image: {events:?}"
    );

    // REST through B, with a text file uploaded on B.
    let (status, notes) = b
        .post_bytes(
            "/api/v1/uploads?name=notes.txt",
            "text/plain",
            b"the notes from b\n".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{notes}");
    let (status, body) = b
        .post(
            &format!("/api/v1/sessions/{id}/messages"),
            &json!({"content": [{"type": "file", "uploadId": notes["uploadId"]}]}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let events = on_b.events_until_turn_end(&id).await;
    assert!(
        events.iter().any(|e| e["text"] == "the notes from b"),
        "the agent on A did not get the file: {events:?}"
    );

    // The thumbnail through B: A's bytes, whole, as A serves them.
    let (status, content_type, bytes) = b
        .get_bytes(&format!("/api/v1/sessions/{id}/uploads/{png_id}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "image/png");
    assert!(
        bytes == big,
        "B served {} bytes, not the upload",
        bytes.len()
    );
    // What A does not have is A's own refusal.
    let unknown = format!("up_{}", "0".repeat(64));
    let (status, body) = b
        .get(&format!("/api/v1/sessions/{id}/uploads/{unknown}"))
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "NO_SUCH_UPLOAD");
    let refused = on_b
        .request(json!({"type": "chat.send", "sessionId": id, "content": [
            {"type": "image", "uploadId": unknown},
        ]}))
        .await;
    assert_eq!(refused["code"], "NO_SUCH_UPLOAD", "{refused}");
}

/// The queue of another node's session is steered from this node like a local one:
/// queued, listed, edited and cancelled through node B for a session of node A.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn the_queue_of_a_remote_session_is_steered_from_any_node() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let id = a.ws().await.create_session().await;
    let mut on_b = b.ws().await;
    wait_listed(&mut on_b, &id, Duration::from_secs(10), |_| true).await;
    on_b.chat(&id, "/hold never").await;
    for text in ["first", "second"] {
        let r = on_b
            .ok(json!({"type": "chat.send", "sessionId": id, "content": text, "queue": true}))
            .await;
        assert_eq!(r["queued"], true, "{r}");
    }
    let (status, list) = b.get(&format!("/api/v1/sessions/{id}/queue")).await;
    assert_eq!(status, 200, "{list}");
    let queued = list["queued"].as_array().unwrap().clone();
    assert_eq!(queued.len(), 2, "{list}");
    let first = queued[0]["queueId"].as_str().unwrap();
    let second = queued[1]["queueId"].as_str().unwrap();
    let edited = on_b
        .ok(json!({"type": "chat.queue-edit", "sessionId": id, "queueId": second, "content": "second, edited"}))
        .await;
    assert_eq!(edited["queued"][1]["text"], "second, edited", "{edited}");
    let cancelled = on_b
        .ok(json!({"type": "chat.queue-cancel", "sessionId": id, "queueId": first}))
        .await;
    assert_eq!(
        cancelled["queued"].as_array().unwrap().len(),
        1,
        "{cancelled}"
    );
    // A's own view is the same queue.
    let (_, on_a) = a.get(&format!("/api/v1/sessions/{id}/queue")).await;
    assert_eq!(on_a["queued"], cancelled["queued"]);
    let missing = on_b
        .request(json!({"type": "chat.queue-cancel", "sessionId": id, "queueId": "q_nope"}))
        .await;
    assert_eq!(missing["code"], "NO_SUCH_QUEUED_MESSAGE", "{missing}");
}

/// `GET /sessions/running` on any node lists every node's busy sessions (the page's
/// running panel), each once, and stops listing one when its turn ends.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn every_node_lists_the_running_sessions_of_all() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let mut on_a = a.ws().await;
    let id = on_a.create_session().await;
    let idle = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    on_a.chat(&id, "/hold never").await;
    let listed = tandem_tests::eventually("B lists A's running session", async || {
        let (status, body) = b.get("/api/v1/sessions/running").await;
        assert_eq!(status, 200, "{body}");
        let sessions = body["sessions"].as_array().unwrap().clone();
        sessions
            .iter()
            .any(|s| s["sessionId"] == id.as_str())
            .then_some(sessions)
    })
    .await;
    assert_eq!(listed.len(), 1, "only the busy session, once: {listed:?}");
    assert_eq!(listed[0]["vendor"], "scripted");
    assert!(listed.iter().all(|s| s["sessionId"] != idle.as_str()));
    on_a.ok(json!({"type": "chat.abort", "sessionId": id}))
        .await;
    on_a.events_until_turn_end(&id).await;
    tandem_tests::eventually("B stops listing it", async || {
        let (_, body) = b.get("/api/v1/sessions/running").await;
        body["sessions"]
            .as_array()
            .unwrap()
            .is_empty()
            .then_some(())
    })
    .await;
}

/// `POST /api/v1/sessions` with `node` creates the session on that node, as
/// `session.create` does; a node the cluster does not have is refused, not ignored.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn rest_creates_a_session_on_the_node_it_names() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let (status, created) = a
        .post(
            "/api/v1/sessions",
            &json!({"title": "made through a", "node": "b"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["node"], "b");
    let id = created["id"].as_str().unwrap();
    let (status, on_b) = b.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{on_b}");
    assert_eq!(on_b["title"], "made through a");
    let (status, refused) = a
        .post("/api/v1/sessions", &json!({"node": "nowhere"}))
        .await;
    // Well formed, naming a node this cluster does not have: 422.
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "INVALID_ARGUMENT");
    // Outside a cluster only no node (or none at all) is taken.
    let single = tandem_tests::Server::start();
    let (status, refused) = single.post("/api/v1/sessions", &json!({"node": "b"})).await;
    assert_eq!(status, 422, "{refused}");
}

/// Reads follow writes across nodes: a session created through B on A is in B's list
/// and can be subscribed to on B as soon as the create answers (B learns it from the
/// answer), and a third node asked for it at once finds it (the owner puts it in the
/// directory before answering, and a node asks the directory before answering
/// `SESSION_NOT_FOUND`). No waiting anywhere: each read comes right after the create.
#[actix_rt::test]
async fn reads_follow_writes_across_nodes() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let c = nats.node("c");
    let mut on_b = b.ws().await;
    for round in 0..5 {
        let title = format!("round {round}");
        let id = if round % 2 == 0 {
            let made = on_b
                .ok(json!({"type": "session.create", "title": title, "node": "a"}))
                .await;
            made["session"]["id"].as_str().unwrap().to_string()
        } else {
            let (status, made) = b
                .post("/api/v1/sessions", &json!({"title": title, "node": "a"}))
                .await;
            assert_eq!(status, 201, "{made}");
            made["id"].as_str().unwrap().to_string()
        };
        let (status, on_c) = c.get(&format!("/api/v1/sessions/{id}")).await;
        assert_eq!(status, 200, "round {round}: C does not find it: {on_c}");
        assert_eq!(on_c["node"], "a");
        let page = on_b
            .ok(json!({"type": "sessions.list", "limit": 1000}))
            .await;
        let ids: Vec<&str> = page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert!(
            ids.contains(&id.as_str()),
            "round {round}: B does not list it"
        );
        let reply = on_b
            .ok(json!({"type": "chat.subscribe", "sessions": [{"sessionId": id}]}))
            .await;
        assert_eq!(reply["subscribed"], json!([id]), "round {round}: {reply}");
    }
    let (status, missing) = c.get("/api/v1/sessions/ses_nowhere").await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["code"], "SESSION_NOT_FOUND");
    drop(a);
}

/// A session's MCP token is known only on its node: asked through another node, the
/// answer names the session's node's `/mcp`, and the token works there.
#[actix_rt::test]
async fn the_mcp_token_of_another_nodes_session_names_that_nodes_endpoint() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let (status, made) = b
        .post("/api/v1/sessions", &json!({"title": "on a", "node": "a"}))
        .await;
    assert_eq!(status, 201, "{made}");
    let id = made["id"].as_str().unwrap();
    let (status, token) = b
        .post(&format!("/api/v1/sessions/{id}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 200, "{token}");
    assert_eq!(token["url"], json!(format!("{}/mcp", a.base)), "{token}");
    let mut answer = awc::Client::default()
        .post(token["url"].as_str().unwrap())
        .bearer_auth(token["token"].as_str().unwrap())
        .send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let listed: Value = answer.json().await.unwrap();
    assert!(listed["result"]["tools"].is_array(), "{listed}");
}
