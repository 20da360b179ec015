//! Issue 28's regressions against a real server and real git: a link to `.git`
//! neither read nor written, a repository configuration that would make git run
//! commands run nothing when the server runs git, the data directory and config file
//! never served, a link in place of the attachments directory refused, paths the OS
//! refuses answered 4xx without a server path, the block limit on every message, and
//! workspace roots per user.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tandem_tests::server::Api;
use tandem_tests::{Server, ServerOptions, TempDir};

use crate::workspaces::{git, repo};

/// `/api/v1/sessions/{sid}/files{rest}`.
fn files(sid: &str, rest: &str) -> String {
    format!("/api/v1/sessions/{sid}/files{rest}")
}

/// A query value with `/` and other reserved bytes escaped.
fn q(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Creates a session working in `cwd` over REST; its id.
async fn session_in(api: &Api, cwd: &Path, extra: Value) -> String {
    let mut body = json!({"title": "security", "cwd": cwd});
    for (k, v) in extra.as_object().into_iter().flatten() {
        body[k] = v.clone();
    }
    let (status, info) = api.post("/api/v1/sessions", &body).await;
    assert_eq!(status, 201, "{info}");
    info["id"].as_str().unwrap_or_default().to_string()
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

/// Asserts that `api` reading each of `paths` in `sid` is refused as outside the
/// workspace, and that no answer carries a token.
async fn reads_refused(api: &Api, sid: &str, paths: &[&str]) {
    for path in paths {
        let (status, body) = api
            .get(&files(sid, &format!("/content?path={}", q(path))))
            .await;
        assert_eq!(
            (status, code(&body)),
            (403, "PATH_OUTSIDE_WORKSPACE"),
            "read {path}: {body}"
        );
        assert!(!body.to_string().contains("tdm_"), "{body}");
    }
}

/// Asserts that listing each of `dirs` in `sid` is refused as outside the workspace.
async fn listings_refused(api: &Api, sid: &str, dirs: &[&str]) {
    for dir in dirs {
        let (status, body) = api.get(&files(sid, &format!("?path={}", q(dir)))).await;
        assert_eq!(
            (status, code(&body)),
            (403, "PATH_OUTSIDE_WORKSPACE"),
            "list {dir}: {body}"
        );
    }
}

/// Asserts that saving `content` to each of `paths` in `sid` is refused as outside
/// the workspace.
async fn saves_refused(api: &Api, sid: &str, paths: &[&str], content: &str) {
    for path in paths {
        let (status, _, body) = api
            .put(
                &files(sid, &format!("/content?path={}", q(path))),
                &json!({ "content": content }),
                Some("*"),
            )
            .await;
        assert_eq!(
            (status, code(&body)),
            (403, "PATH_OUTSIDE_WORKSPACE"),
            "write {path}: {body}"
        );
    }
}

#[actix_rt::test]
async fn a_link_to_the_git_directory_is_neither_read_nor_written() {
    let server = Server::start();
    let base = repo(&server, "proj");
    symlink(".git", base.join("link_git")).unwrap();
    symlink(base.join(".git"), base.join("abs_git")).unwrap();
    std::fs::create_dir(base.join("sub")).unwrap();
    symlink("../.git/hooks", base.join("sub/hooks")).unwrap();
    let sid = session_in(&server, &base, json!({})).await;
    let config_before = std::fs::read(base.join(".git/config")).unwrap();

    reads_refused(
        &server,
        &sid,
        &[
            "link_git/config",
            "link_git/HEAD",
            "abs_git/config",
            "sub/hooks/pre-commit.sample",
            ".GIT/config",
            ".Git/HEAD",
        ],
    )
    .await;
    listings_refused(
        &server,
        &sid,
        &["link_git", "abs_git", "sub/hooks", "link_git/hooks"],
    )
    .await;
    saves_refused(
        &server,
        &sid,
        &[
            "link_git/config",
            "link_git/hooks/post-checkout",
            "abs_git/hooks/pre-commit",
            "sub/hooks/post-merge",
            ".GIT/config",
        ],
        "[core]\n\tfsmonitor = touch /tmp/pwned\n",
    )
    .await;
    assert_eq!(
        std::fs::read(base.join(".git/config")).unwrap(),
        config_before
    );
    for hook in ["post-checkout", "pre-commit", "post-merge"] {
        assert!(
            !base.join(".git/hooks").join(hook).exists(),
            "{hook} was written"
        );
    }
    // The listing never shows `.git`, in any case.
    let (_, listing) = server.get(&files(&sid, "")).await;
    assert!(!listing.to_string().contains("\".git\""), "{listing}");
}

/// Writes an executable hook that leaves `marker` when it runs.
fn hook(dir: &Path, name: &str, marker: &Path) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[actix_rt::test]
async fn a_repository_config_an_agent_wrote_runs_nothing_when_the_server_runs_git() {
    let server = Server::start();
    let base = repo(&server, "proj");
    let marks = server.dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let mark = |name: &str| marks.join(name);
    // What an agent working in the repository could write: an fsmonitor command,
    // hooks (also through core.hooksPath), filter, diff and merge drivers.
    let hooks = server.dir.path().join("agent-hooks");
    std::fs::create_dir(&hooks).unwrap();
    for name in [
        "pre-commit",
        "post-commit",
        "post-merge",
        "post-checkout",
        "reference-transaction",
    ] {
        hook(
            &base.join(".git/hooks"),
            name,
            &mark(&format!("hook-{name}")),
        );
        hook(&hooks, name, &mark(&format!("hookspath-{name}")));
    }
    std::fs::write(
        base.join(".gitattributes"),
        "*.txt filter=evil diff=evil merge=evil\n",
    )
    .unwrap();
    git(&base, &["add", ".gitattributes"]);
    git(&base, &["commit", "-q", "-m", "attrs"]);
    // The drivers and hooks are set up only now, so the test's own git runs none.
    let touch = |name: &str| format!("touch '{}'", mark(name).display());
    for (key, value) in [
        ("core.fsmonitor", format!("{}; false", touch("fsmonitor"))),
        ("filter.evil.clean", format!("{}; cat", touch("clean"))),
        ("filter.evil.smudge", format!("{}; cat", touch("smudge"))),
        ("filter.evil.process", touch("process")),
        ("diff.evil.textconv", format!("{}; cat", touch("textconv"))),
        ("diff.evil.command", touch("diff-command")),
        (
            "merge.evil.driver",
            format!("{}; false", touch("merge-driver")),
        ),
        ("diff.external", touch("diff-external")),
    ] {
        git(&base, &["config", key, &value]);
    }
    git(
        &base,
        &["config", "core.hooksPath", hooks.to_str().unwrap()],
    );
    for entry in std::fs::read_dir(&marks).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }

    let mut ws = server.ws().await;
    // A worktree session: changes, a diff and a merge run git in the worktree and in
    // the base checkout, which share the configuration.
    let info = ws
        .ok(json!({"type": "session.create", "title": "wt", "cwd": base, "workspace": "worktree"}))
        .await["session"]
        .clone();
    let sid = info["id"].as_str().unwrap().to_string();
    let cwd = PathBuf::from(info["cwd"].as_str().unwrap());
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/write a.txt changed by the agent").await;
    ws.events_until_turn_end(&sid).await;
    std::fs::write(cwd.join("b.txt"), "new\n").unwrap();
    std::fs::write(base.join("c.txt"), "untracked in base\n").unwrap();

    let (status, changes) = server.get(&format!("/api/v1/sessions/{sid}/changes")).await;
    assert_eq!(status, 200, "{changes}");
    let (status, diff) = server
        .get(&format!("/api/v1/sessions/{sid}/changes/diff"))
        .await;
    assert_eq!(status, 200, "{diff}");
    assert!(
        diff["diff"]
            .as_str()
            .unwrap_or("")
            .contains("changed by the agent"),
        "{diff}"
    );
    let (status, merged) = server
        .post(
            &format!("/api/v1/sessions/{sid}/merge"),
            &json!({"strategy": "squash"}),
        )
        .await;
    assert_eq!(status, 200, "{merged}");
    // A shared session's handoff summary runs `git status` too.
    let shared = session_in(&server, &base, json!({})).await;
    ws.subscribe(&shared, 0).await;
    ws.chat(&shared, "something to hand off").await;
    ws.events_until_turn_end(&shared).await;
    // The session's status follows its `turn_completed` event.
    tandem_tests::eventually("the shared session to be idle", async || {
        let (_, info) = server.get(&format!("/api/v1/sessions/{shared}")).await;
        (info["status"] != "running").then_some(())
    })
    .await;
    let (status, handed) = server
        .post(
            &format!("/api/v1/sessions/{shared}/handoff"),
            &json!({"targetVendor": "scripted"}),
        )
        .await;
    assert_eq!(status, 201, "{handed}");

    let ran: Vec<String> = std::fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        ran.is_empty(),
        "the server's git ran commands of the repository: {ran:?}"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "changed by the agent\n"
    );
}

