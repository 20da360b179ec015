//! Workspaces against real git in temporary repositories and a real server: worktree
//! sessions that do not see each other's edits, `git_state` after turns, merging (and
//! its refusals, with both checkouts left byte-identical), discarding, a kill -9 in
//! the middle of a merge, and the files routes' refusals.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions, WsClient};

/// Runs git in `dir`; its trimmed output. Panics on failure.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@localhost")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@localhost")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository on branch `main` under the server's workspace root, with `a.txt`
/// committed.
pub(crate) fn repo(server: &Server, name: &str) -> PathBuf {
    let dir = server.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    dir.canonicalize().unwrap()
}

/// Everything a merge could change in a checkout: its HEAD, its branch refs, its
/// index and every file's bytes (outside `.git`).
fn snapshot(dir: &Path) -> (String, String, String, Vec<(String, Vec<u8>)>) {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_name() == ".git" {
                continue;
            }
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                files.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    files.sort();
    (
        git(dir, &["rev-parse", "HEAD"]),
        git(dir, &["for-each-ref", "refs/heads"]),
        git(dir, &["ls-files", "-s"]),
        files,
    )
}

/// Creates a session over the socket; its `SessionInfo`.
async fn create(ws: &mut WsClient, fields: Value) -> Value {
    let mut body = json!({"type": "session.create", "title": "ws test"});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    ws.ok(body).await["session"].clone()
}

/// Runs one scripted turn in `sid` and returns its events.
async fn turn(ws: &mut WsClient, sid: &str, script: &str) -> Vec<Value> {
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": script}))
        .await;
    ws.events_until_turn_end(sid).await
}

/// A `git_state` event of `sid` arrives (it is computed after the turn ends).
async fn next_git_state(ws: &mut WsClient, sid: &str) -> Value {
    let frames = ws
        .recv_until(|v| v["kind"] == "git_state" && v["sessionId"] == sid)
        .await;
    frames.last().cloned().unwrap()
}

