//! What is the ACP adapter's own, against real ACP agents and a fake one. What every
//! vendor does (turns, approvals, resume, edit & resend refused, faults, images, a
//! Driver) is in `conformance`, whose `vendors::acp` holds the setup used here.
//!
//! - `fake-acp` (this crate's `src/bin/fake_acp.rs`): late tool results, commands,
//!   forks as transcripts, silence at `initialize`, modes, `session/list`, resume and
//!   close, effort levels, idle agents.
//! - Zed's `codex-acp` against the Responses-API mock and `claude-code-acp` against
//!   the Messages-API mock, pinned in `.vendor-clis` like the other CLIs: forks,
//!   models, efforts, MCP servers.

use serde_json::{json, Value};
use tandem_tests::events::{end, of_kind, status, texts};
use tandem_tests::eventually;

use crate::conformance::vendors::acp::{all_text, turn, vendor_entry, Real, World, FRAME_WAIT};

// ---- the fake agent: mapping and faults ----

/// A tool call's result that the agent sends just after answering the prompt still
/// lands in its turn, before `turn_completed`; a call that never finishes holds the
/// turn only for a short grace, and the turn still completes.
#[actix_rt::test]
async fn fake_late_tool_result_lands_before_the_turn_ends() {
    let w = World::fake("acp-fake-late", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "late").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let results = of_kind(&events, "tool_result");
    assert_eq!(results.len(), 1, "{events:?}");
    assert!(
        results[0]["output"].to_string().contains("late result"),
        "{events:?}"
    );
    let events = turn(&mut ws, &id, "unfinished").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(of_kind(&events, "tool_call").len(), 1, "{events:?}");
    assert!(of_kind(&events, "tool_result").is_empty(), "{events:?}");
    // The next turn is not disturbed by the one before.
    let events = turn(&mut ws, &id, "say after").await;
    assert_eq!(status(&events), "completed", "{events:?}");
}

#[actix_rt::test]
async fn fake_vendors_shows_the_agent_and_a_plan_is_recorded() {
    let w = World::fake("acp-fake-text", &[], "");
    let entry = vendor_entry(&w).await;
    assert_eq!(entry["displayName"], "Fake ACP", "{entry}");
    assert_eq!(entry["installed"], true);
    assert_eq!(entry["agent"]["name"], "fake-acp", "{entry}");
    assert_eq!(entry["version"], "1.0.0", "{entry}");
    let caps: Vec<&str> = entry["capabilities"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(caps.contains(&"resume"), "{entry}");

    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "plan").await;
    let plan = of_kind(&events, "plan");
    assert_eq!(plan.len(), 1, "{events:?}");
    assert_eq!(plan[0]["entries"][1]["content"], "fix");
}

