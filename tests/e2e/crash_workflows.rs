//! Multi-step workflows survive a crash at every step: each test sets a crash point
//! (the server aborts there, once the writes queued before it are on disk), triggers
//! the workflow, waits for the process to die, restarts on the same data and checks
//! that the sessions work, that nothing was reported twice or lost, and that the pair
//! or proposal ended in its documented state.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, WsClient};

/// Waits for the server to die at its crash point and starts it again on its data.
async fn restart_after_crash(server: Server) -> Server {
    let (status, dir) = server.exited().await;
    assert!(!status.success(), "the server exited cleanly: {status}");
    Server::start_process_in(dir, Default::default())
}

/// A connected client subscribed to a fresh session.
async fn driver(server: &Server) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    (ws, sid)
}

/// Starts a turn that calls `tool` with `args`, without waiting for the reply (the
/// server may crash before it is sent).
async fn start_tool(ws: &mut WsClient, sid: &str, tool: &str, args: Value) {
    let content = format!("/tool {tool} {args}");
    ws.send(&json!({"type": "chat.send", "requestId": "t1", "sessionId": sid, "content": content}))
        .await;
}

/// Runs one turn that calls `tool`; returns the tool result's `output` and `isError`.
/// Retries while the session is busy with a pushed-back turn.
async fn tool(server: &Server, sid: &str, tool: &str, args: Value) -> (Value, bool) {
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    let mut ws = server.ws().await;
    ws.subscribe(sid, info["lastSeq"].as_u64().unwrap_or(0))
        .await;
    ws.scripted_tool(sid, tool, args).await
}

/// Sends a plain message (queued if the session is busy) and waits until a turn that
/// answers it completes: the session is usable.
async fn usable(server: &Server, sid: &str) {
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    let mut ws = server.ws().await;
    ws.subscribe(sid, info["lastSeq"].as_u64().unwrap_or(0))
        .await;
    let text = format!("still here {sid}");
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": text, "queue": true}))
        .await;
    ws.recv_until(|v| v["kind"] == "user_message" && v["sessionId"] == sid && v["text"] == text)
        .await;
    let events = ws.events_until_turn_end(sid).await;
    let end = events.last().cloned().unwrap();
    assert_eq!(end["status"], "completed", "{sid}: {events:?}");
}

/// Internal user messages (pushed-back results) in a session's history.
async fn pushbacks(server: &Server, sid: &str) -> Vec<String> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "user_message" && e["internal"] == true)
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// Waits until `sid` has at least `n` push-backs and no pair of it holds a delegation,
/// then runs one more turn in it (anything pushed back meanwhile runs or queues ahead
/// of it), and returns the push-backs.
async fn settled_pushbacks(server: &Server, sid: &str, n: usize) -> Vec<String> {
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
    usable(server, sid).await;
    pushbacks(server, sid).await
}

async fn session(server: &Server, sid: &str) -> Value {
    let (status, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{sid}: {info}");
    info
}

async fn pairs(server: &Server) -> Vec<Value> {
    let (_, pairs) = server.get("/api/v1/pairs").await;
    pairs["pairs"].as_array().cloned().unwrap()
}

async fn session_ids(server: &Server) -> Vec<String> {
    let (_, list) = server.get("/api/v1/sessions").await;
    list["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().map(String::from))
                .collect()
        })
        .unwrap()
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind).count()
}

/// Crashes `pair.create` at `point`; returns the restarted server and the Driver.
async fn crash_pair_create(point: &str) -> (Server, String) {
    let server = Server::start_process(Default::default());
    let (mut ws, d) = driver(&server).await;
    server.failpoint(point, "return").await;
    ws.send(&json!({"type": "pair.create", "requestId": "c1", "driverId": d, "worker": {"vendor": "scripted"}}))
        .await;
    (restart_after_crash(server).await, d)
}

