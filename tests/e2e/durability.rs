//! Acknowledgements are durable: nothing is acknowledged, listed or numbered unless it
//! is on disk, and a store that fails at run time loses nothing it acknowledged.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_tests::server::server_binary;
use tandem_tests::{eventually, Server, TempDir};

use crate::assert_contiguous;

fn session_ids(list: &Value) -> Vec<String> {
    list["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().map(String::from))
                .collect()
        })
        .unwrap()
}

/// Events the store failed to write, from `/metrics`.
const FAILED_EVENTS: &str = "tandem_store_failed_events_total";

#[actix_rt::test]
async fn a_failed_commit_is_never_acknowledged_listed_or_numbered() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let busy = ws.create_session().await;
    let idle = ws.create_session().await;
    ws.subscribe(&busy, 0).await;
    ws.chat(&busy, "first\n/hold never").await;
    ws.recv_until(|v| v["kind"] == "assistant_message" && v["text"] == "first")
        .await;

    server.failpoint("store.commit", "return").await;
    // The running turn's next events cannot be stored either: stopping it writes its
    // end, which fails (and is not acknowledged while the store is down).
    let failed_before = server.metric(FAILED_EVENTS).await;
    let abort = ws
        .request(json!({"type": "chat.abort", "sessionId": busy}))
        .await;
    assert_eq!(abort["kind"], "protocol_error", "{abort}");
    // The abort's answer waits for the next commit, which may be one without the
    // turn's end: the agent confirms the interrupt in its own time. The store comes
    // back only once that end was refused, or it would be stored as `interrupted`.
    // This comes first: no other session has a write the store could refuse yet.
    eventually("the turn's end to be refused", async || {
        (server.metric(FAILED_EVENTS).await > failed_before).then_some(())
    })
    .await;

    // Session creation: an error, and the session is nowhere.
    let (status, body) = server.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["code"], "INTERNAL", "{body}");
    let created = ws.request(json!({"type": "session.create"})).await;
    assert_eq!(created["kind"], "protocol_error", "{created}");
    let (_, list) = server.get("/api/v1/sessions").await;
    let mut ids = session_ids(&list);
    ids.sort();
    let mut expected = vec![busy.clone(), idle.clone()];
    expected.sort();
    assert_eq!(ids, expected, "only committed sessions are listed");
    // Messages: an error reply, never 202.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{idle}/messages"),
            &json!({"content": "hi"}),
        )
        .await;
    assert_eq!(status, 500, "{body}");
    let sent = ws
        .request(json!({"type": "chat.send", "sessionId": idle, "content": "hi"}))
        .await;
    assert_eq!(sent["kind"], "protocol_error", "{sent}");

    server.failpoint("store.commit", "off").await;
    // Once the store takes writes again, the running turn ends `failed` with an error.
    let busy_events = format!("/api/v1/sessions/{busy}/events");
    eventually("the failed turn to be recorded", async || {
        let (_, page) = server.get(&busy_events).await;
        page["events"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["kind"] == "turn_completed"))
            .then_some(())
    })
    .await;
    let events = server.all_events(&busy).await;
    assert_contiguous(&events, 1);
    let (_, page) = server.get(&busy_events).await;
    assert_eq!(
        page["lastSeq"],
        json!(events.len()),
        "no seq without an event"
    );
    let end = events
        .iter()
        .find(|e| e["kind"] == "turn_completed")
        .cloned()
        .unwrap();
    assert_eq!(end["status"], "failed", "{end}");
    assert!(events.iter().any(|e| e["kind"] == "error"), "{events:?}");
    // The idle session's refused message left no turn behind, and no hole.
    let idle_events = server.all_events(&idle).await;
    assert_contiguous(&idle_events, 1);
    assert!(
        idle_events.iter().all(|e| e["kind"] != "user_message"),
        "{idle_events:?}"
    );
    // And everything works again, continuing the same histories.
    ws.chat(&idle, "again").await;
    let (status, _) = server.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 201);
    eventually("the new turn to end", async || {
        let events = server.all_events(&idle).await;
        events
            .iter()
            .any(|e| e["kind"] == "turn_completed")
            .then_some(())
    })
    .await;
    assert_contiguous(&server.all_events(&idle).await, 1);
}

#[actix_rt::test]
async fn a_full_database_fails_the_turn_and_loses_no_seq() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let id = ws.create_session().await;
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "warm up").await;
    ws.events_until_turn_end(&id).await;
    // SQLite's own SQLITE_FULL: the database may not grow past its current pages.
    // Which write hits the limit first depends on the free space left in existing
    // pages, so the contract is checked either way: acknowledged means stored.
    server.failpoint("store.page-limit", "return(0)").await;
    let big = "x".repeat(512 << 10);
    let sent = ws
        .request(json!({"type": "chat.send", "sessionId": id, "content": big}))
        .await;
    let acknowledged = sent["kind"] == "reply";
    server.failpoint("store.page-limit", "off").await;
    let path = format!("/api/v1/sessions/{id}/events");
    eventually("the failure to be recorded", async || {
        let (_, page) = server.get(&path).await;
        page["events"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["kind"] == "error"))
            .then_some(())
    })
    .await;
    let events = server.all_events(&id).await;
    assert_contiguous(&events, 1);
    let (_, page) = server.get(&format!("{path}?after=0&limit=5000")).await;
    assert_eq!(
        page["lastSeq"],
        json!(events.len()),
        "no seq without an event"
    );
    let stored = events
        .iter()
        .any(|e| e["kind"] == "user_message" && e["text"] == json!(big));
    assert_eq!(
        stored, acknowledged,
        "acknowledged exactly when stored: {sent}"
    );
    // The turn the full disk cut short (if it started) ended failed.
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "turn_completed")
        .collect();
    assert_eq!(ends.len(), if acknowledged { 2 } else { 1 }, "{ends:?}");
    if acknowledged {
        assert_eq!(ends[1]["status"], "failed", "{:?}", ends[1]);
    }
    ws.chat(&id, "after").await;
    let before = ends.len();
    eventually("the next turn", async || {
        let events = server.all_events(&id).await;
        let ends = events
            .iter()
            .filter(|e| e["kind"] == "turn_completed")
            .count();
        (ends == before + 1).then_some(())
    })
    .await;
    assert_contiguous(&server.all_events(&id).await, 1);
}

