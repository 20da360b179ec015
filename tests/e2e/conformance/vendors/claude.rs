//! Claude Code's setup, shared by the conformance suite and `claude.rs`: a server
//! that runs the pinned `claude` against a mock Messages API with a private HOME, the
//! CLI's process registry, and a stand-in `claude` script for faults.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::mock_anthropic::{claude_config, MockAnthropic};
use tandem_tests::procs::is_alive;
use tandem_tests::vendor_clis::{claude_bin, require};
use tandem_tests::{eventually, ConfiguredServer, Server, ServerOptions, TempDir, WsClient};

/// One test's world: a mock model server, a server configured to run `claude`
/// against it, and the CLI's private HOME.
pub(crate) struct World {
    /// First, so it stops before the mock does.
    pub(crate) server: ConfiguredServer,
    pub(crate) mock: MockAnthropic,
    pub(crate) home: PathBuf,
}

impl World {
    /// Starts the mock model server and a server configured to run `claude` against it.
    pub(crate) fn start(label: &str) -> World {
        World::start_idle(label, 600)
    }

    /// [`World::start`] with the CLI closed after `idle_secs` idle.
    pub(crate) fn start_idle(label: &str, idle_secs: u64) -> World {
        World::start_with(label, idle_secs, Vec::new())
    }

    /// With more `tandem serve` flags.
    pub(crate) fn start_with(label: &str, idle_secs: u64, args: Vec<String>) -> World {
        let bin = require(claude_bin(), "the claude CLI");
        let mock = MockAnthropic::start();
        let dir = Arc::new(TempDir::new(label));
        let home = dir.path().join("home");
        let config = claude_config(dir.path(), &bin, &mock, &home, idle_secs);
        World {
            server: ConfiguredServer::start_with(dir, config, args),
            mock,
            home,
        }
    }

    /// The running server.
    pub(crate) fn server(&self) -> &Server {
        self.server.server()
    }

    /// Kills the server (SIGKILL) and starts it again on the same data.
    pub(crate) fn restart(&mut self) {
        self.server.restart();
    }

    /// Creates a Claude session in `mode` and returns its id.
    pub(crate) async fn session(&self, ws: &mut WsClient, mode: &str) -> String {
        let reply = ws
            .ok(
                json!({"type": "session.create", "vendor": "claude", "title": "claude test",
                       "permissionMode": mode}),
            )
            .await;
        match reply["session"]["id"].as_str() {
            Some(id) => id.to_string(),
            None => panic!("no session id in {reply}"),
        }
    }

    /// Pids in the CLI's process registry whose process is alive (ours included).
    pub(crate) fn registry_pids(&self) -> Vec<u32> {
        let dir = self.home.join(".claude").join("sessions");
        let mut pids: Vec<u32> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| std::fs::read(e.path()).ok())
                    .filter_map(|b| serde_json::from_slice::<Value>(&b).ok())
                    .filter_map(|v| v["pid"].as_u64().map(|p| p as u32))
                    .filter(|pid| is_alive(*pid))
                    .collect()
            })
            .unwrap();
        pids.sort_unstable();
        pids
    }

    /// Writes a registry file as an outside Claude Code process would.
    pub(crate) fn write_registry(&self, name: &str, body: &str) {
        let dir = self.home.join(".claude").join("sessions");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join(name), body).unwrap_or_else(|e| panic!("{e}"));
    }

    /// `GET /sessions/running`'s sessions.
    pub(crate) async fn running(&self) -> Vec<Value> {
        let (status, body) = self.server().get("/api/v1/sessions/running").await;
        assert_eq!(status, 200, "{body}");
        body["sessions"].as_array().cloned().unwrap()
    }

    /// Waits until REST lists the session as idle: a client can see a turn's
    /// `turn_completed` a moment before the session's listed status changes.
    pub(crate) async fn idle(&self, id: &str) {
        eventually("the session to be listed idle", || async {
            (self.info(id).await["status"] == "idle").then_some(())
        })
        .await;
    }

    /// The session as REST lists it.
    pub(crate) async fn info(&self, id: &str) -> Value {
        let (status, body) = self.server().get(&format!("/api/v1/sessions/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

/// A server whose `claude` is the shell script `script`, and a session on it.
pub(crate) async fn fake_claude(script: &str) -> (Server, WsClient, String) {
    let dir = Arc::new(TempDir::new("claude-fake"));
    let bin = dir.path().join("fake-claude");
    std::fs::write(&bin, script).unwrap_or_else(|e| panic!("{e}"));
    let chmod = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&bin)
        .status();
    assert!(chmod.is_ok_and(|s| s.success()));
    let config = dir.path().join("tandem.toml");
    std::fs::write(
        &config,
        format!("[vendors.claude]\nbin = {:?}\n", bin.display().to_string()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let server = Server::start_in(dir.clone(), ServerOptions::with_config(&config));
    let mut ws = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "claude"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    (server, ws, id)
}
