//! What a script needs over REST alone: queueing, renaming and configuring, archiving,
//! strict paging arguments, and a JSON body on every error.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions};

async fn send(server: &Server, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let client = awc::Client::default();
    let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
    let req = client.request(method, format!("{}{path}", server.base));
    let sent = match body {
        Some(b) => req.send_json(b).await,
        None => req.send().await,
    };
    let mut resp = sent.unwrap_or_else(|e| panic!("{path}: {e}"));
    let bytes = resp.body().limit(1 << 20).await.unwrap();
    (
        resp.status().as_u16(),
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[actix_rt::test]
async fn messages_queue_over_rest() {
    let server = Server::start();
    let (_, session) = server.post("/api/v1/sessions", &json!({})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/sessions/{sid}/messages");
    let (status, started) = server.post(&path, &json!({"content": "/hold never"})).await;
    assert_eq!(status, 202, "{started}");
    // Without queue: busy.
    let (status, busy) = server.post(&path, &json!({"content": "later"})).await;
    assert_eq!(status, 409, "{busy}");
    assert_eq!(busy["error"]["code"], "RUN_IN_PROGRESS");
    // With queue: accepted behind the running turn.
    let (status, queued) = server
        .post(&path, &json!({"content": "later", "queue": true}))
        .await;
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued["queued"], true);
    assert_eq!(queued["position"], 1);
    let (status, _) = server
        .post(&path, &json!({"content": "x", "queue": "yes"}))
        .await;
    assert_eq!(status, 400, "queue must be a boolean");
}

#[actix_rt::test]
async fn sessions_are_renamed_configured_and_archived() {
    let server = Server::start_process(Default::default());
    let mut watcher = server.ws().await;
    watcher.ok(json!({"type": "sessions.watch"})).await;
    let (_, session) = server.post("/api/v1/sessions", &json!({})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/sessions/{sid}");
    let (status, patched) = send(
        &server,
        "PATCH",
        &path,
        Some(&json!({"title": "Renamed", "effort": "high", "permissionMode": "plan"})),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["title"], "Renamed");
    assert_eq!(patched["effort"], "high");
    assert_eq!(patched["permissionMode"], "plan");
    let (_, got) = server.get(&path).await;
    assert_eq!(got["title"], "Renamed");
    for bad in [
        json!({"title": 5}),
        json!({"colour": "red"}),
        json!({"effort": "extreme"}),
    ] {
        let (status, body) = send(&server, "PATCH", &path, Some(&bad)).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    // Archive refuses a running session, then archives an idle one.
    let msgs = format!("{path}/messages");
    let (status, _) = server.post(&msgs, &json!({"content": "/hold never"})).await;
    assert_eq!(status, 202);
    let (status, body) = send(&server, "DELETE", &path, None).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "RUN_IN_PROGRESS");
    let (status, _) = server.post(&format!("{path}/interrupt"), &json!({})).await;
    assert_eq!(status, 202);
    let archived = eventually("the session to be archived", async || {
        let (status, body) = send(&server, "DELETE", &path, None).await;
        assert!(status == 200 || status == 409, "{status} {body}");
        (status == 200).then_some(body)
    })
    .await;
    assert_eq!(archived["archived"], true);
    let up = watcher
        .recv_until(|v| v["kind"] == "session_upserted" && v["session"]["archivedAt"].is_u64())
        .await;
    assert_eq!(
        up.last().map(|v| v["session"]["id"].clone()),
        Some(json!(sid))
    );
    let (status, body) = server.get(&path).await;
    assert_eq!(status, 404, "{body}");
    let (_, list) = server.get("/api/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(0), "{list}");
    // Still archived after a restart; its history is kept in the database.
    let dir = server.kill();
    let again = Server::start_in(dir, ServerOptions::default());
    let (status, _) = again.get(&path).await;
    assert_eq!(status, 404);
    let (_, list) = again.get("/api/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(0));
}

#[actix_rt::test]
async fn bad_paths_methods_and_limits_get_json_errors() {
    let server = Server::start();
    let (_, session) = server.post("/api/v1/sessions", &json!({})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    for limit in ["0", "5001", "-1"] {
        let (status, body) = server
            .get(&format!("/api/v1/sessions/{sid}/events?limit={limit}"))
            .await;
        assert_eq!(status, 400, "limit={limit}");
        assert_eq!(body["error"]["code"], "INVALID_ARGUMENT");
    }
    let (status, _) = server
        .get(&format!("/api/v1/sessions/{sid}/events?limit=1"))
        .await;
    assert_eq!(status, 200);
    let cases: [(&str, &str, u16, &str); 7] = [
        ("GET", "/nothing", 404, "NOT_FOUND"),
        ("GET", "/api/v1/nothing", 404, "NOT_FOUND"),
        ("PUT", "/api/v1/sessions", 405, "METHOD_NOT_ALLOWED"),
        ("DELETE", "/api/v1/health", 405, "METHOD_NOT_ALLOWED"),
        (
            "GET",
            "/api/v1/sessions/x/messages",
            405,
            "METHOD_NOT_ALLOWED",
        ),
        ("GET", "/mcp", 405, "METHOD_NOT_ALLOWED"),
        ("DELETE", "/ws", 404, "NOT_FOUND"),
    ];
    for (method, path, want, code) in cases {
        let json_body = json!({});
        let with_body = (method == "PUT").then_some(&json_body);
        let (status, body) = send(&server, method, path, with_body).await;
        assert_eq!(status, want, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], code, "{method} {path}");
    }
    // An oversized id names no session: a short JSON error, the id not echoed.
    let long = "a".repeat(40_000);
    let (status, text) = server.get_text(&format!("/api/v1/sessions/{long}")).await;
    assert_eq!(status, 404);
    assert!(text.len() < 500, "{} bytes", text.len());
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND", "{text}");
}
