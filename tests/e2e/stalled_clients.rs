//! A client that stops reading is really disconnected, from outside its actor, and
//! everything queued for it is released; what it sends afterwards is refused.
//!
//! The clients here are raw TCP sockets with a tiny receive buffer that complete the
//! WebSocket handshake, subscribe, and never read again.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;
use tandem_tests::raw_socket::{client_frame, rss_kib, upgrade};
use tandem_tests::{eventually_within, Server, ServerOptions};

/// Connects with a 4 KiB receive buffer, upgrades, subscribes to `session` and
/// returns the socket without reading anything more.
fn never_reading_client(server: &Server, session: &str) -> TcpStream {
    let mut stream = upgrade(&server.base, Some(4096));
    let subscribe =
        json!({"type": "chat.subscribe", "sessions": [{"sessionId": session, "lastSeq": 0}]});
    stream
        .write_all(&client_frame(&subscribe.to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    stream
}

/// A new session's id.
async fn new_session(server: &Server) -> String {
    let (_, created) = server.post("/api/v1/sessions", &json!({})).await;
    created["id"].as_str().unwrap().to_string()
}

/// Starts a turn that streams `chunks` small `text_delta`s (about 80 bytes each).
async fn start_turn(server: &Server, id: &str, chunks: usize) {
    let script = format!("/stream {chunks}");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{id}/messages"),
            &json!({"content": script}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

/// Waits until the server holds no WebSocket client and no queued byte.
async fn until_released(server: &Server, within: Duration) {
    eventually_within(
        "no WebSocket client and no queued byte",
        within,
        async || {
            let clients = server.metric("tandem_ws_clients").await;
            let queued = server.metric("tandem_client_queued_bytes").await;
            (clients == 0 && queued == 0).then_some(())
        },
    )
    .await;
}

fn options() -> ServerOptions {
    ServerOptions {
        args: [
            "--client-stall-secs",
            "2",
            "--client-queue-bytes",
            "1048576",
        ]
        .map(String::from)
        .to_vec(),
        ..ServerOptions::default()
    }
}

/// After eviction the socket ends: reads reach EOF (or a reset) once what the kernel
/// buffered is drained, and nothing the client sends is taken.
fn assert_disconnected(mut stream: TcpStream) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let _ = stream.write_all(&client_frame(r#"{"type":"ping"}"#));
    let mut rest = Vec::new();
    let n = stream.read_to_end(&mut rest).unwrap_or(0);
    assert_eq!(n, 0, "the server answered after disconnecting");
}

#[actix_rt::test]
async fn a_client_that_never_reads_is_disconnected_and_released() {
    let server = Server::start_process(options());
    let id = new_session(&server).await;
    let stream = never_reading_client(&server, &id);
    // Enough output to fill the socket's buffers several times over.
    start_turn(&server, &id, 400_000).await;
    until_released(&server, Duration::from_secs(30)).await;
    assert!(server.metric("tandem_clients_closed_slow_total").await >= 1);
    assert_disconnected(stream);
    // Everyone else is served as before.
    let mut ws = server.ws().await;
    ws.create_session().await;
}

/// One round: 200 clients subscribe and never read while a turn streams; returns the
/// server's RSS once all of them are gone.
async fn round_of_two_hundred(server: &Server, id: &str) -> u64 {
    let before = server.metric("tandem_clients_closed_slow_total").await;
    let streams: Vec<TcpStream> = (0..200).map(|_| never_reading_client(server, id)).collect();
    start_turn(server, id, 100_000).await;
    eventually_within(
        "every client to be disconnected",
        Duration::from_secs(30),
        async || {
            let closed = server.metric("tandem_clients_closed_slow_total").await;
            (closed >= before + 200).then_some(())
        },
    )
    .await;
    until_released(server, Duration::from_secs(30)).await;
    for stream in streams {
        assert_disconnected(stream);
    }
    rss_kib(server.pid())
}

#[actix_rt::test]
async fn two_hundred_clients_that_never_read_are_all_released() {
    let server = Server::start_process(options());
    let id = new_session(&server).await;
    let baseline = rss_kib(server.pid());
    let first = round_of_two_hundred(&server, &id).await;
    let second = round_of_two_hundred(&server, &id).await;
    let third = round_of_two_hundred(&server, &id).await;
    eprintln!("server RSS: baseline {baseline} KiB, after rounds {first} / {second} / {third} KiB");
    // Every queued byte is released (checked in each round). The allocator keeps
    // freed pages for reuse (and SQLite's page caches likely grow with the history), so RSS
    // stays near its high-water mark instead of falling to the idle baseline. What
    // must not happen is that a round's queued data stays: each round queues up to
    // 200 clients × 1 MiB, so a leak would add about 200 MiB per round; the third
    // round must add less than half that.
    assert!(
        third < second + 100 * 1024,
        "memory grows with stalled clients: {second} KiB, then {third} KiB"
    );
}
