//! Revocation is immediate (issue 28, point 4): once `tandem user revoke` removed a
//! user, the MCP tokens of that user's sessions are refused, the user's sockets are
//! closed, and the sessions keep their history but take no command (a send, a
//! scheduled message, a tool call) until an admin reassigns or archives them.

use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::server::Api;
use tandem_tests::{eventually, eventually_within, Server, ServerOptions};

use crate::schedule::{now_ms, rfc3339};

/// One JSON-RPC call to `/mcp` with `token`: the status and the JSON answer.
async fn mcp(api: &Api, token: &str, body: Value) -> (u16, Value) {
    let mut resp = awc::Client::default()
        .post(format!("{}/mcp", api.base))
        .insert_header(("Authorization", format!("Bearer {token}")))
        .send_json(&body)
        .await
        .unwrap_or_else(|e| panic!("POST /mcp: {e}"));
    let bytes = resp.body().await.unwrap();
    (
        resp.status().as_u16(),
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

fn spawn_call() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "spawn_sessions",
        "arguments": {"sessions": [{"title": "child", "prompt": "hi"}]}
    }})
}

/// A session `api` creates, with one completed turn.
async fn session_with_a_turn(api: &Api) -> String {
    let (status, info) = api.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 201, "{info}");
    let sid = info["id"].as_str().unwrap().to_string();
    send_and_finish(api, &sid, "hello").await;
    sid
}

/// Sends `text` as `api` and waits until that turn completed.
async fn send_and_finish(api: &Api, sid: &str, text: &str) {
    let (status, body) = api
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": text}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let turn = body["turnId"].as_str().unwrap().to_string();
    eventually(&format!("{turn} of {sid} to complete"), async || {
        api.all_events(sid)
            .await
            .iter()
            .any(|e| e["kind"] == "turn_completed" && e["turnId"] == turn.as_str())
            .then_some(())
    })
    .await;
}

/// Ids of every session the admin sees.
async fn session_ids(server: &Server) -> Vec<String> {
    let (status, list) = server.get("/api/v1/sessions?limit=1000").await;
    assert_eq!(status, 200, "{list}");
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str().map(String::from))
        .collect()
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind).count()
}

