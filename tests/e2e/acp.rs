//! The ACP adapter against real ACP agents and a fake one.
//!
//! - `fake-acp` (this crate's `src/bin/fake_acp.rs`) for the faults real agents rarely
//!   show: malformed frames, death mid-turn, silence at `initialize`, plus the
//!   mapping of permissions, plans, modes and `session/load`.
//! - Zed's `codex-acp` against the Responses-API mock and `claude-code-acp` against
//!   the Messages-API mock, pinned in `.vendor-clis` like the other CLIs: without them
//!   these tests print why and return, except under CI, where they fail.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::events::{end, kinds, of_kind, status, texts};
use tandem_tests::mock_anthropic::MockAnthropic;
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::procs::processes_with;
use tandem_tests::vendor_clis::{claude_acp_bin, codex_acp_bin, codex_sandbox_dir, require};
use tandem_tests::{eventually, ConfiguredServer, Server, TempDir, WsClient};

/// The model server behind a real agent (kept alive for the test).
enum Mock {
    None,
    OpenAi(MockOpenAi),
    Anthropic(MockAnthropic),
}

impl Mock {
    /// Every request body the model server received, as text.
    fn bodies(&self) -> Vec<String> {
        match self {
            Mock::None => Vec::new(),
            Mock::OpenAi(m) => m.requests().iter().map(Value::to_string).collect(),
            Mock::Anthropic(m) => m.requests().iter().map(|r| r.body.to_string()).collect(),
        }
    }
}

/// One test's world: a server whose vendor `id` is an ACP agent.
struct World {
    /// First, so it stops before the mock does.
    server: ConfiguredServer,
    mock: Mock,
    dir: Arc<TempDir>,
    /// The vendor id sessions are created with.
    id: &'static str,
    /// A value only this test's agent processes have in their environment.
    marker: String,
}

/// `[vendors.ID]` for an ACP agent.
struct AgentConfig {
    id: &'static str,
    bin: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    extra: String,
}

fn toml_string(s: &str) -> String {
    json!(s).to_string()
}

impl World {
    fn start(dir: Arc<TempDir>, agent: AgentConfig, mock: Mock) -> World {
        let marker = dir.path().display().to_string();
        let mut env = agent.env;
        env.push(("TANDEM_TEST_MARKER".into(), marker.clone()));
        let env = env
            .iter()
            .map(|(k, v)| format!("{k} = {}", toml_string(v)))
            .collect::<Vec<_>>()
            .join(", ");
        let args = agent
            .args
            .iter()
            .map(|a| toml_string(a))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!(
            "[vendors.{}]\nprotocol = \"acp\"\nbin = {}\nargs = [{args}]\nenv = {{ {env} }}\n{}\n",
            agent.id,
            toml_string(&agent.bin.display().to_string()),
            agent.extra,
        );
        let config = dir.path().join("tandem.toml");
        if let Err(e) = std::fs::write(&config, text) {
            panic!("cannot write {}: {e}", config.display());
        }
        World {
            server: ConfiguredServer::start(dir.clone(), config),
            mock,
            dir,
            id: agent.id,
            marker,
        }
    }

    /// The fake agent, with `env` and `extra` config lines.
    fn fake(label: &str, env: &[(&str, &str)], extra: &str) -> World {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        World::start(
            Arc::new(TempDir::new(label)),
            AgentConfig {
                id: "fake",
                bin: PathBuf::from(env!("CARGO_BIN_EXE_fake-acp")),
                args: Vec::new(),
                env,
                extra: format!("display_name = \"Fake ACP\"\n{extra}"),
            },
            Mock::None,
        )
    }

    /// Zed's `codex-acp` against the Responses-API mock; `None` without it.
    fn codex(label: &str) -> Option<World> {
        World::codex_on(label, "gpt-5-codex")
    }

