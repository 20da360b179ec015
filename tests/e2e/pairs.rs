//! Driver/Worker pairs, end to end: scripted Drivers call the agent tools through the
//! same path real agents use (`/tool`), and over real HTTP MCP.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions, WsClient};

/// [`WsClient::scripted_tool`]: one turn calling `tool`; its `output` and `isError`.
async fn tool(ws: &mut WsClient, sid: &str, tool: &str, args: Value) -> (Value, bool) {
    ws.scripted_tool(sid, tool, args).await
}

/// A connected client subscribed to a fresh Driver session.
async fn driver(server: &Server) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    (ws, sid)
}

/// Internal user messages (pushed-back results) in a session's stored history.
pub(crate) async fn pushbacks(server: &Server, sid: &str) -> Vec<String> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "user_message" && e["internal"] == true)
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// The user message [`await_pushbacks`] queues into a Driver to settle it.
const SETTLE: &str = "(settle)";

/// Waits until `sid` has `n` pushed-back results, then settles: waits until no pair
/// of this Driver holds a delegation token (a token is cleared only once the Driver
/// has taken its result), then queues a message into the Driver and waits for its turn
/// to end. Anything pushed back before it was run or queued ahead of it, so an extra
/// push-back cannot arrive unseen. Returns the push-backs.
pub(crate) async fn await_pushbacks(server: &Server, sid: &str, n: usize) -> Vec<String> {
    eventually(&format!("{sid} to have {n} push-backs"), async || {
        (pushbacks(server, sid).await.len() >= n).then_some(())
    })
    .await;
    eventually(&format!("every delegation of {sid} to end"), async || {
        let (_, pairs) = server.get("/api/v1/pairs").await;
        let busy = pairs["pairs"].as_array().is_some_and(|ps| {
            ps.iter()
                .any(|p| p["driverId"] == sid && p.get("delegation").is_some())
        });
        (!busy).then_some(())
    })
    .await;
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    let mut ws = server.ws().await;
    ws.subscribe(sid, info["lastSeq"].as_u64().unwrap_or(0))
        .await;
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": SETTLE, "queue": true}))
        .await;
    ws.recv_until(|v| v["kind"] == "user_message" && v["sessionId"] == sid && v["text"] == SETTLE)
        .await;
    ws.events_until_turn_end(sid).await;
    pushbacks(server, sid).await
}

/// `turn_completed` events of a history, leaving out the turns [`await_pushbacks`]
/// added.
fn completed_turns(hist: &[Value]) -> usize {
    let settle: Vec<&Value> = hist
        .iter()
        .filter(|e| e["kind"] == "user_message" && e["text"] == SETTLE)
        .map(|e| &e["turnId"])
        .collect();
    hist.iter()
        .filter(|e| e["kind"] == "turn_completed" && !settle.contains(&&e["turnId"]))
        .count()
}

async fn worker_of(server: &Server, driver: &str) -> String {
    let (_, info) = server.get(&format!("/api/v1/sessions/{driver}")).await;
    let pair_id = info["pairId"].as_str().unwrap().to_string();
    let (_, pairs) = server.get("/api/v1/pairs").await;
    pairs["pairs"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["pairId"] == pair_id.as_str()))
        .and_then(|p| p["workerId"].as_str())
        .unwrap_or_else(|| panic!("no pair for {driver}: {pairs}"))
        .to_string()
}

