//! The test harness itself: a server runs inside the test process unless it must be
//! a process, and two servers at once keep their failpoints apart.

use serde_json::json;
use tandem_protocol::client::{ChatSendParams, SessionCreateParams};
use tandem_protocol::{ErrorCode, EventBody};
use tandem_tests::{Server, ServerOptions};

/// The first server of a test runs in the test process (it has no process id of its
/// own); a second one started meanwhile is a process, so a failpoint set on one does
/// not reach the other; once the first has stopped, the next runs in-process again.
#[actix_rt::test]
async fn a_second_server_at_once_is_a_process_with_its_own_failpoints() {
    let first = Server::start();
    let in_process = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| first.pid()));
    assert!(
        in_process.is_err(),
        "the first server is in the test process"
    );
    let second = Server::start();
    assert_ne!(second.pid(), std::process::id());

    second.failpoint("store.commit", "return").await;
    let (status, body) = second
        .post("/api/v1/sessions", &json!({"title": "refused"}))
        .await;
    assert_eq!(status, 500, "{body}");
    let mut ws = first.ws().await;
    let created = ws
        .call_ok(SessionCreateParams {
            title: Some("kept".into()),
            ..SessionCreateParams::default()
        })
        .await;
    assert_eq!(created.session.title, "kept");

    // A clean stop waits for open connections, as SIGTERM does.
    drop(ws);
    first.terminate();
    let third = Server::start_with(ServerOptions::default());
    let in_process = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| third.pid()));
    assert!(
        in_process.is_err(),
        "the next server is in the test process again"
    );
}

/// The typed client: a refusal is its code, and a turn's events read back as
/// protocol events, in order, ending with the turn.
#[actix_rt::test]
async fn typed_calls_read_refusals_and_a_turns_events() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let refused = ws
        .call(ChatSendParams {
            session_id: "ses_missing".into(),
            content: "hello".to_string().into(),
            options: None,
            queue: false,
        })
        .await;
    assert_eq!(refused.map_err(|r| r.code), Err(ErrorCode::SessionNotFound));
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "one\ntwo").await;
    let events = ws.turn_events(&id).await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let said: String = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(said.contains("one") && said.contains("two"), "{said:?}");
    assert!(
        matches!(
            events.last().map(|e| &e.body),
            Some(EventBody::TurnCompleted { .. })
        ),
        "{events:?}"
    );
}

/// The gateway's and the sessions' arbiters carry names of their own, so `top -H` and
/// the benchmarks' per-thread CPU tell them from the HTTP workers.
#[actix_rt::test]
async fn the_gateway_and_sessions_threads_are_named() {
    let server = Server::start_process(ServerOptions::default());
    let tasks = format!("/proc/{}/task", server.pid());
    let names = || -> Vec<String> {
        std::fs::read_dir(&tasks)
            .unwrap_or_else(|e| panic!("{tasks}: {e}"))
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_string())
            .collect()
    };
    // Each arbiter names itself as the first thing it runs; the server does not wait
    // for that before it reports ready.
    tandem_tests::eventually("both named threads", async || {
        let seen = names();
        ["tandem-gateway", "tandem-sessions"]
            .iter()
            .all(|w| seen.iter().filter(|n| n == w).count() == 1)
            .then_some(())
    })
    .await;
}
