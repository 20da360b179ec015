//! Overlaps between sibling worktrees, against real git and a real server: two
//! worktree sessions of one owner in one repository that change the same file both
//! get an `overlap` event naming the other and the paths, once, and hear when it ends
//! (a discard); another owner's worktree of the same repository is never a sibling.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions, WsClient};

use crate::workspaces::repo;

/// A worktree session in `dir`, subscribed.
async fn worktree(ws: &mut WsClient, dir: &std::path::Path) -> String {
    let sid = ws
        .ok(json!({"type": "session.create", "cwd": dir, "workspace": "worktree"}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    sid
}

/// Runs `script` and waits for the `git_state` it leads to.
async fn write(ws: &mut WsClient, sid: &str, script: &str) {
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": script}))
        .await;
    ws.recv_until(|v| v["kind"] == "git_state" && v["sessionId"] == sid)
        .await;
}

/// The session's stored `overlap` events.
async fn overlaps(server: &Server, sid: &str) -> Vec<Value> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "overlap")
        .map(|e| json!({"with": e["withSessionId"], "paths": e["paths"]}))
        .collect()
}

#[actix_rt::test]
async fn siblings_that_change_the_same_file_are_both_told_and_hear_when_it_ends() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let dir = repo(&server, "proj");
    let mut ws = server.ws().await;
    let a = worktree(&mut ws, &dir).await;
    let b = worktree(&mut ws, &dir).await;
    write(&mut ws, &a, "/write a.txt from a\n/write only-a.txt a").await;
    write(&mut ws, &b, "/write b.txt b").await;
    assert!(overlaps(&server, &a).await.is_empty());
    assert!(overlaps(&server, &b).await.is_empty());

    // Another owner's worktree of the same repository changes the same file: no one
    // is told.
    let other = server.add_user("mallory");
    let mut ows = other.ws().await;
    let m = worktree(&mut ows, &dir).await;
    write(&mut ows, &m, "/write a.txt from m").await;

    // Now `b` changes `a.txt` too: both hear it, once.
    write(&mut ws, &b, "/write a.txt from b").await;
    let expect_a = json!([{"with": b, "paths": ["a.txt"]}]);
    let expect_b = json!([{"with": a, "paths": ["a.txt"]}]);
    eventually("both told", async || {
        (Value::from(overlaps(&server, &a).await) == expect_a).then_some(())
    })
    .await;
    assert_eq!(Value::from(overlaps(&server, &b).await), expect_b);
    assert!(overlaps(&server, &m).await.is_empty());
    write(&mut ws, &b, "/write a.txt again from b\n/write c.txt c").await;
    assert_eq!(
        Value::from(overlaps(&server, &b).await),
        expect_b,
        "nothing new, nothing said"
    );

    // `b` is discarded: `a` shares nothing with it any more.
    ws.ok(json!({"type": "session.discard", "sessionId": b}))
        .await;
    let ended = json!([{"with": b, "paths": ["a.txt"]}, {"with": b, "paths": []}]);
    eventually("a told the overlap ended", async || {
        (Value::from(overlaps(&server, &a).await) == ended).then_some(())
    })
    .await;
}
