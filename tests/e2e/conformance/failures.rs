//! Faults: the agent's process killed (or dying) mid-turn, and malformed output
//! survived.

use serde_json::json;
use tandem_tests::events::{end, status, texts};

use super::conformance;
use super::vendors::acp::{all_text, turn, FRAME_WAIT};
use super::vendors::{claude, Rig, Vendor};

/// The agent's process dies mid-turn: the turn fails saying so, and the next turn
/// works in a new process (resuming the conversation where the vendor can).
async fn killed_mid_turn(v: Vendor) {
    let rig = Rig::start(v, "conf-killed");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let events = turn(&mut ws, &id, &v.say("first turn")).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let mut killed = Vec::new();
    if v == Vendor::FakeAcp {
        // The fake agent dies by itself, after a line on stderr, with exit code 3.
        ws.chat(&id, "die").await;
    } else {
        ws.chat(&id, &v.slow()).await;
        ws.recv_until_within(FRAME_WAIT, |e| {
            e["kind"] == "text_delta" && e["sessionId"] == json!(id)
        })
        .await;
        killed = rig.agent_pids().await;
        if matches!(v, Vendor::Codex | Vendor::Claude) {
            assert_eq!(killed.len(), 1, "one agent process: {killed:?}");
        }
        // An ACP agent may run its CLI as a child in the same directory: all go.
        for pid in &killed {
            let done = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            assert!(done.is_ok_and(|s| s.success()));
        }
    }
    let events = super::vendors::acp::turn_end(&mut ws, &id).await;
    let done = end(&events);
    assert_eq!(done["status"], "failed", "{events:?}");
    let error = done["error"].as_str().unwrap_or_default().to_string();
    match v {
        Vendor::Codex => assert!(error.contains("app-server exited"), "{error}"),
        Vendor::Claude => assert!(
            error.contains("exited") && error.contains("signal"),
            "{error}"
        ),
        Vendor::FakeAcp => {
            assert!(error.contains("Fake ACP exited during the turn"), "{error}");
            assert!(error.contains("exit code 3"), "{error}");
            assert!(error.contains("dying on purpose"), "{error}");
        }
        _ => assert!(error.contains("exited"), "{error}"),
    }

    let events = turn(&mut ws, &id, &v.say("after the crash")).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(all_text(&events).contains("after the crash"), "{events:?}");
    match v {
        Vendor::Codex => {
            // The new app-server resumed the thread.
            let request = rig.request_with("after the crash");
            assert!(request.contains("first turn"), "resumed: {request}");
        }
        Vendor::FakeAcp => assert!(
            // The lost session is said, not hidden.
            texts(&events, "info")
                .iter()
                .any(|t| t.contains("could not reopen its session")),
            "{events:?}"
        ),
        _ => {}
    }
    if !killed.is_empty() {
        let now = rig.agent_pids().await;
        assert!(
            !now.is_empty() && now.iter().all(|p| !killed.contains(p)),
            "{killed:?} then {now:?}"
        );
    }
}
conformance!(killed_mid_turn: codex, claude, codex_acp, claude_acp, fake_acp);

/// A line the agent writes that is not its protocol is logged and skipped: the turn
/// completes with what came around it, and the next one works.
async fn malformed_output_survived(v: Vendor) {
    let (rig, server, mut ws, id) = match v {
        Vendor::Claude => {
            // A stand-in `claude` that writes one malformed line among valid ones.
            let (server, ws, id) = claude::fake_claude(
                r#"#!/bin/sh
read line
echo 'this is not json {'
echo '{"type":"system","subtype":"init","session_id":"fake-session"}'
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"survived"}]},"parent_tool_use_id":null}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"fake-session"}'
cat > /dev/null
"#,
            )
            .await;
            (None, Some(server), ws, id)
        }
        _ => {
            let rig = Rig::start_with(v, "conf-garbage", &[("FAKE_ACP_INIT", "garbage")]);
            let mut ws = rig.server().ws().await;
            let id = rig.session(v, &mut ws, "default").await;
            (Some(rig), None, ws, id)
        }
    };
    let prompt = if v == Vendor::FakeAcp {
        "garbage"
    } else {
        "anything"
    };
    let events = turn(&mut ws, &id, prompt).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(all_text(&events), "survived");
    match (rig, server) {
        (Some(_), _) => {
            let events = turn(&mut ws, &id, "say still here").await;
            assert_eq!(all_text(&events), "still here ");
        }
        (None, Some(server)) => {
            let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
            assert_eq!(info["vendorSessionId"], "fake-session");
        }
        (None, None) => unreachable!(),
    }
}
conformance!(malformed_output_survived: claude, fake_acp);
