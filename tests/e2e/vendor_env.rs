//! A vendor CLI inherits the environment `tandem serve` starts in, minus tandem's own
//! `TANDEM_*` variables: with no config file, the pinned Claude Code and Codex CLIs
//! find their key and model server in the server's environment and finish a turn, and
//! the running child's environment (read from `/proc/PID/environ`) holds no tandem
//! token.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::mock_anthropic::MockAnthropic;
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::vendor_clis::{claude_bin, codex_bin, require};
use tandem_tests::{Server, ServerOptions, TempDir, WsClient};

/// A value no tandem code makes: if it shows up in a child, the whole server
/// environment was passed through unfiltered.
const ENV_TOKEN: &str = "tdm_exported_in_the_shell_0123456789";

/// The server's environment for these tests: `vendor` on top of tandem variables that
/// must not reach the child.
fn server_env(vendor: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![
        ("TANDEM_TOKEN".into(), ENV_TOKEN.into()),
        ("TANDEM_URL".into(), "http://127.0.0.1:1".into()),
    ];
    env.extend(vendor.iter().cloned());
    env
}

/// Pids of the live direct children of `parent` (from `/proc/*/stat`).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`; comm may hold spaces, so split after `)`.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                == Some(parent)
        })
        .collect()
}

/// A process's environment.
fn environ(pid: u32) -> BTreeMap<String, String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    raw.split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The environment of the server's child whose executable is `bin`.
fn vendor_child_env(server: &Server, bin: &Path) -> BTreeMap<String, String> {
    let wanted = bin.canonicalize().unwrap_or_else(|_| bin.to_path_buf());
    let child = children_of(server.pid())
        .into_iter()
        .find(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == wanted));
    match child {
        Some(pid) => environ(pid),
        None => panic!(
            "no child of the server runs {} (children: {:?})",
            wanted.display(),
            children_of(server.pid())
        ),
    }
}

/// A confined vendor process gets a private `HOME` (`tandem confine`) whose entries
/// link to the allowed ones of the real `HOME`: true when `got` is such a home and
/// links into `real`.
fn confined_home_links_to(got: Option<&String>, real: &str) -> bool {
    let Some(got) = got.filter(|g| g.contains("tandem-agent-")) else {
        return false;
    };
    std::fs::read_dir(got).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|target| target.starts_with(real)))
    })
}

/// Checks what the child got: what the test exported, and nothing of tandem's.
fn assert_clean(env: &BTreeMap<String, String>, expected: &[(String, String)], server: &Server) {
    for (key, value) in expected {
        if key == "HOME" && confined_home_links_to(env.get(key), value) {
            continue;
        }
        assert_eq!(
            env.get(key),
            Some(value),
            "{key} was not inherited by the vendor process"
        );
    }
    let own: Vec<&String> = env.keys().filter(|k| k.starts_with("TANDEM_")).collect();
    assert!(own.is_empty(), "tandem variables reached the CLI: {own:?}");
    let mut secrets = vec![ENV_TOKEN.to_string()];
    secrets.extend(server.token.clone());
    for (key, value) in env {
        for secret in &secrets {
            assert!(
                !value.contains(secret.as_str()),
                "{key} holds a tandem token"
            );
        }
    }
}

