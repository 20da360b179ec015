//! Turns: text streamed as deltas, a tool call and its result, an interrupt then a
//! normal turn, usage reported on the turn's end.

use serde_json::json;
use tandem_tests::events::{end, kinds, last_of, of_kind, status, texts};

use super::conformance;
use super::vendors::acp::{abort, all_text, turn, turn_end, FRAME_WAIT};
use super::vendors::{Rig, Vendor};

/// A text answer streams as several `text_delta`s, then is the turn's message; the
/// vendor's own session id is recorded.
async fn text_deltas(v: Vendor) {
    let rig = Rig::start(v, "conf-text");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let said = "hello from the mock model";
    let events = turn(&mut ws, &id, &v.say(said)).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let deltas = texts(&events, "text_delta");
    assert!(deltas.len() > 1, "streamed in pieces: {:?}", kinds(&events));
    assert!(deltas.concat().contains(said), "{deltas:?}");
    match v {
        // The fake agent streams word by word, each with its space.
        Vendor::FakeAcp => {
            assert_eq!(deltas.len(), 5, "{deltas:?}");
            assert_eq!(all_text(&events), format!("{said} "));
        }
        Vendor::CodexAcp | Vendor::ClaudeAcp => assert!(all_text(&events).contains(said)),
        _ => {
            assert_eq!(deltas.concat(), said);
            assert_eq!(texts(&events, "assistant_message"), [said]);
        }
    }
    let info = rig.info(&id).await;
    match v {
        Vendor::Scripted => {}
        Vendor::FakeAcp => {
            assert!(
                info["vendorSessionId"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("fake-")),
                "{info}"
            );
            assert_eq!(rig.agent_pids().await.len(), 1, "one process, kept");
        }
        _ => assert!(
            info["vendorSessionId"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "the vendor's session id is recorded: {info}"
        ),
    }
    if matches!(v, Vendor::CodexAcp | Vendor::ClaudeAcp) {
        // Real agents take tandem's tools over HTTP MCP.
        let caps = rig.capabilities(v).await;
        assert!(caps.iter().any(|c| c == "tools"), "{caps:?}");
    }
}
conformance!(text_deltas: scripted, codex, claude, codex_acp, claude_acp, fake_acp);

/// A tool the agent runs is a `tool_call` then its `tool_result` (same `callId`), and
/// the model hears the result.
async fn tool_call_and_result(v: Vendor) {
    let rig = Rig::start(v, "conf-tool");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "bypassPermissions").await;
    let (prompt, name, output) = match v {
        Vendor::Scripted => ("/write made.txt shell-says-hi".to_string(), "write", "ok"),
        Vendor::FakeAcp => ("late".to_string(), "", "late result"),
        Vendor::Codex => (v.shell("echo shell-says-hi"), "shell", "shell-says-hi"),
        Vendor::Claude => (v.shell("echo shell-says-hi"), "Bash", "shell-says-hi"),
        Vendor::CodexAcp | Vendor::ClaudeAcp => {
            (v.shell("echo shell-says-hi"), "execute", "shell-says-hi")
        }
    };
    let events = turn(&mut ws, &id, &prompt).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let calls = of_kind(&events, "tool_call");
    assert!(!calls.is_empty(), "{:?}", kinds(&events));
    let call = calls[0];
    if !name.is_empty() {
        assert_eq!(call["name"], name, "{call}");
    }
    let result = of_kind(&events, "tool_result")
        .into_iter()
        .find(|r| r["callId"] == call["callId"])
        .unwrap_or_else(|| panic!("no result of {call} in {events:?}"));
    assert!(result["output"].to_string().contains(output), "{result}");
    assert_eq!(result["isError"], false, "{result}");
    let order = kinds(&events);
    assert!(
        order.iter().position(|k| k == "tool_call") < order.iter().position(|k| k == "tool_result"),
        "{order:?}"
    );
    match v {
        Vendor::Scripted => {
            let written = std::fs::read_to_string(rig.work().join("made.txt")).unwrap();
            assert_eq!(written, "shell-says-hi\n");
        }
        Vendor::FakeAcp => {}
        _ => assert!(
            call["input"].to_string().contains("echo shell-says-hi"),
            "{call}"
        ),
    }
    match v {
        // The model saw the output: the mocks answer a tool's result with it.
        Vendor::Claude => assert_eq!(
            texts(&events, "assistant_message"),
            ["result: shell-says-hi"]
        ),
        Vendor::Codex => {
            let text = last_of(&events, "assistant_message")["text"].to_string();
            assert!(
                text.contains("tool output:") && text.contains("shell-says-hi"),
                "{text}"
            );
            // A failing command: its exit code, stdout and stderr, as an error.
            let events = turn(
                &mut ws,
                &id,
                &v.shell("echo out-$((6*7)); echo err-line >&2; exit 3"),
            )
            .await;
            let result = last_of(&events, "tool_result");
            assert_eq!(result["isError"], true, "exit 3 is an error: {result}");
            assert_eq!(result["output"]["exitCode"], 3, "{result}");
            let output = result["output"]["output"].as_str().unwrap();
            assert!(
                output.contains("out-42") && output.contains("err-line"),
                "{result}"
            );
            let text = last_of(&events, "assistant_message")["text"].to_string();
            assert!(
                text.contains("tool output:") && text.contains("out-42"),
                "{text}"
            );
        }
        _ => {}
    }
}
conformance!(tool_call_and_result: scripted, codex, claude, codex_acp, claude_acp, fake_acp);

