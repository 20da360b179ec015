//! A worktree's scripts against real git, a real shell and a real server: `copy` and
//! `setup` before the first turn's agent starts (`script` events, a failed setup
//! leaving the session usable), `TANDEM_PORT` from the configured range, the run
//! script (`session.run`, its log, `session.run-stop`), the archive script on
//! discard and archive, `conductor.json` and `.cursor/worktrees.json` read when the
//! repository has no `.tandem/worktree.toml`, and no script process left behind by a
//! discarded session or a stopped server.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions, TempDir, WsClient};

use crate::workspaces::{git, repo};

/// A server whose worktrees get ports `first..=first+count-1`, with `env` added to
/// its own environment. Tests pick ranges below Linux's ephemeral ports (32768 and
/// up): there, the client end of any connection on the machine can hold a port of
/// the range, and the server rightly skips it, so a test counting on a port's
/// return would fail by chance.
fn server_with_ports(first: u16, count: u16, env: &[(&str, &str)]) -> Server {
    server_with(first, count, env, &[])
}

/// [`server_with_ports`] with more `tandem serve` flags.
fn server_with(first: u16, count: u16, env: &[(&str, &str)], extra: &[&str]) -> Server {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Server::start_in_env(
        std::sync::Arc::new(TempDir::new("scripts")),
        ServerOptions {
            args: [
                "--worktree-ports".to_string(),
                format!("{first}-{}", first + count - 1),
            ]
            .into_iter()
            .chain(extra.iter().map(|a| a.to_string()))
            .collect(),
            ..ServerOptions::default()
        },
        &env,
    )
}

/// Writes `text` to `path` in `dir` (not committed: the scripts are read from the
/// user's checkout as it is).
fn write(dir: &Path, path: &str, text: &str) {
    let at = dir.join(path);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::write(at, text).unwrap();
}

/// A subscribed worktree session of `dir`: its id and its worktree.
async fn worktree_session(ws: &mut WsClient, dir: &Path) -> (String, PathBuf, Value) {
    let created = ws
        .ok(json!({"type": "session.create", "cwd": dir, "workspace": "worktree"}))
        .await;
    let info = created["session"].clone();
    let sid = info["id"].as_str().unwrap().to_string();
    ws.subscribe(&sid, 0).await;
    (sid, PathBuf::from(info["cwd"].as_str().unwrap()), info)
}

/// The `script` events of `sid` so far.
async fn scripts(server: &Server, sid: &str) -> Vec<Value> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "script")
        .collect()
}

/// Waits for the `script` event of `name` that ended (any status but `running`).
async fn ended(server: &Server, sid: &str, name: &str) -> Value {
    eventually(&format!("the {name} script of {sid} to end"), async || {
        scripts(server, sid)
            .await
            .into_iter()
            .find(|e| e["name"] == name && e["status"] != "running")
    })
    .await
}

/// Whether process `pid` is gone (or a zombie).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// The pid the run script wrote to `run.pid` in `tree`, once it is there.
async fn run_pid(tree: &Path) -> String {
    eventually("the run's pid file", async || {
        std::fs::read_to_string(tree.join("run.pid"))
            .ok()
            .filter(|p| !p.trim().is_empty())
    })
    .await
}

/// A worktree session of a new repository whose run script leaves a `sleep 600`
/// in the background, started; the socket and the `sleep`'s pid.
async fn running_sleep(server: &Server) -> (WsClient, String) {
    let dir = repo(server, "proj");
    write(
        &dir,
        ".tandem/worktree.toml",
        "run = \"sleep 600 & echo $! > run.pid; wait\"\n",
    );
    let mut ws = server.ws().await;
    let (sid, tree, _) = worktree_session(&mut ws, &dir).await;
    ws.ok(json!({"type": "session.run", "sessionId": sid}))
        .await;
    let pid = run_pid(&tree).await;
    (ws, pid)
}

async fn wait_gone(pid: &str) {
    let pid = pid.trim().to_string();
    eventually(&format!("process {pid} to end"), async || {
        gone(&pid).then_some(())
    })
    .await;
}