#[actix_rt::test]
async fn wait_returns_the_workers_answer_and_creates_the_worker() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (out, err) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "first line\nsecond line"}),
    )
    .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "complete");
    assert_eq!(out["response"], "first line\n\nsecond line");
    assert_eq!(out["workerCreated"], true);
    let w = out["partnerId"].as_str().unwrap().to_string();
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(winfo["role"], "worker");
    assert_eq!(winfo["vendor"], "scripted", "only scripted is installed");
    assert_eq!(winfo["title"], "test · Worker");
    let (_, dinfo) = server.get(&format!("/api/v1/sessions/{d}")).await;
    assert_eq!(dinfo["role"], "driver");
    assert_eq!(dinfo["pairId"], winfo["pairId"]);
    // The delegation is visible in both histories; the Worker's turn names its Driver.
    let whist = server.all_events(&w).await;
    let user = whist
        .iter()
        .find(|e| e["kind"] == "user_message")
        .cloned()
        .unwrap();
    assert_eq!(user["delegatedBy"], d.as_str());
    for hist in [server.all_events(&d).await, whist] {
        let actives: Vec<Value> = hist
            .iter()
            .filter(|e| e["kind"] == "delegation")
            .map(|e| e["active"].clone())
            .collect();
        assert_eq!(actives, vec![json!(true), json!(false)]);
        assert!(hist.iter().any(|e| e["kind"] == "pair_created"));
    }
    // Follow-up goes to the same Worker, without creating another.
    let (out, _) = tool(&mut ws, &d, "send_to_partner", json!({"message": "again"})).await;
    assert_eq!(out["status"], "complete");
    assert!(out.get("workerCreated").is_none());
    assert_eq!(out["partnerId"], w.as_str());
    let (read, _) = tool(&mut ws, &d, "read_partner", json!({"lastTurns": 9})).await;
    assert_eq!(read["status"], "idle");
    assert_eq!(read["turns"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        read["turns"][1],
        json!({"user": "again", "delegated": true, "response": "again"})
    );
    // No push-back for results returned directly.
    assert!(await_pushbacks(&server, &d, 0).await.is_empty());
}

#[actix_rt::test]
async fn timeout_returns_running_then_exactly_one_pushback() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (out, _) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "early\n/hold late\nlate answer", "timeoutSeconds": 1}),
    )
    .await;
    // The Worker stands at the hold: the wait timed out, not the Worker's script.
    assert_eq!(out["status"], "running", "{out}");
    assert_eq!(out["response"], "early");
    server.release("late").await;
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("late answer") && got[0].contains("[Worker finished"),
        "{}",
        got[0]
    );
    let (_, metrics) = server.get_text("/metrics").await;
    assert!(metrics.contains("tandem_pushbacks_total 1"), "{metrics}");
}

#[actix_rt::test]
async fn detached_delegation_pushes_back_once() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (out, _) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "/hold detached\nbackground result", "wait": false}),
    )
    .await;
    assert_eq!(out["status"], "running");
    assert!(out["partnerId"].as_str().is_some());
    server.release("detached").await;
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].contains("background result"));
    // The push-back ran as a Driver turn of its own.
    let hist = server.all_events(&d).await;
    assert_eq!(completed_turns(&hist), 2);
}

#[actix_rt::test]
async fn worker_failure_is_an_error_result() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (out, _) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "trying\n/fail compiler exploded"}),
    )
    .await;
    assert_eq!(out["status"], "error");
    assert_eq!(out["error"], "compiler exploded");
    assert_eq!(out["response"], "trying");
}

#[actix_rt::test]
async fn interrupt_partner_gives_a_partial_pushback() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    // Nothing to interrupt before there is a Worker.
    let (out, err) = tool(&mut ws, &d, "interrupt_partner", json!({})).await;
    assert!(err);
    assert!(out.as_str().is_some_and(|m| m.contains("Worker")), "{out}");
    let (out, _) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "half done\n/hold never", "wait": false}),
    )
    .await;
    assert_eq!(out["status"], "running");
    server.wait_held("never").await;
    let (out, _) = tool(&mut ws, &d, "interrupt_partner", json!({})).await;
    assert_eq!(out["status"], "interrupting");
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("PARTIAL") && got[0].contains("half done"),
        "{}",
        got[0]
    );
    let (read, _) = tool(&mut ws, &d, "read_partner", json!({})).await;
    assert_eq!(read["status"], "interrupted");
    let (out, _) = tool(&mut ws, &d, "interrupt_partner", json!({})).await;
    assert_eq!(out["status"], "idle");
}