#[actix_rt::test]
async fn the_data_directory_and_config_file_are_never_served() {
    // The test servers keep their data directory inside their workspace root, as
    // `tandem serve` started in the home directory does by default.
    let dir = std::sync::Arc::new(TempDir::new("srv"));
    let config = dir.path().join("tandem.toml");
    std::fs::write(&config, "[workspace]\n").unwrap();
    let server = Server::start_in(
        dir.clone(),
        ServerOptions {
            token_auth: true,
            args: vec!["--config".into(), config.display().to_string()],
        },
    );
    let root = dir.path().canonicalize().unwrap();
    let data = root.join("data");
    assert!(data.join("admin-token").exists());
    symlink(data.join("admin-token"), root.join("tok")).unwrap();
    symlink("data", root.join("d")).unwrap();
    let carol = server.add_user("carol");
    let sid = session_in(&carol, &root, json!({"visibility": "private"})).await;

    let (status, listing) = carol.get(&files(&sid, "")).await;
    assert_eq!(status, 200, "{listing}");
    let names: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(!names.contains(&"data"), "{names:?}");
    reads_refused(
        &carol,
        &sid,
        &[
            "data/admin-token",
            "data/tandem.db",
            "tok",
            "d/admin-token",
            "tandem.toml",
            "./data/admin-token",
        ],
    )
    .await;
    listings_refused(&carol, &sid, &["data", "d", "data/uploads"]).await;
    saves_refused(
        &carol,
        &sid,
        &["data/evil", "data/admin-token", "tandem.toml"],
        "x",
    )
    .await;
    assert!(!data.join("evil").exists());
    // No session works inside the data directory.
    for inside in [data.clone(), data.join("uploads")] {
        std::fs::create_dir_all(&inside).unwrap();
        let (status, body) = carol
            .post("/api/v1/sessions", &json!({"cwd": inside}))
            .await;
        assert_eq!((status, code(&body)), (422, "INVALID_ARGUMENT"), "{body}");
    }
    // The admin token still works for the CLI.
    assert!(server
        .cli(&["token", "show", "--data-dir"])
        .starts_with("tdm_"));
}