#[actix_rt::test]
async fn two_worktree_workers_do_not_see_each_other_and_the_second_merge_conflicts() {
    let server = Server::start();
    let base = repo(&server, "proj");
    let mut ws = server.ws().await;
    let driver = create(&mut ws, json!({"cwd": base})).await;
    let d = driver["id"].as_str().unwrap().to_string();
    assert!(driver.get("workspace").is_none(), "{driver}");

    // Two Workers of one Driver, one after the other (a Driver has one at a time),
    // each in its own worktree.
    let mut workers = Vec::new();
    for _ in 0..2 {
        let pair = ws
            .ok(json!({"type": "pair.create", "driverId": d,
                "worker": {"vendor": "scripted"}, "workerWorkspace": "worktree"}))
            .await["pair"]
            .clone();
        let w = pair["workerId"].as_str().unwrap().to_string();
        ws.ok(json!({"type": "pair.close", "pairId": pair["pairId"]}))
            .await;
        let (_, info) = server.get(&format!("/api/v1/sessions/{w}")).await;
        let wsinfo = &info["workspace"];
        assert_eq!(wsinfo["mode"], "worktree", "{info}");
        assert_eq!(wsinfo["base"], "main");
        assert_eq!(wsinfo["baseCheckout"], base.to_str().unwrap());
        let branch = wsinfo["branch"].as_str().unwrap().to_string();
        assert!(branch.starts_with("tandem/"), "{branch}");
        let cwd = PathBuf::from(info["cwd"].as_str().unwrap());
        assert_ne!(cwd, base);
        assert_eq!(git(&cwd, &["symbolic-ref", "--short", "HEAD"]), branch);
        workers.push((w, cwd, branch));
    }
    let (w1, cwd1, branch1) = workers[0].clone();
    let (w2, cwd2, branch2) = workers[1].clone();

    // Both edit the same file at the same time.
    let mut ws1 = server.ws().await;
    let mut ws2 = server.ws().await;
    ws1.subscribe(&w1, 0).await;
    ws2.subscribe(&w2, 0).await;
    ws1.ok(
        json!({"type": "chat.send", "sessionId": w1, "content": "/write a.txt from worker one"}),
    )
    .await;
    ws2.ok(
        json!({"type": "chat.send", "sessionId": w2, "content": "/write a.txt from worker two"}),
    )
    .await;
    ws1.events_until_turn_end(&w1).await;
    ws2.events_until_turn_end(&w2).await;
    assert_eq!(
        std::fs::read_to_string(cwd1.join("a.txt")).unwrap(),
        "from worker one\n"
    );
    assert_eq!(
        std::fs::read_to_string(cwd2.join("a.txt")).unwrap(),
        "from worker two\n"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n",
        "a Worker's edit reached the Driver's checkout"
    );

    // Each publishes what it changed once its turn ended.
    let state = next_git_state(&mut ws1, &w1).await;
    assert_eq!(state["branch"], branch1.as_str(), "{state}");
    assert_eq!(state["base"], "main");
    assert_eq!(state["dirty"], true);
    assert_eq!(
        state["files"],
        json!([{"path": "a.txt", "status": "modified", "added": 1, "removed": 3}])
    );
    let (status, changes) = server.get(&format!("/api/v1/sessions/{w2}/changes")).await;
    assert_eq!(status, 200, "{changes}");
    assert_eq!(changes["files"][0]["path"], "a.txt");
    let (status, diff) = server
        .get(&format!("/api/v1/sessions/{w2}/changes/diff?path=a.txt"))
        .await;
    assert_eq!(status, 200, "{diff}");
    assert!(
        diff["diff"].as_str().unwrap().contains("+from worker two"),
        "{diff}"
    );
    assert_eq!(diff["truncated"], false);

    // The first merge goes through.
    let merged = ws
        .ok(
            json!({"type": "session.merge", "sessionId": w1, "strategy": "merge",
            "message": "worker one's change"}),
        )
        .await;
    assert_eq!(merged["branch"], branch1.as_str(), "{merged}");
    assert_eq!(merged["base"], "main");
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "from worker one\n"
    );
    assert_eq!(git(&base, &["rev-parse", "HEAD"]), merged["commit"]);
    let events = server.all_events(&w1).await;
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "merged" && e["commit"] == merged["commit"]),
        "no merged event"
    );

    // The second conflicts; nothing of either checkout changes.
    let before_base = snapshot(&base);
    let before_worker = snapshot(&cwd2);
    let refused = ws
        .request(json!({"type": "session.merge", "sessionId": w2, "strategy": "squash"}))
        .await;
    assert_eq!(refused["kind"], "protocol_error", "{refused}");
    assert_eq!(refused["code"], "MERGE_CONFLICT");
    assert_eq!(refused["paths"], json!(["a.txt"]));
    assert!(snapshot(&base) == before_base, "the base checkout changed");
    assert!(
        snapshot(&cwd2) == before_worker,
        "the Worker's checkout changed"
    );
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{w2}/merge"),
            &json!({"strategy": "merge"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "MERGE_CONFLICT");
    assert_eq!(body["error"]["paths"], json!(["a.txt"]));
    assert!(snapshot(&base) == before_base, "the base checkout changed");
    assert!(
        snapshot(&cwd2) == before_worker,
        "the Worker's checkout changed"
    );

    // Discarding removes the worktree and the branch.
    let discarded = ws
        .ok(json!({"type": "session.discard", "sessionId": w2}))
        .await;
    assert_eq!(discarded["branch"], branch2.as_str());
    assert!(!cwd2.exists(), "the worktree is still there");
    assert_eq!(
        git(&base, &["branch", "--list", &branch2]),
        "",
        "the branch is still there"
    );
    let again = ws
        .request(json!({"type": "session.discard", "sessionId": w2}))
        .await;
    assert_eq!(again["code"], "NOT_A_WORKTREE", "{again}");
    let send = ws
        .request(json!({"type": "chat.send", "sessionId": w2, "content": "hi"}))
        .await;
    assert_eq!(send["code"], "CONFLICT", "{send}");
    let shared = ws
        .request(json!({"type": "session.merge", "sessionId": d, "strategy": "merge"}))
        .await;
    assert_eq!(shared["code"], "NOT_A_WORKTREE", "{shared}");
}