#[actix_rt::test]
async fn setup_runs_before_the_first_turn_with_copied_files_and_a_port_of_its_own() {
    let server = server_with_ports(27310, 3, &[("TANDEM_TEST_SECRET", "s3cret")]);
    let dir = repo(&server, "proj");
    // `.env` is ignored by git: only `copy` brings it to a worktree.
    write(&dir, ".gitignore", ".env\n");
    git(&dir, &["add", ".gitignore"]);
    git(&dir, &["commit", "-q", "-m", "ignore"]);
    write(&dir, ".env", "KEY=from-the-checkout\n");
    write(
        &dir,
        ".tandem/worktree.toml",
        "copy = [\".env\"]\n\
         setup = [\"echo setting up\", \"cat .env\", \"echo $TANDEM_PORT > port.txt\", \
         \"echo secret=${TANDEM_TEST_SECRET:-none}\", \
         \"while [ ! -f \\\"$TANDEM_ROOT_PATH/go\\\" ]; do sleep 0.05; done\"]\n",
    );
    let mut ws = server.ws().await;
    let (sid, tree, info) = worktree_session(&mut ws, &dir).await;
    let port = info["workspace"]["port"].as_u64().unwrap();
    assert!((27310..=27312).contains(&port), "{info}");

    // The first message is taken at once; its agent waits for the setup.
    ws.chat(&sid, "/write made.txt by the agent").await;
    eventually("the setup to report it runs", async || {
        scripts(&server, &sid)
            .await
            .into_iter()
            .find(|e| e["name"] == "setup" && e["status"] == "running")
    })
    .await;
    assert!(!tree.join("made.txt").exists());
    std::fs::write(dir.join("go"), "").unwrap();
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(events.last().unwrap()["status"], "completed", "{events:?}");
    assert_eq!(
        std::fs::read_to_string(tree.join("made.txt")).unwrap(),
        "by the agent\n"
    );

    let all = server.all_events(&sid).await;
    let setup_end = all
        .iter()
        .find(|e| e["kind"] == "script" && e["name"] == "setup" && e["status"] != "running")
        .unwrap();
    assert_eq!(setup_end["status"], "passed", "{setup_end}");
    assert_eq!(setup_end["exitCode"], 0);
    let tail = setup_end["logTail"].as_str().unwrap();
    assert!(
        tail.contains("setting up\nKEY=from-the-checkout\n"),
        "{tail}"
    );
    // tandem's own variables never reach a script.
    assert!(tail.contains("secret=none"), "{tail}");
    // The agent's work (its tool call) comes after the setup ended.
    let agent_seq = all
        .iter()
        .find(|e| e["kind"] == "tool_call" || e["kind"] == "assistant_message")
        .map(|e| e["seq"].as_u64().unwrap())
        .unwrap();
    assert!(setup_end["seq"].as_u64().unwrap() < agent_seq, "{all:?}");
    assert_eq!(
        std::fs::read_to_string(tree.join("port.txt"))
            .unwrap()
            .trim(),
        port.to_string()
    );
    assert_eq!(
        std::fs::read_to_string(tree.join(".env")).unwrap(),
        "KEY=from-the-checkout\n"
    );

    // A second worktree gets another port; once the first is discarded its port is
    // given out again.
    std::fs::remove_file(dir.join(".tandem/worktree.toml")).unwrap();
    let (second, _, info2) = worktree_session(&mut ws, &dir).await;
    let port2 = info2["workspace"]["port"].as_u64().unwrap();
    assert_ne!(port, port2);
    ws.ok(json!({"type": "session.discard", "sessionId": sid}))
        .await;
    let (_, _, info3) = worktree_session(&mut ws, &dir).await;
    assert_eq!(info3["workspace"]["port"].as_u64(), Some(port), "{info3}");
    let _ = second;
}

#[actix_rt::test]
async fn a_failed_setup_is_shown_and_the_session_stays_usable() {
    let server = server_with_ports(27320, 2, &[]);
    let dir = repo(&server, "proj");
    write(
        &dir,
        ".tandem/worktree.toml",
        "setup = [\"echo broken\", \"exit 4\", \"echo never\"]\n",
    );
    let mut ws = server.ws().await;
    let (sid, _, _) = worktree_session(&mut ws, &dir).await;
    let end = ended(&server, &sid, "setup").await;
    assert_eq!(end["status"], "failed", "{end}");
    assert_eq!(end["exitCode"], 4);
    assert_eq!(end["logTail"], "broken\n");
    let events = ws.turn(&sid, "still here").await;
    assert_eq!(events.last().unwrap()["status"], "completed", "{events:?}");
}