/// Creates a session of `vendor`, runs one turn of `text` and returns its events.
async fn one_turn(ws: &mut WsClient, vendor: &str, text: &str) -> (String, Vec<Value>) {
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": vendor, "title": "env test"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    assert!(!id.is_empty(), "no session id in {reply}");
    ws.subscribe(&id, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": text}))
        .await;
    let events = ws.events_until_turn_end(&id).await;
    (id, events)
}

fn final_status(events: &[Value]) -> Value {
    events.last().map(|e| e["status"].clone()).unwrap()
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn claude_finds_key_and_base_url_in_the_server_environment() {
    let bin = require(claude_bin(), "the claude CLI");
    let mock = MockAnthropic::start();
    let dir = Arc::new(TempDir::new("env-claude"));
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    // ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY and no background traffic.
    let mut exported = mock.cli_env();
    exported.push(("HOME".into(), home.display().to_string()));
    let mut env = server_env(&exported);
    env.push(("TANDEM_CLAUDE_BIN".into(), bin.display().to_string()));
    env.push(("TANDEM_CODEX_BIN".into(), "/nonexistent/codex".into()));
    let server = Server::start_in_env(
        dir,
        ServerOptions {
            token_auth: true,
            ..ServerOptions::default()
        },
        &env,
    );
    let mut ws = server.ws().await;
    let (_, events) = one_turn(&mut ws, "claude", "say hello from the environment").await;
    assert_eq!(final_status(&events), "completed", "{events:?}");
    // The process is kept between turns, so it is still there to look at.
    assert_clean(&vendor_child_env(&server, &bin), &exported, &server);
    ws.close().await;
    let _ = server.terminate();
}

#[actix_rt::test]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn codex_finds_its_home_and_key_in_the_server_environment() {
    let bin = require(codex_bin(), "the pinned codex CLI");
    let mock = MockOpenAi::start();
    let dir = Arc::new(TempDir::new("env-codex"));
    let codex_home = dir.path().join("codex-home");
    let home = dir.path().join("home");
    for d in [&codex_home, &home] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    // Codex's own config (in the CODEX_HOME the user exported) names the provider and
    // the variable its key is read from; tandem has no config file.
    let codex_config = format!(
        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n[features]\nplugins = false\n\n\
         [model_providers.mock]\nname = \"Mock\"\nbase_url = {}\nwire_api = \"responses\"\n\
         env_key = \"MOCK_PROVIDER_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
        json!(mock.base_url())
    );
    std::fs::write(codex_home.join("config.toml"), codex_config).unwrap_or_else(|e| panic!("{e}"));
    let exported: Vec<(String, String)> = vec![
        ("CODEX_HOME".into(), codex_home.display().to_string()),
        ("HOME".into(), home.display().to_string()),
        ("MOCK_PROVIDER_KEY".into(), "mock-key".into()),
    ];
    let mut env = server_env(&exported);
    env.push(("TANDEM_CODEX_BIN".into(), bin.display().to_string()));
    env.push(("TANDEM_CLAUDE_BIN".into(), "/nonexistent/claude".into()));
    let server = Server::start_in_env(
        dir,
        ServerOptions {
            token_auth: true,
            ..ServerOptions::default()
        },
        &env,
    );
    let mut ws = server.ws().await;
    let (_, events) = one_turn(&mut ws, "codex", "say hello from the environment").await;
    assert_eq!(final_status(&events), "completed", "{events:?}");
    let text: String = events
        .iter()
        .filter(|e| e["kind"] == "text_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(text, "hello from the environment", "{events:?}");
    assert!(!mock.requests().is_empty(), "Codex never reached the mock");
    // The app-server is kept for the owner's next turn.
    assert_clean(&vendor_child_env(&server, &bin), &exported, &server);
    ws.close().await;
    let _ = server.terminate();
}

/// A worktree session's Claude Code process gets its port as `TANDEM_PORT` (the only
/// `TANDEM_` variable a vendor process gets), so a dev server it starts can use it.
#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
async fn a_worktree_sessions_claude_gets_its_port() {
    let bin = require(claude_bin(), "the claude CLI");
    let mock = MockAnthropic::start();
    let dir = Arc::new(TempDir::new("env-port"));
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let repo = dir.path().join("proj");
    std::fs::create_dir_all(&repo).unwrap_or_else(|e| panic!("{e}"));
    crate::workspaces::git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap_or_else(|e| panic!("{e}"));
    crate::workspaces::git(&repo, &["add", "."]);
    crate::workspaces::git(&repo, &["commit", "-q", "-m", "first"]);
    let mut exported = mock.cli_env();
    exported.push(("HOME".into(), home.display().to_string()));
    let mut env = server_env(&exported);
    env.push(("TANDEM_CLAUDE_BIN".into(), bin.display().to_string()));
    env.push(("TANDEM_CODEX_BIN".into(), "/nonexistent/codex".into()));
    let server = Server::start_in_env(dir, ServerOptions::default(), &env);
    let mut ws = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "claude", "cwd": repo, "workspace": "worktree"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    let port = reply["session"]["workspace"]["port"].as_u64().unwrap();
    ws.subscribe(&id, 0).await;
    ws.chat(&id, "say hello").await;
    let events = ws.events_until_turn_end(&id).await;
    assert_eq!(final_status(&events), "completed", "{events:?}");
    let child = vendor_child_env(&server, &bin);
    assert_eq!(child.get("TANDEM_PORT"), Some(&port.to_string()));
    assert!(
        child
            .keys()
            .all(|k| k == "TANDEM_PORT" || !k.starts_with("TANDEM_")),
        "{child:?}"
    );
    ws.close().await;
    let _ = server.terminate();
}
