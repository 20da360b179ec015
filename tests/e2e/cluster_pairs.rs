//! Pairs in a cluster, with a real `nats-server` and scripted agents: requests that
//! name a pair or a permission request but no session (`pair.close`, `DELETE
//! /api/v1/pairs/{id}`, `chat.permission-response` without `sessionId`) find the node
//! that holds it.

use serde_json::{json, Value};
use tandem_tests::{eventually, NatsServer, Server, WsClient};

/// Waits until `server` lists session `id` (`GET /api/v1/sessions`, which merges
/// every node's sessions) and `ok` holds for it; returns it.
async fn listed_as(server: &Server, id: &str, ok: impl Fn(&Value) -> bool) -> Value {
    eventually(&format!("session {id} listed as expected"), async || {
        let (status, page) = server.get("/api/v1/sessions?limit=500").await;
        assert_eq!(status, 200, "{page}");
        page["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"] == id && ok(s)))
            .cloned()
    })
    .await
}

/// Waits for the next `permission_request` of `session` on `ws`; returns its id.
async fn next_permission(ws: &mut WsClient, session: &str) -> String {
    let frames = ws
        .recv_until(|v| v["kind"] == "permission_request" && v["sessionId"] == session)
        .await;
    let last = frames.last().cloned().unwrap();
    last["requestId"].as_str().unwrap().to_string()
}

/// Sends `chat.permission-response` (no `sessionId`) for permission request `id`,
/// whose id is the frame's `requestId`; returns the answer.
async fn answer_permission(ws: &mut WsClient, id: &str) -> Value {
    ws.send(&json!({"type": "chat.permission-response", "requestId": id, "allow": true}))
        .await;
    let frames = ws
        .recv_until(|v| {
            v["requestId"] == id && (v["kind"] == "reply" || v["kind"] == "protocol_error")
        })
        .await;
    frames.last().cloned().unwrap()
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn requests_without_a_session_find_the_node_that_holds_them() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let c = nats.node("c");
    let mut on_a = a.ws().await;
    let mut on_c = c.ws().await;

    // A permission request pending on A, answered through C without `sessionId`
    // (B is asked too and has no such request).
    let id = on_a.create_session().await;
    on_a.subscribe(&id, 0).await;
    on_a.ok(json!({"type": "chat.send", "sessionId": id,
        "content": "/ask Bash {\"command\":\"ls\"}"}))
        .await;
    let asked = next_permission(&mut on_a, &id).await;
    let answered = answer_permission(&mut on_c, &asked).await;
    assert_eq!(answered["kind"], "reply", "{answered}");
    assert_eq!(answered["permissionId"], asked.as_str(), "{answered}");
    let turn = on_a.events_until_turn_end(&id).await;
    assert!(
        turn.iter()
            .any(|e| e["kind"] == "assistant_message" && e["text"] == "allowed Bash"),
        "{turn:?}"
    );
    // Answered already, and one no node has: the single node's error.
    for missing in [asked.as_str(), "perm_nowhere"] {
        let again = answer_permission(&mut on_c, missing).await;
        assert_eq!(again["code"], "NO_SUCH_PERMISSION", "{again}");
        let here = answer_permission(&mut on_a, missing).await;
        assert_eq!(again["error"], here["error"]);
    }

    // Two pairs on A: one closed over C's socket, one over B's REST route.
    let mut pairs = Vec::new();
    for _ in 0..2 {
        let driver = on_a.create_session().await;
        let created = on_a
            .ok(json!({"type": "pair.create", "driverId": driver, "worker": {"vendor": "scripted"}}))
            .await;
        let pair_id = created["pair"]["pairId"].as_str().unwrap().to_string();
        // The other nodes know the pair once the directory lists its Driver in it.
        listed_as(&b, &driver, |s| s["pairId"] == pair_id.as_str()).await;
        listed_as(&c, &driver, |s| s["pairId"] == pair_id.as_str()).await;
        pairs.push((driver, pair_id));
    }
    let (d1, p1) = pairs[0].clone();
    let closed = on_c.ok(json!({"type": "pair.close", "pairId": p1})).await;
    assert_eq!(
        (closed["pairId"].clone(), closed["interrupted"].clone()),
        (json!(p1), json!(false)),
        "{closed}"
    );
    let (_, info) = a.get(&format!("/api/v1/sessions/{d1}")).await;
    assert!(info.get("pairId").is_none(), "{info}");
    let (d2, p2) = pairs[1].clone();
    let (status, closed) = b.delete(&format!("/api/v1/pairs/{p2}")).await;
    assert_eq!(status, 200, "{closed}");
    assert_eq!(closed["pairId"], p2.as_str());
    let (_, info) = a.get(&format!("/api/v1/sessions/{d2}")).await;
    assert!(info.get("pairId").is_none(), "{info}");
    // Closed (once the directory has caught up) or never there: NO_SUCH_PAIR, as on A.
    listed_as(&b, &d2, |s| s.get("pairId").is_none()).await;
    let (status, gone) = b.delete(&format!("/api/v1/pairs/{p2}")).await;
    assert_eq!(
        (status, gone["error"]["code"].clone()),
        (404, json!("NO_SUCH_PAIR")),
        "{gone}"
    );
    let gone = on_c
        .request(json!({"type": "pair.close", "pairId": "pair_nowhere"}))
        .await;
    assert_eq!(gone["code"], "NO_SUCH_PAIR", "{gone}");

    // A pair whose node is down: NODE_UNAVAILABLE, on the socket and over REST.
    let d3 = on_a.create_session().await;
    let created = on_a
        .ok(json!({"type": "pair.create", "driverId": d3, "worker": {"vendor": "scripted"}}))
        .await;
    let p3 = created["pair"]["pairId"].as_str().unwrap().to_string();
    listed_as(&c, &d3, |s| s["pairId"] == p3.as_str()).await;
    on_a.close().await;
    let _dir = a.kill();
    listed_as(&c, &d3, |s| s["nodeUnavailable"] == true).await;
    let down = on_c
        .request(json!({"type": "pair.close", "pairId": p3}))
        .await;
    assert_eq!(down["code"], "NODE_UNAVAILABLE", "{down}");
    let (status, down) = c.delete(&format!("/api/v1/pairs/{p3}")).await;
    assert_eq!(
        (status, down["error"]["code"].clone()),
        (503, json!("NODE_UNAVAILABLE")),
        "{down}"
    );
}