    /// [`World::codex`] with `model` as the agent's configured model.
    fn codex_on(label: &str, model: &str) -> Option<World> {
        let bin = require(codex_acp_bin(), "the pinned codex-acp agent");
        let sandbox = require(codex_sandbox_dir(), "Codex's bwrap (from the pinned codex)");
        let mock = MockOpenAi::start();
        let dir = Arc::new(TempDir::new(label));
        let (codex_home, home) = (dir.path().join("codex"), dir.path().join("home"));
        for d in [&codex_home, &home] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        // `--disable plugins` is `codex`'s flag, not the agent's; the model should be
        // one Codex knows, so no "unknown model" notice is streamed as text.
        let mut args: Vec<String> = mock
            .codex_args()
            .into_iter()
            .take_while(|a| a != "--disable")
            .map(|a| {
                if a == "model=mock-model" {
                    format!("model={model}")
                } else {
                    a
                }
            })
            .collect();
        args.extend(["-c".into(), "features.plugins=false".into()]);
        // Under tandem's Landlock ruleset Codex's own sandbox (bubblewrap, which needs
        // `mount`) cannot start: the agent runs its commands unsandboxed inside the
        // ruleset and asks before any command not known to be harmless, as README's
        // "Adding an ACP agent" tells users to configure it.
        args.extend([
            "-c".into(),
            "sandbox_mode=\"danger-full-access\"".into(),
            "-c".into(),
            "approval_policy=\"untrusted\"".into(),
        ]);
        let path = format!(
            "{}:{}",
            sandbox.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Some(World::start(
            dir,
            AgentConfig {
                id: "codex-acp",
                bin,
                args,
                env: vec![
                    ("CODEX_HOME".into(), codex_home.display().to_string()),
                    ("HOME".into(), home.display().to_string()),
                    ("PATH".into(), path),
                ],
                extra: "display_name = \"Codex (ACP)\"".into(),
            },
            Mock::OpenAi(mock),
        ))
    }

    /// Zed's `claude-code-acp` against the Messages-API mock; `None` without it.
    fn claude(label: &str) -> Option<World> {
        World::claude_with(label, "")
    }

    /// [`World::claude`] with `more` config after the agent's section.
    fn claude_with(label: &str, more: &str) -> Option<World> {
        let bin = require(claude_acp_bin(), "the pinned claude-code-acp agent");
        let mock = MockAnthropic::start();
        let dir = Arc::new(TempDir::new(label));
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        let mut env = mock.cli_env();
        env.push(("HOME".into(), home.display().to_string()));
        // The agent starts Claude Code with permission flags it refuses as root
        // outside a sandbox.
        env.push(("IS_SANDBOX".into(), "1".into()));
        env.push(("ENABLE_TOOL_SEARCH".into(), "false".into()));
        Some(World::start(
            dir,
            AgentConfig {
                id: "claude-acp",
                bin,
                args: Vec::new(),
                env,
                extra: format!("display_name = \"Claude Code (ACP)\"\n{more}"),
            },
            Mock::Anthropic(mock),
        ))
    }

    fn server(&self) -> &Server {
        self.server.server()
    }

    /// Kills the server (SIGKILL) and starts it again on the same data.
    fn restart(&mut self) {
        self.server.restart();
    }

    /// Creates a session of this world's agent in `mode`, subscribed.
    async fn session(&self, ws: &mut WsClient, mode: &str) -> String {
        let cwd = self.work();
        std::fs::create_dir_all(&cwd).unwrap_or_else(|e| panic!("{e}"));
        let reply = ws
            .ok(
                json!({"type": "session.create", "vendor": self.id, "title": "acp test",
                       "permissionMode": mode, "cwd": cwd.display().to_string()}),
            )
            .await;
        let id = match reply["session"]["id"].as_str() {
            Some(id) => id.to_string(),
            None => panic!("no session id in {reply}"),
        };
        ws.subscribe(&id, 0).await;
        id
    }

    async fn info(&self, id: &str) -> Value {
        let (status, body) = self.server().get(&format!("/api/v1/sessions/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Live processes started with this world's marker in their environment: the
    /// sessions' agents and the start-up probe's.
    fn processes(&self) -> Vec<u32> {
        processes_with(&format!("TANDEM_TEST_MARKER={}", self.marker))
    }

    /// Live session agents: this world's processes working in its work directory.
    /// The `/vendors` probe runs in the temp directory and may still be exiting when
    /// a first turn ends on a loaded machine, so it is not counted.
    fn agents(&self) -> Vec<u32> {
        let work = self.work();
        self.processes()
            .into_iter()
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == work)
            })
            .collect()
    }

    /// The session's working directory.
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
}

fn all_text(events: &[Value]) -> String {
    texts(events, "assistant_message").join("\n")
}

/// The longest wait for one frame: a real agent's first turn starts two Node or Rust
/// processes, which on a loaded 2-core machine can take longer than the clients'
/// usual 20 s.
const FRAME_WAIT: Duration = Duration::from_secs(90);

/// The session's events until its `turn_completed` (inclusive).
async fn turn_end(ws: &mut WsClient, id: &str) -> Vec<Value> {
    ws.events_until_turn_end_within(FRAME_WAIT, id).await
}

/// Sends `text` and returns the turn's events.
async fn turn(ws: &mut WsClient, id: &str, text: &str) -> Vec<Value> {
    ws.chat(id, text).await;
    turn_end(ws, id).await
}

/// Frames until the next `permission_request`, which is returned.
async fn next_permission(ws: &mut WsClient) -> Value {
    let frames = ws
        .recv_until_within(FRAME_WAIT, |v| v["kind"] == "permission_request")
        .await;
    frames.last().cloned().unwrap()
}

/// Sends `text`, answers the permission request it raises (`remember` adds
/// `remember: "session"`), and returns the turn's events.
async fn ask_and_answer(
    ws: &mut WsClient,
    id: &str,
    text: &str,
    allow: bool,
    remember: bool,
) -> Vec<Value> {
    ws.chat(id, text).await;
    let request = next_permission(ws).await;
    answer(ws, &request, allow, remember).await;
    turn_end(ws, id).await
}

/// Answers a permission request; `remember` adds `remember: "session"`.
async fn answer(ws: &mut WsClient, request: &Value, allow: bool, remember: bool) {
    let id = request["requestId"].clone();
    let mut body = json!({"type": "chat.permission-response", "requestId": id, "allow": allow});
    if remember {
        body["remember"] = json!("session");
    }
    let reply = ws.request_with_id(body).await;
    assert_eq!(reply["kind"], "reply", "{reply}");
}

async fn abort(ws: &mut WsClient, id: &str) {
    ws.ok(json!({"type": "chat.abort", "sessionId": id})).await;
}

/// The vendor's entry in `GET /vendors`, once its agent was probed.
async fn vendor_entry(w: &World) -> Value {
    eventually("the agent's facts in /vendors", async || {
        let (status, body) = w.server().get("/api/v1/vendors").await;
        assert_eq!(status, 200, "{body}");
        body["vendors"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["id"] == w.id).cloned())
            .filter(|v| v.get("agent").is_some())
    })
    .await
}

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
async fn fake_text_turn_streams_and_vendors_shows_the_agent() {
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
    assert!(
        caps.contains(&"resume") && !caps.contains(&"tools"),
        "{entry}"
    );
    assert!(
        entry["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("cannot call tandem's agent tools")),
        "an agent without HTTP MCP says so: {entry}"
    );

    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "say one two three").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(texts(&events, "text_delta").len(), 3, "{events:?}");
    assert_eq!(all_text(&events), "one two three ");
    assert_eq!(end(&events)["usage"]["context"]["used"], 10, "{events:?}");
    let events = turn(&mut ws, &id, "plan").await;
    let plan = of_kind(&events, "plan");
    assert_eq!(plan.len(), 1, "{events:?}");
    assert_eq!(plan[0]["entries"][1]["content"], "fix");
    let vendor_session = w.info(&id).await["vendorSessionId"].clone();
    assert!(
        vendor_session
            .as_str()
            .is_some_and(|s| s.starts_with("fake-")),
        "{vendor_session}"
    );
    assert_eq!(w.agents().len(), 1, "one process per session, kept");
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

/// ACP offers no way to drop turns from a session, so an ACP agent lists no `rewind`
/// capability and `chat.edit-send` is refused with `REWIND_NOT_SUPPORTED`, recording
/// nothing.
#[actix_rt::test]
async fn fake_edit_send_is_refused_as_not_supported() {
    let w = World::fake("acp-fake-rewind", &[], "");
    let entry = vendor_entry(&w).await;
    assert!(
        entry["capabilities"]
            .as_array()
            .is_some_and(|c| !c.contains(&json!("rewind"))),
        "{entry}"
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "say one").await;
    let anchor = events
        .iter()
        .find(|e| e["kind"] == "user_message")
        .and_then(|e| e["seq"].as_u64())
        .unwrap();
    let refused = ws
        .request(
            json!({"type": "chat.edit-send", "sessionId": id, "anchorSeq": anchor,
            "content": "say two"}),
        )
        .await;
    assert_eq!(refused["code"], "REWIND_NOT_SUPPORTED", "{refused}");
    let (status, body) = w
        .server()
        .post(
            &format!("/api/v1/sessions/{id}/edit-send"),
            &json!({"anchorSeq": anchor, "content": "say two"}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "REWIND_NOT_SUPPORTED");
    let stored = w.server().all_events(&id).await;
    assert_eq!(
        stored.last().map(|e| e["seq"].clone()),
        events.last().map(|e| e["seq"].clone())
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
async fn fake_malformed_frames_are_logged_and_survived() {
    let w = World::fake("acp-fake-garbage", &[("FAKE_ACP_INIT", "garbage")], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "garbage").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(all_text(&events), "survived");
    let events = turn(&mut ws, &id, "say still here").await;
    assert_eq!(all_text(&events), "still here ");
}

#[actix_rt::test]
async fn fake_agent_dying_fails_only_its_turn_with_its_stderr() {
    let w = World::fake("acp-fake-die", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "die").await;
    let done = end(&events);
    assert_eq!(done["status"], "failed", "{events:?}");
    let error = done["error"].as_str().unwrap_or_default();
    assert!(error.contains("Fake ACP exited during the turn"), "{error}");
    assert!(error.contains("exit code 3"), "{error}");
    assert!(error.contains("dying on purpose"), "{error}");
    // The next turn starts a new process; the lost session is said, not hidden.
    let events = turn(&mut ws, &id, "say alive again").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(all_text(&events), "alive again ");
    assert!(
        texts(&events, "info")
            .iter()
            .any(|t| t.contains("could not reopen its session")),
        "{events:?}"
    );
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
async fn fake_permissions_carry_options_and_map_answers_by_kind() {
    let w = World::fake("acp-fake-ask", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;

    ws.chat(&id, "ask").await;
    let request = next_permission(&mut ws).await;
    assert_eq!(request["toolName"], "execute", "{request}");
    assert_eq!(request["input"]["rawInput"]["command"], "touch /tmp/x");
    // The agent's options, in its words, as the answers that pick them.
    assert_eq!(
        request["choices"],
        json!([{"label": "Sure, why not", "allow": true},
               {"label": "Go ahead always", "allow": true, "remember": "session"},
               {"label": "Please don't", "allow": false}]),
        "{request}"
    );
    // chat_subscribed lists it with its choices for a client that joins now.
    let mut late = w.server().ws().await;
    late.subscribe(&id, 0).await;
    let subscribed = late.recv_until(|v| v["kind"] == "chat_subscribed").await;
    let pending = &subscribed.last().cloned().unwrap_or_default()["pendingPermissions"];
    assert_eq!(
        pending[0]["choices"].as_array().map(Vec::len),
        Some(3),
        "{pending}"
    );
    answer(&mut ws, &request, true, false).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(all_text(&events), "answer: yes-once", "{events:?}");
    let stored = w.server().all_events(&id).await;
    assert!(of_kind(&stored, "permission_resolved")
        .iter()
        .any(|e| e["requestId"] == request["requestId"]));

    let events = ask_and_answer(&mut ws, &id, "ask", false, false).await;
    assert_eq!(all_text(&events), "answer: nope", "{events:?}");
    assert_eq!(of_kind(&events, "tool_result")[0]["isError"], true);

    let events = ask_and_answer(&mut ws, &id, "ask", true, true).await;
    assert_eq!(all_text(&events), "answer: yes-forever", "{events:?}");
    // The rule is the session's too: recorded, listed, and it answers the next request.
    let stored = w.server().all_events(&id).await;
    assert_eq!(
        of_kind(&stored, "permission_remembered")[0]["rule"]["toolName"],
        "execute"
    );
    let events = turn(&mut ws, &id, "ask").await;
    assert!(
        of_kind(&events, "permission_request").is_empty(),
        "{events:?}"
    );
    assert_eq!(all_text(&events), "answer: yes-once", "{events:?}");
    let mut late = w.server().ws().await;
    late.subscribe(&id, 0).await;
    let subscribed = late.recv_until(|v| v["kind"] == "chat_subscribed").await;
    let rules = &subscribed.last().cloned().unwrap_or_default()["permissionRules"];
    assert_eq!(rules[0]["toolName"], "execute", "{rules}");
}

#[actix_rt::test]
async fn fake_interrupt_cancels_pending_permissions_and_the_turn() {
    let w = World::fake("acp-fake-cancel", &[], "");
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;

    ws.chat(&id, "ask").await;
    let request = next_permission(&mut ws).await;
    abort(&mut ws, &id).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "interrupted", "{events:?}");
    assert!(of_kind(&events, "permission_resolved")
        .iter()
        .any(|e| e["requestId"] == request["requestId"]));
    let late = json!({"type": "chat.permission-response",
        "requestId": request["requestId"], "allow": true});
    let refused = ws.request(late).await;
    assert_eq!(refused["code"], "NO_SUCH_PERMISSION", "{refused}");

    ws.chat(&id, "hang").await;
    ws.recv_until_within(FRAME_WAIT, |v| v["kind"] == "text_delta")
        .await;
    abort(&mut ws, &id).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "interrupted", "{events:?}");
    assert!(end(&events).get("error").is_none(), "{events:?}");

    let events = turn(&mut ws, &id, "say next").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(all_text(&events), "next ");
    assert_eq!(w.agents().len(), 1, "the same process took every turn");
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
async fn fake_restart_loads_the_session_without_replaying_it() {
    // Relative: under the session's working directory, which a confined agent may use.
    let mut w = World::fake(
        "acp-fake-load",
        &[("FAKE_ACP_STATE", ".fake-acp-state")],
        "",
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "say first").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let before = w.info(&id).await["vendorSessionId"].clone();
    drop(ws);
    w.restart();
    let mut ws = w.server().ws().await;
    let seen = w.info(&id).await["lastSeq"].as_u64().unwrap_or_default();
    ws.subscribe(&id, seen).await;
    let events = turn(&mut ws, &id, "history").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(all_text(&events), "prompts: 2", "{events:?}");
    assert!(
        !events
            .iter()
            .any(|e| e["text"].as_str().is_some_and(|t| t.contains("old answer"))),
        "the replay is not shown again: {events:?}"
    );
    assert_eq!(w.info(&id).await["vendorSessionId"], before);
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

/// Which real agent a test runs, with the mock script lines it needs.
#[derive(Clone, Copy)]
enum Real {
    Codex,
    Claude,
}

impl Real {
    fn world(self, label: &str) -> Option<World> {
        match self {
            Real::Codex => World::codex(label),
            Real::Claude => World::claude(label),
        }
    }

    /// A prompt that makes the model run `command` in a shell.
    fn shell(self, command: &str) -> String {
        match self {
            Real::Codex => format!("shell {command}"),
            Real::Claude => format!("bash {command}"),
        }
    }

    /// A prompt that makes the model run `command` in a way the agent asks about.
    fn guarded(self, command: &str) -> String {
        match self {
            // Under `approval_policy = "untrusted"` (see `World::codex`) Codex asks
            // before any command not known to be harmless.
            Real::Codex => format!("shell {command}"),
            Real::Claude => format!("bash {command}"),
        }
    }

    /// A reply streamed slowly enough to interrupt.
    fn slow(self) -> &'static str {
        match self {
            Real::Codex => "slow 400 50",
            Real::Claude => "slow 400 50",
        }
    }

    /// A prompt that makes the model call our `send_to_partner` tool.
    fn send_to_partner(self, args: &Value) -> String {
        match self {
            Real::Codex => format!("tool send_to_partner {args}"),
            Real::Claude => format!("tool mcp__tandem__send_to_partner {args}"),
        }
    }
}

async fn real_text_turn(agent: Real) {
    let Some(w) = agent.world("acp-real-text") else {
        return;
    };
    let entry = vendor_entry(&w).await;
    assert!(
        entry["capabilities"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("tools"))),
        "{entry}"
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "say hello from the mock model").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        texts(&events, "text_delta").len() > 1,
        "{:?}",
        kinds(&events)
    );
    assert!(
        all_text(&events).contains("hello from the mock model"),
        "{events:?}"
    );
    assert!(w.info(&id).await["vendorSessionId"].is_string());
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_text_turn_streams_deltas() {
    real_text_turn(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_text_turn_streams_deltas() {
    real_text_turn(Real::Claude).await;
}

async fn real_shell_tool(agent: Real) {
    let Some(w) = agent.world("acp-real-shell") else {
        return;
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, &agent.shell("echo shell-says-hi")).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let calls = of_kind(&events, "tool_call");
    assert!(!calls.is_empty(), "{:?}", kinds(&events));
    assert_eq!(calls[0]["name"], "execute", "{events:?}");
    assert!(
        calls[0]["input"].to_string().contains("echo shell-says-hi"),
        "{events:?}"
    );
    let results = of_kind(&events, "tool_result");
    assert!(
        results
            .iter()
            .any(|r| r["output"].to_string().contains("shell-says-hi") && r["isError"] == false),
        "{events:?}"
    );
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_shell_tool_call_and_output() {
    real_shell_tool(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_shell_tool_call_and_output() {
    real_shell_tool(Real::Claude).await;
}

async fn real_permissions(agent: Real) {
    let Some(w) = agent.world("acp-real-permission") else {
        return;
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let allowed = w.work().join("allowed.txt");
    ws.chat(&id, &agent.guarded(&format!("touch {}", allowed.display())))
        .await;
    let request = next_permission(&mut ws).await;
    let offered = request["choices"].as_array().cloned().unwrap_or_default();
    assert!(
        offered
            .iter()
            .any(|c| c["allow"] == true && c.get("remember").is_none()),
        "{request}"
    );
    assert!(
        offered
            .iter()
            .any(|c| c["allow"] == true && c["remember"] == "session"),
        "the agent's always-allow is offered: {request}"
    );
    assert!(offered.iter().any(|c| c["allow"] == false), "{request}");
    answer(&mut ws, &request, true, false).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(allowed.exists(), "the allowed command ran: {events:?}");

    let denied = w.work().join("denied.txt");
    let events = ask_and_answer(
        &mut ws,
        &id,
        &agent.guarded(&format!("touch {}", denied.display())),
        false,
        false,
    )
    .await;
    // Codex stops its turn on a denial (`abort`); Claude Code tells the model.
    assert!(
        matches!(status(&events).as_str(), Some("completed" | "interrupted")),
        "{events:?}"
    );
    assert!(!denied.exists(), "the denied command did not run");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_permission_allowed_and_denied() {
    real_permissions(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_permission_allowed_and_denied() {
    real_permissions(Real::Claude).await;
}

async fn real_always_allow(agent: Real) {
    let Some(w) = agent.world("acp-real-always") else {
        return;
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let file = w.work().join("again.txt");
    let prompt = agent.guarded(&format!("touch {}", file.display()));
    // Allowed once: the same command is asked about again.
    let events = ask_and_answer(&mut ws, &id, &prompt, true, false).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let events = ask_and_answer(&mut ws, &id, &prompt, true, true).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(file.exists());
    std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{e}"));
    // The agent remembers the rule: the same command is not asked about again.
    let events = turn(&mut ws, &id, &prompt).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        of_kind(&events, "permission_request").is_empty(),
        "{events:?}"
    );
    assert!(file.exists(), "{events:?}");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_always_allow_is_remembered() {
    real_always_allow(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_always_allow_is_remembered() {
    real_always_allow(Real::Claude).await;
}

async fn real_interrupt(agent: Real) {
    let Some(w) = agent.world("acp-real-interrupt") else {
        return;
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.chat(&id, agent.slow()).await;
    ws.recv_until_within(FRAME_WAIT, |v| v["kind"] == "text_delta")
        .await;
    abort(&mut ws, &id).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "interrupted", "{events:?}");
    let events = turn(&mut ws, &id, "say after the stop").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(all_text(&events).contains("after the stop"), "{events:?}");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_interrupt_mid_stream_then_a_normal_turn() {
    real_interrupt(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_interrupt_mid_stream_then_a_normal_turn() {
    real_interrupt(Real::Claude).await;
}

async fn real_resume(agent: Real) {
    let Some(mut w) = agent.world("acp-real-resume") else {
        return;
    };
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let events = turn(&mut ws, &id, "say remember-the-walrus-42").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let before = w.info(&id).await["vendorSessionId"].clone();
    drop(ws);
    w.restart();
    let mut ws = w.server().ws().await;
    let seen = w.info(&id).await["lastSeq"].as_u64().unwrap_or_default();
    ws.subscribe(&id, seen).await;
    let events = turn(&mut ws, &id, "say second-turn-after-restart").await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(w.info(&id).await["vendorSessionId"], before);
    let request = w
        .mock
        .bodies()
        .into_iter()
        .rev()
        .find(|b| b.contains("second-turn-after-restart"))
        .unwrap_or_default();
    assert!(
        request.contains("remember-the-walrus-42"),
        "the model saw the turn before the restart"
    );
}

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

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_resumes_after_a_server_restart() {
    real_resume(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_resumes_after_a_server_restart() {
    real_resume(Real::Claude).await;
}

async fn real_driver(agent: Real) {
    let Some(w) = agent.world("acp-real-driver") else {
        return;
    };
    let mut ws = w.server().ws().await;
    // Our own tools are not asked about in bypass mode.
    let id = w.session(&mut ws, "bypassPermissions").await;
    let call = json!({"message": "from the scripted worker", "workerVendor": "scripted"});
    let events = turn(&mut ws, &id, &agent.send_to_partner(&call)).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let results = of_kind(&events, "tool_result");
    assert!(
        results
            .iter()
            .any(|r| r["output"].to_string().contains("from the scripted worker")),
        "{events:?}"
    );
    let info = w.info(&id).await;
    assert_eq!(info["role"], "driver", "{info}");
    let worker = info["pairId"].as_str().map(str::to_string);
    assert!(worker.is_some(), "{info}");
    assert!(
        all_text(&events).contains("from the scripted worker"),
        "the Driver's model saw the Worker's answer: {events:?}"
    );
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_driver_delegates_through_mcp() {
    real_driver(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_driver_delegates_through_mcp() {
    real_driver(Real::Claude).await;
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
async fn fake_agent_without_image_support_refuses_images() {
    use tandem_tests::images::{base64, PNG};
    let w = World::fake("acp-fake-images", &[], "");
    let entry = vendor_entry(&w).await;
    assert!(
        entry["capabilities"]
            .as_array()
            .is_some_and(|c| !c.contains(&json!("images"))),
        "{entry}"
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    let answer = ws
        .request(json!({"type": "chat.send", "sessionId": id, "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "mimeType": "image/png", "data": base64(PNG)},
        ]}))
        .await;
    assert_eq!(answer["code"], "ATTACHMENT_NOT_SUPPORTED", "{answer}");
    // Files need no support from the agent: they become text.
    let (code, notes) = w
        .server()
        .post_bytes(
            "/api/v1/uploads?name=n.txt",
            "text/plain",
            b"noted".to_vec(),
        )
        .await;
    assert_eq!(code, 201, "{notes}");
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": [
        {"type": "text", "text": "read this"},
        {"type": "file", "uploadId": notes["uploadId"]},
    ]}))
    .await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "completed", "{events:?}");
}

async fn real_images(agent: Real) {
    use tandem_tests::images::{base64, PNG};
    let Some(w) = agent.world("acp-real-images") else {
        return;
    };
    let entry = vendor_entry(&w).await;
    assert!(
        entry["capabilities"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("images"))),
        "the agent advertises images: {entry}"
    );
    let mut ws = w.server().ws().await;
    let id = w.session(&mut ws, "default").await;
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": [
        {"type": "text", "text": "say hello from the mock model"},
        {"type": "image", "mimeType": "image/png", "data": base64(PNG)},
    ]}))
    .await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let b64 = base64(PNG);
    assert!(
        w.mock.bodies().iter().any(|b| b.contains(&b64)),
        "the image's bytes reached the model"
    );
}

#[actix_rt::test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "the pinned codex-acp agent is not installed"
)]
async fn codex_acp_images_reach_the_model() {
    real_images(Real::Codex).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_claude_acp),
    ignore = "the pinned claude-code-acp agent is not installed"
)]
async fn claude_acp_images_reach_the_model() {
    real_images(Real::Claude).await;
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
