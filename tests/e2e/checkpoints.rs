//! A checkpoint of the files after every turn, against real git in temporary
//! repositories and a real server: untracked files in, ignored files out, the
//! checkout's `HEAD`, branches and index untouched, each checkpoint the parent of
//! the next, listed over REST and the socket, and removed with the session (archive)
//! or its worktree (discard).

use std::path::Path;

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions, WsClient};

use crate::workspaces::{git, repo};

/// Runs one scripted turn and waits for its `checkpoint` event; the event.
async fn turn_checkpoint(ws: &mut WsClient, sid: &str, script: &str) -> Value {
    let sent = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": script}))
        .await;
    let turn = sent["turnId"].as_str().unwrap().to_string();
    let frames = ws
        .recv_until(|v| v["kind"] == "checkpoint" && v["turnId"] == turn.as_str())
        .await;
    let checkpoint = frames.last().cloned().unwrap();
    let ended = frames
        .iter()
        .position(|v| v["kind"] == "turn_completed" && v["turnId"] == turn.as_str());
    assert!(
        ended.is_some(),
        "the checkpoint follows its turn's end: {frames:?}"
    );
    checkpoint
}

/// The paths a commit holds.
fn tree(dir: &Path, commit: &str) -> Vec<String> {
    let listing = git(dir, &["ls-tree", "-r", "--name-only", commit]);
    listing.lines().map(str::to_string).collect()
}

/// What a checkpoint must leave alone: `HEAD`, the branches, the index, the status.
fn untouched(dir: &Path) -> [String; 4] {
    [
        git(dir, &["rev-parse", "HEAD"]),
        git(dir, &["for-each-ref", "refs/heads"]),
        git(dir, &["ls-files", "-s"]),
        git(dir, &["status", "--porcelain", "--ignored"]),
    ]
}

#[actix_rt::test]
async fn every_turn_checkpoints_the_files_without_touching_the_checkout() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    std::fs::write(dir.join(".gitignore"), "*.log\n").unwrap();
    git(&dir, &["add", ".gitignore"]);
    git(&dir, &["commit", "-q", "-m", "ignore logs"]);
    std::fs::write(dir.join("build.log"), "ignored\n").unwrap();
    // Something staged in the checkout's own index stays staged, and only there.
    std::fs::write(dir.join("staged.txt"), "staged\n").unwrap();
    git(&dir, &["add", "staged.txt"]);
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;

    let first = turn_checkpoint(&mut ws, &sid, "/write new.txt made by the agent").await;
    let c1 = first["commit"].as_str().unwrap().to_string();
    assert_eq!(first["files"], json!(["new.txt", "staged.txt"]), "{first}");
    assert_eq!(
        tree(&dir, &c1),
        [".gitignore", "a.txt", "new.txt", "staged.txt"],
        "untracked files in, ignored files out"
    );
    let turn1 = first["turnId"].as_str().unwrap();
    assert_eq!(
        git(
            &dir,
            &[
                "rev-parse",
                &format!("refs/tandem/checkpoints/{sid}/{turn1}")
            ]
        ),
        c1
    );
    assert_eq!(
        git(&dir, &["rev-parse", &format!("{c1}^")]),
        git(&dir, &["rev-parse", "HEAD"])
    );

    let before = untouched(&dir);
    let second = turn_checkpoint(&mut ws, &sid, "/write a.txt rewritten").await;
    let c2 = second["commit"].as_str().unwrap().to_string();
    assert_eq!(
        second["files"],
        json!(["a.txt"]),
        "only what this turn changed"
    );
    assert_eq!(
        git(&dir, &["rev-parse", &format!("{c2}^")]),
        c1,
        "the previous checkpoint is its parent"
    );
    assert_eq!(git(&dir, &["show", &format!("{c2}:a.txt")]), "rewritten");
    let after = untouched(&dir);
    assert_eq!(
        before[..3],
        after[..3],
        "HEAD, branches and index as they were"
    );
    assert!(after[2].contains("staged.txt"), "{}", after[2]);
    assert!(
        after[3].contains("?? new.txt"),
        "still untracked: {}",
        after[3]
    );
    assert!(
        after[3].contains("!! build.log"),
        "still ignored: {}",
        after[3]
    );

    let (status, listed) = server
        .get(&format!("/api/v1/sessions/{sid}/checkpoints"))
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["sessionId"], sid.as_str());
    let list = listed["checkpoints"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{listed}");
    assert_eq!(list[0]["commit"], c1.as_str());
    assert_eq!(list[1]["commit"], c2.as_str());
    assert_eq!(list[1]["turnId"], second["turnId"]);
    assert_eq!(list[1]["files"], json!(["a.txt"]));
    assert_eq!(list[1]["seq"], second["seq"]);
    let over_ws = ws
        .ok(json!({"type": "session.checkpoints", "sessionId": sid}))
        .await;
    assert_eq!(over_ws["checkpoints"], listed["checkpoints"]);

    let (status, body) = server.delete(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        git(
            &dir,
            &["for-each-ref", &format!("refs/tandem/checkpoints/{sid}/")]
        ),
        "",
        "archiving removes the session's checkpoints"
    );
    assert_eq!(
        git(&dir, &["cat-file", "-t", &c2]),
        "commit",
        "unreferenced, not yet pruned"
    );
}

