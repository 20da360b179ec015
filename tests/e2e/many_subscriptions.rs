//! Clients that each watch many busy sessions at once (a dashboard) and keep reading,
//! more slowly than the sessions produce: when a client's queue overflows, every busy
//! subscription of it lags at the same moment. The server must tell it where to resume
//! each one and never close it; resubscribing, it gets every event of every session.

use std::time::{Duration, Instant};

use serde_json::json;
use tandem_tests::bench::fanout::{subscribed_client, Reader};
use tandem_tests::{Server, ServerOptions};

/// Sessions streaming at once; every client watches all of them.
const SESSIONS: usize = 10;
/// Clients.
const CLIENTS: usize = 4;
/// Each session's turn: big lines (several MB per client in all, more than loopback
/// sockets buffer, so a client that pauses backs up into the server's queue), then
/// many small events.
const LINES: usize = 100;
const LINE_BYTES: usize = 8 << 10;
const SMALL_EVENTS: u64 = 1000;
/// Each client stops reading for [`PAUSE`] after every this many frames: it keeps
/// reading, but falls behind the sessions, so its small queue overflows.
const PAUSE_EVERY: u64 = 500;
const PAUSE: Duration = Duration::from_millis(200);

/// The script every session runs.
fn script() -> String {
    let mut lines: Vec<String> = (0..LINES)
        .map(|l| {
            let mut line = format!("line {l} ");
            line.extend(std::iter::repeat_n('x', LINE_BYTES - line.len()));
            line
        })
        .collect();
    lines.push(format!("/stream {SMALL_EVENTS}"));
    lines.join("\n")
}

#[actix_rt::test]
async fn clients_watching_ten_busy_sessions_lag_but_are_never_closed() {
    let server = Server::start_with(ServerOptions {
        // The smallest per-client budget the server takes: lags come early.
        args: ["--client-queue-bytes", "65536"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(ws.create_session().await);
    }
    let url = server.ws_url();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(
            subscribed_client(&url, &sessions)
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        );
    }
    let reader = Reader {
        expected_per_session: 0,
        sample_id: None,
        deadline: Instant::now() + Duration::from_secs(90),
        pause: Some((PAUSE_EVERY, PAUSE)),
    };
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| {
            let (reader, sessions) = (reader.clone(), sessions.clone());
            actix_rt::spawn(async move { reader.receive(client, &sessions).await })
        })
        .collect();
    for sid in &sessions {
        let (status, body) = server
            .post(
                &format!("/api/v1/sessions/{sid}/messages"),
                &json!({"content": script()}),
            )
            .await;
        assert_eq!(status, 202, "{body}");
    }
    let mut lagged = 0;
    for task in tasks {
        let seen = task
            .await
            .unwrap_or_else(|e| panic!("client task: {e}"))
            .unwrap_or_else(|e| panic!("client: {e}"));
        assert_eq!(seen.closes(), 0, "a client that keeps reading was closed");
        assert_eq!(seen.gaps(), 0, "events out of sequence");
        let mut events = 0;
        for (sid, next) in &seen.next_seq {
            let (status, page) = server
                .get(&format!("/api/v1/sessions/{sid}/events?after=0&limit=1"))
                .await;
            assert_eq!(status, 200, "{page}");
            let last = page["lastSeq"]
                .as_u64()
                .unwrap_or_else(|| panic!("no lastSeq in {page}"));
            assert_eq!(*next, last + 1, "{sid}: events missing");
            events += last;
        }
        assert_eq!(
            seen.delivered(),
            events,
            "every event of every session, once"
        );
        lagged += seen.lagged();
    }
    eprintln!("{CLIENTS} clients × {SESSIONS} sessions: {lagged} lagged notices, 0 closes");
    // Otherwise the test did not exercise what it is about.
    assert!(lagged > 0, "no client ever lagged");
    let (_, text) = server.get_text("/metrics").await;
    let closed =
        tandem_tests::bench::server::metric_value(&text, "tandem_clients_closed_slow_total");
    assert_eq!(closed, Some(0.0), "the server closed a client as slow");
}
