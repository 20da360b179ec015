//! `--max-live-processes` and `GET /fleet`, with the fake ACP agent (a real process
//! per session, which offers `session/resume`): an idle process is closed to make
//! room and its session resumes it at its next turn; a turn waits while every
//! process is busy; a process over `--max-process-rss` is restarted between turns;
//! admins see the fleet, others do not.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::events::{status, texts};
use tandem_tests::{eventually, Server, ServerOptions, TempDir, WsClient};

/// A server whose vendor `fake` is the fake ACP agent (sessions kept in each
/// working directory's `.fake-acp-state`, offering resume), with `--max-live-processes
/// limit`.
fn server(label: &str, limit: u32, token_auth: bool) -> (Server, PathBuf) {
    server_with(
        label,
        &["--max-live-processes", &limit.to_string()],
        token_auth,
    )
}

/// The config section of vendor `fake`: the fake ACP agent, keeping its sessions in
/// each working directory's `.fake-acp-state` and offering resume.
pub(crate) fn fake_vendor_section() -> String {
    let bin = env!("CARGO_BIN_EXE_fake-acp");
    format!(
        "[vendors.fake]\nprotocol = \"acp\"\nbin = {bin:?}\ndisplay_name = \"Fake ACP\"\n\
         env = {{ FAKE_ACP_STATE = \".fake-acp-state\", FAKE_ACP_SESSIONS = \"resume-close\" }}\n"
    )
}

/// [`server`] with these `tandem serve` flags.
fn server_with(label: &str, flags: &[&str], token_auth: bool) -> (Server, PathBuf) {
    let dir = Arc::new(TempDir::new(label));
    let config = dir.path().join("tandem.toml");
    std::fs::write(&config, fake_vendor_section()).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth,
            args: ["--config", &config.display().to_string()]
                .into_iter()
                .chain(flags.iter().copied())
                .map(str::to_string)
                .collect(),
        },
    );
    (server, work)
}

async fn session(ws: &mut WsClient, work: &std::path::Path) -> String {
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "fake", "cwd": work.display().to_string()}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    id
}

async fn fleet(server: &Server) -> Value {
    let (status, body) = server.get("/api/v1/fleet").await;
    assert_eq!(status, 200, "{body}");
    body
}

