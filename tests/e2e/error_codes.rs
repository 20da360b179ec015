//! Every refusal that reaches a client carries its own code: tool failures over
//! `tool.call` and MCP, pair, proposal, schedule and archive refusals.

use serde_json::{json, Value};
use tandem_tests::{Server, WsClient};

/// Calls `name` as `sid` over `tool.call`; the reply `{result, isError, code?}`.
async fn call(ws: &mut WsClient, sid: &str, name: &str, arguments: Value) -> Value {
    ws.ok(json!({"type": "tool.call", "sessionId": sid, "name": name, "arguments": arguments}))
        .await
}

/// Asserts a `tool.call` reply is a failure with `code` whose text contains `text`.
fn refused(reply: &Value, code: &str, text: &str) {
    assert_eq!(reply["isError"], true, "{reply}");
    assert_eq!(reply["code"], code, "{reply}");
    assert!(
        reply["result"].as_str().is_some_and(|m| m.contains(text)),
        "{reply}"
    );
}

#[actix_rt::test]
async fn tool_failures_carry_their_code() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let d = ws.create_session().await;

    let r = call(&mut ws, &d, "launch_rockets", json!({})).await;
    refused(&r, "UNKNOWN_TOOL", "unknown tool");
    let r = call(&mut ws, &d, "read_partner", json!({})).await;
    refused(&r, "TOOL_NOT_AVAILABLE", "needs a Worker");
    // The schema says additionalProperties: false, and so does the parser.
    let r = call(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "x", "wiat": false}),
    )
    .await;
    refused(&r, "INVALID_ARGUMENT", "unknown field `wiat`");
    let r = call(&mut ws, &d, "send_to_partner", json!({"message": "  "})).await;
    refused(&r, "INVALID_ARGUMENT", "message is required");
    let r = call(&mut ws, &d, "send_to_partner", json!({"message": 5})).await;
    refused(&r, "INVALID_ARGUMENT", "invalid type");
    let r = call(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "x", "workerVendor": "codex"}),
    )
    .await;
    refused(&r, "VENDOR_NOT_INSTALLED", "codex");
    let r = call(
        &mut ws,
        &d,
        "spawn_sessions",
        json!({"sessions": [{"title": "a", "prompt": "b", "colour": "red"}]}),
    )
    .await;
    refused(&r, "INVALID_ARGUMENT", "unknown field `colour`");

    // A detached delegation holds the Worker; a second one is a conflict.
    let r = call(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "/hold never", "wait": false}),
    )
    .await;
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["result"]["status"], "running", "{r}");
    assert_eq!(r["result"]["workerCreated"], true, "{r}");
    assert!(r.get("code").is_none(), "{r}");
    let w = r["result"]["partnerId"].as_str().unwrap().to_string();
    let r = call(&mut ws, &d, "send_to_partner", json!({"message": "more"})).await;
    refused(&r, "CONFLICT", "already holds a delegation");
    // The Worker is offered no tools.
    let r = call(&mut ws, &w, "send_to_partner", json!({"message": "loop"})).await;
    refused(&r, "TOOL_NOT_AVAILABLE", "Driver");
    // A Driver's Worker names are its own; one taken is refused.
    let again = ws
        .request(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerName": "scripted"}),
        )
        .await;
    assert_eq!(again["code"], "CONFLICT", "{again}");

    // MCP: still an isError result the model reads, with the code for programs.
    let (_, tok) = server
        .post(&format!("/api/v1/sessions/{w}/mcp-token"), &json!({}))
        .await;
    let token = tok["token"].as_str().unwrap().to_string();
    let mut resp = awc::Client::default()
        .post(format!("{}/mcp", server.base))
        .insert_header(("Authorization", format!("Bearer {token}")))
        .send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "close_partner", "arguments": {}}}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let body: Value = serde_json::from_slice(&resp.body().await.unwrap()).unwrap();
    let result = &body["result"];
    assert_eq!(result["isError"], true, "{body}");
    assert_eq!(
        result["structuredContent"]["error"]["code"], "TOOL_NOT_AVAILABLE",
        "{body}"
    );
    assert_eq!(
        result["structuredContent"]["error"]["message"], result["content"][0]["text"],
        "{body}"
    );
}

#[actix_rt::test]
async fn proposal_pair_schedule_and_archive_refusals_carry_their_code() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let d = ws.create_session().await;
    ws.subscribe(&d, 0).await;

    let args = json!({"summary": "s", "plan": "p", "message": "m"});
    let r = call(&mut ws, &d, "propose_worker", args.clone()).await;
    assert_eq!(r["result"]["status"], "posted", "{r}");
    let pid = r["result"]["proposalId"].as_str().unwrap().to_string();
    let r = call(&mut ws, &d, "propose_worker", args).await;
    refused(&r, "CONFLICT", "already open");
    let unknown = ws
        .request(json!({"type": "proposal.respond", "sessionId": d, "proposalId": "prop_nope", "accepted": true}))
        .await;
    assert_eq!(unknown["code"], "NO_SUCH_PROPOSAL", "{unknown}");
    let declined = ws
        .ok(json!({"type": "proposal.respond", "sessionId": d, "proposalId": pid, "accepted": false}))
        .await;
    assert_eq!(declined["status"], "declined", "{declined}");
    let twice = ws
        .request(json!({"type": "proposal.respond", "sessionId": d, "proposalId": pid, "accepted": false}))
        .await;
    assert_eq!(twice["code"], "CONFLICT", "{twice}");

    let nope = ws
        .request(json!({"type": "pair.close", "pairId": "pair_nope"}))
        .await;
    assert_eq!(nope["code"], "NO_SUCH_PAIR", "{nope}");
    let nope = ws
        .request(
            json!({"type": "session.schedule-cancel", "sessionId": d, "scheduleId": "sch_nope"}),
        )
        .await;
    assert_eq!(nope["code"], "NO_SUCH_SCHEDULE", "{nope}");

    // A paired session cannot be archived: 409 CONFLICT.
    let p = ws.create_session().await;
    ws.ok(json!({"type": "pair.create", "driverId": p, "worker": {"vendor": "scripted"}}))
        .await;
    let mut resp = awc::Client::default()
        .delete(format!("{}/api/v1/sessions/{p}", server.base))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let body: Value = serde_json::from_slice(&resp.body().await.unwrap()).unwrap();
    assert_eq!(resp.status().as_u16(), 409, "{body}");
    assert_eq!(body["error"]["code"], "CONFLICT", "{body}");

    // Twenty children per parent; the next call is LIMIT_EXCEEDED.
    let s = ws.create_session().await;
    let ten: Vec<Value> = (0..10)
        .map(|i| json!({"title": format!("c{i}"), "prompt": "hi"}))
        .collect();
    for _ in 0..2 {
        let r = call(&mut ws, &s, "spawn_sessions", json!({"sessions": ten})).await;
        assert_eq!(r["isError"], false, "{r}");
    }
    let r = call(
        &mut ws,
        &s,
        "spawn_sessions",
        json!({"sessions": [{"title": "one more", "prompt": "hi"}]}),
    )
    .await;
    refused(&r, "LIMIT_EXCEEDED", "at most 20");
    let r = call(&mut ws, &s, "spawn_sessions", json!({"sessions": []})).await;
    refused(&r, "INVALID_ARGUMENT", "1 to 10");
}