#[actix_rt::test]
async fn a_human_stopping_the_worker_ends_a_waiting_delegation_as_interrupted() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    // Create the pair first, then delegate with wait while a person stops the Worker.
    tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "warm up"}),
    )
    .await;
    let w = worker_of(&server, &d).await;
    ws.chat(&d, "/tool send_to_partner {\"message\": \"/hold never\"}")
        .await;
    let mut human = server.ws().await;
    human.subscribe(&w, 0).await;
    human
        .recv_until(|v| v["kind"] == "user_message" && v["text"] == "/hold never")
        .await;
    server.wait_held("never").await;
    human
        .ok(json!({"type": "chat.abort", "sessionId": w}))
        .await;
    let stopped = human.events_until_turn_end(&w).await;
    assert_eq!(
        stopped.last().map(|e| e["status"].clone()),
        Some(json!("interrupted"))
    );
    let events = ws.events_until_turn_end(&d).await;
    let result = events
        .iter()
        .find(|e| e["kind"] == "tool_result")
        .cloned()
        .unwrap();
    assert_eq!(result["output"]["status"], "interrupted", "{result}");
    // The waiting call got the outcome: nothing is pushed back.
    assert!(await_pushbacks(&server, &d, 0).await.is_empty());
    // A human may also message the Worker directly.
    human.chat(&w, "human here").await;
    let turn = human.events_until_turn_end(&w).await;
    assert_eq!(
        turn.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
}

#[actix_rt::test]
async fn close_partner_while_running_keeps_histories() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "working\n/hold never", "wait": false}),
    )
    .await;
    let w = worker_of(&server, &d).await;
    server.wait_held("never").await;
    let (out, _) = tool(&mut ws, &d, "close_partner", json!({})).await;
    assert_eq!(
        out,
        json!({"status": "closed", "partnerId": w, "workerName": "scripted", "interrupted": true, "historyPreserved": true})
    );
    let (_, pairs) = server.get("/api/v1/pairs").await;
    assert_eq!(pairs["pairs"], json!([]));
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert!(winfo.get("pairId").is_none());
    assert!(server
        .all_events(&w)
        .await
        .iter()
        .any(|e| e["kind"] == "pair_closed"));
    assert!(server
        .all_events(&w)
        .await
        .iter()
        .any(|e| e["text"] == "working"));
    // The cut-off delegation is reported once, as partial.
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("PARTIAL"));
    // Partner tools need a pair again; send_to_partner makes a new one.
    let (out, err) = tool(&mut ws, &d, "read_partner", json!({})).await;
    assert!(err, "{out}");
    let (out, _) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "new worker"}),
    )
    .await;
    assert_eq!(out["workerCreated"], true);
    assert_ne!(out["partnerId"], w.as_str());
}

#[actix_rt::test]
async fn refusals() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (out, err) = tool(&mut ws, &d, "send_to_partner", json!({"message": "  "})).await;
    assert!(
        err && out.as_str().is_some_and(|m| m.contains("message")),
        "{out}"
    );
    let (out, err) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "x", "wait": "yes"}),
    )
    .await;
    assert!(err, "{out}");
    tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "/hold never", "wait": false}),
    )
    .await;
    // A second delegation while the Worker holds one (it never ends here).
    let (out, err) = tool(&mut ws, &d, "send_to_partner", json!({"message": "more"})).await;
    assert!(
        err && out.as_str().is_some_and(|m| m.contains("already holds")),
        "{out}"
    );
    let w = worker_of(&server, &d).await;
    let (_, pairs) = server.get("/api/v1/pairs").await;
    assert_eq!(pairs["pairs"][0]["delegation"]["to"], w.as_str());
    // The Worker may not delegate, nor see the Driver's tools.
    let mut wws = server.ws().await;
    wws.subscribe(&w, 0).await;
    let refused = wws
        .ok(json!({"type": "tool.call", "sessionId": w, "name": "send_to_partner", "arguments": {"message": "loop"}}))
        .await;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["result"]
            .as_str()
            .is_some_and(|m| m.contains("Driver")),
        "{refused}"
    );
    // A delegated turn cannot delegate either (one hop deep).
    let mut ws2 = server.ws().await;
    let d2 = ws2.create_session().await;
    ws2.subscribe(&d2, 0).await;
    let (out, _) = tool(
        &mut ws2,
        &d2,
        "send_to_partner",
        json!({"message": "/tool send_to_partner {\"message\": \"deeper\"}"}),
    )
    .await;
    assert_eq!(out["status"], "complete", "{out}");
    let w2 = out["partnerId"].as_str().unwrap().to_string();
    let inner = server
        .all_events(&w2)
        .await
        .into_iter()
        .find(|e| e["kind"] == "tool_result")
        .unwrap();
    assert_eq!(inner["isError"], true);
    // Unknown tools and bad arguments.
    let (out, err) = tool(&mut ws2, &d2, "launch_rockets", json!({})).await;
    assert!(err && out.as_str().is_some_and(|m| m.contains("unknown tool")));
    let bad = ws2
        .ok(json!({"type": "tool.call", "sessionId": d2, "name": "read_partner", "arguments": [1]}))
        .await;
    assert_eq!(bad["isError"], true);
    let missing = ws2
        .request(json!({"type": "tool.call", "sessionId": "ses_nope", "name": "read_partner"}))
        .await;
    assert_eq!(missing["code"], "SESSION_NOT_FOUND");
}

