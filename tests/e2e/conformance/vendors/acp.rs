//! The ACP agents' setup, shared by the conformance suite and `acp.rs`: a server
//! whose vendor is the fake agent (`src/bin/fake_acp.rs`), Zed's `codex-acp` against
//! the Responses-API mock or `claude-code-acp` against the Messages-API mock, with
//! the helpers that drive a turn, a permission and `/vendors` for any of them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::events::texts;
use tandem_tests::mock_anthropic::MockAnthropic;
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::procs::processes_with;
use tandem_tests::vendor_clis::{claude_acp_bin, codex_acp_bin, codex_sandbox_dir, require};
use tandem_tests::{eventually, ConfiguredServer, Server, TempDir, WsClient};

/// The model server behind a real agent (kept alive for the test).
pub(crate) enum Mock {
    None,
    OpenAi(MockOpenAi),
    Anthropic(MockAnthropic),
}

impl Mock {
    /// Every request body the model server received, as text.
    pub(crate) fn bodies(&self) -> Vec<String> {
        match self {
            Mock::None => Vec::new(),
            Mock::OpenAi(m) => m.requests().iter().map(Value::to_string).collect(),
            Mock::Anthropic(m) => m.requests().iter().map(|r| r.body.to_string()).collect(),
        }
    }
}

/// One test's world: a server whose vendor `id` is an ACP agent.
pub(crate) struct World {
    /// First, so it stops before the mock does.
    pub(crate) server: ConfiguredServer,
    pub(crate) mock: Mock,
    pub(crate) dir: Arc<TempDir>,
    /// The vendor id sessions are created with.
    pub(crate) id: &'static str,
    /// A value only this test's agent processes have in their environment.
    pub(crate) marker: String,
}

/// `[vendors.ID]` for an ACP agent.
pub(crate) struct AgentConfig {
    pub(crate) id: &'static str,
    pub(crate) bin: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) extra: String,
}

/// `s` as a TOML string.
pub(crate) fn toml_string(s: &str) -> String {
    json!(s).to_string()
}

impl World {
    /// Writes `agent`'s config and starts a server on it.
    pub(crate) fn start(dir: Arc<TempDir>, agent: AgentConfig, mock: Mock) -> World {
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
    pub(crate) fn fake(label: &str, env: &[(&str, &str)], extra: &str) -> World {
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
    pub(crate) fn codex(label: &str) -> Option<World> {
        World::codex_on(label, "gpt-5-codex")
    }

    /// [`World::codex`] with `model` as the agent's configured model.
    pub(crate) fn codex_on(label: &str, model: &str) -> Option<World> {
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
    pub(crate) fn claude(label: &str) -> Option<World> {
        World::claude_with(label, "")
    }

    /// [`World::claude`] with `more` config after the agent's section.
    pub(crate) fn claude_with(label: &str, more: &str) -> Option<World> {
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

    /// The running server.
    pub(crate) fn server(&self) -> &Server {
        self.server.server()
    }

    /// Kills the server (SIGKILL) and starts it again on the same data.
    pub(crate) fn restart(&mut self) {
        self.server.restart();
    }

    /// Creates a session of this world's agent in `mode`, subscribed.
    pub(crate) async fn session(&self, ws: &mut WsClient, mode: &str) -> String {
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

    /// The session as REST lists it.
    pub(crate) async fn info(&self, id: &str) -> Value {
        let (status, body) = self.server().get(&format!("/api/v1/sessions/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Live processes started with this world's marker in their environment: the
    /// sessions' agents and the start-up probe's.
    pub(crate) fn processes(&self) -> Vec<u32> {
        processes_with(&format!("TANDEM_TEST_MARKER={}", self.marker))
    }

    /// Live session agents: this world's processes working in its work directory.
    /// The `/vendors` probe runs in the temp directory and may still be exiting when
    /// a first turn ends on a loaded machine, so it is not counted.
    pub(crate) fn agents(&self) -> Vec<u32> {
        let work = self.work();
        self.processes()
            .into_iter()
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == work)
            })
            .collect()
    }

    /// The session's working directory.
    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
}

/// Every assistant message of `events`, one a line.
pub(crate) fn all_text(events: &[Value]) -> String {
    texts(events, "assistant_message").join("\n")
}

/// The longest wait for one frame: a real agent's first turn starts two Node or Rust
/// processes, which on a loaded 2-core machine can take longer than the clients'
/// usual 20 s.
pub(crate) const FRAME_WAIT: Duration = Duration::from_secs(90);

/// The session's events until its `turn_completed` (inclusive).
pub(crate) async fn turn_end(ws: &mut WsClient, id: &str) -> Vec<Value> {
    ws.events_until_turn_end_within(FRAME_WAIT, id).await
}

/// Sends `text` and returns the turn's events.
pub(crate) async fn turn(ws: &mut WsClient, id: &str, text: &str) -> Vec<Value> {
    ws.chat(id, text).await;
    turn_end(ws, id).await
}

/// Frames until the next `permission_request`, which is returned.
pub(crate) async fn next_permission(ws: &mut WsClient) -> Value {
    let frames = ws
        .recv_until_within(FRAME_WAIT, |v| v["kind"] == "permission_request")
        .await;
    frames.last().cloned().unwrap()
}

/// Interrupts the session's turn.
pub(crate) async fn abort(ws: &mut WsClient, id: &str) {
    ws.ok(json!({"type": "chat.abort", "sessionId": id})).await;
}

/// The vendor's entry in `GET /vendors`, once its agent was probed.
pub(crate) async fn vendor_entry(w: &World) -> Value {
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

/// Which real ACP agent a test runs.
#[derive(Clone, Copy)]
pub(crate) enum Real {
    /// Zed's `codex-acp`.
    Codex,
    /// Zed's `claude-code-acp`.
    Claude,
}

impl Real {
    /// This agent's world; `None` without it.
    pub(crate) fn world(self, label: &str) -> Option<World> {
        match self {
            Real::Codex => World::codex(label),
            Real::Claude => World::claude(label),
        }
    }
}