#[actix_rt::test]
async fn the_run_script_starts_logs_and_stops_and_archive_runs_on_discard() {
    let server = server_with_ports(27330, 2, &[]);
    let dir = repo(&server, "proj");
    write(
        &dir,
        ".tandem/worktree.toml",
        "run = \"echo serving on $TANDEM_PORT; sleep 600 & echo $! > run.pid; wait\"\n\
         archive = [\"echo archived $TANDEM_PORT in $(pwd)\"]\n",
    );
    let mut ws = server.ws().await;
    let (sid, tree, info) = worktree_session(&mut ws, &dir).await;
    let port = info["workspace"]["port"].as_u64().unwrap();

    let (status, body) = server.get(&format!("/api/v1/sessions/{sid}/run/log")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["running"].clone(), body["log"].clone()),
        (json!(false), json!(""))
    );

    let (status, started) = server
        .post(&format!("/api/v1/sessions/{sid}/run"), &json!({}))
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["running"], true);
    assert_eq!(started["port"].as_u64(), Some(port));
    // A second start while it runs starts nothing more.
    let again = ws
        .ok(json!({"type": "session.run", "sessionId": sid}))
        .await;
    assert_eq!(again["running"], true);
    let log = eventually("the run script's output", async || {
        let (_, body) = server.get(&format!("/api/v1/sessions/{sid}/run/log")).await;
        (body["log"].as_str()?.contains("serving on")).then_some(body)
    })
    .await;
    assert_eq!(log["log"], format!("serving on {port}\n"));
    assert_eq!(log["running"], true);
    let pid = run_pid(&tree).await;

    let stopped = ws
        .ok(json!({"type": "session.run-stop", "sessionId": sid}))
        .await;
    assert_eq!(stopped["running"], false);
    wait_gone(&pid).await;
    let end = ended(&server, &sid, "run").await;
    assert_eq!(end["status"], "stopped", "{end}");
    let (_, after) = server.get(&format!("/api/v1/sessions/{sid}/run/log")).await;
    assert_eq!(after["status"], "stopped");
    assert_eq!(after["log"], format!("serving on {port}\n"));

    // Running again, then discarding: the run goes with the worktree, and the archive
    // script runs first, in it.
    std::fs::remove_file(tree.join("run.pid")).unwrap();
    ws.ok(json!({"type": "session.run", "sessionId": sid}))
        .await;
    let pid = run_pid(&tree).await;
    ws.ok(json!({"type": "session.discard", "sessionId": sid}))
        .await;
    wait_gone(&pid).await;
    let archive = ended(&server, &sid, "archive").await;
    assert_eq!(archive["status"], "passed", "{archive}");
    assert_eq!(
        archive["logTail"],
        format!("archived {port} in {}\n", tree.display())
    );
    assert!(!tree.exists());

    // A repository without a run script: a clear 422.
    let bare = repo(&server, "bare");
    let (other, _, _) = worktree_session(&mut ws, &bare).await;
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{other}/run"), &json!({}))
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no run script"),
        "{body}"
    );
}

#[actix_rt::test]
async fn conductor_and_cursor_files_are_read_with_their_own_variables() {
    // Unconfined, so the archive script can leave a mark outside the worktree (a
    // confined script writes only in its working directory).
    let server = server_with(27340, 2, &[], &["--confine-agents", "off"]);
    let conductor = repo(&server, "conductor");
    write(
        &conductor,
        "conductor.json",
        r#"{"scripts": {"setup": "echo $CONDUCTOR_PORT $TANDEM_PORT > ports.txt; test \"$CONDUCTOR_ROOT_PATH\" = \"$TANDEM_ROOT_PATH\" && echo same-root", "run": "echo conductor run; exec sleep 600", "archive": "touch \"$CONDUCTOR_ROOT_PATH/archived\""}}"#,
    );
    let mut ws = server.ws().await;
    let (sid, tree, info) = worktree_session(&mut ws, &conductor).await;
    let port = info["workspace"]["port"].as_u64().unwrap();
    let end = ended(&server, &sid, "setup").await;
    assert_eq!(end["status"], "passed", "{end}");
    assert_eq!(end["logTail"], "same-root\n");
    assert_eq!(
        std::fs::read_to_string(tree.join("ports.txt")).unwrap(),
        format!("{port} {port}\n")
    );
    ws.ok(json!({"type": "session.run", "sessionId": sid}))
        .await;
    eventually("conductor's run script", async || {
        let (_, body) = server.get(&format!("/api/v1/sessions/{sid}/run/log")).await;
        (body["log"] == "conductor run\n").then_some(())
    })
    .await;
    // Archiving the session stops its run and runs its archive script.
    let (status, body) = server.delete(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{body}");
    eventually("conductor's archive script", async || {
        conductor.join("archived").exists().then_some(())
    })
    .await;

    let cursor = repo(&server, "cursor");
    write(
        &cursor,
        ".cursor/worktrees.json",
        r#"{"setup-worktree": ["echo cursor > cursor.txt", "echo $ROOT_WORKTREE_PATH"]}"#,
    );
    let (sid, tree, _) = worktree_session(&mut ws, &cursor).await;
    let end = ended(&server, &sid, "setup").await;
    assert_eq!(end["status"], "passed", "{end}");
    assert_eq!(end["logTail"], format!("{}\n", cursor.display()));
    assert_eq!(
        std::fs::read_to_string(tree.join("cursor.txt")).unwrap(),
        "cursor\n"
    );
}

#[actix_rt::test]
async fn no_script_process_outlives_the_server() {
    let server = server_with_ports(27350, 2, &[]);
    let (ws, pid) = running_sleep(&server).await;
    assert!(!gone(&pid));
    ws.close().await;
    let _dir = server.terminate();
    wait_gone(&pid).await;
}

/// A server killed without a clean stop cannot kill its scripts' processes; the next
/// start kills what they left (the groups are written down in the data directory).
#[actix_rt::test]
async fn what_a_killed_servers_scripts_left_is_killed_when_it_starts_again() {
    let options = || ServerOptions {
        args: vec!["--worktree-ports".into(), "27360-27361".into()],
        ..ServerOptions::default()
    };
    let server = Server::start_process_in(std::sync::Arc::new(TempDir::new("scripts")), options());
    let (_ws, pid) = running_sleep(&server).await;
    let data = server.kill();
    // Nothing of the killed server could stop it.
    assert!(!gone(&pid), "the background process died with the server");
    let _server = Server::start_in(data, options());
    wait_gone(&pid).await;
}
