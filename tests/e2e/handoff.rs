//! Handing a conversation over to a new session.

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions};

async fn turn(ws: &mut tandem_tests::WsClient, sid: &str, text: &str) {
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": text}))
        .await;
    ws.events_until_turn_end(sid).await;
}

#[actix_rt::test]
async fn handoff_continues_with_a_bounded_snapshot_and_a_pageable_source() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let src = ws.create_session().await;
    ws.subscribe(&src, 0).await;
    turn(&mut ws, &src, "first question").await;
    turn(&mut ws, &src, "second question\n/tool read_partner {}").await;
    let reply = ws
        .ok(json!({"type": "session.handoff", "sessionId": src, "targetVendor": "scripted", "effort": "max"}))
        .await;
    assert_eq!(reply["sourceSessionId"], src.as_str());
    assert_eq!(reply["targetVendor"], "scripted");
    let dst = reply["targetSessionId"].as_str().unwrap().to_string();
    let (_, info) = server.get(&format!("/api/v1/sessions/{dst}")).await;
    assert_eq!(info["title"], "test · Scripted");
    assert_eq!(info["handoffFrom"], src.as_str());
    assert_eq!(info["effort"], "high");

    let source_events = server.all_events(&src).await;
    let created = source_events
        .iter()
        .find(|e| e["kind"] == "handoff_created")
        .cloned()
        .unwrap();
    assert_eq!(created["targetSessionId"], dst.as_str());
    assert_eq!(created["targetTitle"], "test · Scripted");

    ws.subscribe(&dst, 0).await;
    let events = ws.events_until_turn_end(&dst).await;
    let context = events
        .iter()
        .find(|e| e["kind"] == "handoff_context")
        .cloned()
        .unwrap();
    assert_eq!(context["sourceSessionId"], src.as_str());
    assert_eq!(context["sourceVendor"], "scripted");
    assert_eq!(context["request"], "second question\n/tool read_partner {}");
    let prompt = events
        .iter()
        .find(|e| e["kind"] == "user_message")
        .cloned()
        .unwrap();
    assert_eq!(prompt["internal"], true);
    let text = prompt["text"].as_str().unwrap();
    assert!(
        text.contains("Latest request (verbatim):\nsecond question\n/tool read_partner {}"),
        "{text}"
    );
    assert!(text.contains("not a git repository"), "{text}");
    assert!(text.contains("User: first question"));
    assert!(
        !text.contains("unknown tool") && !text.contains("isError"),
        "no tool output in the snapshot"
    );
    // The scripted target echoed the server's message instead of running it.
    assert_eq!(
        events.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );

    // The target pages its source; a second handoff pages both levels.
    let page = ws
        .ok(json!({"type": "tool.call", "sessionId": dst, "name": "read_handoff_source", "arguments": {"limit": 2}}))
        .await;
    let result = &page["result"];
    assert_eq!(result["total"], 4, "{result}");
    assert_eq!(result["hasMore"], true);
    let roles: Vec<Value> = result["entries"]
        .as_array()
        .map(|a| a.iter().map(|e| e["role"].clone()).collect())
        .unwrap();
    assert_eq!(roles, vec![json!("user"), json!("assistant")]);
    assert_eq!(
        result["entries"][0]["text"],
        "second question\n/tool read_partner {}"
    );
    let older = ws
        .ok(json!({"type": "tool.call", "sessionId": dst, "name": "read_handoff_source", "arguments": {"offset": 2, "limit": 100}}))
        .await;
    assert_eq!(older["result"]["entries"][0]["text"], "first question");
    assert_eq!(older["result"]["hasMore"], false);
    let second = ws
        .ok(json!({"type": "session.handoff", "sessionId": dst, "targetVendor": "scripted"}))
        .await;
    let dst2 = second["targetSessionId"].as_str().unwrap().to_string();
    let deep = ws
        .ok(json!({"type": "tool.call", "sessionId": dst2, "name": "read_handoff_source", "arguments": {"limit": 100}}))
        .await;
    let sessions: Vec<Value> = deep["result"]["entries"]
        .as_array()
        .map(|a| a.iter().map(|e| e["sessionId"].clone()).collect())
        .unwrap();
    assert_eq!(sessions.first(), Some(&json!(src)), "oldest level first");
    assert_eq!(sessions.last(), Some(&json!(dst)));
    // Only handoff targets get the tool.
    let not_target = ws
        .ok(json!({"type": "tool.call", "sessionId": src, "name": "read_handoff_source"}))
        .await;
    assert_eq!(not_target["isError"], true);
}