#[actix_rt::test]
async fn a_link_in_place_of_the_attachments_directory_is_refused() {
    let server = Server::start();
    let work = server.dir.path().join("work");
    let elsewhere = server.dir.path().join("elsewhere");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    symlink(&elsewhere, work.join("tandem-attachments")).unwrap();
    let sid = session_in(&server, &work, json!({})).await;
    let (status, pdf) = server
        .post_bytes(
            "/api/v1/uploads?name=report.pdf",
            "application/pdf",
            b"%PDF-1.4\n\x00\x01\x02".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{pdf}");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": [
                {"type": "text", "text": "read this"},
                {"type": "file", "uploadId": pdf["uploadId"]},
            ]}),
        )
        .await;
    assert_eq!((status, code(&body)), (422, "INVALID_ATTACHMENT"), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("tandem-attachments"),
        "{body}"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    let events = server.all_events(&sid).await;
    assert!(
        !events.iter().any(|e| e["kind"] == "user_message"),
        "{events:?}"
    );

    // A real directory works, and the file lands inside it.
    std::fs::remove_file(work.join("tandem-attachments")).unwrap();
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": [{"type": "file", "uploadId": pdf["uploadId"]}]}),
        )
        .await;
    assert!(status < 300, "{status} {body}");
    assert_eq!(
        std::fs::read_dir(work.join("tandem-attachments"))
            .unwrap()
            .count(),
        1
    );
}

