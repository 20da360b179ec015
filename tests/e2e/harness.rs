//! The test harness itself: a server runs inside the test process unless it must be
//! a process, and two servers at once keep their failpoints apart.

use serde_json::json;
use tandem_protocol::client::SessionCreateParams;
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
