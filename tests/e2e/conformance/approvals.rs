//! Approvals: a request allowed then one denied, always allowed for the session, an
//! interrupt withdrawing a pending request, bypass mode answering by itself, a plan
//! approved into accept-edits.

use std::path::Path;

use serde_json::{json, Value};
use tandem_tests::events::{of_kind, status, texts};
use tandem_tests::WsClient;

use super::conformance;
use super::vendors::acp::{abort, all_text, next_permission, turn, turn_end};
use super::vendors::{Rig, Vendor};

/// Answers `request` with `fields` (`allow`, `remember`, `message`,
/// `permissionMode`) and checks the reply.
async fn answer_with(ws: &mut WsClient, request: &Value, fields: Value) {
    let mut body = json!({"type": "chat.permission-response", "requestId": request["requestId"]});
    if let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) {
        body.extend(fields.clone());
    }
    let reply = ws.request_with_id(body).await;
    assert_eq!(reply["kind"], "reply", "{reply}");
}

/// Whether the turn of [`Vendor::guarded`] did what it asked: the file exists for a
/// real vendor; the scripted and the fake agent say so.
fn ran(v: Vendor, file: &Path, events: &[Value]) -> bool {
    match v {
        Vendor::Scripted => all_text(events).contains("allowed shell"),
        Vendor::FakeAcp => all_text(events).starts_with("answer: yes-"),
        _ => file.exists(),
    }
}

/// The `permission_request` of a guarded prompt: its tool and input say what it asks.
async fn asked(v: Vendor, ws: &mut WsClient, id: &str, file: &Path) -> Value {
    ws.chat(id, &v.guarded(file)).await;
    let request = next_permission(ws).await;
    assert_eq!(request["sessionId"], json!(id), "{request}");
    if let Some(tool) = v.guarded_tool() {
        assert_eq!(request["toolName"], tool, "{request}");
    }
    let input = request["input"].to_string();
    assert!(input.contains("touch"), "{request}");
    if let Some(name) = file
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|_| v != Vendor::FakeAcp)
    {
        // The request names what it would touch (the fake agent asks in its own
        // words).
        assert!(input.contains(name), "{request}");
    }
    request
}

/// Allowed, the guarded action runs; denied (with a message), it does not, and the
/// agent hears why. Both requests are resolved in the history.
async fn allowed_and_denied(v: Vendor) {
    let rig = Rig::start(v, "conf-approval");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let allowed = rig.work().join("allowed.txt");
    let request = asked(v, &mut ws, &id, &allowed).await;
    let offered = request["choices"].as_array().cloned().unwrap_or_default();
    if v == Vendor::FakeAcp {
        // The agent's options, in its words, as the answers that pick them.
        assert_eq!(
            request["choices"],
            json!([{"label": "Sure, why not", "allow": true},
                   {"label": "Go ahead always", "allow": true, "remember": "session"},
                   {"label": "Please don't", "allow": false}]),
            "{request}"
        );
    } else if v.is_acp() {
        assert!(
            offered
                .iter()
                .any(|c| c["allow"] == true && c.get("remember").is_none()),
            "{request}"
        );
        assert!(offered.iter().any(|c| c["allow"] == false), "{request}");
    }
    answer_with(&mut ws, &request, json!({"allow": true})).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        ran(v, &allowed, &events),
        "the allowed action ran: {events:?}"
    );
    let first = request["requestId"].clone();
    match v {
        Vendor::Codex => assert_eq!(of_kind(&events, "tool_result")[0]["isError"], false),
        Vendor::Claude => {
            let result = of_kind(&events, "tool_result");
            assert_eq!(result[0]["isError"], false, "{events:?}");
            // The call came before the request: it is in the stored turn.
            let stored = rig.server().all_events(&id).await;
            assert_eq!(
                of_kind(&stored, "tool_call")[0]["name"],
                "Bash",
                "{stored:?}"
            );
        }
        Vendor::FakeAcp => assert_eq!(all_text(&events), "answer: yes-once"),
        _ => {}
    }

    let denied = rig.work().join("denied.txt");
    let request = asked(v, &mut ws, &id, &denied).await;
    answer_with(
        &mut ws,
        &request,
        json!({"allow": false, "message": "not today"}),
    )
    .await;
    let events = turn_end(&mut ws, &id).await;
    if matches!(v, Vendor::CodexAcp | Vendor::ClaudeAcp) {
        // codex-acp stops its turn on a denial (`abort`); Claude Code tells the model.
        assert!(
            matches!(status(&events).as_str(), Some("completed" | "interrupted")),
            "{events:?}"
        );
    } else {
        assert_eq!(status(&events), "completed", "{events:?}");
    }
    assert!(
        !ran(v, &denied, &events),
        "the denied action did not run: {events:?}"
    );
    match v {
        Vendor::Scripted => assert_eq!(all_text(&events), "denied shell: not today"),
        Vendor::Codex => {
            let result = of_kind(&events, "tool_result")[0];
            assert_eq!(result["isError"], true, "{result}");
            assert_eq!(result["output"]["status"], "declined", "{result}");
        }
        Vendor::Claude => {
            let result = of_kind(&events, "tool_result")[0];
            assert_eq!(result["isError"], true, "{events:?}");
            assert!(
                result["output"].to_string().contains("not today"),
                "{result}"
            );
            assert_eq!(texts(&events, "assistant_message"), ["result: not today"]);
        }
        Vendor::FakeAcp => {
            assert_eq!(all_text(&events), "answer: nope", "{events:?}");
            assert_eq!(of_kind(&events, "tool_result")[0]["isError"], true);
        }
        _ => {}
    }
    let stored = rig.server().all_events(&id).await;
    let resolved = of_kind(&stored, "permission_resolved");
    for asked in [&first, &request["requestId"]] {
        assert!(
            resolved.iter().any(|e| &e["requestId"] == asked),
            "{asked} resolved: {resolved:?}"
        );
    }
}
conformance!(allowed_and_denied: scripted, codex, claude, codex_acp, claude_acp, fake_acp);