/// After any pair-creation crash the Driver can make a pair and delegate through it.
async fn driver_can_pair_again(server: &Server, d: &str) {
    let (out, err) = tool(
        server,
        d,
        "send_to_partner",
        json!({"message": "after crash"}),
    )
    .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "complete", "{out}");
    assert_eq!(out["response"], "after crash");
}

#[actix_rt::test]
async fn pair_create_cut_after_the_row_is_rolled_back() {
    let (server, d) = crash_pair_create("pair.create.row").await;
    assert!(pairs(&server).await.is_empty());
    assert!(session(&server, &d).await.get("pairId").is_none());
    assert_eq!(session_ids(&server).await, vec![d.clone()]);
    let hist = server.all_events(&d).await;
    assert_eq!(count(&hist, "pair_created"), 0, "{hist:?}");
    assert_eq!(
        count(&hist, "pair_closed"),
        0,
        "never joined, nothing to tell"
    );
    usable(&server, &d).await;
    driver_can_pair_again(&server, &d).await;
}

#[actix_rt::test]
async fn pair_create_cut_after_the_driver_joined_is_rolled_back_and_told() {
    let (server, d) = crash_pair_create("pair.create.driver").await;
    assert!(pairs(&server).await.is_empty());
    let info = session(&server, &d).await;
    assert!(info.get("pairId").is_none(), "{info}");
    assert!(info.get("role").is_none(), "{info}");
    // The Worker was never created.
    assert_eq!(session_ids(&server).await, vec![d.clone()]);
    let hist = server.all_events(&d).await;
    assert_eq!(count(&hist, "pair_created"), 1);
    assert_eq!(count(&hist, "pair_closed"), 1, "{hist:?}");
    assert!(hist.iter().any(|e| e["kind"] == "info"
        && e["text"]
            .as_str()
            .is_some_and(|t| t.contains("being created"))));
    usable(&server, &d).await;
    driver_can_pair_again(&server, &d).await;
}

#[actix_rt::test]
async fn pair_create_cut_after_the_worker_joined_is_rolled_forward() {
    let (server, d) = crash_pair_create("pair.create.worker").await;
    let ps = pairs(&server).await;
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(ps[0]["state"], "active");
    assert_eq!(ps[0]["driverId"], d.as_str());
    let w = ps[0]["workerId"].as_str().unwrap().to_string();
    let dinfo = session(&server, &d).await;
    assert_eq!(dinfo["pairId"], ps[0]["pairId"]);
    assert_eq!(dinfo["role"], "driver");
    assert_eq!(session(&server, &w).await["role"], "worker");
    for sid in [&d, &w] {
        let hist = server.all_events(sid).await;
        assert_eq!(count(&hist, "pair_created"), 1, "{sid}");
        assert_eq!(count(&hist, "pair_closed"), 0, "{sid}");
    }
    // The rolled-forward pair carries a delegation; both sessions run.
    let (out, err) = tool(
        &server,
        &d,
        "send_to_partner",
        json!({"message": "forward"}),
    )
    .await;
    assert!(!err, "{out}");
    assert_eq!(out["response"], "forward", "{out}");
    usable(&server, &w).await;
    // And it closes normally.
    let mut ws = server.ws().await;
    ws.ok(json!({"type": "pair.close", "pairId": ps[0]["pairId"]}))
        .await;
    assert!(pairs(&server).await.is_empty());
}

/// `send_to_partner` creating a Worker, cut after the Driver joined: the Driver's turn
/// ends interrupted, the half-made pair is undone, and the next call makes a Worker.
#[actix_rt::test]
async fn send_to_partner_cut_mid_creation_leaves_a_driver_that_can_delegate() {
    let server = Server::start_process(Default::default());
    let (mut ws, d) = driver(&server).await;
    server.failpoint("pair.create.driver", "return").await;
    start_tool(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"message": "lost task"}),
    )
    .await;
    let server = restart_after_crash(server).await;
    let info = session(&server, &d).await;
    assert_eq!(info["status"], "interrupted", "{info}");
    assert!(info.get("pairId").is_none(), "{info}");
    assert!(pairs(&server).await.is_empty());
    let hist = server.all_events(&d).await;
    assert_eq!(count(&hist, "pair_closed"), 1, "{hist:?}");
    driver_can_pair_again(&server, &d).await;
    assert_eq!(pairs(&server).await.len(), 1);
}

