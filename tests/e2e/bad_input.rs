//! Bad input gets a clear error, stores nothing, and leaves the socket usable.

use awc::ws::Message;
use serde_json::json;
use tandem_tests::{Server, ServerOptions, WsClient};

#[actix_rt::test]
async fn bad_frames_get_codes_and_the_socket_stays_usable() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let cases: Vec<(String, &str)> = vec![
        ("{not json".into(), "INVALID_JSON"),
        ("[1, 2, 3]".into(), "INVALID_JSON"),
        ("\"just a string\"".into(), "INVALID_JSON"),
        (
            json!({"type": "warp.drive"}).to_string(),
            "UNKNOWN_MESSAGE_TYPE",
        ),
        (
            json!({"requestId": "x"}).to_string(),
            "UNKNOWN_MESSAGE_TYPE",
        ),
        (
            json!({"type": "chat.send", "content": "hi"}).to_string(),
            "SESSION_ID_REQUIRED",
        ),
        (
            json!({"type": "chat.send", "sessionId": "", "content": "hi"}).to_string(),
            "SESSION_ID_REQUIRED",
        ),
        (
            json!({"type": "chat.send", "sessionId": "ses_nope", "content": "hi"}).to_string(),
            "SESSION_NOT_FOUND",
        ),
        (
            json!({"type": "chat.send", "sessionId": sid, "content": 42}).to_string(),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "chat.send", "sessionId": sid, "content": "   "}).to_string(),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "chat.abort", "sessionId": "ses_nope"}).to_string(),
            "SESSION_NOT_FOUND",
        ),
        (
            json!({"type": "session.create", "vendor": "codex"}).to_string(),
            "VENDOR_NOT_INSTALLED",
        ),
        (
            json!({"type": "session.create", "vendor": "nobody"}).to_string(),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.create", "cwd": "/"}).to_string(),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "chat.send", "sessionId": sid, "content": "x".repeat(1_100_000)})
                .to_string(),
            "FRAME_TOO_LARGE",
        ),
    ];
    for (frame, code) in cases {
        ws.send_text(frame.clone()).await;
        let answer = ws.recv().await;
        assert_eq!(answer["kind"], "protocol_error", "for {:.80}", frame);
        assert_eq!(answer["code"], code, "for {:.80}: {answer}", frame);
        assert!(answer["error"].as_str().is_some_and(|e| !e.is_empty()));
        // Still usable after every bad frame.
        let pong = ws.request(json!({"type": "ping"})).await;
        assert_eq!(pong["pong"], true);
    }
    // requestId is echoed on errors.
    let err = ws.request(json!({"type": "nope"})).await;
    assert_eq!(err["code"], "UNKNOWN_MESSAGE_TYPE");
    // Binary frames are refused the same way.
    ws.send_message(Message::Binary(vec![1u8, 2, 3].into()))
        .await;
    assert_eq!(ws.recv().await["code"], "INVALID_JSON");
    // Nothing of the above reached the session's history.
    assert!(server.all_events(&sid).await.is_empty());
    let (_, list) = server.get("/api/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1));
    let (_, metrics) = server.get_text("/metrics").await;
    assert!(
        metrics.contains("tandem_protocol_errors_total 17"),
        "{metrics}"
    );
}

#[actix_rt::test]
async fn a_client_that_keeps_sending_garbage_is_closed() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let mut closed = false;
    for _ in 0..60 {
        // The server may close the connection before all 60 are written.
        if ws.try_send_text("garbage".into()).await.is_err() {
            closed = true;
            break;
        }
    }
    for _ in 0..70 {
        if closed {
            break;
        }
        match ws.next_frame(std::time::Duration::from_secs(10)).await {
            None => {
                closed = true;
                break;
            }
            Some(v) => assert_eq!(v["kind"], "protocol_error"),
        }
    }
    assert!(closed, "abusive client was not disconnected");
    // Others are unaffected.
    let mut other = server.ws().await;
    assert_eq!(other.request(json!({"type": "ping"})).await["pong"], true);
}

