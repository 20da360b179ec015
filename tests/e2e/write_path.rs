//! The WebSocket write path: everything the server sends a client (events, replies,
//! session-list pages) waits in one queue charged to the client's byte budget until
//! the socket takes it, and a client whose token is revoked stops receiving even when
//! it only listens.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::json;
use tandem_tests::raw_socket::{client_frame, rss_kib, upgrade};
use tandem_tests::{Server, ServerOptions};

/// Sessions to list, and page requests the client makes without reading.
const SESSIONS: usize = 1000;
const PAGES: usize = 300;
const BUDGET: u64 = 64 << 10;

/// A client that asks for many large session-list pages and never reads cannot make
/// the server hold more than its budget (plus one page) for it, and it is
/// disconnected once it stalls. Before the write path was owned, pages went to
/// actix's buffers outside any budget: the server grew by hundreds of megabytes and
/// the client was never disconnected.
#[actix_rt::test]
async fn session_list_pages_are_held_to_the_client_budget() {
    let server = Server::start_process(ServerOptions {
        args: [
            "--client-stall-secs",
            "2",
            "--client-queue-bytes",
            &BUDGET.to_string(),
            "--ws-messages-per-sec",
            "100000",
        ]
        .map(String::from)
        .to_vec(),
        ..ServerOptions::default()
    });
    // Long titles make each page of 1000 sessions about 400 KB.
    let mut ws = server.ws().await;
    let title = "t".repeat(200);
    for _ in 0..SESSIONS {
        ws.ok(json!({"type": "session.create", "title": title}))
            .await;
    }
    let page = ws
        .ok(json!({"type": "sessions.list", "limit": SESSIONS}))
        .await;
    let page_bytes = page.to_string().len() as u64;
    assert!(page_bytes > 300_000, "a page is only {page_bytes} bytes");
    ws.close().await;

    let baseline = rss_kib(server.pid());
    let closed_before = server.metric("tandem_clients_closed_slow_total").await;
    let mut stream = upgrade(&server.base, Some(4096));
    let request = client_frame(&json!({"type": "sessions.list", "limit": SESSIONS}).to_string());
    let all: Vec<u8> = (0..PAGES).flat_map(|_| request.clone()).collect();
    // About 20 KB: the socket buffers take it all without the server reading.
    stream.write_all(&all).unwrap_or_else(|e| panic!("{e}"));

    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut peak_rss, mut peak_queued) = (0, 0);
    loop {
        peak_rss = peak_rss.max(rss_kib(server.pid()));
        peak_queued = peak_queued.max(server.metric("tandem_client_queued_bytes").await);
        let closed = server.metric("tandem_clients_closed_slow_total").await;
        let clients = server.metric("tandem_ws_clients").await;
        if closed > closed_before && clients == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the client that does not read was never disconnected \
             (RSS {baseline} -> {peak_rss} KiB, queued bytes peak {peak_queued})"
        );
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "RSS {baseline} KiB -> peak {peak_rss} KiB; queued bytes peak {peak_queued}; \
         page {page_bytes} B"
    );
    assert!(
        peak_queued <= BUDGET + page_bytes + 4096,
        "{peak_queued} bytes queued for a {BUDGET}-byte budget"
    );
    // 300 pages are about 120 MB; the budget plus a page is under 1 MB. What the
    // allocator, SQLite and the session list itself take is far below the margin.
    let grown = peak_rss.saturating_sub(baseline);
    assert!(
        grown < 40 * 1024,
        "the server grew {grown} KiB for a client that does not read"
    );
    assert_eq!(server.metric("tandem_client_queued_bytes").await, 0);
    // Its socket was shut: reads end once the kernel's buffer is drained.
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
    // Everyone else is served as before.
    let mut ws = server.ws().await;
    assert_eq!(ws.request(json!({"type": "ping"})).await["pong"], true);
}

/// A socket that only listens (it never sends a request, on which the token used to be
/// checked) is closed once its token is revoked, and receives nothing more.
#[actix_rt::test]
async fn a_revoked_token_closes_a_socket_that_only_listens() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let bob = server.add_user("bob");
    let mut ws = bob.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    server.cli(&["user", "revoke", "bob", "--data-dir"]);
    // From now on it only reads. Within a bounded time it is told and closed.
    let mut told = None;
    loop {
        match ws.next_frame(Duration::from_secs(20)).await {
            Some(v) if v["kind"] == "protocol_error" => told = Some(v),
            Some(_) => {}
            None => break,
        }
    }
    let told = told.unwrap_or_else(|| panic!("closed without a word"));
    assert_eq!(told["code"], "UNAUTHORIZED", "{told}");
    // The admin's activity in bob's session reaches no socket of bob's any more. (A
    // revoked user's session takes commands once an admin has reassigned it.)
    let (status, body) = server
        .patch(
            &format!("/api/v1/sessions/{sid}"),
            &json!({"ownerId": "admin"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": "after revocation"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.metric("tandem_ws_clients").await != 0 {
        assert!(
            Instant::now() < deadline,
            "bob's socket is still registered"
        );
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
}
