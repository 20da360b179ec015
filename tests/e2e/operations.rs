//! Every request is one operation whatever carries it: each REST read and file
//! route is also a WebSocket request of the table, answering the same (REST sends the
//! field the WebSocket reply holds), and refusing the same.

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions, WsClient};

use crate::workspaces::repo;

/// The reply's fields besides `kind`, `requestId` and `ok`.
fn result(mut reply: Value) -> Value {
    if let Some(fields) = reply.as_object_mut() {
        for key in ["kind", "requestId", "ok"] {
            fields.remove(key);
        }
    }
    reply
}

/// `GET path` over REST and `frame` over the socket; asserts REST's body is the
/// reply's `field` (the whole reply without one).
async fn same(server: &Server, ws: &mut WsClient, path: &str, frame: Value, field: Option<&str>) {
    let (status, rest) = server.get(path).await;
    assert_eq!(status, 200, "GET {path}: {rest}");
    let reply = ws.ok(frame.clone()).await;
    let got = match field {
        Some(f) => reply[f].clone(),
        None => result(reply),
    };
    assert_eq!(got, rest, "{frame} answers otherwise than GET {path}");
}

#[actix_rt::test]
async fn each_rest_read_is_a_websocket_request_with_the_same_answer() {
    let server = Server::start();
    let base = repo(&server, "ops");
    let mut ws = server.ws().await;
    let created = ws.ok(json!({"type": "session.create", "cwd": base})).await;
    let id = created["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    ws.turn(&id, "/write b.txt hello\nwritten").await;
    let s = |kind: &str| json!({"type": kind, "sessionId": id});
    let sessions = format!("/api/v1/sessions/{id}");
    same(
        &server,
        &mut ws,
        &sessions,
        s("session.get"),
        Some("session"),
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/events?after=1&limit=3"),
        json!({"type": "session.events", "sessionId": id, "after": 1, "limit": 3}),
        None,
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/usage"),
        s("session.usage"),
        Some("usage"),
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/schedules"),
        s("session.schedules"),
        None,
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/queue"),
        s("chat.queue"),
        None,
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/changes"),
        s("session.changes"),
        Some("changes"),
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/changes/diff?path=b.txt"),
        json!({"type": "session.diff", "sessionId": id, "path": "b.txt"}),
        Some("diff"),
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/files"),
        s("session.files"),
        Some("listing"),
    )
    .await;
    same(
        &server,
        &mut ws,
        &format!("{sessions}/files/content?path=b.txt"),
        json!({"type": "session.file-read", "sessionId": id, "path": "b.txt"}),
        Some("file"),
    )
    .await;
    let none = |kind: &str| json!({"type": kind});
    same(
        &server,
        &mut ws,
        "/api/v1/sessions/running",
        none("sessions.running"),
        None,
    )
    .await;
    same(
        &server,
        &mut ws,
        "/api/v1/vendors",
        none("vendors.list"),
        None,
    )
    .await;
    same(&server, &mut ws, "/api/v1/pairs", none("pairs.list"), None).await;

    // A save needs the ETag it was read with, on the socket as over REST.
    let read = ws
        .ok(json!({"type": "session.file-read", "sessionId": id, "path": "b.txt"}))
        .await;
    let etag = read["file"]["etag"].clone();
    let saved = ws
        .ok(
            json!({"type": "session.file-write", "sessionId": id, "path": "b.txt",
                   "content": "new\n", "ifMatch": etag}),
        )
        .await;
    assert_eq!(saved["saved"]["path"], "b.txt", "{saved}");
    let stale = ws
        .request(
            json!({"type": "session.file-write", "sessionId": id, "path": "b.txt",
                        "content": "again\n", "ifMatch": etag}),
        )
        .await;
    assert_eq!(stale["code"], "PRECONDITION_FAILED", "{stale}");
    assert_eq!(
        std::fs::read_to_string(base.join("b.txt")).unwrap(),
        "new\n"
    );

    // Refused alike: an unknown session, a rule of the fields.
    let missing = ws
        .request(json!({"type": "session.get", "sessionId": "ses_nope"}))
        .await;
    assert_eq!(missing["code"], "SESSION_NOT_FOUND", "{missing}");
    let (status, body) = server.get("/api/v1/sessions/ses_nope").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("SESSION_NOT_FOUND"))
    );
    let limit = ws
        .request(json!({"type": "session.events", "sessionId": id, "limit": 0}))
        .await;
    assert_eq!(limit["code"], "INVALID_ARGUMENT", "{limit}");
    let (status, _) = server.get(&format!("{sessions}/events?limit=0")).await;
    assert_eq!(status, 400);

    // The token belongs to the session's owner, over either transport.
    let token = ws.ok(s("session.mcp-token")).await;
    assert!(
        token["token"].as_str().is_some_and(|t| !t.is_empty()),
        "{token}"
    );
    let archived = ws.ok(s("session.archive")).await;
    assert_eq!(result(archived), json!({"sessionId": id, "archived": true}));
    let (status, _) = server.get(&sessions).await;
    assert_eq!(status, 404);
}

#[actix_rt::test]
async fn user_get_says_who_the_caller_is() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    let me = result(ws.ok(json!({"type": "user.get"})).await);
    assert_eq!(me["admin"], true, "{me}");
    let mut bob = server.add_user("bob").ws().await;
    let me = result(bob.ok(json!({"type": "user.get"})).await);
    assert_eq!(me, json!({"userId": "bob", "admin": false}), "{me}");
}
