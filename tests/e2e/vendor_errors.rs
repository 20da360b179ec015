//! Clear errors at the first turn, with the real pinned CLIs: no credentials, an API
//! nobody answers at, a missing provider key, an unsupported CLI version. Each turn
//! ends `failed` with an error that names the vendor, the cause and the fix;
//! `GET /api/v1/vendors` and `tandem doctor` report the same without calling a model.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_tests::mock_anthropic::MockAnthropic;
use tandem_tests::server::server_binary;
use tandem_tests::vendor_clis::{claude_bin, codex_bin, require};
use tandem_tests::{eventually_within, Server, ServerOptions, TempDir, WsClient};

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    listener.local_addr().map(|a| a.port()).unwrap_or(1)
}

fn owned(env: &[(&str, String)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect()
}

/// Starts a server with `env` only added to the test's own environment.
fn server(label: &str, env: &[(&str, String)]) -> Server {
    Server::start_in_env(
        Arc::new(TempDir::new(label)),
        ServerOptions::default(),
        &owned(env),
    )
}

/// Runs one turn in a new session of `vendor`; asserts that it failed and returns its
/// error.
async fn failed_first_turn(server: &Server, vendor: &str) -> String {
    let mut ws: WsClient = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": vendor}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&id, 0).await;
    let started = Instant::now();
    ws.chat(&id, "say hi").await;
    let events = ws.events_until_turn_end(&id).await;
    eprintln!("{vendor}: the turn ended after {:?}", started.elapsed());
    ws.close().await;
    let done = events.last().cloned().unwrap();
    assert_eq!(done["status"], "failed", "{done}");
    done["error"].as_str().unwrap().to_string()
}

/// Waits (bounded) until `GET /vendors` has checked `vendor`, and returns its entry.
async fn checked_vendor(server: &Server, vendor: &str) -> Value {
    eventually_within(
        &format!("{vendor} to be checked"),
        Duration::from_secs(30),
        async || {
            let (status, body) = server.get("/api/v1/vendors").await;
            assert_eq!(status, 200, "{body}");
            let entry = body["vendors"]
                .as_array()
                .and_then(|list| list.iter().find(|v| v["id"] == vendor).cloned())
                .unwrap();
            (entry["status"] != "unknown").then_some(entry)
        },
    )
    .await
}

/// `tandem doctor` with exactly `env` and a PATH that holds no vendor CLI (the
/// binaries are named by `TANDEM_*_BIN`): exit code and stdout.
fn doctor(env: &[(&str, String)]) -> (i32, String) {
    let out = std::process::Command::new(server_binary())
        .arg("doctor")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .output()
        .unwrap_or_else(|e| panic!("tandem doctor: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn claude_without_credentials_says_how_to_log_in() {
    let bin = require(claude_bin(), "the claude CLI");
    let dir = TempDir::new("err-claude-login-home");
    let env = [
        ("TANDEM_CLAUDE_BIN", bin.display().to_string()),
        ("TANDEM_CODEX_BIN", "/nonexistent/codex".to_string()),
        ("HOME", dir.path().display().to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
    ];
    let server = server("err-claude-login", &env);
    let error = failed_first_turn(&server, "claude").await;
    assert!(
        error.starts_with(
            "Claude Code is not logged in: run `claude` and /login, or set ANTHROPIC_API_KEY in the environment tandem starts in"
        ),
        "{error}"
    );
    let entry = checked_vendor(&server, "claude").await;
    assert_eq!(entry["status"], "notLoggedIn", "{entry}");
    assert!(
        entry["version"]
            .as_str()
            .is_some_and(|v| v.contains("Claude Code")),
        "{entry}"
    );
    assert!(
        entry["problem"]
            .as_str()
            .is_some_and(|p| p.contains("ANTHROPIC_API_KEY")),
        "{entry}"
    );
    let (code, report) = doctor(&env);
    assert_eq!(code, 1, "{report}");
    assert!(
        report.contains("Claude Code (claude): notLoggedIn"),
        "{report}"
    );
    assert!(report.contains("fix:"), "{report}");
    // With a key in the environment, doctor is content (and calls no model).
    let mock = MockAnthropic::start();
    // Codex is then neither found nor named: not counted against the result.
    let mut with_key: Vec<(&str, String)> = env
        .iter()
        .filter(|(k, _)| *k != "TANDEM_CODEX_BIN")
        .cloned()
        .collect();
    with_key.extend(
        mock.cli_env()
            .into_iter()
            .filter(|(k, _)| k == "ANTHROPIC_API_KEY")
            .map(|(_, v)| ("ANTHROPIC_API_KEY", v)),
    );
    let (code, report) = doctor(&with_key);
    assert_eq!(code, 0, "{report}");
    assert!(report.contains("Claude Code (claude): ok"), "{report}");
    assert!(report.contains("login:     logged in"), "{report}");
    assert!(mock.requests().is_empty(), "doctor called the model");
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn claude_with_nothing_listening_fails_in_bounded_time() {
    let bin = require(claude_bin(), "the claude CLI");
    let dir = TempDir::new("err-claude-home");
    let env = [
        ("TANDEM_CLAUDE_BIN", bin.display().to_string()),
        ("TANDEM_CODEX_BIN", "/nonexistent/codex".to_string()),
        ("HOME", dir.path().display().to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
        ("ANTHROPIC_API_KEY", "mock-key".to_string()),
        (
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", closed_port()),
        ),
        ("TANDEM_CLAUDE_UNREACHABLE_MS", "3000".to_string()),
    ];
    let server = server("err-claude-unreachable", &env);
    let error = failed_first_turn(&server, "claude").await;
    assert!(
        error.starts_with("Claude Code cannot reach its model API: check the network, the proxy (HTTPS_PROXY) and the API base URL (ANTHROPIC_BASE_URL)"),
        "{error}"
    );
    assert!(error.contains("could not be reached for 3 s"), "{error}");
}

/// A CODEX_HOME whose config names a provider at `base_url` with its key in
/// `MOCK_PROVIDER_KEY`.
fn codex_home(dir: &Path, base_url: &str) -> PathBuf {
    let home = dir.join("codex-home");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let config = format!(
        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n[features]\nplugins = false\n\n\
         [model_providers.mock]\nname = \"Mock\"\nbase_url = {}\nwire_api = \"responses\"\n\
         env_key = \"MOCK_PROVIDER_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
        json!(base_url)
    );
    std::fs::write(home.join("config.toml"), config).unwrap_or_else(|e| panic!("{e}"));
    home
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn codex_without_its_provider_key_says_which_variable() {
    let bin = require(codex_bin(), "the pinned codex CLI");
    let dir = TempDir::new("err-codex-key");
    let home = codex_home(
        dir.path(),
        &format!("http://127.0.0.1:{}/v1", closed_port()),
    );
    let env = [
        ("TANDEM_CODEX_BIN", bin.display().to_string()),
        ("TANDEM_CLAUDE_BIN", "/nonexistent/claude".to_string()),
        ("CODEX_HOME", home.display().to_string()),
        ("HOME", dir.path().display().to_string()),
    ];
    let server = server("err-codex-key", &env);
    let error = failed_first_turn(&server, "codex").await;
    assert!(
        error.starts_with(
            "Codex has no API key: set the variable it names in the environment tandem starts in"
        ),
        "{error}"
    );
    assert!(error.contains("MOCK_PROVIDER_KEY"), "{error}");
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn codex_with_nothing_listening_fails_in_bounded_time() {
    let bin = require(codex_bin(), "the pinned codex CLI");
    let dir = TempDir::new("err-codex-unreachable");
    let home = codex_home(
        dir.path(),
        &format!("http://127.0.0.1:{}/v1", closed_port()),
    );
    let env = [
        ("TANDEM_CODEX_BIN", bin.display().to_string()),
        ("TANDEM_CLAUDE_BIN", "/nonexistent/claude".to_string()),
        ("CODEX_HOME", home.display().to_string()),
        ("HOME", dir.path().display().to_string()),
        ("MOCK_PROVIDER_KEY", "mock-key".to_string()),
        ("TANDEM_CODEX_UNREACHABLE_MS", "2000".to_string()),
    ];
    let server = server("err-codex-unreachable", &env);
    let error = failed_first_turn(&server, "codex").await;
    assert!(
        error.starts_with("Codex cannot reach its model API"),
        "{error}"
    );
}

#[actix_rt::test]
async fn an_unsupported_cli_version_fails_the_first_turn() {
    let dir = TempDir::new("err-version");
    // A stand-in `codex` from long ago: it only answers `--version`.
    let script = dir.path().join("old-codex");
    std::fs::write(
        &script,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'codex-cli 0.9.0'; exit 0; fi\nexec sleep 300\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    let env = [
        ("TANDEM_CODEX_BIN", script.display().to_string()),
        ("TANDEM_CLAUDE_BIN", "/nonexistent/claude".to_string()),
        ("HOME", dir.path().display().to_string()),
    ];
    let server = server("err-version", &env);
    let entry = checked_vendor(&server, "codex").await;
    assert_eq!(entry["status"], "unsupportedVersion", "{entry}");
    assert_eq!(entry["version"], "codex-cli 0.9.0", "{entry}");
    let error = failed_first_turn(&server, "codex").await;
    assert!(
        error.starts_with("Codex 0.9.0 is not a supported version (>= 0.171.0, < 1.0.0)"),
        "{error}"
    );
    let (code, report) = doctor(&env);
    assert_eq!(code, 1, "{report}");
    assert!(
        report.contains("Codex (codex): unsupportedVersion"),
        "{report}"
    );
}