#[actix_rt::test]
async fn pair_create_and_close_over_websocket() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let created = ws
        .ok(json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted", "effort": "max"}}))
        .await;
    let pair = created["pair"].clone();
    assert_eq!(pair["driverId"], d.as_str());
    let w = pair["workerId"].as_str().unwrap().to_string();
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(winfo["effort"], "high");
    // A Worker has no Workers of its own (a Driver may have several: e2e workers).
    let again = ws
        .request(json!({"type": "pair.create", "driverId": w, "worker": {"vendor": "scripted"}}))
        .await;
    assert_eq!(again["code"], "CONFLICT", "{again}");
    let not_installed = ws
        .request(json!({"type": "pair.create", "driverId": w, "worker": {"vendor": "claude"}}))
        .await;
    assert_eq!(not_installed["kind"], "protocol_error");
    let closed = ws
        .ok(json!({"type": "pair.close", "pairId": pair["pairId"]}))
        .await;
    assert_eq!(closed["interrupted"], false);
    let gone = ws
        .request(json!({"type": "pair.close", "pairId": pair["pairId"]}))
        .await;
    assert_eq!(gone["code"], "NO_SUCH_PAIR", "{gone}");
}

#[actix_rt::test]
async fn proposals_accept_decline_and_one_at_a_time() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let args = json!({"summary": "port the parser", "plan": "1. read\n2. write", "message": "proposed work done", "recommendedEffort": "max"});
    let (out, _) = tool(&mut ws, &d, "propose_worker", args.clone()).await;
    assert_eq!(out["status"], "posted", "{out}");
    let pid = out["proposalId"].as_str().unwrap().to_string();
    let (out, err) = tool(&mut ws, &d, "propose_worker", args.clone()).await;
    assert!(
        err && out.as_str().is_some_and(|m| m.contains("already open")),
        "{out}"
    );
    // Choices are validated against what is installed.
    let bad = ws
        .request(json!({"type": "proposal.respond", "sessionId": d, "proposalId": pid, "accepted": true, "vendor": "codex"}))
        .await;
    assert_eq!(bad["code"], "VENDOR_NOT_INSTALLED");
    let bad = ws
        .request(json!({"type": "proposal.respond", "sessionId": d, "proposalId": pid, "accepted": true, "model": "gpt-99"}))
        .await;
    assert_eq!(bad["code"], "INVALID_ARGUMENT");
    let accepted = ws
        .ok(json!({"type": "proposal.respond", "sessionId": d, "proposalId": pid, "accepted": true}))
        .await;
    assert_eq!(accepted["status"], "running");
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("proposed work done"));
    let hist = server.all_events(&d).await;
    let proposal = hist
        .iter()
        .find(|e| e["kind"] == "worker_proposal")
        .cloned()
        .unwrap();
    assert_eq!(proposal["status"], "pending");
    assert_eq!(proposal["recommended"]["effort"], "high");
    let statuses: Vec<Value> = hist
        .iter()
        .filter(|e| e["kind"] == "worker_proposal_update")
        .map(|e| e["status"].clone())
        .collect();
    assert_eq!(
        statuses,
        vec![json!("starting"), json!("running"), json!("completed")]
    );
    let again = ws
        .request(json!({"type": "proposal.respond", "sessionId": d, "proposalId": pid, "accepted": true}))
        .await;
    assert_eq!(again["kind"], "protocol_error");

    // Decline, in a session without a Worker.
    let (mut ws2, d2) = driver(&server).await;
    let (out, _) = tool(&mut ws2, &d2, "propose_worker", args).await;
    let pid2 = out["proposalId"].as_str().unwrap().to_string();
    ws2.ok(
        json!({"type": "proposal.respond", "sessionId": d2, "proposalId": pid2, "accepted": false}),
    )
    .await;
    let got = await_pushbacks(&server, &d2, 1).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].contains("declined"));
    let (_, info) = server.get(&format!("/api/v1/sessions/{d2}")).await;
    assert!(info.get("pairId").is_none());
}