fn sessions_of(fleet: &Value) -> Vec<String> {
    fleet["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["sessionId"].as_str().unwrap().to_string())
        .collect()
}

#[actix_rt::test]
async fn a_full_fleet_closes_the_idle_process_and_its_session_resumes() {
    let (server, work) = server("fleet-evict", 1, false);
    let mut ws = server.ws().await;
    let a = session(&mut ws, &work).await;
    let events = ws.turn(&a, "say one").await;
    assert_eq!(status(&events), "completed", "{events:?}");

    let shown = fleet(&server).await;
    assert_eq!(shown["limit"], 1, "{shown}");
    let process = &shown["processes"][0];
    assert_eq!(process["sessionId"], a.as_str(), "{shown}");
    assert_eq!(process["vendor"], "fake", "{shown}");
    assert!(process["pid"].as_u64().unwrap() > 0, "{shown}");
    assert!(process["rssBytes"].as_u64().unwrap() > 0, "{shown}");
    assert_eq!(process["busy"], false, "{shown}");
    assert_eq!(shown["waiting"], json!([]), "{shown}");
    let a_pid = process["pid"].as_u64().unwrap();

    // B's turn needs a process: A's idle one is closed to make room.
    let b = session(&mut ws, &work).await;
    let events = ws.turn(&b, "say two").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    // A's process had exited before B's started (its seat goes back at its exit).
    assert!(
        !std::path::Path::new(&format!("/proc/{a_pid}")).exists(),
        "A's agent {a_pid} still runs"
    );
    assert_eq!(sessions_of(&fleet(&server).await), [b.as_str()]);

    // A's next turn resumes its conversation (in the agent's own session) and says so.
    let events = ws.turn(&a, "history").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(
        texts(&events, "assistant_message"),
        ["prompts: 2"],
        "the conversation went on: {events:?}"
    );
    assert!(
        texts(&events, "info")
            .iter()
            .any(|t| t.starts_with("resumed:") && t.contains("at most 1 agent processes")),
        "{events:?}"
    );
    eventually("one process: A's", async || {
        (sessions_of(&fleet(&server).await) == [a.as_str()]).then_some(())
    })
    .await;
}

#[actix_rt::test]
async fn a_turn_waits_while_every_process_is_busy_and_starts_when_one_is_free() {
    let (server, work) = server("fleet-wait", 1, false);
    let mut ws = server.ws().await;
    let a = session(&mut ws, &work).await;
    let b = session(&mut ws, &work).await;
    // A's turn holds its process until it is interrupted.
    ws.chat(&a, "hang").await;
    ws.recv_until(|v| v["sessionId"] == a.as_str() && v["kind"] == "text_delta")
        .await;
    ws.chat(&b, "say after the wait").await;
    let frames = ws
        .recv_until(|v| v["sessionId"] == b.as_str() && v["kind"] == "info")
        .await;
    let note = frames.last().unwrap()["text"].as_str().unwrap().to_string();
    assert!(note.starts_with("waiting to start Fake ACP"), "{note}");
    let shown = fleet(&server).await;
    assert_eq!(sessions_of(&shown), [a.as_str()], "{shown}");
    assert_eq!(shown["processes"][0]["busy"], true, "{shown}");
    assert_eq!(shown["waiting"][0]["sessionId"], b.as_str(), "{shown}");
    // A third waits behind B; interrupted, it leaves the line at once.
    let c = session(&mut ws, &work).await;
    ws.chat(&c, "say never").await;
    ws.recv_until(|v| v["sessionId"] == c.as_str() && v["kind"] == "info")
        .await;
    let waiting = |shown: &Value| -> Vec<String> {
        shown["waiting"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["sessionId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(waiting(&fleet(&server).await), [b.as_str(), c.as_str()]);
    ws.ok(json!({"type": "chat.abort", "sessionId": c})).await;
    let events = ws.events_until_turn_end(&c).await;
    assert_eq!(status(&events), "interrupted", "{events:?}");
    assert_eq!(waiting(&fleet(&server).await), [b.as_str()]);

    // A's turn ends: its process is closed at once for B's, which then runs.
    ws.ok(json!({"type": "chat.abort", "sessionId": a})).await;
    let events = ws.events_until_turn_end(&b).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(
        texts(&events, "assistant_message").concat().trim(),
        "after the wait",
        "{events:?}"
    );
    let shown = fleet(&server).await;
    assert_eq!(sessions_of(&shown), [b.as_str()], "{shown}");
    assert_eq!(shown["waiting"], json!([]), "{shown}");
}

#[actix_rt::test]
async fn only_admins_see_the_fleet() {
    let (server, _work) = server("fleet-admin", 2, true);
    let (status, body) = server.get("/api/v1/fleet").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["limit"], 2, "{body}");
    let user = server.add_user("bob");
    let (status, body) = user.get("/api/v1/fleet").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "ACCESS_DENIED", "{body}");
}

#[actix_rt::test]
async fn a_process_over_its_memory_limit_is_restarted_between_turns() {
    // 1 MiB: any agent process is over it.
    let (server, work) = server_with("fleet-rss", &["--max-process-rss", "1"], false);
    let mut ws = server.ws().await;
    let a = session(&mut ws, &work).await;
    let events = ws.turn(&a, "say one").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    // Not during the turn: after it, outside any turn.
    assert!(texts(&events, "info").is_empty(), "{events:?}");
    let frames = ws
        .recv_until(|v| v["sessionId"] == a.as_str() && v["kind"] == "info")
        .await;
    let note = frames.last().unwrap();
    assert!(note.get("turnId").is_none(), "{note}");
    let text = note["text"].as_str().unwrap();
    assert!(
        text.starts_with("restarted: Fake ACP used ")
            && text.contains("over --max-process-rss 1 MiB"),
        "{text}"
    );
    eventually("the process to be gone", async || {
        fleet(&server).await["processes"]
            .as_array()
            .unwrap()
            .is_empty()
            .then_some(())
    })
    .await;
    // The next turn resumes the conversation.
    let events = ws.turn(&a, "history").await;
    assert_eq!(
        texts(&events, "assistant_message"),
        ["prompts: 2"],
        "{events:?}"
    );
}