/// A client of `server` subscribed to a fresh Driver session there.
async fn driver(server: &Server) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    (ws, sid)
}

/// Waits until `server` counts node `node` in the cluster: a session made there is
/// listed here.
pub(crate) async fn knows(server: &Server, other: &Server) {
    let mut ws = other.ws().await;
    let probe = ws.create_session().await;
    listed_as(server, &probe, |_| true).await;
}

/// A Worker on `node` for Driver `d` (through `ws`, a client of the Driver's node);
/// its id.
pub(crate) async fn pair_on(ws: &mut WsClient, d: &str, node: &str) -> String {
    let created = ws
        .ok(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerNode": node}),
        )
        .await;
    created["pair"]["workerId"].as_str().unwrap().to_string()
}

/// Driver `d` delegates `message` without waiting; returns once its Worker `w` runs
/// it on `worker_node`.
async fn detach_running(ws: &mut WsClient, d: &str, worker_node: &Server, w: &str, message: &str) {
    let (out, _) = ws
        .scripted_tool(
            d,
            "send_to_partner",
            json!({"message": message, "wait": false}),
        )
        .await;
    assert_eq!(out["status"], "running", "{out}");
    eventually("the Worker to run the delegation", async || {
        (status_on(worker_node, w).await == "running").then_some(())
    })
    .await;
}

/// Nodes `a` and `b`, a client of `a` subscribed to a Driver there, and that
/// Driver's Worker on `b`: `(a, b, client, driver, worker)`.
async fn paired_across(nats: &NatsServer) -> (Server, Server, WsClient, String, String) {
    let a = nats.node("a");
    let b = nats.node("b");
    knows(&a, &b).await;
    let (mut ws, d) = driver(&a).await;
    let w = pair_on(&mut ws, &d, "b").await;
    (a, b, ws, d, w)
}

/// How many user messages (turns asked for) session `id` has on `server`.
async fn user_messages(server: &Server, id: &str) -> usize {
    server
        .all_events(id)
        .await
        .iter()
        .filter(|e| e["kind"] == "user_message")
        .count()
}

/// The Worker's status as its own node has it.
async fn status_on(server: &Server, w: &str) -> Value {
    let (status, info) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(status, 200, "{info}");
    info["status"].clone()
}

