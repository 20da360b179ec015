//! Codex's setup, shared by the conformance suite and `codex.rs`: a server whose
//! Codex vendor is the pinned binary pointed at a mock Responses API
//! ([`MockOpenAi`]), its sessions, and the app-server processes it starts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::procs::processes_with;
use tandem_tests::vendor_clis::{codex_bin, require};
use tandem_tests::{eventually, Server, ServerOptions, TempDir, WsClient};

/// A server whose Codex vendor is the pinned binary pointed at a mock model.
pub(crate) struct Codex {
    pub(crate) server: Server,
    pub(crate) mock: MockOpenAi,
    /// Codex's `CODEX_HOME`, private to the test.
    pub(crate) home: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) env: Vec<(String, String)>,
}

impl std::ops::Deref for Codex {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

/// Writes the config file and starts the server.
pub(crate) fn start(env: &[(&str, &str)]) -> Codex {
    start_tuned(env, "")
}

/// [`start`] with `more` appended to the `[vendors.codex]` section.
pub(crate) fn start_tuned(env: &[(&str, &str)], more: &str) -> Codex {
    start_with(env, more, &[])
}

/// [`start_tuned`] with these `tandem serve` flags too.
pub(crate) fn start_with(env: &[(&str, &str)], more: &str, flags: &[&str]) -> Codex {
    let bin = require(codex_bin(), "the pinned codex CLI");
    let mock = MockOpenAi::start();
    let dir = Arc::new(TempDir::new("codex"));
    let home = dir.path().join("codex-home");
    if let Err(e) = std::fs::create_dir_all(&home) {
        panic!("cannot create {}: {e}", home.display());
    }
    let config = write_config(dir.path(), &bin, &mock.codex_args(), &home);
    if !more.is_empty() {
        let text = std::fs::read_to_string(&config)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", config.display()));
        if let Err(e) = std::fs::write(&config, format!("{text}{more}\n")) {
            panic!("cannot write {}: {e}", config.display());
        }
    }
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let mut options = ServerOptions::with_config(&config);
    options.args.extend(flags.iter().map(|f| f.to_string()));
    let server = Server::start_in_env(dir, options, &env);
    Codex {
        server,
        mock,
        home,
        config,
        env,
    }
}

/// `[vendors.codex]` with `bin`, `args`, a private `CODEX_HOME` and a private `HOME`
/// (the machine's own profile scripts must not run in the tests' shells).
pub(crate) fn write_config(dir: &Path, bin: &Path, args: &[String], home: &Path) -> PathBuf {
    let args: Vec<String> = args.iter().map(|a| json!(a).to_string()).collect();
    let user_home = dir.join("home");
    if let Err(e) = std::fs::create_dir_all(&user_home) {
        panic!("cannot create {}: {e}", user_home.display());
    }
    let text = format!(
        "[vendors.codex]\nbin = {}\nargs = [{}]\nenv = {{ CODEX_HOME = {}, HOME = {} }}\n",
        json!(bin.display().to_string()),
        args.join(", "),
        json!(home.display().to_string()),
        json!(user_home.display().to_string()),
    );
    let path = dir.join("tandem.toml");
    if let Err(e) = std::fs::write(&path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
    path
}

impl Codex {
    /// Stops the server (SIGKILL) and starts it again on the same data and config.
    pub(crate) fn restart(self) -> Codex {
        let Codex {
            server,
            mock,
            home,
            config,
            env,
        } = self;
        let dir = server.kill();
        let server = Server::start_in_env(dir, ServerOptions::with_config(&config), &env);
        Codex {
            server,
            mock,
            home,
            config,
            env,
        }
    }
}

/// The input of the last request the model got, as JSON text.
pub(crate) fn last_input(codex: &Codex) -> String {
    let last = codex.mock.requests().last().cloned().unwrap();
    last["input"].to_string()
}

/// Creates a Codex session (with `extra` fields) and subscribes to it.
pub(crate) async fn codex_session(ws: &mut WsClient, extra: Value) -> String {
    let mut body = json!({"type": "session.create", "vendor": "codex", "title": "codex"});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let reply = ws.ok(body).await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    assert!(!id.is_empty(), "{reply}");
    ws.subscribe(&id, 0).await;
    id
}

/// Ids of live processes whose environment holds `CODEX_HOME=home` (the app-server
/// and everything it started).
pub(crate) fn processes_with_home(home: &Path) -> Vec<u32> {
    processes_with(&format!("CODEX_HOME={}", home.display()))
}

/// Live `app-server` processes of this test's Codex home.
pub(crate) fn app_servers(home: &Path) -> Vec<u32> {
    processes_with_home(home)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| c.split(|b| *b == 0).any(|arg| arg == b"app-server"))
                .unwrap_or(false)
        })
        .collect()
}

/// The one app-server of this test, once the short-lived one that lists models at
/// start-up is gone.
pub(crate) async fn the_app_server(home: &Path) -> u32 {
    eventually("exactly one app-server runs", async || {
        match app_servers(home)[..] {
            [pid] => Some(pid),
            _ => None,
        }
    })
    .await
}