#[actix_rt::test]
async fn pair_close_cut_after_the_closed_row_is_finished_and_reports_once() {
    let server = Server::start_process(Default::default());
    let (mut ws, d) = driver(&server).await;
    let (out, _) = tool(
        &server,
        &d,
        "send_to_partner",
        json!({"message": "started\n/hold never", "wait": false}),
    )
    .await;
    assert_eq!(out["status"], "running", "{out}");
    let ps = pairs(&server).await;
    let pair_id = ps[0]["pairId"].as_str().unwrap().to_string();
    let w = ps[0]["workerId"].as_str().unwrap().to_string();
    let mut wws = server.ws().await;
    wws.subscribe(&w, 0).await;
    wws.recv_until(|v| v["kind"] == "assistant_message" && v["text"] == "started")
        .await;
    server.failpoint("pair.close.row", "return").await;
    ws.send(&json!({"type": "pair.close", "requestId": "c1", "pairId": pair_id}))
        .await;
    let server = restart_after_crash(server).await;
    assert!(pairs(&server).await.is_empty());
    for sid in [&d, &w] {
        let info = session(&server, sid).await;
        assert!(info.get("pairId").is_none(), "{info}");
        let hist = server.all_events(sid).await;
        assert_eq!(count(&hist, "pair_closed"), 1, "{sid}: {hist:?}");
    }
    // The cut-off delegation is reported to the Driver exactly once.
    let got = settled_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("PARTIAL"), "{}", got[0]);
    usable(&server, &w).await;
    driver_can_pair_again(&server, &d).await;
    // A second restart reports nothing more.
    let dir = server.kill();
    let server = Server::start_process_in(dir, Default::default());
    assert_eq!(settled_pushbacks(&server, &d, 1).await.len(), 1);
}

/// Posts a proposal in a fresh Driver; returns the client, the Driver and the id.
async fn proposal(server: &Server) -> (WsClient, String, String) {
    let (ws, d) = driver(server).await;
    let (out, _) = tool(
        server,
        &d,
        "propose_worker",
        json!({"summary": "s", "plan": "p", "message": "proposed work done"}),
    )
    .await;
    assert_eq!(out["status"], "posted", "{out}");
    let pid = out["proposalId"].as_str().unwrap().to_string();
    (ws, d, pid)
}

fn proposal_statuses(hist: &[Value]) -> Vec<String> {
    hist.iter()
        .filter(|e| e["kind"] == "worker_proposal_update")
        .map(|e| e["status"].as_str().unwrap().to_string())
        .collect()
}

#[actix_rt::test]
async fn an_accepted_proposal_cut_before_its_worker_fails_once_and_unblocks() {
    let server = Server::start_process(Default::default());
    let (mut ws, d, pid) = proposal(&server).await;
    server.failpoint("proposal.accept.starting", "return").await;
    ws.send(&json!({"type": "proposal.respond", "requestId": "r1", "sessionId": d, "proposalId": pid, "accepted": true}))
        .await;
    let server = restart_after_crash(server).await;
    let got = settled_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("could not start"), "{}", got[0]);
    let hist = server.all_events(&d).await;
    assert_eq!(proposal_statuses(&hist), vec!["starting", "error"]);
    assert!(pairs(&server).await.is_empty());
    // Not blocked: a new proposal is accepted.
    let (out, err) = tool(
        &server,
        &d,
        "propose_worker",
        json!({"summary": "again", "plan": "p", "message": "m"}),
    )
    .await;
    assert!(!err && out["status"] == "posted", "{out}");
    // A second restart tells nothing more.
    let dir = server.kill();
    let server = Server::start_process_in(dir, Default::default());
    assert_eq!(settled_pushbacks(&server, &d, 1).await.len(), 1);
}