/// Allowed once, the same action is asked about again; allowed "always" (for the
/// session), the rule is recorded and later actions of that tool run unasked.
async fn always_allowed(v: Vendor) {
    let rig = Rig::start(v, "conf-always");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let file = rig.work().join("again.txt");
    let request = asked(v, &mut ws, &id, &file).await;
    answer_with(&mut ws, &request, json!({"allow": true})).await;
    assert_eq!(status(&turn_end(&mut ws, &id).await), "completed");

    let request = asked(v, &mut ws, &id, &file).await;
    let always: Vec<&Value> = request["choices"]
        .as_array()
        .unwrap_or_else(|| panic!("no choices in {request}"))
        .iter()
        .filter(|c| c["remember"] == "session")
        .collect();
    assert_eq!(
        always.len(),
        1,
        "the always-allow is offered once: {request}"
    );
    assert_eq!(always[0]["allow"], true, "{request}");
    answer_with(
        &mut ws,
        &request,
        json!({"allow": true, "remember": "session"}),
    )
    .await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(ran(v, &file, &events), "{events:?}");
    if v == Vendor::FakeAcp {
        // The agent heard which of its options was picked.
        assert_eq!(all_text(&events), "answer: yes-forever", "{events:?}");
    }
    let stored = rig.server().all_events(&id).await;
    let rules = of_kind(&stored, "permission_remembered");
    if let Some(tool) = v
        .guarded_tool()
        .filter(|_| !v.is_acp() || v == Vendor::FakeAcp)
    {
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert_eq!(rules[0]["rule"]["toolName"], tool, "{rules:?}");
    }

    // The same action again, and (for a rule per tool) another one: nobody is asked.
    let _ = std::fs::remove_file(&file);
    let mut again = vec![file.clone()];
    if !matches!(v, Vendor::CodexAcp | Vendor::ClaudeAcp) {
        again.push(rig.work().join("second.txt"));
    }
    for file in again {
        let events = turn(&mut ws, &id, &v.guarded(&file)).await;
        assert_eq!(status(&events), "completed", "{events:?}");
        assert!(
            of_kind(&events, "permission_request").is_empty(),
            "{events:?}"
        );
        assert!(ran(v, &file, &events), "{events:?}");
    }
    // A client that subscribes now gets the rule with the session.
    if !matches!(v, Vendor::CodexAcp | Vendor::ClaudeAcp) {
        let mut late = rig.server().ws().await;
        late.subscribe(&id, 0).await;
        let subscribed = late.recv_until(|e| e["kind"] == "chat_subscribed").await;
        let rules = &subscribed.last().cloned().unwrap_or_default()["permissionRules"];
        assert_eq!(rules[0]["toolName"], v.guarded_tool().unwrap(), "{rules}");
    }
}
conformance!(always_allowed: scripted, codex, claude, codex_acp, claude_acp, fake_acp);