/// An interrupt mid-stream ends the turn `interrupted` (no error), its partial text
/// kept; the next turn is a normal one, in the same agent process.
async fn interrupt_then_a_normal_turn(v: Vendor) {
    let rig = Rig::start(v, "conf-interrupt");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    ws.chat(&id, &v.slow()).await;
    ws.recv_until_within(FRAME_WAIT, |e| {
        e["kind"] == "text_delta" && e["sessionId"] == json!(id)
    })
    .await;
    let pids = rig.agent_pids().await;
    abort(&mut ws, &id).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "interrupted", "{events:?}");
    assert!(end(&events).get("error").is_none(), "{events:?}");
    let stored = rig.server().all_events(&id).await;
    let partial = texts(&stored, "assistant_message").join("\n");
    match v {
        Vendor::Scripted => assert_eq!(partial, "begun"),
        Vendor::Claude => assert_eq!(partial, "holding ", "partial text stays"),
        Vendor::Codex => {
            assert!(partial.starts_with("w0"), "{partial}");
            assert!(!partial.contains("w399"), "{partial}");
        }
        _ => {}
    }
    let events = turn(&mut ws, &id, &v.say("after the stop")).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(all_text(&events).contains("after the stop"), "{events:?}");
    if matches!(v, Vendor::Claude | Vendor::FakeAcp) {
        assert_eq!(
            rig.agent_pids().await,
            pids,
            "the same process took the next turn"
        );
    }
}
conformance!(interrupt_then_a_normal_turn: scripted, codex, claude, codex_acp, claude_acp, fake_acp);

/// A turn's `turn_completed` carries its usage (tokens, cost where the vendor says
/// it), each turn its own.
async fn usage_reported(v: Vendor) {
    let rig = Rig::start_with(
        v,
        "conf-usage",
        &[
            ("FAKE_ACP_STATE", ".fake-acp-state"),
            ("FAKE_ACP_SESSIONS", "resume-close"),
        ],
    );
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let prompt = match v {
        Vendor::Scripted => {
            "counted\n/usage {\"inputTokens\": 12, \"cachedInputTokens\": 0, \"outputTokens\": 7}"
                .to_string()
        }
        _ => v.say("hello from the mock model"),
    };
    let events = turn(&mut ws, &id, &prompt).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let usage = end(&events)["usage"].clone();
    match v {
        Vendor::Scripted | Vendor::Codex => {
            assert_eq!(usage["inputTokens"], 12, "{usage}");
            assert_eq!(usage["outputTokens"], 7, "{usage}");
        }
        Vendor::Claude => {
            assert!(usage["outputTokens"].is_u64(), "{usage}");
            let first = usage["costUsd"].as_f64().unwrap_or(0.0);
            assert!(first > 0.0, "cost kept: {usage}");
            // Claude Code reports the process's cost so far; a turn keeps its own.
            let again = turn(&mut ws, &id, &prompt).await;
            let cost = end(&again)["usage"]["costUsd"].as_f64();
            assert!(
                cost.is_some_and(|c| (c - first).abs() < 1e-9),
                "{first} then {cost:?}"
            );
        }
        Vendor::FakeAcp => {
            assert_eq!(usage["context"]["used"], 10, "{usage}");
            // A new session's cost starts at nothing: the first turn's is all of it.
            assert_eq!(usage["costUsd"], 0.25, "{usage}");
        }
        Vendor::CodexAcp | Vendor::ClaudeAcp => {
            assert!(usage["outputTokens"].is_u64(), "{usage}");
        }
    }
    let (code, total) = rig
        .server()
        .get(&format!("/api/v1/sessions/{id}/usage"))
        .await;
    assert_eq!(code, 200, "{total}");
    assert!(
        total["total"]["turns"].as_u64().is_some_and(|t| t >= 1),
        "{total}"
    );
}
conformance!(usage_reported: scripted, codex, claude, codex_acp, fake_acp);
