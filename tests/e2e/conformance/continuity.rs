//! A conversation's continuity: resumed after a server restart, and rewound by an
//! edit & resend (or the refusal of one).

use serde_json::{json, Value};
use tandem_tests::events::{of_kind, status, texts};

use super::conformance;
use super::vendors::acp::{all_text, turn, turn_end};
use super::vendors::{Rig, Vendor};
use super::{assert_not_listed, Behaviour};

/// A server killed and started again: the session's next turn continues the same
/// vendor conversation (same vendor session id, the model sees the turn before),
/// without a note that it started anew, and its events follow the old ones.
async fn resume_after_a_server_restart(v: Vendor) {
    // Relative: under the session's working directory, which a confined agent may use.
    let rig = Rig::start_with(v, "conf-resume", &[("FAKE_ACP_STATE", ".fake-acp-state")]);
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let events = turn(&mut ws, &id, &v.say("remember-the-walrus-42")).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let before = rig.info(&id).await["vendorSessionId"].clone();
    drop(ws);
    let rig = rig.restart();
    let mut ws = rig.server().ws().await;
    let seen = rig.info(&id).await["lastSeq"].as_u64().unwrap_or_default();
    ws.subscribe(&id, seen).await;
    let prompt = match v {
        Vendor::FakeAcp => "history".to_string(),
        _ => v.say("second-turn-after-restart"),
    };
    let events = turn(&mut ws, &id, &prompt).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(
        events.first().and_then(|e| e["seq"].as_u64()),
        Some(seen + 1),
        "{events:?}"
    );
    assert!(
        texts(&events, "info").is_empty(),
        "resumed, not restarted: {events:?}"
    );
    assert_eq!(rig.info(&id).await["vendorSessionId"], before);
    match v {
        Vendor::Scripted => assert_eq!(all_text(&events), "second-turn-after-restart"),
        Vendor::FakeAcp => {
            // `session/load`: the agent has both prompts, and its replay of the old
            // one is not shown again.
            assert_eq!(all_text(&events), "prompts: 2", "{events:?}");
            assert!(
                !events
                    .iter()
                    .any(|e| e["text"].as_str().is_some_and(|t| t.contains("old answer"))),
                "the replay is not shown again: {events:?}"
            );
        }
        _ => {
            assert!(before.is_string(), "{before}");
            let request = rig.request_with("second-turn-after-restart");
            assert!(
                request.contains("remember-the-walrus-42"),
                "the model saw the turn before the restart"
            );
        }
    }
}
conformance!(
    resume_after_a_server_restart: scripted,
    codex,
    claude,
    codex_acp,
    claude_acp,
    fake_acp
);

/// The `seq` of the user message `text` in the session's history.
async fn user_seq(rig: &Rig, id: &str, text: &str) -> u64 {
    rig.server()
        .all_events(id)
        .await
        .iter()
        .find(|e| e["kind"] == "user_message" && e["text"] == text)
        .and_then(|e| e["seq"].as_u64())
        .unwrap_or_else(|| panic!("no user message {text:?}"))
}

/// `chat.edit-send` at an earlier message: the turns from it on are superseded
/// (`history_rewound` first), and the agent's conversation holds the turns before it
/// and the new message, none of the superseded ones; the next turn continues from
/// there. A vendor that cannot rewind does not list `rewind` and refuses, over the
/// WebSocket and REST, recording nothing.
async fn edit_and_resend(v: Vendor) {
    let rig = Rig::start(v, "conf-rewind");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let words = ["heron", "walrus", "ferret"];
    for word in words {
        let events = turn(&mut ws, &id, &v.say(&format!("remember the word {word}"))).await;
        assert_eq!(status(&events), "completed", "{events:?}");
    }
    let anchor = user_seq(&rig, &id, &v.say("remember the word walrus")).await;
    let edit = json!({"type": "chat.edit-send", "sessionId": id, "anchorSeq": anchor,
        "content": v.say("remember the word otter")});
    if let Some(code) = assert_not_listed(&rig, v, Behaviour::EditAndResend).await {
        let before = rig.server().all_events(&id).await;
        let refused = ws.request(edit).await;
        assert_eq!(refused["code"], code, "{refused}");
        let (status, body) = rig
            .server()
            .post(
                &format!("/api/v1/sessions/{id}/edit-send"),
                &json!({"anchorSeq": anchor, "content": v.say("remember the word otter")}),
            )
            .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], code, "{body}");
        let after = rig.server().all_events(&id).await;
        assert_eq!(after.len(), before.len(), "nothing recorded: {after:?}");
        return;
    }
    let caps = rig.capabilities(v).await;
    assert!(caps.iter().any(|c| c == "rewind"), "{caps:?}");
    let before = rig.info(&id).await["vendorSessionId"].clone();
    let reply = ws.ok(edit).await;
    assert_eq!(reply["superseded"]["turns"], 2, "{reply}");
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(events[0]["kind"], "history_rewound", "{events:?}");
    assert_eq!(status(&events), "completed", "{events:?}");
    let remembered = |said: &str| {
        assert!(said.contains("remember the word heron"), "{said}");
        assert!(said.contains("otter"), "{said}");
        assert!(!said.contains("walrus"), "{said}");
        assert!(!said.contains("ferret"), "{said}");
    };
    // The next turn continues from the edit.
    let next = match v {
        Vendor::Scripted => "/history".to_string(),
        _ => v.say("what was the word"),
    };
    let events = turn(&mut ws, &id, &next).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    if v == Vendor::Scripted {
        remembered(&all_text(&events));
    } else {
        remembered(&rig.request_with(&v.say("remember the word otter")));
        remembered(&rig.request_with(&next));
        // The vendor conversation was forked: the session records the fork's id,
        // the old one is left as it was.
        let after: Value = rig.info(&id).await["vendorSessionId"].clone();
        assert!(
            after.is_string() && after != before,
            "{before} then {after}"
        );
    }
    let stored = rig.server().all_events(&id).await;
    assert_eq!(of_kind(&stored, "history_rewound").len(), 1);
}
conformance!(edit_and_resend: scripted, codex, claude, codex_acp, claude_acp, fake_acp);