/// An agent's slash commands (`available_commands_update`, sent between turns) are
/// the session's: listed by `session.commands` and REST, recorded once as a
/// `commands` event, and told to an editor that resumes the session through
/// `tandem acp`.
#[actix_rt::test]
async fn fake_commands_are_listed_recorded_once_and_reach_an_editor() {
    let w = World::fake("acp-fake-commands", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    assert_eq!(status(&turn(&mut ws, &id, "say hi").await), "completed");
    let expected = json!([
        {"name": "review", "description": "Review the changes", "inputHint": "what to look at"},
        {"name": "init", "description": "Write AGENTS.md"}
    ]);
    let listed = eventually("the agent's commands", async || {
        let (code, body) = w
            .server()
            .get(&format!("/api/v1/sessions/{id}/commands"))
            .await;
        assert_eq!(code, 200, "{body}");
        (body["commands"] != json!([])).then_some(body)
    })
    .await;
    assert_eq!(listed["commands"], expected, "{listed}");
    let over_ws = ws
        .ok(json!({"type": "session.commands", "sessionId": id}))
        .await;
    assert_eq!(over_ws["commands"], expected, "{over_ws}");
    assert_eq!(status(&turn(&mut ws, &id, "say again").await), "completed");
    let recorded: Vec<Value> = w
        .server()
        .all_events(&id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "commands")
        .collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["commands"], expected);

    // An editor resuming the session hears them as ACP's update.
    let mut acp = crate::acp_agent::Acp::start(&w.server().base, "no-token-needed");
    acp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/resume",
            "params": {"sessionId": id, "cwd": w.work().display().to_string()}})
        .to_string(),
    );
    let (answers, notes) = acp.answers(&[json!(1), json!(2)]);
    assert!(
        answers.iter().all(|(_, a)| a.get("error").is_none()),
        "{answers:?}"
    );
    let update = notes
        .iter()
        .find(|n| n["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .unwrap_or_else(|| panic!("no available_commands_update in {notes:?}"));
    assert_eq!(update["params"]["sessionId"], id.as_str());
    assert_eq!(
        update["params"]["update"]["availableCommands"],
        json!([
            {"name": "review", "description": "Review the changes", "input": {"hint": "what to look at"}},
            {"name": "init", "description": "Write AGENTS.md"}
        ])
    );
}

/// A fork of an ACP session gets the turns up to its anchor as a transcript ahead
/// of its first message (the pinned agents offer no `session/fork`): the agent's
/// first prompt quotes them and none after; history keeps the message as written.
#[actix_rt::test]
async fn fake_fork_gets_the_turns_up_to_its_anchor_as_a_transcript() {
    let w = World::fake("acp-fake-fork", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let first = turn(&mut ws, &id, "say alpha").await;
    turn(&mut ws, &id, "say omega").await;
    let anchor = first
        .iter()
        .find(|e| e["kind"] == "user_message")
        .and_then(|e| e["seq"].as_u64())
        .unwrap();
    let forked = ws
        .ok(json!({"type": "session.fork", "sessionId": id, "anchorSeq": anchor}))
        .await;
    assert_eq!(forked["conversation"], "transcript", "{forked}");
    let fork = forked["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&fork, 0).await;
    let events = turn(&mut ws, &fork, "hello there").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let said = all_text(&events);
    assert!(
        said.starts_with("echo: [This conversation continues from a fork"),
        "{said}"
    );
    assert!(said.contains("User: say alpha"), "{said}");
    assert!(!said.contains("omega"), "{said}");
    assert!(said.trim_end().ends_with("hello there"), "{said}");
    let user = events.iter().find(|e| e["kind"] == "user_message").unwrap();
    assert_eq!(user["text"], "hello there");
    // Given once: the next prompt is the message alone.
    let events = turn(&mut ws, &fork, "again").await;
    assert_eq!(all_text(&events).trim_end(), "echo: again");
}

#[actix_rt::test]
async fn fake_agent_silent_at_initialize_is_a_clear_error() {
    let w = World::fake(
        "acp-fake-silent",
        &[("FAKE_ACP_INIT", "silent")],
        "startup_secs = 1",
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "say never").await;
    let done = end(&events);
    assert_eq!(done["status"], "failed", "{events:?}");
    assert_eq!(
        done["error"], "Fake ACP did not answer `initialize` within 1 s",
        "{done}"
    );
    eventually("the silent agent to be killed", async || {
        w.agents().is_empty().then_some(())
    })
    .await;
    // The probe for /vendors gave up too: no facts, still installed.
    let (_, body) = w.server().get("/api/v1/vendors").await;
    let entry = body["vendors"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["id"] == "fake").cloned())
        .unwrap_or_default();
    assert_eq!(entry["installed"], true, "{entry}");
    assert!(entry.get("agent").is_none(), "{entry}");
}

#[actix_rt::test]
async fn fake_mode_follows_the_permission_mode_and_bypass_answers_itself() {
    let w = World::fake("acp-fake-mode", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "plan").await;
    let events = turn(&mut ws, &id, "mode").await;
    assert_eq!(all_text(&events), "mode: plan", "{events:?}");
    ws.ok(json!({"type": "session.configure", "sessionId": id,
        "permissionMode": "bypassPermissions"}))
        .await;
    let events = turn(&mut ws, &id, "mode").await;
    assert_eq!(all_text(&events), "mode: bypassPermissions", "{events:?}");
    let events = turn(&mut ws, &id, "ask").await;
    assert!(
        of_kind(&events, "permission_request").is_empty(),
        "{events:?}"
    );
    assert_eq!(all_text(&events), "answer: yes-once", "{events:?}");
    // acceptEdits: the fake has no such mode, so none is set.
    ws.ok(json!({"type": "session.configure", "sessionId": id,
        "permissionMode": "acceptEdits"}))
        .await;
    let events = turn(&mut ws, &id, "mode").await;
    assert_eq!(all_text(&events), "mode: bypassPermissions", "{events:?}");
}

#[actix_rt::test]
async fn an_agent_offering_resume_and_close_gets_them_and_its_cost_counts_per_turn() {
    let w = World::fake(
        "acp-fake-resume",
        &[
            ("FAKE_ACP_STATE", ".fake-acp-state"),
            ("FAKE_ACP_SESSIONS", "resume-close"),
        ],
        "idle_secs = 1",
    );
    let log = w.work().join(".fake-acp-state/methods.log");
    let methods = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    // A new session's cost starts at nothing: the first turn's is all of it.
    let events = turn(&mut ws, &id, "say one").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(end(&events)["usage"]["costUsd"], 0.25, "{events:?}");
    let agent = w.info(&id).await["vendorSessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // Closed when idle, with session/close first; reopened with session/resume.
    eventually("session/close before the idle agent ends", async || {
        (methods().contains(&format!("session/close {agent}")) && w.agents().is_empty())
            .then_some(())
    })
    .await;
    let events = turn(&mut ws, &id, "history").await;
    assert_eq!(all_text(&events), "prompts: 2", "{events:?}");
    let said = methods();
    assert!(
        said.contains(&format!("session/resume {agent}")) && !said.contains("session/load"),
        "{said}"
    );
    // The agent offers session/list: it is asked before the resume.
    let listed = said.find("session/list").unwrap_or(usize::MAX);
    assert!(
        listed < said.find(&format!("session/resume {agent}")).unwrap_or(0),
        "{said}"
    );
    // Reopened, the session's cost so far was never seen: that turn's is not known
    // (never counted twice); the next turn's is what it added.
    assert!(end(&events)["usage"].get("costUsd").is_none(), "{events:?}");
    let events = turn(&mut ws, &id, "say three").await;
    assert_eq!(end(&events)["usage"]["costUsd"], 0.25, "{events:?}");
    let (_, usage) = w
        .server()
        .get(&format!("/api/v1/sessions/{id}/usage"))
        .await;
    assert_eq!(usage["total"]["costUsd"], 0.5, "{usage}");
    assert_eq!(usage["total"]["turns"], 3, "{usage}");
}

/// An agent that offers `session/list` and no longer lists the session to reopen
/// (its whole list read, page by page) is not asked to resume it: the turn starts a new
/// conversation and says why.
#[actix_rt::test]
async fn a_session_the_agent_no_longer_lists_starts_anew_without_a_resume() {
    let w = World::fake(
        "acp-fake-list",
        &[
            ("FAKE_ACP_STATE", ".fake-acp-state"),
            ("FAKE_ACP_SESSIONS", "resume-close"),
        ],
        "idle_secs = 1",
    );
    let state = w.work().join(".fake-acp-state");
    let methods = || std::fs::read_to_string(state.join("methods.log")).unwrap_or_default();
    let mut ws = w.server().ws().await;
    let other = w.session(&mut ws, "default").await;
    assert_eq!(
        status(&turn(&mut ws, &other, "say other").await),
        "completed"
    );
    let id = w.session(&mut ws, "default").await;
    assert_eq!(status(&turn(&mut ws, &id, "say one").await), "completed");
    let agent = w.info(&id).await["vendorSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    eventually("the idle agents to be closed", async || {
        w.agents().is_empty().then_some(())
    })
    .await;
    // The agent forgets it (as after its own data was cleared), and has another
    // session of its own, so its list still has two pages.
    std::fs::remove_file(state.join(&agent)).unwrap();
    std::fs::write(state.join("fake-0-elsewhere"), "1").unwrap();
    let before = methods().len();
    let events = turn(&mut ws, &id, "history").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(
        all_text(&events),
        "prompts: 1",
        "a new conversation: {events:?}"
    );
    assert!(
        texts(&events, "info")
            .iter()
            .any(|t| t.contains(&format!("no longer lists its session {agent}"))),
        "{events:?}"
    );
    let said = methods()[before..].to_string();
    assert_eq!(
        said.matches("session/list").count(),
        2,
        "both pages: {said}"
    );
    assert!(
        !said.contains("session/resume") && said.contains("session/new"),
        "{said}"
    );
    assert_ne!(w.info(&id).await["vendorSessionId"], json!(agent));
}

/// Each step of reopening a session gets the whole start limit: a list of three pages
/// that takes longer in all than `startup_secs`, each page within it, still ends in
/// a resume.
#[actix_rt::test]
async fn each_page_of_a_slow_list_gets_the_whole_start_limit() {
    let w = World::fake(
        "acp-fake-slow-list",
        &[
            ("FAKE_ACP_STATE", ".fake-acp-state"),
            ("FAKE_ACP_SESSIONS", "resume-close"),
            ("FAKE_ACP_LIST_DELAY_MS", "600"),
        ],
        "idle_secs = 1\nstartup_secs = 1",
    );
    let state = w.work().join(".fake-acp-state");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    assert_eq!(status(&turn(&mut ws, &id, "say one").await), "completed");
    eventually("the idle agent to be closed", async || {
        w.agents().is_empty().then_some(())
    })
    .await;
    // Two sessions of the agent's own that list before ours: three pages, 1.8 s.
    for other in ["fake-0-a", "fake-0-b"] {
        std::fs::write(state.join(other), "1").unwrap();
    }
    let events = turn(&mut ws, &id, "history").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(all_text(&events), "prompts: 2", "resumed: {events:?}");
}

/// An agent's `thought_level` option gives its vendor's effort levels in `/vendors`,
/// and a session's effort reaches it through `session/set_config_option`: at the
/// start, and again when the session's effort changes.
#[actix_rt::test]
async fn an_agents_thought_levels_are_the_sessions_effort_choices() {
    let w = World::fake(
        "acp-fake-effort",
        &[
            ("FAKE_ACP_STATE", ".fake-acp-state"),
            ("FAKE_ACP_SESSIONS", "resume-close"),
        ],
        "",
    );
    let vendor = vendor_entry(&w).await;
    assert_eq!(
        vendor["effortLevels"],
        json!(["low", "medium", "high"]),
        "{vendor}"
    );
    // Kept for the next start, which serves them before the agent is asked again.
    let cache = std::fs::read_to_string(w.dir.path().join("data/vendor-models.json")).unwrap();
    let cache: Value = serde_json::from_str(&cache).unwrap();
    assert_eq!(
        cache["fake"]["effortLevels"], vendor["effortLevels"],
        "{cache}"
    );
    let mut ws = w.server().ws().await;
    let cwd = w.work();
    std::fs::create_dir_all(&cwd).unwrap();
    let refused = ws
        .request(json!({"type": "session.create", "vendor": "fake",
            "effort": "turbo", "cwd": cwd.display().to_string()}))
        .await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|m| m.contains("low, medium, high")),
        "{refused}"
    );
    let reply = ws
        .ok(
            json!({"type": "session.create", "vendor": "fake", "effort": "high",
            "cwd": cwd.display().to_string()}),
        )
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    let events = turn(&mut ws, &id, "effort").await;
    assert_eq!(all_text(&events), "effort: high", "{events:?}");
    // `max` is not the agent's: the nearest of its levels is kept.
    let reply = ws
        .ok(json!({"type": "session.configure", "sessionId": id, "effort": "max"}))
        .await;
    assert_eq!(reply["session"]["effort"], "high", "{reply}");
    ws.ok(json!({"type": "session.configure", "sessionId": id, "effort": "minimal"}))
        .await;
    let events = turn(&mut ws, &id, "effort").await;
    assert_eq!(all_text(&events), "effort: low", "{events:?}");
}