#[actix_rt::test]
async fn a_worktree_sessions_checkpoints_go_with_its_worktree() {
    let server = Server::start();
    let base = repo(&server, "proj");
    let mut ws = server.ws().await;
    let info = ws
        .ok(json!({"type": "session.create", "cwd": base, "workspace": "worktree"}))
        .await["session"]
        .clone();
    let sid = info["id"].as_str().unwrap().to_string();
    ws.subscribe(&sid, 0).await;
    let head = git(&base, &["rev-parse", "HEAD"]);

    let checkpoint = turn_checkpoint(&mut ws, &sid, "/write b.txt in the worktree").await;
    let commit = checkpoint["commit"].as_str().unwrap();
    assert_eq!(checkpoint["files"], json!(["b.txt"]), "{checkpoint}");
    assert_eq!(
        git(&base, &["show", &format!("{commit}:b.txt")]),
        "in the worktree"
    );
    assert_eq!(
        git(&base, &["rev-parse", &format!("{commit}^")]),
        head,
        "the worktree's HEAD"
    );
    let turn = checkpoint["turnId"].as_str().unwrap();
    let name = format!("refs/tandem/checkpoints/{sid}/{turn}");
    assert_eq!(
        git(&base, &["rev-parse", &name]),
        commit,
        "in the base repository"
    );
    assert!(
        !base.join("b.txt").exists(),
        "the base checkout is not touched"
    );

    ws.ok(json!({"type": "session.discard", "sessionId": sid}))
        .await;
    assert_eq!(
        git(
            &base,
            &["for-each-ref", &format!("refs/tandem/checkpoints/{sid}/")]
        ),
        ""
    );
}

#[actix_rt::test]
async fn outside_a_repository_there_are_no_checkpoints_and_an_unknown_session_is_not_found() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create"})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "hello").await;
    ws.events_until_turn_end(&sid).await;
    let (status, listed) = server
        .get(&format!("/api/v1/sessions/{sid}/checkpoints"))
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["checkpoints"], json!([]), "{listed}");
    let (status, body) = server
        .get("/api/v1/sessions/ses_nosuchsession/checkpoints")
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND", "{body}");
}

/// Outside a repository no git runs for checkpoints after the first turn; once
/// `git_state` shows the directory became one, they resume.
#[actix_rt::test]
async fn a_directory_that_becomes_a_repository_gets_checkpoints() {
    let server = Server::start();
    let dir = server.dir.path().join("later");
    std::fs::create_dir_all(&dir).unwrap();
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "hello").await;
    ws.events_until_turn_end(&sid).await;
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    git(&dir, &["add", "a.txt"]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    ws.chat(&sid, "/write b.txt two").await;
    ws.recv_until(|v| v["kind"] == "git_state" && v["sessionId"] == sid.as_str())
        .await;
    let third = turn_checkpoint(&mut ws, &sid, "/write c.txt three").await;
    let files = third["files"].as_array().unwrap();
    assert!(files.contains(&json!("c.txt")), "{third}");
    assert!(!files.contains(&json!("a.txt")), "{third}");
}

