//! `--max-concurrent-turns`: turns beyond the limit wait in line (status `waiting`,
//! their place in `SessionInfo.waitingPlace` and `GET /fleet`), start in order of
//! arrival as turns end, leave the line when interrupted, and a Driver's delegation
//! never waits behind its own Driver.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions, WsClient};

/// A server that runs at most `limit` turns at once.
fn server(limit: u32) -> Server {
    Server::start_with(ServerOptions {
        args: vec!["--max-concurrent-turns".into(), limit.to_string()],
        ..ServerOptions::default()
    })
}

/// A new scripted session, subscribed; its id.
async fn session(ws: &mut WsClient) -> String {
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    id
}

/// Sends `text` to `id`; the turn's id.
async fn send(ws: &mut WsClient, id: &str, text: &str) -> String {
    let reply = ws
        .ok(json!({"type": "chat.send", "sessionId": id, "content": text}))
        .await;
    reply["turnId"].as_str().unwrap().to_string()
}

/// Session `id` as REST shows it.
async fn info(server: &Server, id: &str) -> Value {
    let (status, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{info}");
    info
}

/// Waits until `id` has status `status` (and, when waiting, place `place`).
async fn until_status(server: &Server, id: &str, status: &str, place: Option<u64>) {
    eventually(&format!("{id} {status} {place:?}"), async || {
        let info = info(server, id).await;
        (info["status"] == status && info["waitingPlace"].as_u64() == place).then_some(())
    })
    .await;
}

/// The status of turn `turn` of `id` once it completed.
async fn ended(server: &Server, id: &str, turn: &str) -> Value {
    eventually(&format!("{turn} of {id} to end"), async || {
        server
            .all_events(id)
            .await
            .into_iter()
            .find(|e| e["kind"] == "turn_completed" && e["turnId"] == turn)
            .map(|e| e["status"].clone())
    })
    .await
}

#[actix_rt::test]
async fn turns_beyond_the_limit_wait_in_line_and_start_in_order() {
    let server = server(1);
    let mut ws = server.ws().await;
    let (a, b, c, d) = (
        session(&mut ws).await,
        session(&mut ws).await,
        session(&mut ws).await,
        session(&mut ws).await,
    );
    let ta = send(&mut ws, &a, "/hold a\nA done").await;
    server.wait_held("a").await;
    let tb = send(&mut ws, &b, "/hold b\nB done").await;
    let tc = send(&mut ws, &c, "C done").await;
    until_status(&server, &b, "waiting", Some(1)).await;
    until_status(&server, &c, "waiting", Some(2)).await;
    // The turn exists: its message is in history, and the fleet lists the line.
    let (status, fleet) = server.get("/api/v1/fleet").await;
    assert_eq!(status, 200, "{fleet}");
    assert_eq!(
        (&fleet["turnLimit"], &fleet["turnsRunning"]),
        (&json!(1), &json!(1)),
        "{fleet}"
    );
    let line: Vec<(&str, u64)> = fleet["waitingTurns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["sessionId"].as_str().unwrap(),
                w["place"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(line, [(b.as_str(), 1), (c.as_str(), 2)], "{fleet}");
    // An interrupt takes a waiting turn out of line; the one behind moves up.
    ws.ok(json!({"type": "chat.abort", "sessionId": c})).await;
    assert_eq!(ended(&server, &c, &tc).await, "interrupted");
    let td = send(&mut ws, &d, "D done").await;
    until_status(&server, &d, "waiting", Some(2)).await;
    // A's turn ends: B (first in line) starts, D moves to the front and waits.
    server.release("a").await;
    assert_eq!(ended(&server, &a, &ta).await, "completed");
    server.wait_held("b").await;
    until_status(&server, &b, "running", None).await;
    until_status(&server, &d, "waiting", Some(1)).await;
    server.release("b").await;
    assert_eq!(ended(&server, &b, &tb).await, "completed");
    assert_eq!(ended(&server, &d, &td).await, "completed");
    let (_, fleet) = server.get("/api/v1/fleet").await;
    assert_eq!(
        (&fleet["turnsRunning"], &fleet["waitingTurns"]),
        (&json!(0), &json!([])),
        "{fleet}"
    );
    // C's interrupted turn never ran: its message was not answered.
    let answered = server
        .all_events(&c)
        .await
        .into_iter()
        .any(|e| e["kind"] == "assistant_message");
    assert!(!answered);
}

#[actix_rt::test]
async fn a_drivers_delegation_never_waits_behind_its_driver() {
    let server = server(1);
    let mut ws = server.ws().await;
    let d = session(&mut ws).await;
    let other = session(&mut ws).await;
    // The Driver's turn holds the only slot while it waits for its Worker's turn;
    // the Worker's delegated turn runs anyway.
    let (out, err) = ws
        .scripted_tool(&d, "send_to_partner", json!({"message": "worker answer"}))
        .await;
    assert!(!err, "{out}");
    assert_eq!(
        (&out["status"], &out["response"]),
        (&json!("complete"), &json!("worker answer")),
        "{out}"
    );
    // Another session's turn still waits while the Driver runs: the delegation ran
    // beyond the limit, not in a free slot.
    let td = send(&mut ws, &d, "/hold driver\nDriver done").await;
    server.wait_held("driver").await;
    let to = send(&mut ws, &other, "other done").await;
    until_status(&server, &other, "waiting", Some(1)).await;
    server.release("driver").await;
    assert_eq!(ended(&server, &d, &td).await, "completed");
    assert_eq!(ended(&server, &other, &to).await, "completed");
}