#[actix_rt::test]
async fn handoff_sees_the_git_working_tree() {
    let server = Server::start();
    let repo = server.dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap_or_else(|e| panic!("{e}"));
    let init = std::process::Command::new("git")
        .args(["init", "-q", "-b", "trunk"])
        .current_dir(&repo)
        .status();
    assert!(init.is_ok_and(|s| s.success()), "git init failed");
    std::fs::write(repo.join("new.txt"), "x").unwrap_or_else(|e| panic!("{e}"));
    let mut ws = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "cwd": repo.to_string_lossy()}))
        .await;
    let src = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&src, 0).await;
    turn(&mut ws, &src, "hello").await;
    let reply = ws
        .ok(json!({"type": "session.handoff", "sessionId": src, "targetVendor": "scripted"}))
        .await;
    let dst = reply["targetSessionId"].as_str().unwrap().to_string();
    ws.subscribe(&dst, 0).await;
    let events = ws.events_until_turn_end(&dst).await;
    let text = events
        .iter()
        .find(|e| e["kind"] == "user_message")
        .and_then(|e| e["text"].as_str().map(String::from))
        .unwrap();
    assert!(
        text.contains("## No commits yet on trunk") && text.contains("?? new.txt"),
        "{text}"
    );
}

#[actix_rt::test]
async fn handoff_refusals() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    let empty = ws.create_session().await;
    ws.subscribe(&empty, 0).await;
    let cases = [
        (
            json!({"type": "session.handoff", "sessionId": empty, "targetVendor": "scripted"}),
            "CONFLICT",
        ),
        (
            json!({"type": "session.handoff", "sessionId": empty}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.handoff", "sessionId": empty, "targetVendor": "codex"}),
            "VENDOR_NOT_INSTALLED",
        ),
        (
            json!({"type": "session.handoff", "sessionId": "ses_nope", "targetVendor": "scripted"}),
            "SESSION_NOT_FOUND",
        ),
        (
            json!({"type": "session.handoff", "targetVendor": "scripted"}),
            "SESSION_ID_REQUIRED",
        ),
    ];
    for (body, code) in cases {
        let answer = ws.request(body.clone()).await;
        assert_eq!(answer["code"], code, "{body}: {answer}");
    }
    // Running, paired, someone else's.
    ws.chat(&empty, "/hold never").await;
    let busy = ws
        .request(json!({"type": "session.handoff", "sessionId": empty, "targetVendor": "scripted"}))
        .await;
    assert_eq!(busy["code"], "RUN_IN_PROGRESS");
    let paired = ws.create_session().await;
    ws.subscribe(&paired, 0).await;
    turn(&mut ws, &paired, "hi").await;
    ws.ok(json!({"type": "pair.create", "driverId": paired, "worker": {"vendor": "scripted"}}))
        .await;
    let refused = ws
        .request(
            json!({"type": "session.handoff", "sessionId": paired, "targetVendor": "scripted"}),
        )
        .await;
    assert_eq!(refused["code"], "CONFLICT", "{refused}");
    let shared = ws
        .ok(json!({"type": "session.create", "visibility": "shared"}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&shared, 0).await;
    turn(&mut ws, &shared, "mine").await;
    let bob = server.add_user("bob");
    let mut b = bob.ws().await;
    let denied = b
        .request(
            json!({"type": "session.handoff", "sessionId": shared, "targetVendor": "scripted"}),
        )
        .await;
    assert_eq!(denied["code"], "ACCESS_DENIED");
}