#[actix_rt::test]
async fn rest_bad_bodies_and_unknown_ids() {
    let server = Server::start();
    let (status, body) = server.post_raw("/api/v1/sessions", "{oops").await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "INVALID_JSON");
    let (status, body) = server
        .post_raw("/api/v1/sessions", r#"{"visibility": "everyone"}"#)
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENT");
    let (status, session) = server.post_raw("/api/v1/sessions", "").await;
    assert_eq!(status, 201, "{session}");
    let sid = session["id"].as_str().unwrap().to_string();
    let (status, body) = server
        .post_raw(&format!("/api/v1/sessions/{sid}/messages"), "not json")
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "INVALID_JSON");
    let (status, body) = server
        .post_raw(
            &format!("/api/v1/sessions/{sid}/messages"),
            r#"{"text": "wrong field"}"#,
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENT");
    let big = format!(r#"{{"content": "{}"}}"#, "y".repeat(2 << 20));
    let (status, body) = server
        .post_raw(&format!("/api/v1/sessions/{sid}/messages"), big)
        .await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], "FRAME_TOO_LARGE");
    let (status, body) = server.get("/api/v1/sessions/ses_missing").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND");
    let (status, body) = server.get("/api/v1/sessions/ses_missing/events").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND");
    let (status, body) = server
        .get(&format!("/api/v1/sessions/{sid}/events?after=abc"))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENT");
    let (status, body) = server.get("/api/v1/nothing-here").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "NOT_FOUND");
    // None of it was stored.
    assert!(server.all_events(&sid).await.is_empty());
}

#[actix_rt::test]
async fn token_auth_guards_everything_but_health() {
    let server = Server::start_process(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let token = server.token.clone().unwrap();
    assert!(token.len() >= 32, "token too short: {token}");
    let client = awc::Client::default();
    for path in ["/api/v1/sessions", "/api/v1/vendors", "/metrics", "/ws"] {
        let resp = client.get(format!("{}{path}", server.base)).send().await;
        let status = resp.map(|r| r.status().as_u16()).unwrap_or(0);
        assert_eq!(status, 401, "{path} without a token");
        let resp = client
            .get(format!("{}{path}?token=wrong", server.base))
            .send()
            .await;
        assert_eq!(
            resp.map(|r| r.status().as_u16()).unwrap_or(0),
            401,
            "{path} with a bad token"
        );
    }
    let resp = client
        .get(format!("{}/api/v1/health", server.base))
        .send()
        .await;
    assert_eq!(resp.map(|r| r.status().as_u16()).unwrap_or(0), 200);
    let base_ws = server.base.replacen("http://", "ws://", 1);
    assert!(WsClient::try_connect(&format!("{base_ws}/ws"))
        .await
        .is_err());
    // With the token (header for REST, query for WS) everything works.
    let (status, _) = server.get("/api/v1/sessions").await;
    assert_eq!(status, 200);
    let mut ws = server.ws().await;
    ws.create_session().await;
    // The token survives a restart.
    let dir = server.kill();
    let again = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            ..ServerOptions::default()
        },
    );
    assert_eq!(again.token.as_deref(), Some(token.as_str()));
}

#[test]
fn auth_none_is_refused_off_loopback() {
    let dir = tandem_tests::TempDir::new("bind");
    let out = std::process::Command::new(tandem_tests::server::server_binary())
        .args([
            "serve",
            "--bind",
            "0.0.0.0",
            "--port",
            "0",
            "--auth",
            "none",
            "--data-dir",
        ])
        .arg(dir.path())
        .output();
    let out = out.unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loopback"), "{err}");
}

/// The server pings; a client that never answers (half-open) is dropped, one that
/// does stays. Clients may ping too.
#[actix_rt::test]
async fn heartbeat_drops_silent_clients() {
    let server = Server::start_with(ServerOptions {
        args: vec![
            "--ws-ping-secs".into(),
            "1".into(),
            "--ws-timeout-secs".into(),
            "2".into(),
        ],
        ..ServerOptions::default()
    });
    let silent = server.ws().await;
    let mut alive = server.ws().await;
    // A client ping is answered with a pong.
    alive
        .send_message(Message::Ping(b"hi".to_vec().into()))
        .await;
    let mut dropped = false;
    for _ in 0..100 {
        // Reading answers the server's pings (next_frame replies to them).
        assert_eq!(alive.request(json!({"type": "ping"})).await["pong"], true);
        actix_rt::time::sleep(std::time::Duration::from_millis(100)).await;
        let (_, metrics) = server.get_text("/metrics").await;
        if metrics.contains("tandem_ws_clients 1\n") {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the silent client was not dropped");
    // The client's own ping was answered before the reply to its first request (the
    // server writes in order), and that pong was counted while waiting for the reply.
    assert!(
        alive.pongs >= 1,
        "the server never answered the client's ping"
    );
    assert_eq!(alive.request(json!({"type": "ping"})).await["pong"], true);
    drop(silent);
}