/// The `pushbacks` counter of a node's `/metrics`.
async fn pushback_metric(server: &Server) -> u64 {
    let (_, text) = server.get_text("/metrics").await;
    text.lines()
        .find_map(|l| l.strip_prefix("tandem_pushbacks_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pushbacks counter in {text}"))
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_driver_delegates_to_a_worker_on_another_node() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    knows(&a, &b).await;
    let (mut ws, d) = driver(&a).await;

    // The same refusals as locally, and a node the cluster does not know.
    let nowhere = ws
        .request(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerNode": "nowhere"}),
        )
        .await;
    assert_eq!(nowhere["code"], "INVALID_ARGUMENT", "{nowhere}");
    let missing = ws
        .request(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "nope"},
            "workerNode": "b"}),
        )
        .await;
    assert_eq!(missing["kind"], "protocol_error", "{missing}");
    let (_, info) = a.get(&format!("/api/v1/sessions/{d}")).await;
    assert!(info.get("pairId").is_none(), "a refused pair left {info}");

    // Created on B, paired with the Driver on A.
    let w = pair_on(&mut ws, &d, "b").await;
    let (_, winfo) = b.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(
        (winfo["node"].clone(), winfo["role"].clone()),
        (json!("b"), json!("worker")),
        "{winfo}"
    );
    let (_, dinfo) = a.get(&format!("/api/v1/sessions/{d}")).await;
    assert_eq!(dinfo["pairId"], winfo["pairId"]);
    // The Worker's name is the Driver's: taken, it is refused on any node.
    let again = ws
        .request(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerNode": "b", "workerName": "scripted"}),
        )
        .await;
    assert_eq!(again["code"], "CONFLICT", "{again}");

    // A waiting delegation: the Worker's answer is the tool's result.
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "first line\nsecond line"}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "complete", "{out}");
    assert_eq!(out["response"], "first line\n\nsecond line");
    assert_eq!(out["partnerId"], w.as_str());
    // read_partner reads the Worker on its node.
    let (read, err) = ws.scripted_tool(&d, "read_partner", json!({})).await;
    assert!(!err, "{read}");
    assert_eq!(read["status"], "idle", "{read}");
    assert_eq!(read["partnerId"], w.as_str());
    assert_eq!(
        read["turns"],
        json!([{"user": "first line\nsecond line", "delegated": true,
            "response": "first line\n\nsecond line"}]),
        "{read}"
    );
    let whist = b.all_events(&w).await;
    let user = whist
        .iter()
        .find(|e| e["kind"] == "user_message")
        .cloned()
        .unwrap();
    assert_eq!(user["delegatedBy"], d.as_str());
    eventually(
        "both delegation events in the Worker's history",
        async || {
            let actives: Vec<Value> = b
                .all_events(&w)
                .await
                .iter()
                .filter(|e| e["kind"] == "delegation")
                .map(|e| e["active"].clone())
                .collect();
            (actives == vec![json!(true), json!(false)]).then_some(())
        },
    )
    .await;

    // Detached: the result is pushed back into the Driver.
    let (out, _) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/hold detached\ndetached done", "wait": false}),
        )
        .await;
    assert_eq!(out["status"], "running", "{out}");
    b.release("detached").await;
    let got = crate::pairs::await_pushbacks(&a, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("detached done"), "{}", got[0]);

    // A wait that times out detaches; the result comes back once.
    let (out, _) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "slow start\n/hold slow\nslow end", "timeoutSeconds": 1}),
        )
        .await;
    // The Worker stands at the hold: the wait timed out, not the Worker's script.
    assert_eq!(out["status"], "running", "{out}");
    b.release("slow").await;
    let got = crate::pairs::await_pushbacks(&a, &d, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].contains("slow end"), "{}", got[1]);

    // Busy with a turn of its own: refused as locally.
    let mut on_b = b.ws().await;
    on_b.chat(&w, "/hold never").await;
    eventually("the Worker to run", async || {
        (status_on(&b, &w).await == "running").then_some(())
    })
    .await;
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "x", "wait": false}),
        )
        .await;
    assert!(err, "{out}");
    assert!(out.as_str().is_some_and(|m| m.contains("busy")), "{out}");
    on_b.ok(json!({"type": "chat.abort", "sessionId": w})).await;
    eventually("the Worker to stop", async || {
        (status_on(&b, &w).await == "interrupted").then_some(())
    })
    .await;

    // Interrupted from the Driver: pushed back once, as partial.
    detach_running(&mut ws, &d, &b, &w, "half done\n/hold never").await;
    b.wait_held("never").await;
    let (out, _) = ws.scripted_tool(&d, "interrupt_partner", json!({})).await;
    assert_eq!(out["status"], "interrupting", "{out}");
    let got = crate::pairs::await_pushbacks(&a, &d, 3).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[2].contains("PARTIAL") && got[2].contains("half done"),
        "{}",
        got[2]
    );
    let (out, _) = ws.scripted_tool(&d, "interrupt_partner", json!({})).await;
    assert_eq!(out["status"], "idle", "{out}");

    // Closed while the Worker runs, asked on B (the pair runs on A): the Worker is
    // stopped and leaves; the cut-off delegation is reported once.
    detach_running(&mut ws, &d, &b, &w, "working\n/hold never").await;
    b.wait_held("never").await;
    let pair_id = dinfo["pairId"].as_str().unwrap().to_string();
    let closed = on_b
        .ok(json!({"type": "pair.close", "pairId": pair_id}))
        .await;
    assert_eq!(closed["interrupted"], true, "{closed}");
    eventually("the Worker to leave the pair", async || {
        let (_, info) = b.get(&format!("/api/v1/sessions/{w}")).await;
        info.get("pairId").is_none().then_some(())
    })
    .await;
    let got = crate::pairs::await_pushbacks(&a, &d, 4).await;
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got[3].contains("working"), "{}", got[3]);
    assert_eq!(pushback_metric(&a).await, 4);
    let gone = on_b
        .request(json!({"type": "pair.close", "pairId": pair_id}))
        .await;
    assert_eq!(gone["code"], "NO_SUCH_PAIR", "{gone}");
}

