//! `session.push` against real git: a worktree's branch, its uncommitted changes
//! committed, lands in a local bare repository as the remote; a refused push (not a
//! fast-forward) carries git's message; a remote the repository lacks and a bad name
//! are refused; a discard keeps a pushed branch and deletes one never pushed, and so
//! does archiving, which removes the worktree.

use serde_json::json;
use tandem_tests::{Server, WsClient};

use crate::workspaces::{git, repo};

/// A worktree session in `dir`, subscribed, that wrote `file`.
async fn worktree_with(ws: &mut WsClient, dir: &std::path::Path, file: &str) -> String {
    let sid = ws
        .ok(json!({"type": "session.create", "cwd": dir, "workspace": "worktree"}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": sid,
        "content": format!("/write {file} from the agent")}))
        .await;
    ws.events_until_turn_end(&sid).await;
    sid
}

#[actix_rt::test]
async fn a_branch_is_pushed_to_a_remote_and_kept_when_discarded() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let remote = server.dir.path().join("remote.git");
    git(
        server.dir.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(&dir, &["remote", "add", "origin", remote.to_str().unwrap()]);
    let mut ws = server.ws().await;
    let sid = worktree_with(&mut ws, &dir, "pushed.txt").await;
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    let branch = info["workspace"]["branch"].as_str().unwrap().to_string();

    let path = format!("/api/v1/sessions/{sid}/push");
    let (status, body) = server.post(&path, &json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["remote"], "origin");
    assert_eq!(body["branch"], branch.as_str());
    let commit = body["commit"].as_str().unwrap().to_string();
    assert_eq!(
        git(&remote, &["rev-parse", &format!("refs/heads/{branch}")]),
        commit
    );
    assert_eq!(
        git(&remote, &["show", &format!("{commit}:pushed.txt")]),
        "from the agent"
    );
    // Under another name too.
    let (status, body) = server
        .post(&path, &json!({"remote": "origin", "branch": "review/one"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        git(&remote, &["rev-parse", "refs/heads/review/one"]),
        commit
    );
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["workspace"]["pushed"]["branch"], "review/one");
    assert!(server
        .all_events(&sid)
        .await
        .iter()
        .any(|e| e["kind"] == "pushed" && e["commit"] == commit.as_str()));

    // Not a fast-forward any more: refused with git's words, nothing changed there.
    let other = server.dir.path().join("other");
    git(
        server.dir.path(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    git(&other, &["checkout", "-q", "review/one"]);
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&other, &["add", "theirs.txt"]);
    git(&other, &["commit", "-q", "-m", "theirs"]);
    git(&other, &["push", "-q", "origin", "review/one"]);
    let theirs = git(&remote, &["rev-parse", "refs/heads/review/one"]);
    ws.chat(&sid, "/write more.txt more").await;
    ws.events_until_turn_end(&sid).await;
    let (status, body) = server.post(&path, &json!({"branch": "review/one"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "PUSH_REFUSED", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rejected"),
        "{body}"
    );
    assert_eq!(
        git(&remote, &["rev-parse", "refs/heads/review/one"]),
        theirs
    );

    // Refusals before git runs.
    for (bad, code) in [
        (json!({"remote": "nope"}), "INVALID_ARGUMENT"),
        (json!({"remote": "--upload-pack=x"}), "INVALID_ARGUMENT"),
        (json!({"branch": "no..dots"}), "INVALID_ARGUMENT"),
    ] {
        let (status, body) = server.post(&path, &bad).await;
        assert!(status == 400 || status == 422, "{bad}: {status} {body}");
        assert_eq!(body["error"]["code"], code, "{bad}: {body}");
    }

    // Discarded: the worktree goes, the pushed branch stays.
    ws.ok(json!({"type": "session.discard", "sessionId": sid}))
        .await;
    assert!(!git(&dir, &["branch", "--list", &branch]).is_empty());

    // One never pushed nor merged loses its branch.
    let plain = worktree_with(&mut ws, &dir, "gone.txt").await;
    let (_, info) = server.get(&format!("/api/v1/sessions/{plain}")).await;
    let plain_branch = info["workspace"]["branch"].as_str().unwrap().to_string();
    ws.ok(json!({"type": "session.discard", "sessionId": plain}))
        .await;
    assert!(git(&dir, &["branch", "--list", &plain_branch]).is_empty());
}

/// What an agent writes into the repository's configuration never runs as the
/// server when it pushes: a remote's `receivepack`, or a URL rewritten to `ext::`.
#[actix_rt::test]
async fn a_push_runs_no_command_the_repository_configures() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let remote = server.dir.path().join("remote.git");
    git(
        server.dir.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(&dir, &["remote", "add", "origin", remote.to_str().unwrap()]);
    let marker = server.dir.path().join("ran");
    git(
        &dir,
        &[
            "config",
            "remote.origin.receivepack",
            &format!("touch {}; git-receive-pack", marker.display()),
        ],
    );
    let mut ws = server.ws().await;
    let sid = worktree_with(&mut ws, &dir, "a.txt").await;
    let path = format!("/api/v1/sessions/{sid}/push");
    let (status, body) = server.post(&path, &json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(!marker.exists(), "the configured receivepack ran");

    git(
        &dir,
        &[
            "config",
            &format!("url.ext::sh -c touch% {}.insteadOf", marker.display()),
            remote.to_str().unwrap(),
        ],
    );
    let (status, body) = server.post(&path, &json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "PUSH_REFUSED", "{body}");
    assert!(!marker.exists(), "the ext:: transport ran");
}

/// Archiving a worktree session removes its worktree, and its branch unless that was
/// pushed.
#[actix_rt::test]
async fn archiving_removes_the_worktree_and_an_unpushed_branch() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let remote = server.dir.path().join("remote.git");
    git(
        server.dir.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(&dir, &["remote", "add", "origin", remote.to_str().unwrap()]);
    let mut ws = server.ws().await;
    let mut ends = Vec::new();
    for push in [false, true] {
        let sid = worktree_with(&mut ws, &dir, "x.txt").await;
        let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
        let tree = std::path::PathBuf::from(info["cwd"].as_str().unwrap());
        let branch = info["workspace"]["branch"].as_str().unwrap().to_string();
        if push {
            let (status, body) = server
                .post(&format!("/api/v1/sessions/{sid}/push"), &json!({}))
                .await;
            assert_eq!(status, 200, "{body}");
        }
        let (status, body) = server.delete(&format!("/api/v1/sessions/{sid}")).await;
        assert_eq!(status, 200, "{body}");
        assert!(!tree.exists(), "the worktree is gone");
        ends.push(!git(&dir, &["branch", "--list", &branch]).is_empty());
    }
    assert_eq!(ends, [false, true], "only the pushed branch stays");
    assert!(!git(&dir, &["worktree", "list"]).contains("worktrees/"));
}