#[actix_rt::test]
async fn a_restore_puts_the_files_back_and_can_be_undone() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    std::fs::write(dir.join(".gitignore"), "*.log\n").unwrap();
    git(&dir, &["add", ".gitignore"]);
    git(&dir, &["commit", "-q", "-m", "ignore logs"]);
    std::fs::write(dir.join("build.log"), "ignored\n").unwrap();
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    // `/write` makes no directories.
    std::fs::create_dir(dir.join("sub")).unwrap();
    let first = turn_checkpoint(&mut ws, &sid, "/write b.txt first").await;
    let turn1 = first["turnId"].as_str().unwrap().to_string();
    turn_checkpoint(
        &mut ws,
        &sid,
        "/write a.txt changed\n/write sub/c.txt third",
    )
    .await;
    // Made outside any turn: not in a checkpoint yet, but in the one the restore makes.
    std::fs::write(dir.join("d.txt"), "by hand\n").unwrap();
    let before = untouched(&dir);

    let (status, restored) = server
        .post(
            &format!("/api/v1/sessions/{sid}/restore"),
            &json!({"turnId": turn1}),
        )
        .await;
    assert_eq!(status, 200, "{restored}");
    assert_eq!(restored["commit"], first["commit"]);
    assert_eq!(
        restored["files"],
        json!(["a.txt", "d.txt", "sub/c.txt"]),
        "{restored}"
    );
    let undo = restored["undo"].as_str().unwrap().to_string();
    assert!(undo.starts_with("restore_"), "{undo}");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("b.txt")).unwrap(),
        "first\n"
    );
    assert!(!dir.join("sub/c.txt").exists() && !dir.join("d.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("build.log")).unwrap(),
        "ignored\n"
    );
    let after = untouched(&dir);
    assert_eq!(
        before[..3],
        after[..3],
        "HEAD, branches and index as they were"
    );
    let events = ws
        .recv_until(|v| v["kind"] == "restored" && v["sessionId"] == sid.as_str())
        .await;
    let n = events.len();
    assert_eq!(events[n - 2]["kind"], "checkpoint", "{events:?}");
    assert_eq!(events[n - 2]["turnId"], undo.as_str());
    assert_eq!(events[n - 1]["turnId"], turn1.as_str());
    assert_eq!(events[n - 1]["undo"], undo.as_str());

    // Undone over the socket: the files as they were before the restore.
    let back = ws
        .ok(json!({"type": "session.restore", "sessionId": sid, "turnId": undo}))
        .await;
    assert_eq!(
        back["files"],
        json!(["a.txt", "d.txt", "sub/c.txt"]),
        "{back}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "changed\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/c.txt")).unwrap(),
        "third\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("d.txt")).unwrap(),
        "by hand\n"
    );
    assert_eq!(
        before,
        untouched(&dir),
        "the checkout is as it was before the restore"
    );

    // The next turn's checkpoint lists only what that turn changed.
    let next = turn_checkpoint(&mut ws, &sid, "/write b.txt again").await;
    assert_eq!(next["files"], json!(["b.txt"]), "{next}");
}

#[actix_rt::test]
async fn a_restore_is_refused_during_a_turn_for_an_unknown_turn_and_to_others() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let dir = repo(&server, "proj");
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    let first = turn_checkpoint(&mut ws, &sid, "/write b.txt first").await;
    let turn1 = first["turnId"].as_str().unwrap();
    let path = format!("/api/v1/sessions/{sid}/restore");

    let (status, body) = server.post(&path, &json!({"turnId": "turn_99"})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "NO_SUCH_CHECKPOINT", "{body}");
    let (status, body) = server.post(&path, &json!({"turnId": "../../x"})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "NO_SUCH_CHECKPOINT", "{body}");

    ws.ok(json!({"type": "chat.send", "sessionId": sid,
        "content": "/write b.txt during\n/hold restore-busy"}))
        .await;
    server.wait_held("restore-busy").await;
    let (status, body) = server.post(&path, &json!({"turnId": turn1})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "SESSION_BUSY", "{body}");
    assert_eq!(
        std::fs::read_to_string(dir.join("b.txt")).unwrap(),
        "during\n"
    );
    server.release("restore-busy").await;
    ws.events_until_turn_end(&sid).await;

    // A file the repository has come to ignore is never overwritten: turn 1's
    // checkpoint holds `cache.tmp`, which is ignored (and changed) by now.
    let cached = turn_checkpoint(&mut ws, &sid, "/write cache.tmp kept").await;
    assert_eq!(cached["files"], json!(["cache.tmp"]), "{cached}");
    let cached = cached["turnId"].as_str().unwrap().to_string();
    std::fs::write(dir.join(".gitignore"), "*.tmp\n").unwrap();
    std::fs::write(dir.join("cache.tmp"), "mine now\n").unwrap();
    turn_checkpoint(&mut ws, &sid, "/write b.txt later").await;
    let (status, body) = server.post(&path, &json!({"turnId": cached})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "CONFLICT", "{body}");
    assert_eq!(
        std::fs::read_to_string(dir.join("cache.tmp")).unwrap(),
        "mine now\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("b.txt")).unwrap(),
        "later\n"
    );

    let other = server.add_user("mallory");
    let (status, body) = other.post(&path, &json!({"turnId": turn1})).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND", "{body}");
    assert_eq!(
        std::fs::read_to_string(dir.join("b.txt")).unwrap(),
        "later\n"
    );
}