#[actix_rt::test]
async fn worktree_needs_a_repository_and_survives_a_restart() {
    let server = Server::start();
    let plain = server.dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let mut ws = server.ws().await;
    let refused = ws
        .request(json!({"type": "session.create", "cwd": plain, "workspace": "worktree"}))
        .await;
    assert_eq!(refused["code"], "NOT_A_GIT_REPOSITORY", "{refused}");
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            &json!({"cwd": plain, "workspace": "worktree"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "NOT_A_GIT_REPOSITORY");

    let base = repo(&server, "proj");
    let bad_ref = ws
        .request(
            json!({"type": "session.create", "cwd": base, "workspace": "worktree",
            "baseRef": "no-such-ref"}),
        )
        .await;
    assert_eq!(bad_ref["code"], "INVALID_ARGUMENT", "{bad_ref}");
    let info = create(&mut ws, json!({"cwd": base, "workspace": "worktree"})).await;
    let sid = info["id"].as_str().unwrap().to_string();
    let cwd = PathBuf::from(info["cwd"].as_str().unwrap());
    ws.subscribe(&sid, 0).await;
    turn(&mut ws, &sid, "/write new.txt hello").await;
    let state = next_git_state(&mut ws, &sid).await;
    assert_eq!(
        state["files"],
        json!([{"path": "new.txt", "status": "added", "added": 1, "removed": 0}])
    );
    // A turn that changes nothing publishes no new state.
    turn(&mut ws, &sid, "just talk").await;
    turn(&mut ws, &sid, "/write new.txt hello").await;
    ws.close().await;

    // The shared Driver sees its uncommitted change against HEAD.
    let mut ws = server.ws().await;
    let shared = create(&mut ws, json!({"cwd": base})).await;
    let s = shared["id"].as_str().unwrap().to_string();
    ws.subscribe(&s, 0).await;
    turn(&mut ws, &s, "/write a.txt edited").await;
    let shared_state = next_git_state(&mut ws, &s).await;
    assert_eq!(shared_state["branch"], "main", "{shared_state}");
    assert_eq!(shared_state["files"][0]["status"], "modified");
    ws.close().await;

    let dir = server.terminate();
    let server = Server::start_in(dir, ServerOptions::default());
    let events = server.all_events(&sid).await;
    let states = events.iter().filter(|e| e["kind"] == "git_state").count();
    assert_eq!(states, 1, "an unchanged state was published again");
    let (_, again) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(again["workspace"], info["workspace"]);
    assert!(cwd.join("new.txt").exists());
    // Archiving removes the worktree and its branch (never pushed nor merged).
    let (status, body) = server.delete(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(!cwd.exists());
    assert!(!git(&base, &["branch", "--list", "tandem/*"]).contains(&sid[4..12]));
}

#[actix_rt::test]
async fn merge_refuses_a_dirty_base_and_squashes() {
    let server = Server::start();
    let base = repo(&server, "proj");
    let mut ws = server.ws().await;
    let info = create(&mut ws, json!({"cwd": base, "workspace": "worktree"})).await;
    let sid = info["id"].as_str().unwrap().to_string();
    ws.subscribe(&sid, 0).await;
    turn(&mut ws, &sid, "/write a.txt changed\n/write b.txt new").await;
    std::fs::write(base.join("a.txt"), "local edit\n").unwrap();
    let before = snapshot(&base);
    let cwd = PathBuf::from(info["cwd"].as_str().unwrap());
    let before_worker = snapshot(&cwd);
    let dirty = ws
        .request(json!({"type": "session.merge", "sessionId": sid, "strategy": "squash"}))
        .await;
    assert_eq!(dirty["code"], "BASE_DIRTY", "{dirty}");
    assert_eq!(dirty["paths"], json!(["a.txt"]));
    assert!(snapshot(&base) == before);
    assert!(snapshot(&cwd) == before_worker);
    // An uncommitted change elsewhere does not stand in the way.
    std::fs::write(base.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(base.join("notes.md"), "mine\n").unwrap();
    let merged = ws
        .ok(
            json!({"type": "session.merge", "sessionId": sid, "strategy": "squash",
            "message": "squashed"}),
        )
        .await;
    assert_eq!(merged["strategy"], "squash");
    assert_eq!(git(&base, &["log", "-1", "--format=%s"]), "squashed");
    assert_eq!(git(&base, &["rev-list", "--count", "HEAD"]), "2");
    assert_eq!(
        std::fs::read_to_string(base.join("b.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("notes.md")).unwrap(),
        "mine\n"
    );
    // The worktree's changes were committed on its branch first.
    assert_eq!(git(&cwd, &["status", "--porcelain"]), "");
}

#[actix_rt::test]
async fn kill_during_a_merge_or_a_discard_is_clean_after_restart() {
    let server = Server::start_process(Default::default());
    let base = repo(&server, "proj");
    let mut ws = server.ws().await;
    let info = create(&mut ws, json!({"cwd": base, "workspace": "worktree"})).await;
    let sid = info["id"].as_str().unwrap().to_string();
    let cwd = PathBuf::from(info["cwd"].as_str().unwrap());
    let branch = info["workspace"]["branch"].as_str().unwrap().to_string();
    ws.subscribe(&sid, 0).await;
    turn(&mut ws, &sid, "/write a.txt changed").await;
    let before_base = snapshot(&base);
    let before_worker = snapshot(&cwd);
    // Dies after git merged, before the merge is recorded.
    server.failpoint("workspace.merge.merged", "return").await;
    ws.send(&json!({"type": "session.merge", "sessionId": sid, "strategy": "merge"}))
        .await;
    let (status, dir) = server.exited().await;
    assert!(!status.success(), "the server exited cleanly: {status}");
    let server = Server::start_process_in(dir, Default::default());
    assert!(
        snapshot(&base) == before_base,
        "the base checkout was not rolled back"
    );
    assert!(
        snapshot(&cwd) == before_worker,
        "the branch was not rolled back"
    );
    let info_events = eventually("the recovery is recorded", async || {
        let events = server.all_events(&sid).await;
        events
            .iter()
            .any(|e| {
                e["kind"] == "info"
                    && e["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("rolled back"))
            })
            .then_some(events)
    })
    .await;
    assert!(!info_events.iter().any(|e| e["kind"] == "merged"));
    // It merges after that.
    let mut ws = server.ws().await;
    ws.ok(json!({"type": "session.merge", "sessionId": sid, "strategy": "merge"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "changed\n"
    );

    // Dies after the worktree is removed, before the discard is recorded.
    server
        .failpoint("workspace.discard.removed", "return")
        .await;
    ws.send(&json!({"type": "session.discard", "sessionId": sid}))
        .await;
    let (status, dir) = server.exited().await;
    assert!(!status.success());
    let server = Server::start_in(dir, ServerOptions::default());
    // The recovery sets the state and records `discarded`, in that order: both are
    // waited for.
    let info = eventually("the discard is completed and recorded", async || {
        let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
        let recorded = server
            .all_events(&sid)
            .await
            .iter()
            .any(|e| e["kind"] == "discarded");
        (info["workspace"]["state"] == "discarded" && recorded).then_some(info)
    })
    .await;
    assert_eq!(info["workspace"]["branch"], branch.as_str());
    assert!(!cwd.exists());
    // It was merged, so the discard (finished by the recovery) keeps the branch.
    assert_eq!(git(&base, &["branch", "--list", &branch]), branch);
}

#[actix_rt::test]
async fn files_stay_inside_the_working_directory() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let base = repo(&server, "proj");
    let mut ws = server.ws().await;
    let info = create(&mut ws, json!({"cwd": base})).await;
    let sid = info["id"].as_str().unwrap().to_string();
    let outside = server.dir.path().join("secret.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, base.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(server.dir.path(), base.join("up")).unwrap();
    std::fs::write(base.join("big.bin"), vec![b'x'; 10 << 20]).unwrap();
    std::fs::write(base.join("image.png"), [0x89, b'P', b'N', b'G', 0, 1, 2, 0]).unwrap();
    let files = |q: &str| format!("/api/v1/sessions/{sid}/files{q}");

    let (status, listing) = server.get(&files("")).await;
    assert_eq!(status, 200, "{listing}");
    let names: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"a.txt"), "{names:?}");
    assert!(!names.contains(&".git"), "{names:?}");

    for bad in [
        "../secret.txt",
        "/etc/passwd",
        "link.txt",
        "up/secret.txt",
        ".git/config",
        "a/../../secret.txt",
    ] {
        let q = format!("/content?path={}", bad.replace('/', "%2F"));
        let (status, body) = server.get(&files(&q)).await;
        assert_eq!(status, 403, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "PATH_OUTSIDE_WORKSPACE", "{bad}");
        let (status, _, body) = server
            .put(&files(&q), &json!({"content": "x"}), Some("*"))
            .await;
        assert_eq!(
            body["error"]["code"], "PATH_OUTSIDE_WORKSPACE",
            "{bad} {status}"
        );
    }
    let (status, body) = server.get(&files("?path=up")).await;
    assert_eq!(
        body["error"]["code"], "PATH_OUTSIDE_WORKSPACE",
        "{status} {body}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");

    let (status, body) = server.get(&files("/content?path=big.bin")).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "FILE_TOO_LARGE");
    let (status, body) = server.get(&files("/content?path=image.png")).await;
    assert_eq!(status, 415, "{body}");
    assert_eq!(body["error"]["code"], "BINARY_FILE");
    let (status, body) = server.get(&files("/content?path=missing.txt")).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (404, json!("NO_SUCH_FILE"))
    );

    // Read, save with the ETag, then a stale save is refused.
    let (status, file) = server.get(&files("/content?path=a.txt")).await;
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["content"], "one\ntwo\nthree\n");
    let tag = file["etag"].as_str().unwrap().to_string();
    let (status, etag, saved) = server
        .put(
            &files("/content?path=a.txt"),
            &json!({"content": "edited\n"}),
            Some(&tag),
        )
        .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(etag.as_deref(), saved["etag"].as_str());
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "edited\n"
    );
    let (status, _, stale) = server
        .put(
            &files("/content?path=a.txt"),
            &json!({"content": "lost\n"}),
            Some(&tag),
        )
        .await;
    assert_eq!(status, 412, "{stale}");
    assert_eq!(stale["error"]["code"], "PRECONDITION_FAILED");
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "edited\n"
    );
    let (status, _, created) = server
        .put(
            &files("/content?path=new.txt"),
            &json!({"content": "fresh\n"}),
            None,
        )
        .await;
    assert_eq!(status, 200, "{created}");

    // The diff of a binary file is reported, not dumped.
    let (status, diff) = server
        .get(&format!(
            "/api/v1/sessions/{sid}/changes/diff?path=image.png"
        ))
        .await;
    assert_eq!(status, 200, "{diff}");
    assert_eq!(diff["binaryFiles"], json!(["image.png"]), "{diff}");
    assert!(
        diff["diff"]
            .as_str()
            .unwrap()
            .contains("Binary files /dev/null and b/image.png differ"),
        "{diff}"
    );
    // The whole diff stops at the cap inside the 10 MiB file.
    let (status, all) = server
        .get(&format!("/api/v1/sessions/{sid}/changes/diff"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(all["truncated"], true);
    assert!(all["diff"].as_str().unwrap().len() <= (1 << 20) + 100);

    // Another user's session is not there for them.
    let other = server.add_user("mallory");
    for path in [
        files(""),
        files("/content?path=a.txt"),
        format!("/api/v1/sessions/{sid}/changes"),
    ] {
        let (status, body) = other.get(&path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND");
    }
}

#[actix_rt::test]
async fn a_big_diff_is_capped_with_a_marker() {
    let server = Server::start();
    let base = repo(&server, "proj");
    let line = "y".repeat(99) + "\n";
    std::fs::write(base.join("a.txt"), line.repeat(20_000)).unwrap();
    let mut ws = server.ws().await;
    let info = create(&mut ws, json!({"cwd": base})).await;
    let sid = info["id"].as_str().unwrap();
    let (status, diff) = server
        .get(&format!("/api/v1/sessions/{sid}/changes/diff?path=a.txt"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(diff["truncated"], true);
    let text = diff["diff"].as_str().unwrap();
    assert!(text.ends_with("[tandem: diff truncated at the size cap]\n"));
    assert!(text.len() <= (1 << 20) + 100, "{}", text.len());
}

#[actix_rt::test]
async fn a_worktree_workers_delegation_reports_its_branch_and_diff_summary() {
    // The config default gives Workers created by send_to_partner their own worktree.
    let server = Server::start_with(ServerOptions {
        args: vec!["--worker-workspace".into(), "worktree".into()],
        ..ServerOptions::default()
    });
    let base = repo(&server, "proj");
    let mut ws = server.ws().await;
    let d = create(&mut ws, json!({"cwd": base})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&d, 0).await;
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write a.txt by the worker"}),
        )
        .await;
    assert!(!err, "{out}");
    let w = out["partnerId"].as_str().unwrap().to_string();
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    let branch = winfo["workspace"]["branch"].as_str().unwrap().to_string();
    assert_eq!(
        out["changes"],
        json!({"branch": branch, "files": 1, "added": 1, "removed": 3}),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    let ended = server
        .all_events(&d)
        .await
        .into_iter()
        .find(|e| e["kind"] == "delegation" && e["active"] == false)
        .unwrap();
    assert_eq!(ended["changes"], out["changes"], "{ended}");

    // A delegation nobody waits for is pushed back with the branch and the summary.
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write b.txt more\n/hold pushed", "wait": false}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "running", "{out}");
    server.release("pushed").await;
    let pushed = eventually("the result is pushed back", async || {
        server.all_events(&d).await.into_iter().find(|e| {
            e["kind"] == "user_message"
                && e["internal"] == true
                && e["text"].as_str().is_some_and(|t| t.contains(&branch))
        })
    })
    .await;
    assert!(
        pushed["text"]
            .as_str()
            .unwrap()
            .contains("2 files changed, +2 -3 lines"),
        "{pushed}"
    );
}

#[actix_rt::test]
async fn spawned_children_of_a_worktree_session_get_their_own_worktrees() {
    let server = Server::start();
    let base = repo(&server, "proj");
    let mut ws = server.ws().await;
    let parent = create(&mut ws, json!({"cwd": base, "workspace": "worktree"})).await;
    let p = parent["id"].as_str().unwrap().to_string();
    let parent_branch = parent["workspace"]["branch"].as_str().unwrap().to_string();
    ws.subscribe(&p, 0).await;
    let two = json!([{"title": "one", "prompt": "/write c.txt one"},
        {"title": "two", "prompt": "/write c.txt two"}]);
    let (out, err) = ws
        .scripted_tool(&p, "spawn_sessions", json!({"sessions": two}))
        .await;
    assert!(!err, "{out}");
    let mut dirs = Vec::new();
    for child in out["sessions"].as_array().unwrap() {
        let id = child["sessionId"].as_str().unwrap();
        let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
        assert_eq!(info["workspace"]["base"], parent_branch.as_str(), "{info}");
        assert_eq!(info["workspace"]["baseCheckout"], parent["cwd"]);
        dirs.push(PathBuf::from(info["cwd"].as_str().unwrap()));
    }
    assert_ne!(dirs[0], dirs[1]);
    let contents: Vec<String> = eventually("both children wrote", async || {
        let read: Vec<String> = dirs
            .iter()
            .filter_map(|d| std::fs::read_to_string(d.join("c.txt")).ok())
            .collect();
        // A file being written can be read empty: only whole lines count.
        (read.len() == 2 && read.iter().all(|c| c.ends_with('\n'))).then_some(read)
    })
    .await;
    assert_eq!(contents, vec!["one\n".to_string(), "two\n".to_string()]);
    let parent_dir = PathBuf::from(parent["cwd"].as_str().unwrap());
    assert!(!parent_dir.join("c.txt").exists());
}