#[actix_rt::test]
async fn an_accepted_proposal_cut_before_its_delegation_is_rolled_forward() {
    let server = Server::start_process(Default::default());
    let (mut ws, d, pid) = proposal(&server).await;
    server.failpoint("proposal.accept.running", "return").await;
    ws.send(&json!({"type": "proposal.respond", "requestId": "r1", "sessionId": d, "proposalId": pid, "accepted": true}))
        .await;
    let server = restart_after_crash(server).await;
    let got = settled_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("proposed work done"), "{}", got[0]);
    let hist = server.all_events(&d).await;
    let statuses = proposal_statuses(&hist);
    assert_eq!(statuses.first().map(String::as_str), Some("starting"));
    assert_eq!(statuses.last().map(String::as_str), Some("completed"));
    assert_eq!(statuses, vec!["starting", "running", "completed"]);
    let ps = pairs(&server).await;
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0]["driverId"], d.as_str());
    let w = ps[0]["workerId"].as_str().unwrap().to_string();
    usable(&server, &w).await;
    let dir = server.kill();
    let server = Server::start_process_in(dir, Default::default());
    assert_eq!(settled_pushbacks(&server, &d, 1).await.len(), 1);
}

fn children(list: &[String], parent: &str) -> Vec<String> {
    list.iter().filter(|id| *id != parent).cloned().collect()
}

/// Waits until session `sid` has finished `n` turns and is idle.
async fn turns_done(server: &Server, sid: &str, n: u64) -> Value {
    eventually(&format!("{sid} to finish {n} turns"), async || {
        let info = session(server, sid).await;
        (info["turnCount"].as_u64() == Some(n) && info["status"] == "idle").then_some(info)
    })
    .await
}

#[actix_rt::test]
async fn spawn_cut_after_the_first_child_starts_it_after_restart() {
    let server = Server::start_process(Default::default());
    let (mut ws, p) = driver(&server).await;
    server.failpoint("spawn.child", "return").await;
    let three: Vec<Value> = (0..3)
        .map(|i| json!({"title": format!("job {i}"), "prompt": format!("child {i} done")}))
        .collect();
    start_tool(&mut ws, &p, "spawn_sessions", json!({"sessions": three})).await;
    let server = restart_after_crash(server).await;
    let kids = children(&session_ids(&server).await, &p);
    assert_eq!(kids.len(), 1, "{kids:?}");
    let child = turns_done(&server, &kids[0], 1).await;
    assert_eq!(child["parentId"], p.as_str());
    let hist = server.all_events(&kids[0]).await;
    assert!(hist
        .iter()
        .any(|e| e["kind"] == "assistant_message" && e["text"] == "child 0 done"));
    assert_eq!(count(&hist, "turn_completed"), 1);
    // The parent's cut-off turn is closed as interrupted, and it works.
    let (out, err) = tool(&server, &p, "check_spawned_sessions", json!({})).await;
    assert!(!err, "{out}");
    assert_eq!(out["sessions"][0]["status"], "done", "{out}");
    usable(&server, &p).await;
}

#[actix_rt::test]
async fn a_spawn_failing_at_child_two_starts_the_first() {
    let server = Server::start_process(Default::default());
    let (_ws, p) = driver(&server).await;
    server
        .failpoint("spawn.create_child", "1*off->return(boom)")
        .await;
    let three: Vec<Value> = (0..3)
        .map(|i| json!({"title": format!("job {i}"), "prompt": format!("child {i} done")}))
        .collect();
    let (out, err) = tool(&server, &p, "spawn_sessions", json!({"sessions": three})).await;
    server.failpoint("spawn.create_child", "off").await;
    assert!(err, "{out}");
    let text = out.as_str().unwrap();
    assert!(
        text.contains("boom") && text.contains("were started"),
        "{text}"
    );
    let kids = children(&session_ids(&server).await, &p);
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert!(text.contains(&kids[0]), "{text}");
    turns_done(&server, &kids[0], 1).await;
    usable(&server, &p).await;
}
