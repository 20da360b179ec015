//! The vendors the conformance suite runs every behaviour against: [`Vendor`] (who,
//! and how to script "say X", "run a command", "ask permission" for it) and [`Rig`]
//! (a server configured for that vendor, with its mock model server). The per-vendor
//! setup lives in one file each and is shared with the per-vendor test files.

pub(crate) mod acp;
pub(crate) mod claude;
pub(crate) mod codex;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::{eventually, ConfiguredServer, Server, TempDir, WsClient};

/// One vendor of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Vendor {
    /// The built-in scripted agent.
    Scripted,
    /// The pinned `codex` CLI (`codex app-server`) against the Responses-API mock.
    Codex,
    /// The pinned `claude` CLI against the Messages-API mock.
    Claude,
    /// Zed's `codex-acp` against the Responses-API mock.
    CodexAcp,
    /// Zed's `claude-code-acp` against the Messages-API mock.
    ClaudeAcp,
    /// This crate's fake ACP agent (`src/bin/fake_acp.rs`).
    FakeAcp,
}

/// The name of the `/hold` the scripted agent's slow turn waits at (an interrupt ends
/// the wait).
const SCRIPTED_HOLD: &str = "conformance-slow";

impl Vendor {
    /// Every vendor, in the order of the capability table.
    pub(crate) const ALL: [Vendor; 6] = [
        Vendor::Scripted,
        Vendor::Codex,
        Vendor::Claude,
        Vendor::CodexAcp,
        Vendor::ClaudeAcp,
        Vendor::FakeAcp,
    ];

    /// The vendor id sessions are created with.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Vendor::Scripted => "scripted",
            Vendor::Codex => "codex",
            Vendor::Claude => "claude",
            Vendor::CodexAcp => "codex-acp",
            Vendor::ClaudeAcp => "claude-acp",
            Vendor::FakeAcp => "fake",
        }
    }

    /// Whether it speaks ACP.
    pub(crate) fn is_acp(self) -> bool {
        matches!(self, Vendor::CodexAcp | Vendor::ClaudeAcp | Vendor::FakeAcp)
    }

    /// Whether a real model client runs behind it (a mock model server sees its
    /// requests, and its commands really run).
    pub(crate) fn has_model(self) -> bool {
        !matches!(self, Vendor::Scripted | Vendor::FakeAcp)
    }

    /// A prompt whose answer is `text` (streamed).
    pub(crate) fn say(self, text: &str) -> String {
        match self {
            Vendor::Scripted => text.to_string(),
            _ => format!("say {text}"),
        }
    }

    /// A prompt that runs `command` in a shell (real vendors only).
    pub(crate) fn shell(self, command: &str) -> String {
        match self {
            Vendor::Codex | Vendor::CodexAcp => format!("shell {command}"),
            Vendor::Claude | Vendor::ClaudeAcp => format!("bash {command}"),
            Vendor::Scripted | Vendor::FakeAcp => panic!("{self:?} runs no shell"),
        }
    }

    /// A prompt that asks permission before touching `file` (in the default mode):
    /// a guarded shell command for a real vendor, `/ask` for the scripted agent,
    /// `ask` for the fake one (which touches nothing).
    pub(crate) fn guarded(self, file: &Path) -> String {
        match self {
            Vendor::Scripted => format!(
                "/ask shell {}",
                json!({"command": format!("touch {}", file.display())})
            ),
            Vendor::FakeAcp => "ask".into(),
            // Under `approval_policy = "untrusted"` (see `acp::World::codex`) and
            // Codex's default mode, a command not known to be harmless is asked about.
            _ => self.shell(&format!("touch {}", file.display())),
        }
    }

    /// The tool name a permission request of [`Vendor::guarded`] carries, where the
    /// suite knows it.
    pub(crate) fn guarded_tool(self) -> Option<&'static str> {
        match self {
            Vendor::Scripted | Vendor::Codex => Some("shell"),
            Vendor::Claude => Some("Bash"),
            Vendor::FakeAcp => Some("execute"),
            Vendor::CodexAcp | Vendor::ClaudeAcp => None,
        }
    }

    /// A turn that streams slowly enough to interrupt (its first `text_delta` comes
    /// before it waits).
    pub(crate) fn slow(self) -> String {
        match self {
            Vendor::Scripted => format!("begun\n/hold {SCRIPTED_HOLD}"),
            Vendor::Claude => "hold".into(),
            Vendor::FakeAcp => "hang".into(),
            Vendor::Codex | Vendor::CodexAcp | Vendor::ClaudeAcp => "slow 400 50".into(),
        }
    }

    /// A prompt that makes the agent call tandem's `send_to_partner` tool.
    pub(crate) fn send_to_partner(self, args: &Value) -> String {
        match self {
            Vendor::Scripted => format!("/tool send_to_partner {args}"),
            Vendor::Codex | Vendor::CodexAcp => format!("tool send_to_partner {args}"),
            Vendor::Claude | Vendor::ClaudeAcp => {
                format!("tool mcp__tandem__send_to_partner {args}")
            }
            Vendor::FakeAcp => panic!("the fake agent calls no tools"),
        }
    }
}

/// A server configured for one vendor, with what the vendor runs against.
pub(crate) enum Rig {
    /// The scripted agent needs no config: a server on an empty one.
    Scripted(ConfiguredServer),
    /// Codex and its mock.
    Codex(codex::Codex),
    /// Claude Code and its mock.
    Claude(claude::World),
    /// An ACP agent (and its mock, for a real one).
    Acp(acp::World),
}