#[actix_rt::test]
async fn proposals_are_auto_approved_when_permissions_are_bypassed() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": "yolo", "permissionMode": "bypassPermissions"}))
        .await;
    let d = reply["session"]["id"].as_str().unwrap().to_string();
    ws.subscribe(&d, 0).await;
    let (out, _) = tool(
        &mut ws,
        &d,
        "propose_worker",
        json!({"summary": "s", "plan": "p", "message": "auto work"}),
    )
    .await;
    assert_eq!(out["status"], "running", "{out}");
    assert_eq!(out["autoApproved"], true);
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].contains("auto work"));
    let hist = server.all_events(&d).await;
    let proposal = hist
        .iter()
        .find(|e| e["kind"] == "worker_proposal")
        .cloned()
        .unwrap();
    assert_eq!(proposal["autoApproved"], true);
    assert!(hist.iter().any(|e| e["kind"] == "worker_proposal_update"
        && e["status"] == "completed"
        && e["autoApproved"] == true));
}

#[actix_rt::test]
async fn spawn_limits_and_statuses() {
    let server = Server::start();
    let (mut ws, p) = driver(&server).await;
    let mut watcher = server.ws().await;
    watcher.ok(json!({"type": "sessions.watch"})).await;
    let five: Vec<Value> = (0..5)
        .map(|i| json!({"title": format!("job {i}"), "prompt": "/hold jobs\ndone"}))
        .collect();
    let (out, err) = tool(&mut ws, &p, "spawn_sessions", json!({"sessions": five})).await;
    assert!(!err, "{out}");
    let children: Vec<String> = out["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["sessionId"].as_str().map(String::from))
                .collect()
        })
        .unwrap();
    assert_eq!(children.len(), 5);
    // Three children stand at the hold, and no more start while they do.
    eventually("3 children at the hold", async || {
        let (_, list) = server.get("/debug/holds").await;
        (list["holds"] == json!([{"name": "jobs", "waiting": 3}])).then_some(())
    })
    .await;
    let (_, running_now) = server.get("/api/v1/sessions/running").await;
    let running_children = running_now["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| children.iter().any(|c| s["sessionId"] == c.as_str()))
        .count();
    assert_eq!(running_children, 3, "{running_now}");
    server.release("jobs").await;
    // Track how many children run at once, from the watch stream.
    let mut running = std::collections::HashSet::new();
    let mut finished = std::collections::HashSet::new();
    let mut most = 0;
    while finished.len() < 5 {
        let v = watcher.recv().await;
        if v["kind"] != "session_upserted" {
            continue;
        }
        let s = &v["session"];
        let id = s["id"].as_str().unwrap().to_string();
        if !children.contains(&id) {
            continue;
        }
        assert_eq!(s["parentId"], p.as_str());
        assert_eq!(s["ownerId"], "admin");
        match s["status"].as_str() {
            Some("running") => {
                running.insert(id);
            }
            Some("idle") if s["turnCount"] == 1 => {
                running.remove(&id);
                finished.insert(id);
            }
            _ => {}
        }
        most = most.max(running.len());
    }
    assert_eq!(most, 3, "at most 3 children run at once");
    let (out, _) = tool(&mut ws, &p, "check_spawned_sessions", json!({})).await;
    let statuses: Vec<Value> = out["sessions"]
        .as_array()
        .map(|a| a.iter().map(|s| s["status"].clone()).collect())
        .unwrap();
    assert_eq!(statuses, vec![json!("done"); 5]);
    // Limits: 1..10 per call, 20 per parent.
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({"title": format!("t{i}"), "prompt": "x"}))
        .collect();
    let (_, err) = tool(&mut ws, &p, "spawn_sessions", json!({"sessions": eleven})).await;
    assert!(err);
    let (_, err) = tool(&mut ws, &p, "spawn_sessions", json!({"sessions": []})).await;
    assert!(err);
    let ten: Vec<Value> = (0..10)
        .map(|i| json!({"title": format!("t{i}"), "prompt": "quick"}))
        .collect();
    let (_, err) = tool(&mut ws, &p, "spawn_sessions", json!({"sessions": ten})).await;
    assert!(!err);
    let six: Vec<Value> = (0..6)
        .map(|i| json!({"title": format!("u{i}"), "prompt": "quick"}))
        .collect();
    let (out, err) = tool(&mut ws, &p, "spawn_sessions", json!({"sessions": six})).await;
    assert!(
        err && out.as_str().is_some_and(|m| m.contains("20")),
        "{out}"
    );
    // Children cannot spawn.
    let child = &children[0];
    ws.subscribe(child, 0).await;
    let (out, err) = tool(
        &mut ws,
        child,
        "spawn_sessions",
        json!({"sessions": [{"title": "g", "prompt": "x"}]}),
    )
    .await;
    assert!(
        err && out.as_str().is_some_and(|m| m.contains("spawned")),
        "{out}"
    );
}

