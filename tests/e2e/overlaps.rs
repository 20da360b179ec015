//! Overlaps between sibling worktrees, against real git and a real server: two
//! worktree sessions of one owner in one repository that change the same file both
//! get an `overlap` event naming the other and the paths, once, and hear when it ends
//! (a discard); another owner's worktree of the same repository is never a sibling.
//! And `session.rebase`, which moves a worktree onto its base's head or, on a
//! conflict, changes nothing.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions, WsClient};

use crate::workspaces::{git, repo};

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

/// The worktree session's directory and branch.
async fn worktree_of(server: &Server, sid: &str) -> (std::path::PathBuf, String) {
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    (
        info["cwd"].as_str().unwrap().into(),
        info["workspace"]["branch"].as_str().unwrap().to_string(),
    )
}

#[actix_rt::test]
async fn a_rebase_moves_the_branch_onto_the_base_or_refuses_a_conflict_changing_nothing() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let mut ws = server.ws().await;
    let sid = worktree(&mut ws, &dir).await;
    let (wt, branch) = worktree_of(&server, &sid).await;
    let path = format!("/api/v1/sessions/{sid}/rebase");

    // Nothing new on main: nothing moves.
    let (status, body) = server.post(&path, &json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["moved"], false, "{body}");

    // The agent's uncommitted file, and a new commit on main.
    write(&mut ws, &sid, "/write b.txt mine").await;
    std::fs::write(dir.join("c.txt"), "theirs\n").unwrap();
    git(&dir, &["add", "c.txt"]);
    git(&dir, &["commit", "-q", "-m", "theirs"]);
    let main = git(&dir, &["rev-parse", "main"]);
    let (status, body) = server.post(&path, &json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["moved"], true, "{body}");
    assert_eq!(body["onto"], main.as_str());
    assert_eq!(body["branch"], branch.as_str());
    assert_eq!(
        git(&wt, &["rev-parse", "HEAD"]),
        body["head"].as_str().unwrap()
    );
    assert_eq!(
        git(&wt, &["rev-parse", "HEAD^"]),
        main,
        "its commit is on main's head"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("c.txt")).unwrap(),
        "theirs\n"
    );
    assert_eq!(std::fs::read_to_string(wt.join("b.txt")).unwrap(), "mine\n");
    assert_eq!(
        git(&wt, &["status", "--porcelain"]),
        "",
        "committed as a merge would"
    );
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["workspace"]["baseCommit"], main.as_str());
    let rebased: Vec<Value> = server
        .all_events(&sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "rebased")
        .collect();
    assert_eq!(rebased.len(), 1, "{rebased:?}");
    assert_eq!(rebased[0]["onto"], main.as_str());

    // Both change a.txt: refused, and the branch, its files and git are as they were.
    write(&mut ws, &sid, "/write a.txt the agent's").await;
    std::fs::write(dir.join("a.txt"), "main's\n").unwrap();
    git(&dir, &["commit", "-q", "-am", "main's a"]);
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    let (status, body) = server.post(&path, &json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "MERGE_CONFLICT", "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("a.txt"),
        "{body}"
    );
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]), tip);
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt")).unwrap(),
        "the agent's\n"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "M a.txt");
    let git_dir = git(&wt, &["rev-parse", "--git-dir"]);
    assert!(
        !std::path::Path::new(&git_dir).join("rebase-merge").exists(),
        "no rebase left half done"
    );
    // A turn can run after it.
    write(&mut ws, &sid, "/write d.txt after").await;
}
