//! The built-in scripted vendor is never picked by itself when a real CLI is installed:
//! with Codex and Claude Code both configured (pinned CLIs, mock model servers), a
//! Codex Driver that asks for a Worker without naming a vendor gets Claude Code, and a
//! Worker proposal recommends it; asked for by name, `scripted` is still there.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::mock_anthropic::MockAnthropic;
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::vendor_clis::{claude_bin, codex_bin, require};
use tandem_tests::{Server, ServerOptions, TempDir, WsClient};

/// A TOML string.
fn toml(s: &str) -> String {
    json!(s).to_string()
}

/// `[vendors.codex]` and `[vendors.claude]`, each pointed at its mock.
fn write_config(
    dir: &Path,
    codex: &Path,
    claude: &Path,
    openai: &MockOpenAi,
    anthropic: &MockAnthropic,
) -> String {
    let codex_home = dir.join("codex-home");
    let home = dir.join("home");
    for d in [&codex_home, &home] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    let args: Vec<String> = openai.codex_args().iter().map(|a| toml(a)).collect();
    let mut claude_env: Vec<String> = anthropic
        .cli_env()
        .iter()
        .map(|(k, v)| format!("{k} = {}", toml(v)))
        .collect();
    claude_env.push(format!("HOME = {}", toml(&home.display().to_string())));
    let text = format!(
        "[vendors.codex]\nbin = {}\nargs = [{}]\nenv = {{ CODEX_HOME = {}, HOME = {} }}\n\n\
         [vendors.claude]\nbin = {}\nmodels = [\"claude-pinned-test-model\"]\nenv = {{ {} }}\n",
        toml(&codex.display().to_string()),
        args.join(", "),
        toml(&codex_home.display().to_string()),
        toml(&home.display().to_string()),
        toml(&claude.display().to_string()),
        claude_env.join(", "),
    );
    let path = dir.join("tandem.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path.display().to_string()
}

/// Calls an agent tool as `session`; returns its result and whether it is an error.
async fn tool(ws: &mut WsClient, session: &str, name: &str, arguments: Value) -> (Value, bool) {
    let reply = ws
        .ok(json!({"type": "tool.call", "sessionId": session, "name": name, "arguments": arguments}))
        .await;
    (reply["result"].clone(), reply["isError"] == true)
}

async fn codex_session(ws: &mut WsClient) -> String {
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "codex", "title": "driver"}))
        .await;
    reply["session"]["id"].as_str().unwrap().to_string()
}

#[actix_rt::test]
#[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
#[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
async fn a_codex_driver_gets_claude_not_the_scripted_agent() {
    let codex = require(codex_bin(), "the pinned codex CLI");
    let claude = require(claude_bin(), "the claude CLI");
    let openai = MockOpenAi::start();
    let anthropic = MockAnthropic::start();
    let dir = Arc::new(TempDir::new("worker-choice"));
    let config = write_config(dir.path(), &codex, &claude, &openai, &anthropic);
    let server = Server::start_in(
        dir,
        ServerOptions {
            args: vec!["--config".into(), config],
            ..ServerOptions::default()
        },
    );
    let mut ws = server.ws().await;

    // Models come from the CLIs: Codex's model/list with its default marked and first,
    // Claude Code's aliases plus the model the config names.
    let mut vendors = Value::Null;
    for _ in 0..600 {
        let (_, body) = server.get("/api/v1/vendors").await;
        let checked = |id: &str| {
            body["vendors"]
                .as_array()
                .and_then(|l| l.iter().find(|v| v["id"] == id))
                .is_some_and(|v| v["status"] != "unknown")
        };
        if checked("codex") && checked("claude") {
            vendors = body;
            break;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let entry = |id: &str| {
        vendors["vendors"]
            .as_array()
            .and_then(|l| l.iter().find(|v| v["id"] == id).cloned())
            .unwrap()
    };
    let codex_entry = entry("codex");
    assert_eq!(codex_entry["status"], "ok", "{codex_entry}");
    let default = codex_entry["defaultModel"].as_str().unwrap();
    assert!(!default.is_empty(), "{codex_entry}");
    assert_eq!(codex_entry["models"][0], default, "{codex_entry}");
    assert!(
        !codex_entry["models"].as_array().is_some_and(|m| m
            .iter()
            .any(|m| m == "gpt-5-codex" || m == "claude-pinned-test-model")),
        "the built-in placeholders were replaced: {codex_entry}"
    );
    let claude_entry = entry("claude");
    let claude_models: Vec<&str> = claude_entry["models"]
        .as_array()
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap();
    assert_eq!(
        claude_models,
        ["sonnet", "opus", "haiku", "claude-pinned-test-model"],
        "{claude_entry}"
    );
    assert!(claude_entry.get("defaultModel").is_none(), "{claude_entry}");

    // send_to_partner without workerVendor: the Worker is Claude Code, and it answers.
    let driver = codex_session(&mut ws).await;
    let (out, err) = tool(
        &mut ws,
        &driver,
        "send_to_partner",
        json!({"message": "say worker here", "wait": true}),
    )
    .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "complete", "{out}");
    assert_eq!(out["response"], "worker here", "{out}");
    let worker = out["partnerId"].as_str().unwrap().to_string();
    let (_, info) = server.get(&format!("/api/v1/sessions/{worker}")).await;
    assert_eq!(info["vendor"], "claude", "{info}");

    // A proposal without a recommendation recommends Claude Code too.
    let proposer = codex_session(&mut ws).await;
    let (out, err) = tool(
        &mut ws,
        &proposer,
        "propose_worker",
        json!({"summary": "s", "plan": "p", "message": "say later"}),
    )
    .await;
    assert!(!err, "{out}");
    let history = server.all_events(&proposer).await;
    let proposal = history
        .iter()
        .find(|e| e["kind"] == "worker_proposal")
        .cloned()
        .unwrap();
    assert_eq!(proposal["recommended"]["vendor"], "claude", "{proposal}");

    // Named, the scripted vendor is still a valid Worker.
    let named = codex_session(&mut ws).await;
    let (out, err) = tool(
        &mut ws,
        &named,
        "send_to_partner",
        json!({"message": "echo me", "workerVendor": "scripted", "wait": true}),
    )
    .await;
    assert!(!err, "{out}");
    let worker = out["partnerId"].as_str().unwrap().to_string();
    let (_, info) = server.get(&format!("/api/v1/sessions/{worker}")).await;
    assert_eq!(info["vendor"], "scripted", "{info}");
    ws.close().await;
    let _ = server.terminate();
}