#[actix_rt::test]
async fn fake_idle_agent_is_closed_and_the_next_turn_reopens_its_session() {
    // Relative: under the session's working directory, which a confined agent may use.
    let w = World::fake(
        "acp-fake-idle",
        &[("FAKE_ACP_STATE", ".fake-acp-state")],
        "idle_secs = 1",
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "say before the nap").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let first = w.agents();
    assert_eq!(first.len(), 1, "{first:?}");
    eventually("the idle agent to be closed", async || {
        w.agents().is_empty().then_some(())
    })
    .await;
    let events = turn(&mut ws, &id, "history").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(
        all_text(&events),
        "prompts: 2",
        "the session was reopened: {events:?}"
    );
    let second = w.agents();
    assert!(
        second.len() == 1 && second != first,
        "{first:?} then {second:?}"
    );
}

#[actix_rt::test]
async fn fake_stopping_the_server_leaves_no_agent_behind() {
    let mut w = World::fake("acp-fake-stop", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.chat(&id, "hang").await;
    ws.recv_until_within(FRAME_WAIT, |v| v["kind"] == "text_delta")
        .await;
    assert_eq!(w.agents().len(), 1);
    ws.close().await;
    w.server.terminate();
    assert!(w.processes().is_empty(), "{:?}", w.processes());
}

#[actix_rt::test]
async fn an_unknown_acp_vendor_is_refused() {
    let w = World::fake("acp-fake-unknown", &[], "");
    let mut ws = w.server().ws().await;
    let reply = ws
        .request(json!({"type": "session.create", "vendor": "gemini"}))
        .await;
    assert_eq!(reply["code"], "INVALID_ARGUMENT", "{reply}");
}

// ---- the real agents ----

/// The pinned claude-code-acp offers `session/fork`: a fork at the last turn opens
/// with it (the model's next request holds the source's turns and not what the source
/// says after), and a fork at an earlier turn, which `session/fork` cannot make, gets
/// the transcript.
#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_fork_at_the_last_turn_uses_session_fork() {
    let Some(w) = Real::Claude.world("acp-real-fork") else {
        return;
    };
    let entry = vendor_entry(&w).await;
    assert!(
        entry["capabilities"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("fork"))),
        "{entry}"
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let first = turn(&mut ws, &id, "say remember-the-heron-17").await;
    let second = turn(&mut ws, &id, "say remember-the-walrus-42").await;
    assert_eq!(status(&second), "completed", "{second:?}");
    let source_acp = w.info(&id).await["vendorSessionId"].clone();
    let user_seq = |events: &[Value]| {
        events
            .iter()
            .find(|e| e["kind"] == "user_message")
            .and_then(|e| e["seq"].as_u64())
            .unwrap()
    };

    let forked = ws
        .ok(json!({"type": "session.fork", "sessionId": id, "anchorSeq": user_seq(&second)}))
        .await;
    assert_eq!(forked["conversation"], "vendor", "{forked}");
    let fork = forked["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&fork, 0).await;
    let events = turn(&mut ws, &fork, "say forked-otter-99").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let request = w
        .mock
        .bodies()
        .into_iter()
        .rev()
        .find(|b| b.contains("forked-otter-99"))
        .unwrap_or_default();
    assert!(
        request.contains("remember-the-heron-17") && request.contains("remember-the-walrus-42"),
        "the fork's model saw the source's turns: {request}"
    );
    assert!(
        !request.contains("[This conversation continues from a fork"),
        "no transcript: {request}"
    );
    let fork_acp = w.info(&fork).await["vendorSessionId"].clone();
    assert!(fork_acp.is_string() && fork_acp != source_acp, "{fork_acp}");

    // The source goes on without the fork's turn.
    turn(&mut ws, &id, "say source-after-fork-5").await;
    let request = w
        .mock
        .bodies()
        .into_iter()
        .rev()
        .find(|b| b.contains("source-after-fork-5"))
        .unwrap_or_default();
    assert!(!request.contains("forked-otter-99"), "{request}");
    assert_eq!(w.info(&id).await["vendorSessionId"], source_acp);

    // Before the last turn: a transcript.
    let earlier = ws
        .ok(json!({"type": "session.fork", "sessionId": id, "anchorSeq": user_seq(&first)}))
        .await;
    assert_eq!(earlier["conversation"], "transcript", "{earlier}");
}

/// The `model` of every request the model server received since `from`.
fn models_asked(w: &World, from: usize) -> Vec<String> {
    w.mock
        .bodies()
        .iter()
        .skip(from)
        .filter_map(|b| serde_json::from_str::<Value>(b).ok())
        .filter_map(|b| b["model"].as_str().map(str::to_string))
        .collect()
}

/// The reasoning efforts the model requests since `from` (`reasoning.effort`).
fn efforts_asked(w: &World, from: usize) -> Vec<String> {
    w.mock
        .bodies()
        .iter()
        .skip(from)
        .filter_map(|b| serde_json::from_str::<Value>(b).ok())
        .filter_map(|b| b["reasoning"]["effort"].as_str().map(str::to_string))
        .collect()
}

/// codex-acp's `reasoning_effort` option (category `thought_level`) gives the
/// vendor's effort levels, and a session's effort reaches the model's requests: from
/// the first turn, and after `session.configure`.
#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_offers_its_reasoning_efforts_and_applies_the_sessions() {
    // One of Codex's model presets: codex-acp offers efforts only for those.
    let Some(w) = World::codex_on("acp-codex-effort", "gpt-5.4") else {
        return;
    };
    let entry = vendor_entry(&w).await;
    // Configured as README says, with its approval policy in `args`, it offers no
    // modes, and `/vendors` says what that means.
    assert!(
        entry["notes"].as_array().is_some_and(|n| n
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("offers no modes")))),
        "{entry}"
    );
    let levels = entry["effortLevels"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        levels.contains(&json!("low")) && levels.contains(&json!("high")),
        "{entry}"
    );
    let mut ws = w.server().ws().await;
    let cwd = w.work();
    std::fs::create_dir_all(&cwd).unwrap();
    let reply = ws
        .ok(
            json!({"type": "session.create", "vendor": w.id, "effort": "high",
            "cwd": cwd.display().to_string()}),
        )
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    let seen = w.mock.bodies().len();
    let events = turn(&mut ws, &id, "say thinking hard").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let asked = efforts_asked(&w, seen);
    assert!(
        !asked.is_empty() && asked.iter().all(|e| e == "high"),
        "{asked:?}"
    );
    ws.ok(json!({"type": "session.configure", "sessionId": id, "effort": "low"}))
        .await;
    let seen = w.mock.bodies().len();
    let events = turn(&mut ws, &id, "say thinking less").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let asked = efforts_asked(&w, seen);
    assert!(
        !asked.is_empty() && asked.iter().all(|e| e == "low"),
        "{asked:?}"
    );
}

