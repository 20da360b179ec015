//! A 2xx (or a `reply`) is answered only once what the request did is committed, on
//! every transport: the server is killed with SIGKILL right after the answer and
//! started again on the same data, and nothing acknowledged is missing. REST's
//! `interrupt` and task stop once answered before their commit; now every request
//! runs through one entry point that waits for it, or (`session.create`, a `commits`
//! row) whose handler waits for its own.

use serde_json::{json, Value};
use tandem_tests::Server;

/// How a request is sent.
#[derive(Debug, Clone, Copy)]
enum Transport {
    Rest,
    WebSocket,
}

const TRANSPORTS: [Transport; 2] = [Transport::Rest, Transport::WebSocket];

/// Creates a session through `transport`; its id once acknowledged.
async fn create(server: &Server, transport: Transport, title: &str) -> String {
    match transport {
        Transport::Rest => {
            let (status, body) = server
                .post("/api/v1/sessions", &json!({"title": title}))
                .await;
            assert_eq!(status, 201, "{body}");
            body["id"].as_str().unwrap().to_string()
        }
        Transport::WebSocket => {
            let mut ws = server.ws().await;
            let reply = ws
                .request(json!({"type": "session.create", "title": title}))
                .await;
            assert_eq!(reply["kind"], "reply", "{reply}");
            reply["session"]["id"].as_str().unwrap().to_string()
        }
    }
}

#[actix_rt::test]
async fn an_acknowledged_session_survives_a_kill_on_every_transport() {
    let mut server = Server::start_process(Default::default());
    for round in 0..12 {
        let transport = TRANSPORTS[round % 2];
        let title = format!("round {round}");
        let id = create(&server, transport, &title).await;
        let dir = server.kill();
        server = Server::start_process_in(dir, Default::default());
        let (status, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
        assert_eq!(status, 200, "{transport:?} round {round}: {info}");
        assert_eq!(info["title"], json!(title), "{transport:?} round {round}");
    }
}

/// Stops task `t1` and interrupts the turn of `id` through `transport`, each
/// acknowledged.
async fn stop_and_interrupt(server: &Server, transport: Transport, id: &str) {
    match transport {
        Transport::Rest => {
            let (status, body) = server
                .post(&format!("/api/v1/sessions/{id}/tasks/t1/stop"), &json!({}))
                .await;
            assert_eq!(status, 202, "{body}");
            let (status, body) = server
                .post(&format!("/api/v1/sessions/{id}/interrupt"), &json!({}))
                .await;
            assert_eq!(status, 202, "{body}");
        }
        Transport::WebSocket => {
            let mut ws = server.ws().await;
            for frame in [
                json!({"type": "chat.stop-task", "sessionId": id, "taskId": "t1"}),
                json!({"type": "chat.abort", "sessionId": id}),
            ] {
                let reply = ws.request(frame).await;
                assert_eq!(reply["kind"], "reply", "{reply}");
            }
        }
    }
}

/// A new session whose turn runs `script` and is held at `/hold {hold}`; its id.
async fn held_turn(server: &Server, script: &str, hold: &str) -> String {
    let (_, created) = server.post("/api/v1/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap().to_string();
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{id}/messages"),
            &json!({"content": script}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    server.wait_held(hold).await;
    id
}

/// The `(seq, kind)` of each event.
fn positions(events: &[Value]) -> Vec<(u64, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["seq"].as_u64().unwrap_or_default(),
                e["kind"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[actix_rt::test]
async fn an_acknowledged_stop_and_interrupt_lose_nothing_on_every_transport() {
    for transport in TRANSPORTS {
        let server = Server::start_process(Default::default());
        let id = held_turn(
            &server,
            "/background t1 600000 a long task\n/hold stop",
            "stop",
        )
        .await;
        let before = server.all_events(&id).await;
        assert!(
            before.iter().any(|e| e["kind"] == "background_tasks"),
            "{transport:?}: the task started: {before:?}"
        );
        stop_and_interrupt(&server, transport, &id).await;
        let dir = server.kill();
        let server = Server::start_in(dir, Default::default());
        let after = server.all_events(&id).await;
        let kept = positions(&after);
        for event in positions(&before) {
            assert!(
                kept.contains(&event),
                "{transport:?}: {event:?} was acknowledged and is gone"
            );
        }
        crate::assert_contiguous(&after, 1);
        let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
        assert_ne!(info["status"], "running", "{transport:?}: {info}");
    }
}

/// While the store cannot commit, an interrupt is refused, not acknowledged, over
/// REST as over the socket (`durability::a_failed_commit_is_never_acknowledged_…`
/// shows the socket's): REST's `interrupt` once answered 202 without waiting.
#[actix_rt::test]
async fn an_interrupt_is_not_acknowledged_while_the_store_fails() {
    let server = Server::start();
    let id = held_turn(&server, "first\n/hold never", "never").await;
    server.failpoint("store.commit", "return").await;
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{id}/interrupt"), &json!({}))
        .await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["code"], "INTERNAL", "{body}");
}

/// `session.create` is a `commits` row: the entry point does not wait again, because
/// creating waits for the session's own commit. While the store cannot commit, a
/// creation is refused on both transports and leaves no session behind.
#[actix_rt::test]
async fn a_creation_is_not_acknowledged_while_the_store_fails() {
    let server = Server::start();
    server.failpoint("store.commit", "return").await;
    let (status, body) = server
        .post("/api/v1/sessions", &json!({"title": "never"}))
        .await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["code"], "INTERNAL", "{body}");
    let mut ws = server.ws().await;
    let reply = ws
        .request(json!({"type": "session.create", "title": "never"}))
        .await;
    assert_eq!(reply["code"], "INTERNAL", "{reply}");
    let (status, list) = server.get("/api/v1/sessions").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["sessions"], json!([]), "{list}");
}
