//! `chat.review` against real git and a real server: comments anchored in the
//! session's diff are sent as one message quoting their lines, with a `review` event
//! after it; lines the diff lacks, a running turn, another user and malformed reviews
//! are refused, and nothing is sent then.

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions, WsClient};

use crate::workspaces::repo;

/// A subscribed client and a session in `dir` whose one turn rewrote `a.txt` (was
/// "one two three" on three lines) and added `b.txt`.
async fn changed_session(server: &Server, dir: &std::path::Path) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": sid,
        "content": "/write a.txt uno\n/write b.txt fresh"}))
        .await;
    ws.events_until_turn_end(&sid).await;
    (ws, sid)
}

/// The session's stored events of `kind`.
async fn stored(server: &Server, sid: &str, kind: &str) -> Vec<Value> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

#[actix_rt::test]
async fn a_review_quotes_each_commented_line_and_records_its_comments() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let (mut ws, sid) = changed_session(&server, &dir).await;
    let comments = json!([
        {"path": "a.txt", "line": 1, "side": "new", "body": "Why Italian?"},
        {"path": "a.txt", "line": 2, "endLine": 3, "side": "old", "body": "These went away."},
        {"path": "b.txt", "line": 1, "body": "Good."},
    ]);
    let reply = ws
        .ok(
            json!({"type": "chat.review", "sessionId": sid, "comments": comments,
            "summary": "Close, two things."}),
        )
        .await;
    let turn = reply["turnId"].as_str().unwrap().to_string();
    let events = ws.events_until_turn_end(&sid).await;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let user = kinds.iter().position(|k| *k == "user_message").unwrap();
    assert_eq!(
        kinds[user + 1],
        "review",
        "the review follows its message: {kinds:?}"
    );
    let review = &events[user + 1];
    assert_eq!(review["turnId"], turn.as_str());
    assert_eq!(review["summary"], "Close, two things.");
    let mut expected = comments.clone();
    expected[2]["side"] = json!("new");
    assert_eq!(review["comments"], expected);

    let text = events[user]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Review of your changes: 3 comments."),
        "{text}"
    );
    assert!(text.contains("Close, two things."), "{text}");
    assert!(
        text.contains("1. `a.txt` line 1:\n```diff\n-two\n-three\n+uno\n```\n> Why Italian?"),
        "{text}"
    );
    assert!(
        text.contains("2. `a.txt` lines 2–3 of the old version:"),
        "{text}"
    );
    assert!(
        text.contains("3. `b.txt` line 1:\n```diff\n+fresh\n```\n> Good."),
        "{text}"
    );
    // Stored as it was streamed.
    assert_eq!(stored(&server, &sid, "review").await.len(), 1);

    // Over REST: 202 with the turn.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/review"),
            &json!({"comments": [{"path": "b.txt", "line": 1, "body": "Again."}]}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert!(body["turnId"].as_str().is_some(), "{body}");
}

#[actix_rt::test]
async fn a_review_the_diff_cannot_anchor_is_refused_and_sends_nothing() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let dir = repo(&server, "proj");
    let (mut ws, sid) = changed_session(&server, &dir).await;
    let path = format!("/api/v1/sessions/{sid}/review");
    let before = server.all_events(&sid).await.len();

    let (status, body) = server
        .post(
            &path,
            &json!({"comments": [
                {"path": "a.txt", "line": 1, "body": "fine"},
                {"path": "a.txt", "line": 9, "body": "no such line"},
                {"path": "c.txt", "line": 1, "body": "no such file"},
                {"path": "a.txt", "line": 1, "side": "old", "endLine": 7, "body": "too far"},
            ]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_ANCHOR", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    for named in [
        "`a.txt` line 9 (new)",
        "`c.txt` line 1 (new)",
        "`a.txt` line 1–7 (old)",
    ] {
        assert!(message.contains(named), "{named}: {message}");
    }
    assert!(!message.contains("`a.txt` line 1 (new)"), "{message}");

    for bad in [
        json!({"comments": []}),
        json!({"comments": [{"path": "a.txt", "line": 0, "body": "x"}]}),
        json!({"comments": [{"path": "a.txt", "line": 1, "body": "  "}]}),
        json!({"comments": [{"path": "a.txt", "line": 1, "side": "left", "body": "x"}]}),
    ] {
        let (status, body) = server.post(&path, &bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "INVALID_ARGUMENT", "{bad}: {body}");
    }

    // Busy: refused like a message without `queue`.
    ws.chat(&sid, "/hold review-busy").await;
    server.wait_held("review-busy").await;
    let during = ws
        .request(json!({"type": "chat.review", "sessionId": sid,
            "comments": [{"path": "a.txt", "line": 1, "body": "now"}]}))
        .await;
    assert_eq!(during["code"], "RUN_IN_PROGRESS", "{during}");
    server.release("review-busy").await;
    ws.events_until_turn_end(&sid).await;

    let other = server.add_user("mallory");
    let (status, body) = other
        .post(
            &path,
            &json!({"comments": [{"path": "a.txt", "line": 1, "body": "mine"}]}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND", "{body}");

    // Only the held turn was added: no review, no message of one.
    assert!(stored(&server, &sid, "review").await.is_empty());
    let after = server.all_events(&sid).await;
    let users: Vec<&Value> = after[before..]
        .iter()
        .filter(|e| e["kind"] == "user_message")
        .collect();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(users[0]["text"], "/hold review-busy");
}

/// A review of a Worker's diff sent to its Driver: anchored in the Worker's diff,
/// delivered as a turn of the Driver that names the Worker and its branch; the
/// Worker's history has none of it. A session that is no Worker cannot.
#[actix_rt::test]
async fn a_review_of_a_workers_diff_goes_to_its_driver() {
    let server = Server::start_with(ServerOptions {
        args: vec!["--worker-workspace".into(), "worktree".into()],
        ..ServerOptions::default()
    });
    let dir = repo(&server, "proj");
    let mut ws = server.ws().await;
    let d = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&d, 0).await;
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write w.txt worker"}),
        )
        .await;
    assert!(!err, "{out}");
    let w = out["partnerId"].as_str().unwrap().to_string();
    let branch = out["changes"]["branch"].as_str().unwrap().to_string();

    let reply = ws
        .ok(
            json!({"type": "chat.review", "sessionId": w, "to": "driver",
            "comments": [{"path": "w.txt", "line": 1, "body": "Name it better."}]}),
        )
        .await;
    assert_eq!(reply["sessionId"], d.as_str(), "{reply}");
    let events = ws.events_until_turn_end(&d).await;
    let user = events.iter().find(|e| e["kind"] == "user_message").unwrap();
    let text = user["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Review of your Worker's changes (session {w} on branch {branch})"
        )),
        "{text}"
    );
    assert!(text.contains("+worker\n```\n> Name it better."), "{text}");
    assert!(events.iter().any(|e| e["kind"] == "review"));
    assert!(!server
        .all_events(&w)
        .await
        .iter()
        .any(|e| e["kind"] == "review"));

    // The Driver itself is no Worker.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{d}/review"),
            &json!({"to": "driver", "comments": [{"path": "a.txt", "line": 1, "body": "x"}]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENT", "{body}");
}