#[actix_rt::test]
async fn restart_mid_delegation_tells_the_driver_once() {
    let server = Server::start_process(Default::default());
    let (mut ws, d) = driver(&server).await;
    tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "started\n/hold never", "wait": false}),
    )
    .await;
    let w = worker_of(&server, &d).await;
    let mut wws = server.ws().await;
    wws.subscribe(&w, 0).await;
    wws.recv_until(|v| v["kind"] == "assistant_message" && v["text"] == "started")
        .await;
    let dir = server.kill();
    let server = Server::start_process_in(dir, Default::default());
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("restarted") && got[0].contains("PARTIAL"),
        "{}",
        got[0]
    );
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(winfo["status"], "interrupted");
    let (_, pairs) = server.get("/api/v1/pairs").await;
    assert_eq!(pairs["pairs"][0]["workerId"], w.as_str());
    assert!(pairs["pairs"][0].get("delegation").is_none());
    // Another restart delivers nothing more, and the pair still works.
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    assert_eq!(await_pushbacks(&server, &d, 1).await.len(), 1);
    let mut ws = server.ws().await;
    ws.subscribe(&d, 0).await;
    let (out, _) = tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "after restart"}),
    )
    .await;
    assert_eq!(out["status"], "complete", "{out}");
}

/// Interrupt, close and the Worker's own completion arrive together, many times: each
/// delegation is reported exactly once.
#[actix_rt::test]
async fn racing_endings_push_back_exactly_once() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let mut drivers = Vec::new();
    for round in 0..12u64 {
        let d = ws.create_session().await;
        ws.subscribe(&d, 0).await;
        let pair = ws
            .ok(json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"}}))
            .await;
        let w = pair["pair"]["workerId"].as_str().unwrap().to_string();
        let pair_id = pair["pair"]["pairId"].clone();
        let hold = format!("race-{round}");
        tool(
            &mut ws,
            &d,
            "send_to_partner",
            json!({"message": format!("/hold {hold}\nfinished"), "wait": false}),
        )
        .await;
        // The Worker is busy (a state, not a window); then its completion (the release),
        // the interrupt and the close go out back to back, the release first, between or
        // last by round, none waiting for the others' answers.
        server.wait_held(&hold).await;
        let finish_at = round % 3;
        if finish_at == 0 {
            server.release(&hold).await;
        }
        ws.send(&json!({"type": "chat.abort", "sessionId": w}))
            .await;
        if finish_at == 1 {
            server.release(&hold).await;
        }
        ws.send(&json!({"type": "pair.close", "pairId": pair_id}))
            .await;
        if finish_at == 2 {
            server.release(&hold).await;
        }
        drivers.push(d);
    }
    for d in drivers {
        let got = await_pushbacks(&server, &d, 1).await;
        assert_eq!(got.len(), 1, "driver {d}: {got:?}");
    }
}