#[actix_rt::test]
async fn a_revoked_users_sessions_take_no_command_until_an_admin_reassigns_them() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let carol = server.add_user("carol");
    let bob = server.add_user("bob");
    let sid = session_with_a_turn(&carol).await;
    let (status, tok) = carol
        .post(&format!("/api/v1/sessions/{sid}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 200, "{tok}");
    let token = tok["token"].as_str().unwrap().to_string();
    let (status, list) = mcp(&carol, &token, tools_list()).await;
    assert_eq!(status, 200, "{list}");
    assert!(list["result"]["tools"].is_array(), "{list}");
    // A message due a few seconds after the revocation.
    let (status, scheduled) = carol
        .post(
            &format!("/api/v1/sessions/{sid}/schedules"),
            &json!({"content": "scheduled for later", "at": rfc3339(now_ms() + 8000)}),
        )
        .await;
    assert_eq!(status, 201, "{scheduled}");
    // A socket of carol's that only listens.
    let mut listening = carol.ws().await;
    listening.subscribe(&sid, 0).await;
    assert_eq!(listening.recv().await["kind"], "chat_subscribed");
    let before = session_ids(&server).await;

    server.cli(&["user", "revoke", "carol", "--data-dir"]);

    // Within about a second the session's MCP token is refused, every method alike.
    eventually_within(
        "the MCP token of carol's session to be refused",
        Duration::from_secs(5),
        async || (mcp(&carol, &token, tools_list()).await.0 == 401).then_some(()),
    )
    .await;
    let (status, answer) = mcp(&carol, &token, spawn_call()).await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["error"]["code"], "UNAUTHORIZED", "{answer}");
    let (status, _) = mcp(
        &carol,
        &token,
        json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(session_ids(&server).await, before, "no session was spawned");

    // The listening socket is told and closed.
    let mut told = None;
    while let Some(frame) = listening.next_frame(Duration::from_secs(10)).await {
        if frame["kind"] == "protocol_error" {
            told = Some(frame);
        }
    }
    let told = told.unwrap_or_else(|| panic!("carol's socket closed without a word"));
    assert_eq!(told["code"], "UNAUTHORIZED", "{told}");

    // The scheduled message comes due and is refused, naming the revocation.
    let schedule = eventually("the scheduled message to be claimed", async || {
        let (_, list) = server
            .get(&format!("/api/v1/sessions/{sid}/schedules"))
            .await;
        let first = list["schedules"][0].clone();
        (first["status"] != "pending").then_some(first)
    })
    .await;
    assert_eq!(schedule["status"], "failed", "{schedule}");
    assert!(
        schedule["reason"]
            .as_str()
            .is_some_and(|r| r.contains("revoked")),
        "{schedule}"
    );

    // The history stays readable; no turn started after the revocation.
    let events = server.all_events(&sid).await;
    assert_eq!(count(&events, "turn_started"), 1, "{events:?}");
    // Nobody drives it, not even an admin, until it is reassigned.
    let (status, refused) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": "as the admin"}),
        )
        .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "ACCESS_DENIED");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("revoked")),
        "{refused}"
    );

    // Reassigning: admins only, to a user that exists.
    let (status, body) = bob
        .patch(
            &format!("/api/v1/sessions/{sid}"),
            &json!({"ownerId": "bob"}),
        )
        .await;
    assert_eq!(status, 404, "bob may not even see it: {body}");
    let (status, body) = server
        .patch(
            &format!("/api/v1/sessions/{sid}"),
            &json!({"ownerId": "carol"}),
        )
        .await;
    // Well formed, naming a user this server does not have: 422.
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (422, json!("INVALID_ARGUMENT")),
        "{body}"
    );
    let (status, info) = server
        .patch(
            &format!("/api/v1/sessions/{sid}"),
            &json!({"ownerId": "bob"}),
        )
        .await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["ownerId"], "bob");

    // Carol's old MCP token stays refused; bob drives the session and gets his own.
    let (status, _) = mcp(&carol, &token, tools_list()).await;
    assert_eq!(status, 401, "the revoked owner's MCP token acts for bob");
    send_and_finish(&bob, &sid, "bob's now").await;
    let (status, tok) = bob
        .post(&format!("/api/v1/sessions/{sid}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 200, "{tok}");
    let bobs = tok["token"].as_str().unwrap().to_string();
    assert_ne!(bobs, token);
    let (status, list) = mcp(&bob, &bobs, tools_list()).await;
    assert_eq!(status, 200, "{list}");
    let events = server.all_events(&sid).await;
    assert_eq!(count(&events, "turn_started"), 2, "{events:?}");
}

#[actix_rt::test]
async fn an_admin_archives_or_reassigns_a_revoked_users_session_over_either_api() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let carol = server.add_user("carol");
    let bob = server.add_user("bob");
    let first = session_with_a_turn(&carol).await;
    let second = session_with_a_turn(&carol).await;
    server.cli(&["user", "revoke", "carol", "--data-dir"]);
    let mut admin = server.ws().await;
    // A tool called as the session is refused (within the second the server trusts
    // its last look at the user).
    let refused = eventually_within(
        "a tool call as carol's session to be refused",
        Duration::from_secs(5),
        async || {
            let reply = admin
                .ok(json!({"type": "tool.call", "sessionId": second,
                           "name": "check_spawned_sessions"}))
                .await;
            (reply["isError"] == true).then_some(reply)
        },
    )
    .await;
    assert_eq!(refused["code"], "ACCESS_DENIED", "{refused}");
    assert!(
        refused["result"]
            .as_str()
            .is_some_and(|m| m.contains("revoked")),
        "{refused}"
    );
    let answer = admin
        .request(json!({"type": "chat.send", "sessionId": second, "content": "x"}))
        .await;
    assert_eq!(answer["code"], "ACCESS_DENIED", "{answer}");

    // No new session for the revoked owner either: a handoff would create one.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{second}/handoff"),
            &json!({"targetVendor": "scripted"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (403, json!("ACCESS_DENIED")),
        "{body}"
    );

    // Archiving still works.
    let (status, body) = server.delete(&format!("/api/v1/sessions/{first}")).await;
    assert_eq!(status, 200, "{body}");

    // A non-admin may not hand even their own session to someone else.
    let mut b = bob.ws().await;
    let bobs = b.create_session().await;
    let answer = b
        .request(json!({"type": "session.configure", "sessionId": bobs, "ownerId": "admin"}))
        .await;
    assert_eq!(answer["code"], "ACCESS_DENIED", "{answer}");

    // `session.configure` reassigns as PATCH does; the session then takes commands.
    let reply = admin
        .ok(json!({"type": "session.configure", "sessionId": second, "ownerId": "admin"}))
        .await;
    assert_eq!(reply["session"]["ownerId"], "admin", "{reply}");
    send_and_finish(&server, &second, "the admin's now").await;
    let events = server.all_events(&second).await;
    assert!(
        events.iter().any(|e| e["kind"] == "info"
            && e["text"]
                .as_str()
                .is_some_and(|t| t.contains("reassigned from carol to admin"))),
        "{events:?}"
    );
}

#[actix_rt::test]
async fn a_queued_message_of_a_revoked_users_session_waits_for_the_reassignment() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let carol = server.add_user("carol");
    let (status, info) = carol.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 201, "{info}");
    let sid = info["id"].as_str().unwrap().to_string();
    let (status, tok) = carol
        .post(&format!("/api/v1/sessions/{sid}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 200, "{tok}");
    let token = tok["token"].as_str().unwrap().to_string();
    let (status, body) = carol
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": "/hold revoked-owner"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    server.wait_held("revoked-owner").await;
    let (status, body) = carol
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": "queued before", "queue": true}),
        )
        .await;
    assert_eq!(
        (status, body["queued"].clone()),
        (202, json!(true)),
        "{body}"
    );
    server.cli(&["user", "revoke", "carol", "--data-dir"]);
    // The server knows carol is revoked (her session's MCP token is refused: the same
    // owner check a queued message passes) while the turn still runs; then it ends.
    eventually(
        "the MCP token of carol's session to be refused",
        async || (mcp(&carol, &token, tools_list()).await.0 == 401).then_some(()),
    )
    .await;
    assert_eq!(server.release("revoked-owner").await, 1);
    // The running turn ends; the queued message does not start, and stays queued.
    eventually("the running turn to end", async || {
        let events = server.all_events(&sid).await;
        (count(&events, "turn_completed") == 1).then_some(())
    })
    .await;
    // No pause needed: the turn's end and the decision about the queue are one step of
    // the session (its events and its queue are published together), so the queue read
    // now already says whether the queued message was taken.
    let events = server.all_events(&sid).await;
    assert_eq!(count(&events, "turn_started"), 1, "{events:?}");
    let (_, queue) = server.get(&format!("/api/v1/sessions/{sid}/queue")).await;
    assert_eq!(queue["queued"][0]["text"], "queued before", "{queue}");
    // Reassigned, it runs.
    let (status, info) = server
        .patch(
            &format!("/api/v1/sessions/{sid}"),
            &json!({"ownerId": "admin"}),
        )
        .await;
    assert_eq!(status, 200, "{info}");
    eventually("the queued message to run", async || {
        server
            .all_events(&sid)
            .await
            .iter()
            .any(|e| e["kind"] == "user_message" && e["text"] == "queued before")
            .then_some(())
    })
    .await;
}