/// Whether the pair of Driver `d` (on `server`) holds a delegation.
async fn delegating(server: &Server, d: &str) -> bool {
    let (_, pairs) = server.get("/api/v1/pairs").await;
    pairs["pairs"].as_array().is_some_and(|ps| {
        ps.iter()
            .any(|p| p["driverId"] == d && p.get("delegation").is_some())
    })
}

/// The Worker's node killed with -9 mid-delegation: the delegation stays in flight
/// while that node is away (a new one is refused), and is reported interrupted once
/// when it is back. A Worker's node that is away refuses a delegation with
/// `NODE_UNAVAILABLE`; a pair closed meanwhile is left by its Worker once its node is
/// back.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn the_workers_node_killed_mid_delegation_reports_it_once_when_back() {
    let nats = NatsServer::start();
    let (a, b, mut ws, d, w) = paired_across(&nats).await;
    detach_running(&mut ws, &d, &b, &w, "begun\n/hold never").await;
    // A lists the Worker before its node goes (the directory is 250 ms behind).
    listed_as(&a, &w, |s| s["status"] == "running").await;
    let dir = b.kill();
    listed_as(&a, &w, |s| s["nodeUnavailable"] == true).await;
    assert!(
        delegating(&a, &d).await,
        "the delegation ended while B was away"
    );
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "x", "wait": false}),
        )
        .await;
    assert!(err, "{out}");
    assert!(crate::pairs::pushbacks(&a, &d).await.is_empty());

    // Back: the cut-off turn is reported interrupted, once.
    let b = nats.restart_node(dir, "b");
    let got = crate::pairs::await_pushbacks(&a, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("[Worker interrupted]") && got[0].contains("restarted"),
        "{}",
        got[0]
    );
    assert_eq!(status_on(&b, &w).await, "interrupted");
    // The Worker's node forgot the report once the pair took it; a delegation runs
    // again.
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "after the restart"}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["response"], "after the restart", "{out}");

    // Idle and away: refused with NODE_UNAVAILABLE, nothing in flight.
    listed_as(&a, &w, |s| s["status"] == "idle").await;
    let dir = b.kill();
    listed_as(&a, &w, |s| s["nodeUnavailable"] == true).await;
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "x", "wait": false}),
        )
        .await;
    assert!(err, "{out}");
    assert!(
        out.as_str().is_some_and(|m| m.contains("unavailable")),
        "{out}"
    );
    assert!(!delegating(&a, &d).await);
    assert_eq!(crate::pairs::await_pushbacks(&a, &d, 1).await.len(), 1);
    assert_eq!(pushback_metric(&a).await, 1);

    // Closed while the idle Worker's node is away: B cannot be told then; once it is
    // back, it asks A and the Worker leaves the pair.
    let (_, dinfo) = a.get(&format!("/api/v1/sessions/{d}")).await;
    let pair_id = dinfo["pairId"].as_str().unwrap().to_string();
    let closed = ws
        .ok(json!({"type": "pair.close", "pairId": pair_id}))
        .await;
    assert_eq!(closed["interrupted"], false, "{closed}");
    let b = nats.restart_node(dir, "b");
    eventually("the Worker to leave the closed pair", async || {
        let (_, info) = b.get(&format!("/api/v1/sessions/{w}")).await;
        info.get("pairId").is_none().then_some(())
    })
    .await;
    assert!(
        b.all_events(&w)
            .await
            .iter()
            .any(|e| e["kind"] == "pair_closed" && e["pairId"] == pair_id.as_str()),
        "no pair_closed in the Worker's history"
    );
}