impl Rig {
    /// A server for `vendor`, in a temporary directory named after `label`.
    pub(crate) fn start(vendor: Vendor, label: &str) -> Rig {
        match vendor {
            Vendor::Scripted => {
                let dir = Arc::new(TempDir::new(label));
                let config = dir.path().join("tandem.toml");
                std::fs::write(&config, "").unwrap_or_else(|e| panic!("{e}"));
                Rig::Scripted(ConfiguredServer::start(dir, config))
            }
            Vendor::Codex => Rig::Codex(codex::start(&[])),
            Vendor::Claude => Rig::Claude(claude::World::start(label)),
            Vendor::CodexAcp => Rig::Acp(acp::World::codex(label).unwrap()),
            Vendor::ClaudeAcp => Rig::Acp(acp::World::claude(label).unwrap()),
            Vendor::FakeAcp => Rig::fake(label, &[]),
        }
    }

    /// [`Rig::start`] for `vendor`, the fake agent started with `fake_env`.
    pub(crate) fn start_with(vendor: Vendor, label: &str, fake_env: &[(&str, &str)]) -> Rig {
        match vendor {
            Vendor::FakeAcp => Rig::fake(label, fake_env),
            _ => Rig::start(vendor, label),
        }
    }

    /// The fake ACP agent with `env`.
    fn fake(label: &str, env: &[(&str, &str)]) -> Rig {
        Rig::Acp(acp::World::fake(label, env, ""))
    }

    /// The running server.
    pub(crate) fn server(&self) -> &Server {
        match self {
            Rig::Scripted(s) => s.server(),
            Rig::Codex(c) => c,
            Rig::Claude(w) => w.server(),
            Rig::Acp(w) => w.server(),
        }
    }

    /// The sessions' working directory.
    pub(crate) fn work(&self) -> PathBuf {
        self.server().dir.path().join("work")
    }

    /// Creates a session of `vendor` in permission `mode`, working in
    /// [`Rig::work`], and subscribes to it.
    pub(crate) async fn session(&self, vendor: Vendor, ws: &mut WsClient, mode: &str) -> String {
        let cwd = self.work();
        std::fs::create_dir_all(&cwd).unwrap_or_else(|e| panic!("{e}"));
        let reply = ws
            .ok(json!({"type": "session.create", "vendor": vendor.id(),
                "title": "conformance", "permissionMode": mode,
                "cwd": cwd.display().to_string()}))
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

    /// Every request body the mock model server received, as text (none for the
    /// scripted and the fake agent).
    pub(crate) fn bodies(&self) -> Vec<String> {
        match self {
            Rig::Scripted(_) => Vec::new(),
            Rig::Codex(c) => c.mock.requests().iter().map(Value::to_string).collect(),
            Rig::Claude(w) => w
                .mock
                .requests()
                .iter()
                .map(|r| r.body.to_string())
                .collect(),
            Rig::Acp(w) => w.mock.bodies(),
        }
    }

    /// The newest request body the model received that holds `text`.
    pub(crate) fn request_with(&self, text: &str) -> String {
        self.bodies()
            .into_iter()
            .rev()
            .find(|b| b.contains(text))
            .unwrap_or_else(|| panic!("no model request holds {text:?}"))
    }

    /// Kills the server (SIGKILL) and starts it again on the same data and config.
    pub(crate) fn restart(self) -> Rig {
        match self {
            Rig::Scripted(mut s) => {
                s.restart();
                Rig::Scripted(s)
            }
            Rig::Codex(c) => Rig::Codex(c.restart()),
            Rig::Claude(mut w) => {
                w.restart();
                Rig::Claude(w)
            }
            Rig::Acp(mut w) => {
                w.restart();
                Rig::Acp(w)
            }
        }
    }

    /// The vendor's entry in `GET /vendors`, once its probe reported (an ACP agent's
    /// `agent` facts, a CLI's version).
    pub(crate) async fn vendor_entry(&self, vendor: Vendor) -> Value {
        eventually("the vendor's facts in /vendors", async || {
            let (status, body) = self.server().get("/api/v1/vendors").await;
            assert_eq!(status, 200, "{body}");
            let entry = body["vendors"]
                .as_array()
                .and_then(|v| v.iter().find(|v| v["id"] == vendor.id()).cloned())?;
            let probed = match vendor {
                Vendor::Scripted => true,
                Vendor::Codex | Vendor::Claude => entry["version"].is_string(),
                _ => entry.get("agent").is_some(),
            };
            probed.then_some(entry)
        })
        .await
    }

    /// The capabilities `/vendors` lists for the vendor.
    pub(crate) async fn capabilities(&self, vendor: Vendor) -> Vec<String> {
        let entry = self.vendor_entry(vendor).await;
        entry["capabilities"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_else(|| panic!("no capabilities in {entry}"))
    }

    /// Ids of the processes of the session's agent (ACP agents: this world's
    /// processes working in [`Rig::work`]; Claude Code: the live CLIs of its
    /// registry; Codex: its one app-server).
    pub(crate) async fn agent_pids(&self) -> Vec<u32> {
        match self {
            Rig::Scripted(_) => Vec::new(),
            Rig::Codex(c) => vec![codex::the_app_server(&c.home).await],
            Rig::Claude(w) => w.registry_pids(),
            Rig::Acp(w) => w.agents(),
        }
    }
}
