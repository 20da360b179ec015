//! Per-client byte budgets and the server-wide cap: an event larger than a client's
//! budget still reaches a client that keeps up, a replay catches up through the ring
//! in pieces that fit the budget, and past the server-wide cap the client furthest
//! behind is evicted.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::bench::server::metric_value;
use tandem_tests::raw_socket::{client_frame, upgrade};
use tandem_tests::{eventually_within, Server, ServerOptions};

use crate::assert_contiguous;

fn options(args: &[&str]) -> ServerOptions {
    ServerOptions {
        args: args.iter().map(|a| a.to_string()).collect(),
        ..ServerOptions::default()
    }
}

#[actix_rt::test]
async fn an_event_larger_than_the_budget_reaches_a_client_that_keeps_up() {
    // A 256 KiB budget (the default); the line is 900 KB (its deltas 300 KB each).
    let server = Server::start_with(options(&["--client-queue-bytes", "262144"]));
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    let line = "z".repeat(900_000);
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": line}))
        .await;
    // Events this large may still cost a `lagged` when two arrive back to back (the
    // first has not left the queue yet); the client resubscribes as the protocol says
    // and gets everything, each event delivered whole into its emptied queue.
    let mut received: Vec<Value> = Vec::new();
    let mut lags = 0;
    loop {
        let frame = ws.recv().await;
        match frame["kind"].as_str() {
            Some("lagged") => {
                lags += 1;
                assert!(lags <= 10, "keeps lagging");
                let resume = frame["resumeFrom"].as_u64().unwrap_or(1);
                ws.subscribe(&id, resume - 1).await;
            }
            Some("turn_completed") => {
                received.push(frame);
                break;
            }
            _ if frame.get("seq").is_some() => received.push(frame),
            _ => {}
        }
    }
    assert_contiguous(&received, 1);
    let message = received
        .iter()
        .find(|f| f["kind"] == "assistant_message")
        .and_then(|f| f["text"].as_str())
        .map(str::len);
    assert_eq!(message, Some(900_000));
    eprintln!("lagged {lags} times on the way");
}

#[actix_rt::test]
async fn a_replay_catches_up_through_a_ring_larger_than_the_budget() {
    let server = Server::start_with(options(&["--client-queue-bytes", "65536"]));
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.chat(&id, "/stream 5000").await;
    // Wait for the turn to end (through REST: nothing is subscribed yet).
    eventually_within("the turn to end", Duration::from_secs(30), async || {
        let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
        (info["status"] == "idle").then_some(())
    })
    .await;
    // From the start: store pages, then the ring's tail (about 80 KB, more than the
    // 64 KiB budget) in pieces, then live.
    ws.subscribe(&id, 0).await;
    let events: Vec<Value> = ws
        .recv_until(|v| v["kind"] == "turn_completed" || v["kind"] == "lagged")
        .await
        .into_iter()
        .filter(|v| v.get("seq").is_some())
        .collect();
    assert_eq!(
        events.last().map(|e| e["kind"].clone()),
        Some(json!("turn_completed"))
    );
    assert_contiguous(&events, 1);
    // And it is live afterwards.
    ws.chat(&id, "again").await;
    let more = ws.events_until_turn_end(&id).await;
    assert_contiguous(&more, events.len() as u64 + 1);
}

/// A raw WebSocket client that subscribes to `session` and never reads.
fn never_reading(server: &Server, session: &str) -> TcpStream {
    let mut stream = upgrade(&server.base, None);
    let text =
        json!({"type": "chat.subscribe", "sessions": [{"sessionId": session, "lastSeq": 0}]})
            .to_string();
    stream
        .write_all(&client_frame(&text))
        .unwrap_or_else(|e| panic!("{e}"));
    stream
}

#[actix_rt::test]
async fn past_the_server_wide_cap_the_client_furthest_behind_is_evicted() {
    // Budgets of 1 MiB each, 1.5 MiB for all: two clients that stop reading cannot
    // both fill theirs. The stall limit is far away, so only the cap can evict.
    let server = Server::start_with(options(&[
        "--client-queue-bytes",
        "1048576",
        "--total-queue-bytes",
        "1572864",
        "--client-stall-secs",
        "600",
    ]));
    let (_, created) = server.post("/api/v1/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap().to_string();
    let _a = never_reading(&server, &id);
    let _b = never_reading(&server, &id);
    let (status, _) = server
        .post(
            &format!("/api/v1/sessions/{id}/messages"),
            &json!({"content": "/stream 300000"}),
        )
        .await;
    assert_eq!(status, 202);
    eventually_within(
        "a client to be evicted",
        Duration::from_secs(30),
        async || {
            let (_, text) = server.get_text("/metrics").await;
            let closed = metric_value(&text, "tandem_clients_closed_slow_total").unwrap_or(0.0);
            let queued = metric_value(&text, "tandem_client_queued_bytes").unwrap_or(0.0);
            assert!(queued <= 1_572_864.0 + 1_048_576.0, "queued {queued} bytes");
            (closed >= 1.0).then_some(())
        },
    )
    .await;
}