#[actix_rt::test]
async fn mcp_over_http() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (status, tok) = server
        .post(&format!("/api/v1/sessions/{d}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 200);
    let token = tok["token"].as_str().unwrap().to_string();
    assert!(tok["url"].as_str().is_some_and(|u| u.ends_with("/mcp")));
    let client = awc::Client::default();
    let url = format!("{}/mcp", server.base);
    let call = |body: Value, token: String| {
        let req = client
            .post(url.clone())
            .insert_header(("Authorization", format!("Bearer {token}")))
            .insert_header(("Accept", "application/json, text/event-stream"));
        async move {
            let mut resp = req.send_json(&body).await.unwrap_or_else(|e| panic!("{e}"));
            let bytes = resp.body().await.unwrap();
            (
                resp.status().as_u16(),
                serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
            )
        }
    };
    let (status, _) = call(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        "wrong".into(),
    )
    .await;
    assert_eq!(status, 401);
    let (_, disc) = call(
        json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover"}),
        token.clone(),
    )
    .await;
    assert_eq!(disc["error"]["code"], -32601);
    let (_, init) = call(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}), token.clone()).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(init["result"]["serverInfo"]["name"], "tandem");
    // A revision this server does not speak is answered with one it does.
    let (_, other) = call(json!({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": "2031-01-01"}}), token.clone()).await;
    assert_eq!(other["result"]["protocolVersion"], "2025-11-25");
    assert!(init["result"]["instructions"]
        .as_str()
        .is_some_and(|i| i.contains("send_to_partner")));
    let (status, _) = call(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        token.clone(),
    )
    .await;
    assert_eq!(status, 202);
    let names = |list: &Value| -> Vec<String> {
        list["result"]["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap()
    };
    let (_, list) = call(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        token.clone(),
    )
    .await;
    assert_eq!(
        names(&list),
        vec![
            "send_to_partner",
            "propose_worker",
            "spawn_sessions",
            "check_spawned_sessions"
        ]
    );
    let (_, res) = call(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "send_to_partner", "arguments": {"message": "via mcp"}}}),
        token.clone(),
    )
    .await;
    assert_eq!(res["result"]["isError"], false, "{res}");
    let text = res["result"]["content"][0]["text"].as_str().unwrap();
    let parsed: Value = serde_json::from_str(text).unwrap();
    assert_eq!(parsed["status"], "complete");
    assert_eq!(parsed["response"], "via mcp");
    // Now a Driver: the partner tools are listed. The Worker sees only ask_driver.
    let (_, list) = call(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
        token.clone(),
    )
    .await;
    assert_eq!(
        names(&list),
        vec![
            "send_to_partner",
            "read_partner",
            "interrupt_partner",
            "close_partner",
            "answer_worker",
            "approve_worker",
            "spawn_sessions",
            "check_spawned_sessions"
        ]
    );
    let w = parsed["partnerId"].as_str().unwrap().to_string();
    let (_, wtok) = server
        .post(&format!("/api/v1/sessions/{w}/mcp-token"), &json!({}))
        .await;
    let wtoken = wtok["token"].as_str().unwrap().to_string();
    let (_, list) = call(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        wtoken.clone(),
    )
    .await;
    assert_eq!(names(&list), vec!["ask_driver"], "{list}");
    let (_, res) = call(
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "send_to_partner", "arguments": {"message": "no"}}}),
        wtoken,
    )
    .await;
    assert_eq!(res["result"]["isError"], true);
    let (_, bad) = call(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}),
        token.clone(),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602);
    // The same result shape over WebSocket `tool.call`.
    let via_ws = ws
        .ok(json!({"type": "tool.call", "sessionId": d, "name": "read_partner", "arguments": {}}))
        .await;
    assert_eq!(via_ws["isError"], false);
    assert_eq!(via_ws["result"]["turns"][0]["response"], "via mcp");
}