/// The Driver's node killed with -9 mid-delegation: the Worker finishes meanwhile,
/// its node keeps the report until the Driver's node is back and has delivered it:
/// the real answer, once. Then NATS paused while a delegated turn ends: the report
/// waits and arrives once.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn the_drivers_node_killed_mid_delegation_gets_the_answer_once_when_back() {
    let nats = NatsServer::start();
    let (a, b, mut ws, d, w) = paired_across(&nats).await;
    detach_running(&mut ws, &d, &b, &w, "/hold away\nfinished while a was away").await;
    ws.close().await;
    let dir = a.kill();
    b.release("away").await;
    eventually("the Worker to finish while A is away", async || {
        (status_on(&b, &w).await == "idle").then_some(())
    })
    .await;
    let a = nats.restart_node(dir, "a");
    let got = crate::pairs::await_pushbacks(&a, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("finished while a was away"), "{}", got[0]);
    assert!(!got[0].contains("interrupted"), "{}", got[0]);

    // NATS paused while the Worker's turn ends: delivered once NATS is back.
    let mut ws = a.ws().await;
    let (_, info) = a.get(&format!("/api/v1/sessions/{d}")).await;
    ws.subscribe(&d, info["lastSeq"].as_u64().unwrap()).await;
    detach_running(&mut ws, &d, &b, &w, "/hold outage\nended during the outage").await;
    nats.pause();
    // Released through B's own HTTP port: the turn ends while NATS answers nothing,
    // so its report can only wait (its first try waits for an answer until NATS is
    // back).
    b.release("outage").await;
    eventually("the Worker to finish during the outage", async || {
        (status_on(&b, &w).await == "idle").then_some(())
    })
    .await;
    nats.resume();
    let got = crate::pairs::await_pushbacks(&a, &d, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].contains("ended during the outage"), "{}", got[1]);
    // Counted on A since its restart: the one push-back after it.
    assert_eq!(pushback_metric(&a).await, 2);
}

/// The Driver's node dies (a crash point, test builds) after storing a delegation
/// and before the Worker's node got it: after its restart the pair asks the Worker's
/// node, which does not have it, and reports it interrupted, once; the pair works
/// on.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_delegation_the_workers_node_never_got_is_reported_once_after_a_restart() {
    let nats = NatsServer::start();
    let (a, b, mut ws, d, w) = paired_across(&nats).await;
    a.failpoint("pair.delegate.remote", "return").await;
    let content = format!(
        "/tool send_to_partner {}",
        json!({"message": "never delivered", "wait": false})
    );
    ws.send(&json!({"type": "chat.send", "requestId": "t1", "sessionId": d, "content": content}))
        .await;
    let (status, dir) = a.exited().await;
    assert!(!status.success(), "the server exited cleanly: {status}");
    let a = nats.restart_node(dir, "a");
    let got = crate::pairs::await_pushbacks(&a, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("[Worker interrupted]") && got[0].contains("never delivered"),
        "{}",
        got[0]
    );
    let turns = user_messages(&b, &w).await;
    assert_eq!(turns, 0, "the Worker got the task after all");
    let mut ws = a.ws().await;
    let (_, info) = a.get(&format!("/api/v1/sessions/{d}")).await;
    ws.subscribe(&d, info["lastSeq"].as_u64().unwrap()).await;
    let (out, err) = ws
        .scripted_tool(&d, "send_to_partner", json!({"message": "now it arrives"}))
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["response"], "now it arrives", "{out}");
}

/// The Worker's node starts a delegated turn and its answer never reaches the pair
/// (a failpoint on the Driver's node, test builds, drops it): the pair does not
/// refuse a delegation that runs; the caller hears it runs, the pair asks the
/// Worker's node, which has it, and the Worker's answer is pushed back once.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_start_whose_answer_is_lost_is_pushed_back_once() {
    let nats = NatsServer::start();
    let (a, b, mut ws, d, w) = paired_across(&nats).await;
    a.failpoint("pair.start.lost", "1*return").await;
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/hold lost\nran anyway"}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "running", "{out}");
    b.release("lost").await;
    let got = crate::pairs::await_pushbacks(&a, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("ran anyway"), "{}", got[0]);
    let turns = user_messages(&b, &w).await;
    assert_eq!(turns, 1, "the Worker ran the task once");
    // The pair works on.
    let (out, err) = ws
        .scripted_tool(&d, "send_to_partner", json!({"message": "next one"}))
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["response"], "next one", "{out}");
    assert_eq!(pushback_metric(&a).await, 1);
}