/// An interrupt while a request waits withdraws it (resolved in the history, a late
/// answer refused with `NO_SUCH_PERMISSION`), the action never runs, and the next
/// turn is a normal one.
async fn interrupt_withdraws_a_pending_request(v: Vendor) {
    let rig = Rig::start(v, "conf-withdrawn");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    let never = rig.work().join("never.txt");
    let request = asked(v, &mut ws, &id, &never).await;
    // chat_subscribed lists it, with its choices, for a client that joins now.
    let mut late = rig.server().ws().await;
    late.subscribe(&id, 0).await;
    let subscribed = late.recv_until(|e| e["kind"] == "chat_subscribed").await;
    let pending = &subscribed.last().cloned().unwrap_or_default()["pendingPermissions"];
    assert_eq!(pending[0]["requestId"], request["requestId"], "{pending}");
    if v == Vendor::FakeAcp {
        assert_eq!(
            pending[0]["choices"].as_array().map(Vec::len),
            Some(3),
            "{pending}"
        );
    }
    abort(&mut ws, &id).await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "interrupted", "{events:?}");
    let stored = rig.server().all_events(&id).await;
    assert!(
        of_kind(&stored, "permission_resolved")
            .iter()
            .any(|e| e["requestId"] == request["requestId"]),
        "the pending request is withdrawn: {stored:?}"
    );
    let refused = ws
        .request(json!({"type": "chat.permission-response",
            "requestId": request["requestId"], "allow": true}))
        .await;
    assert_eq!(refused["code"], "NO_SUCH_PERMISSION", "{refused}");
    assert!(!never.exists());
    let events = turn(&mut ws, &id, &v.say("still fine")).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(all_text(&events).contains("still fine"), "{events:?}");
}
conformance!(
    interrupt_withdraws_a_pending_request: scripted,
    codex,
    claude,
    codex_acp,
    claude_acp,
    fake_acp
);

/// In bypass mode nobody is asked: the guarded action runs. A session switched to
/// it by `session.configure` bypasses from its next turn.
async fn bypass_answers_itself(v: Vendor) {
    let rig = Rig::start(v, "conf-bypass");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "bypassPermissions").await;
    let free = rig.work().join("free.txt");
    let events = turn(&mut ws, &id, &v.guarded(&free)).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        of_kind(&events, "permission_request").is_empty(),
        "{events:?}"
    );
    assert!(ran(v, &free, &events), "{events:?}");

    let other = rig.session(v, &mut ws, "default").await;
    ws.ok(json!({"type": "session.configure", "sessionId": other,
        "permissionMode": "bypassPermissions"}))
        .await;
    let later = rig.work().join("later.txt");
    let events = turn(&mut ws, &other, &v.guarded(&later)).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert!(
        of_kind(&events, "permission_request").is_empty(),
        "{events:?}"
    );
    assert!(ran(v, &later, &events), "{events:?}");
}
conformance!(bypass_answers_itself: scripted, codex, claude, claude_acp, fake_acp);

/// The agent asks to leave plan mode with its plan; a choice switches the session to
/// accept-edits, recorded as a `config_changed`.
async fn plan_approval(v: Vendor) {
    let rig = Rig::start(v, "conf-plan");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "plan").await;
    // The model writes its plan to the plan file, then asks to leave plan mode.
    ws.chat(&id, "plan 1. Write the file\ntool ExitPlanMode {}")
        .await;
    let request = next_permission(&mut ws).await;
    assert_eq!(request["toolName"], "ExitPlanMode", "{request}");
    assert_eq!(request["permissionKind"], "plan", "{request}");
    assert_eq!(request["input"]["plan"], "1. Write the file", "{request}");
    let accept = request["choices"]
        .as_array()
        .unwrap_or_else(|| panic!("no choices in {request}"))
        .iter()
        .find(|c| c["permissionMode"] == "acceptEdits")
        .cloned()
        .unwrap_or_else(|| panic!("no accept-edits choice in {request}"));
    assert_eq!(accept["allow"], true);
    answer_with(
        &mut ws,
        &request,
        json!({"allow": true, "permissionMode": "acceptEdits"}),
    )
    .await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    assert_eq!(rig.info(&id).await["permissionMode"], "acceptEdits");
    let stored = rig.server().all_events(&id).await;
    let changed = of_kind(&stored, "config_changed");
    assert_eq!(
        changed.last().map(|c| c["permissionMode"].clone()),
        Some(json!("acceptEdits")),
        "{stored:?}"
    );
}
conformance!(plan_approval: claude);