async fn real_models(agent: Real) {
    let Some(w) = agent.world("acp-real-models") else {
        return;
    };
    // The probe's `session/new` lists the session models, the agent's default first.
    let entry = vendor_entry(&w).await;
    let models: Vec<String> = entry["models"]
        .as_array()
        .unwrap_or_else(|| panic!("no models in {entry}"))
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    assert!(models.len() > 1, "{entry}");
    assert_eq!(entry["defaultModel"], models[0].as_str(), "{entry}");
    let chosen = models[1].clone();

    // A session on the default model, then switched with session.configure: the next
    // turn goes to the chosen model.
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let seen = w.mock.bodies().len();
    let events = turn(&mut ws, &id, "say on the default model").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let asked = models_asked(&w, seen);
    assert!(
        !asked.is_empty() && asked.iter().all(|m| !m.contains(&chosen)),
        "{chosen} before it was chosen: {asked:?}"
    );
    ws.ok(json!({"type": "session.configure", "sessionId": id, "model": chosen}))
        .await;
    let seen = w.mock.bodies().len();
    let events = turn(&mut ws, &id, "say on the chosen model").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let asked = models_asked(&w, seen);
    assert!(
        asked.iter().any(|m| m.contains(&chosen)),
        "{chosen} was not used: {asked:?}"
    );

    // A new session created with the model gets it from its first turn.
    let cwd = w.work();
    let reply = ws
        .ok(
            json!({"type": "session.create", "vendor": w.id, "model": chosen,
                   "cwd": cwd.display().to_string()}),
        )
        .await;
    let second = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&second, 0).await;
    let seen = w.mock.bodies().len();
    let events = turn(&mut ws, &second, "say from the start").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let asked = models_asked(&w, seen);
    assert!(asked.iter().any(|m| m.contains(&chosen)), "{asked:?}");

    // A model the agent does not offer is said in the history; the turn still runs.
    ws.ok(json!({"type": "session.configure", "sessionId": id, "model": "no-such-model"}))
        .await;
    let events = turn(&mut ws, &id, "say anyway").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        texts(&events, "info")
            .iter()
            .any(|t| t.contains("does not offer the model `no-such-model`")),
        "{events:?}"
    );
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_lists_its_models_and_applies_the_chosen_one() {
    real_models(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_lists_its_models_and_applies_the_chosen_one() {
    real_models(Real::Claude).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
#[cfg_attr(
    not(has_mcp_everything),
    ignore = "the MCP test server is not installed"
)]
async fn claude_acp_gets_the_declared_mcp_servers() {
    let Some(w) = World::claude_with("acp-mcp", &crate::mcp_servers::everything_section()) else {
        return;
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "bypassPermissions").await;
    let events = turn(
        &mut ws,
        &id,
        r#"tool mcp__everything__echo {"message":"hi from tandem"}"#,
    )
    .await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        texts(&events, "assistant_message")
            .iter()
            .any(|t| t.contains("Echo: hi from tandem")),
        "the tool's result reached the model: {events:?}"
    );
}