#[actix_rt::test]
async fn paths_the_os_refuses_are_client_errors_that_name_no_server_path() {
    let server = Server::start();
    let base = repo(&server, "proj");
    symlink("loop", base.join("loop")).unwrap();
    symlink("b_loop", base.join("a_loop")).unwrap();
    symlink("a_loop", base.join("b_loop")).unwrap();
    std::fs::create_dir(base.join("dir")).unwrap();
    let mut ws = server.ws().await;
    let info = ws
        .ok(json!({"type": "session.create", "title": "wt", "cwd": base, "workspace": "worktree"}))
        .await["session"]
        .clone();
    let wt = info["id"].as_str().unwrap().to_string();
    let sid = session_in(&server, &base, json!({})).await;
    let long = "x".repeat(300);
    let server_path = server
        .dir
        .path()
        .canonicalize()
        .unwrap()
        .display()
        .to_string();

    let mut answers: Vec<(String, u16, Value)> = Vec::new();
    for bad in [
        "a\0b.txt".to_string(),
        "loop".into(),
        "loop/x".into(),
        "a_loop".into(),
        "a.txt/x".into(),
        format!("{long}.txt"),
        format!("dir/{long}"),
    ] {
        let path = q(&bad);
        let (status, body) = server
            .get(&files(&sid, &format!("/content?path={path}")))
            .await;
        answers.push((format!("read {bad:.40}"), status, body));
        let (status, body) = server.get(&files(&sid, &format!("?path={path}"))).await;
        answers.push((format!("list {bad:.40}"), status, body));
        let (status, _, body) = server
            .put(
                &files(&sid, &format!("/content?path={path}")),
                &json!({"content": "x"}),
                Some("*"),
            )
            .await;
        answers.push((format!("write {bad:.40}"), status, body));
        // A link (even a looping one) is a file git diffs; a NUL or an overlong name
        // is refused before git runs.
        if bad.contains('\0') || bad.len() > 255 {
            let (status, body) = server
                .get(&format!("/api/v1/sessions/{sid}/changes/diff?path={path}"))
                .await;
            answers.push((format!("diff {bad:.40}"), status, body));
        }
    }
    let (status, _, body) = server
        .put(
            &files(&sid, "/content?path=dir"),
            &json!({"content": "x"}),
            Some("*"),
        )
        .await;
    answers.push(("write a directory".into(), status, body));
    let (status, body) = server.get(&files(&sid, "/content?path=dir")).await;
    answers.push(("read a directory".into(), status, body));
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{wt}/merge"),
            &json!({"strategy": "squash", "message": "a\u{0}b"}),
        )
        .await;
    answers.push(("merge message".into(), status, body));

    for (what, status, body) in &answers {
        assert!((400..500).contains(status), "{what}: {status} {body}");
        assert!(
            [
                "INVALID_ARGUMENT",
                "PATH_OUTSIDE_WORKSPACE",
                "NO_SUCH_FILE",
                "CONFLICT"
            ]
            .contains(&code(body)),
            "{what}: {body}"
        );
        assert!(
            !body.to_string().contains(&server_path),
            "{what} names a server path: {body}"
        );
    }
    let (_, body) = server
        .get(&files(&sid, &format!("/content?path={}", q("a\0b.txt"))))
        .await;
    assert_eq!(code(&body), "INVALID_ARGUMENT", "{body}");
    let (_, body) = server.get(&files(&sid, "/content?path=loop")).await;
    assert_eq!(code(&body), "INVALID_ARGUMENT", "{body}");
}

#[actix_rt::test]
async fn the_block_limit_holds_for_text_only_messages() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let blocks = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"type": "text", "text": format!("part {i}")}))
            .collect()
    };
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": blocks(21)}),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (413, "ATTACHMENT_TOO_LARGE"),
        "{body}"
    );
    let refused = ws
        .request(json!({"type": "chat.send", "sessionId": sid, "content": blocks(21)}))
        .await;
    assert_eq!(refused["code"], "ATTACHMENT_TOO_LARGE", "{refused}");
    assert!(server
        .all_events(&sid)
        .await
        .iter()
        .all(|e| e["kind"] != "user_message"));
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            &json!({"content": blocks(20)}),
        )
        .await;
    assert!(status < 300, "{status} {body}");
}

#[actix_rt::test]
async fn users_open_sessions_only_under_their_own_roots() {
    let dir = std::sync::Arc::new(TempDir::new("srv"));
    let root = dir.path().canonicalize().unwrap();
    let carols = root.join("carol");
    let shared = root.join("shared");
    std::fs::create_dir_all(carols.join("proj")).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    let config = root.join("tandem.toml");
    std::fs::write(
        &config,
        format!(
            "[users.carol]\nworkspace_roots = [{:?}]\n",
            carols.display().to_string()
        ),
    )
    .unwrap();
    let server = Server::start_in(
        dir.clone(),
        ServerOptions {
            token_auth: true,
            args: vec!["--config".into(), config.display().to_string()],
        },
    );
    let carol = server.add_user("carol");
    let bob = server.add_user("bob");

    let (status, body) = carol
        .post("/api/v1/sessions", &json!({"cwd": shared}))
        .await;
    // Well formed, outside what this server lets her use: 422.
    assert_eq!((status, code(&body)), (422, "INVALID_ARGUMENT"), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("workspace roots"),
        "{body}"
    );
    let (status, body) = carol
        .post("/api/v1/sessions", &json!({"cwd": carols.join("proj")}))
        .await;
    assert_eq!(status, 201, "{body}");
    // Without a cwd, her first root.
    let (status, body) = carol.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["cwd"], carols.display().to_string(), "{body}");
    // A user without a grant, and the admin, keep the server's roots.
    let (status, body) = bob.post("/api/v1/sessions", &json!({"cwd": shared})).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = server
        .post("/api/v1/sessions", &json!({"cwd": shared}))
        .await;
    assert_eq!(status, 201, "{body}");
}