#[actix_rt::test]
async fn every_accepted_rest_message_survives_a_kill() {
    let mut server = Server::start_process(Default::default());
    let (_, created) = server.post("/api/v1/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap().to_string();
    for round in 0..20 {
        let text = format!("round {round}");
        let path = format!("/api/v1/sessions/{id}/messages");
        let (status, body) = server.post(&path, &json!({"content": text})).await;
        assert_eq!(status, 202, "{body}");
        // kill -9 right after the answer, then restart on the same data.
        let dir = server.kill();
        server = Server::start_process_in(dir, Default::default());
        let events = server.all_events(&id).await;
        assert!(
            events
                .iter()
                .any(|e| e["kind"] == "user_message" && e["text"] == json!(text)),
            "round {round}: an accepted message was lost"
        );
        assert_contiguous(&events, 1);
    }
}

#[actix_rt::test]
async fn a_store_that_never_recovers_stops_the_server() {
    let dir = TempDir::new("giveup");
    let mut child = Command::new(server_binary())
        .args([
            "serve",
            "--port",
            "0",
            "--auth",
            "none",
            "--store-give-up-secs",
            "1",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--workspace-root")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let mut guard = scopeguard(&mut child);
    let base = guard.start_line();
    let api = tandem_tests::server::Api { base, token: None };
    let (status, _) = api
        .post(
            "/debug/failpoints",
            &json!({"name": "store.commit", "actions": "return"}),
        )
        .await;
    assert_eq!(status, 200);
    // Keep writing until the writer gives up (each attempt fails).
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = guard.exited() {
            break status;
        }
        assert!(Instant::now() < deadline, "the server kept running");
        // The server may exit while answering: a failed request is expected then.
        let api = api.clone();
        let _ =
            actix_rt::spawn(async move { api.post("/api/v1/sessions", &json!({})).await }).await;
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!status.success(), "exit status {status:?}");
    let stderr = guard.stderr();
    assert!(
        stderr.contains("could not be written") && stderr.contains("tandem.db"),
        "{stderr}"
    );
}

#[actix_rt::test]
async fn an_unwritable_database_stops_the_server_at_start() {
    let dir = std::sync::Arc::new(TempDir::new("readonly"));
    // Create the database, then take write access away: as root run the server as
    // `nobody` (root writes anything), otherwise make the files read-only.
    drop(Server::start_in(dir.clone(), Default::default()));
    let data = dir.path().join("data");
    let as_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    // A copy of the binary every user may run, wherever the checkout lies.
    let bin = dir.path().join("tandem-bin");
    std::fs::copy(server_binary(), &bin).unwrap_or_else(|e| panic!("copy: {e}"));
    let mut cmd = if as_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        use std::os::unix::fs::PermissionsExt;
        for entry in std::fs::read_dir(&data).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444));
        }
        let _ = std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o555));
        Command::new(&bin)
    };
    let out = cmd
        .args(["serve", "--port", "0", "--auth", "none", "--data-dir"])
        .arg(&data)
        .arg("--workspace-root")
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started anyway: {stdout}");
    assert!(
        !stdout.contains("tandem listening"),
        "printed its start line: {stdout}"
    );
    assert!(
        stderr.contains(&data.join("tandem.db").display().to_string()),
        "the message names the path: {stderr}"
    );
}

/// Kills the child on drop; reads its start line and, once it exited, its stderr.
struct ChildGuard<'a> {
    child: &'a mut std::process::Child,
}

fn scopeguard(child: &mut std::process::Child) -> ChildGuard<'_> {
    ChildGuard { child }
}

impl ChildGuard<'_> {
    fn start_line(&mut self) -> String {
        use std::io::{BufRead, BufReader, Read};
        let Some(stdout) = self.child.stdout.take() else {
            panic!("no stdout");
        };
        let mut line = String::new();
        let mut reader = BufReader::new(stdout);
        let _ = reader.read_line(&mut line);
        // Keep draining so the server never writes into a closed pipe.
        std::thread::spawn(move || {
            let _ = reader.read_to_end(&mut Vec::new());
        });
        match line.strip_prefix("tandem listening on ") {
            Some(url) => url.trim().to_string(),
            None => panic!("unexpected first line {line:?}"),
        }
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    fn stderr(&mut self) -> String {
        use std::io::Read;
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for ChildGuard<'_> {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