/// A turn that starts while the previous turn's checkpoint is still being made (held
/// at a failpoint that pauses until the test sets it again) waits for it before its
/// agent runs, so each checkpoint holds its own turn's files; interrupted while it
/// waits, it never runs.
#[actix_rt::test]
async fn a_turn_started_during_a_checkpoint_waits_for_it() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    turn_checkpoint(&mut ws, &sid, "/write zero.txt known to be a repository").await;
    // `pause`: a checkpoint reaching the failpoint stays there until the failpoint is
    // set again (`off` lets it, and every later one, pass). So "still being made" is
    // a state the test ends, not a delay it races.
    server.failpoint("workspace.checkpoint", "pause").await;

    let send = |content: &str| json!({"type": "chat.send", "sessionId": sid, "content": content});
    let one = ws.ok(send("/write one.txt first")).await["turnId"].clone();
    ws.events_until_turn_end(&sid).await;
    // Turn one's checkpoint cannot be done: sent now, turn two waits for it.
    let two = ws
        .ok(send("/write two.txt second\n/hold checkpoint-two"))
        .await["turnId"]
        .clone();
    server.failpoint("workspace.checkpoint", "off").await;
    // Turn two's agent ran (after turn one's checkpoint, if it waited) and stands at
    // its hold; its own checkpoint will wait at the failpoint, set again.
    server.wait_held("checkpoint-two").await;
    server.failpoint("workspace.checkpoint", "pause").await;
    server.release("checkpoint-two").await;
    let frames = ws
        .recv_until(|v| v["kind"] == "turn_completed" && v["turnId"] == two)
        .await;
    let first = frames
        .iter()
        .find(|v| v["kind"] == "checkpoint" && v["turnId"] == one)
        .cloned();
    let first = first.expect("turn one's checkpoint before turn two's end");
    assert_eq!(first["files"], json!(["one.txt"]), "{first}");

    // Interrupted while it waits for turn two's checkpoint (held): its agent never
    // runs.
    let three = ws.ok(send("/write three.txt never")).await["turnId"].clone();
    ws.ok(json!({"type": "chat.abort", "sessionId": sid})).await;
    let mut frames = ws
        .recv_until(|v| v["kind"] == "turn_completed" && v["turnId"] == three)
        .await;
    let ended = frames.last().cloned().expect("turn three ended");
    assert_eq!(ended["status"], "interrupted", "{ended}");
    assert!(
        !frames
            .iter()
            .any(|v| v["kind"] == "checkpoint" && v["turnId"] == two),
        "turn two's checkpoint was held: {frames:?}"
    );
    server.failpoint("workspace.checkpoint", "off").await;
    frames.extend(
        ws.recv_until(|v| v["kind"] == "checkpoint" && v["turnId"] == three)
            .await,
    );
    let second = frames
        .iter()
        .find(|v| v["kind"] == "checkpoint" && v["turnId"] == two)
        .cloned()
        .expect("turn two's checkpoint");
    assert_eq!(second["files"], json!(["two.txt"]), "{second}");
    assert_eq!(frames.last().unwrap()["files"], json!([]));
    assert!(!dir.join("three.txt").exists());
}
