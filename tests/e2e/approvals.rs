//! A Driver approves for its Worker (a pair's `workerApprovals`), end to end:
//! scripted Workers raise permission requests through the scripted vendor's `/ask`
//! (a real `permission_request`, answered through the adapter), scripted Drivers
//! answer with `approve_worker` through the same tool path real agents use; `bypass`,
//! a person answering first, turns a person started, refusals, and a Worker on
//! another node.

use serde_json::{json, Value};
use tandem_tests::{eventually, NatsServer, Server, WsClient};

use crate::pairs::{await_pushbacks, pushbacks};

/// The Worker's script: ask to run `ls` with Bash, then say `after`.
fn asking(after: &str) -> String {
    format!("/ask Bash {{\"command\":\"ls\"}}\n{after}")
}

/// A client subscribed to a fresh Driver paired (through `pair.create`) with a new
/// scripted Worker whose requests `approvals` answers: `(client, driver, worker)`.
async fn paired(server: &Server, approvals: &str) -> (WsClient, String, String) {
    let mut ws = server.ws().await;
    let d = ws.create_session().await;
    ws.subscribe(&d, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    let created = ws
        .ok(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerApprovals": approvals}),
        )
        .await;
    let pair = &created["pair"];
    if approvals == "user" {
        assert!(pair.get("workerApprovals").is_none(), "{pair}");
    } else {
        assert_eq!(pair["workerApprovals"], approvals, "{pair}");
    }
    let w = pair["workerId"].as_str().unwrap().to_string();
    (ws, d, w)
}

/// Calls `name` as session `sid` over `tool.call`; the whole reply.
async fn tool_call(ws: &mut WsClient, sid: &str, name: &str, arguments: Value) -> Value {
    ws.ok(json!({"type": "tool.call", "sessionId": sid, "name": name, "arguments": arguments}))
        .await
}

/// A person answers permission request `rid` of session `sid` (the request carries
/// the permission's id as its own).
async fn person_answers(ws: &mut WsClient, sid: &str, rid: &str, allow: bool) {
    let reply = ws
        .request_with_id(json!({"type": "chat.permission-response", "sessionId": sid,
            "requestId": rid, "allow": allow, "message": "no"}))
        .await;
    assert_eq!(reply["kind"], "reply", "{reply}");
}

/// Driver `d` delegates a script that asks permission (then says `after`) without
/// waiting for it.
async fn delegate_detached(ws: &mut WsClient, d: &str, after: &str) {
    let (out, _) = ws
        .scripted_tool(
            d,
            "send_to_partner",
            json!({"message": asking(after), "wait": false}),
        )
        .await;
    assert_eq!(out["status"], "running", "{out}");
}

/// The code of `approve_worker ARGS` called as session `d`, which must be refused.
async fn refused(ws: &mut WsClient, d: &str, args: Value) -> Value {
    let reply = tool_call(ws, d, "approve_worker", args).await;
    assert_eq!(reply["isError"], true, "{reply}");
    reply["code"].clone()
}

/// Events of `kind` in a session's stored history.
async fn events_of(server: &Server, sid: &str, kind: &str) -> Vec<Value> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// The Worker's `permission_resolved` events that name who decided, once there is
/// one.
async fn decided(server: &Server, w: &str) -> Vec<Value> {
    eventually(&format!("a decided permission in {w}"), async || {
        let got: Vec<Value> = events_of(server, w, "permission_resolved")
            .await
            .into_iter()
            .filter(|e| e.get("decidedBy").is_some())
            .collect();
        (!got.is_empty()).then_some(got)
    })
    .await
}

/// The id of the Worker's one pending permission request, once it is raised.
async fn pending_request(server: &Server, w: &str) -> String {
    eventually(&format!("a permission request in {w}"), async || {
        events_of(server, w, "permission_request")
            .await
            .into_iter()
            .next()
            .map(|e| e["requestId"].as_str().unwrap().to_string())
    })
    .await
}

/// Driver `d` delegates a script that asks permission and waits: its
/// `send_to_partner` answers with the request. Returns that result.
async fn delegate_asking(ws: &mut WsClient, d: &str, after: &str) -> Value {
    let (out, err) = ws
        .scripted_tool(d, "send_to_partner", json!({"message": asking(after)}))
        .await;
    assert!(!err, "{out}");
    out
}

#[actix_rt::test]
async fn a_waiting_driver_gets_the_request_and_its_answer_reaches_the_worker() {
    let server = Server::start();
    let (mut ws, d, w) = paired(&server, "driver").await;
    let out = delegate_asking(&mut ws, &d, "listed").await;
    assert_eq!(out["status"], "approval", "{out}");
    assert_eq!(out["partnerId"], w.as_str());
    let ask = &out["approval"];
    assert_eq!(ask["toolName"], "Bash", "{out}");
    assert_eq!(ask["input"], json!({"command": "ls"}), "{out}");
    assert_eq!(ask["workerId"], w.as_str(), "{out}");
    assert!(
        out["hint"].as_str().unwrap().contains("approve_worker"),
        "{out}"
    );
    let rid = ask["requestId"].as_str().unwrap().to_string();
    assert_eq!(pending_request(&server, &w).await, rid);

    let (ans, err) = ws
        .scripted_tool(
            &d,
            "approve_worker",
            json!({"requestId": rid, "allow": true, "remember": true}),
        )
        .await;
    assert!(!err, "{ans}");
    assert_eq!(
        ans,
        json!({"requestId": rid, "partnerId": w, "workerName": "scripted", "allow": true})
    );
    // The Worker goes on; its result is pushed back to the Driver once.
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("allowed Bash") && got[0].contains("listed"),
        "{}",
        got[0]
    );
    // The Worker's history says who decided, and the remembered rule.
    let resolved = decided(&server, &w).await;
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0]["requestId"], rid.as_str());
    assert_eq!(resolved[0]["decidedBy"], "driver");
    let rules = events_of(&server, &w, "permission_remembered").await;
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0]["rule"]["toolName"], "Bash");
    // Answered once: a second answer is refused with its code.
    assert_eq!(
        refused(&mut ws, &d, json!({"requestId": rid, "allow": false})).await,
        "NO_SUCH_PERMISSION"
    );
}

#[actix_rt::test]
async fn a_detached_delegation_gets_the_request_pushed_and_a_denial_reaches_the_worker() {
    let server = Server::start();
    let (mut ws, d, w) = paired(&server, "driver").await;
    delegate_detached(&mut ws, &d, "after asking").await;
    let rid = pending_request(&server, &w).await;
    let pushed = eventually("the request pushed into the Driver", async || {
        pushbacks(&server, &d)
            .await
            .into_iter()
            .find(|t| t.contains("[Permission request from your Worker"))
    })
    .await;
    assert!(
        pushed.contains(&rid) && pushed.contains("Bash") && pushed.contains(r#"{"command":"ls"}"#),
        "{pushed}"
    );
    let (ans, err) = ws
        .scripted_tool(
            &d,
            "approve_worker",
            json!({"requestId": rid, "allow": false, "message": "not in this repository"}),
        )
        .await;
    assert!(!err, "{ans}");
    // The request and then the Worker's result: two push-backs, each once.
    let got = await_pushbacks(&server, &d, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[1].contains("denied Bash: not in this repository"),
        "{got:?}"
    );
    let resolved = decided(&server, &w).await;
    assert_eq!(resolved[0]["decidedBy"], "driver", "{resolved:?}");
    assert!(events_of(&server, &w, "permission_remembered")
        .await
        .is_empty());
}

#[actix_rt::test]
async fn a_person_may_answer_first_and_turns_a_person_starts_ask_the_person() {
    let server = Server::start();
    let (mut ws, d, w) = paired(&server, "driver").await;
    let out = delegate_asking(&mut ws, &d, "went ahead").await;
    assert_eq!(out["status"], "approval", "{out}");
    let rid = out["approval"]["requestId"].as_str().unwrap().to_string();
    // The person answers in the Driver's place; the Driver's answer is then refused.
    person_answers(&mut ws, &w, &rid, true).await;
    let resolved = decided(&server, &w).await;
    assert_eq!(resolved[0]["decidedBy"], "user", "{resolved:?}");
    assert_eq!(
        refused(&mut ws, &d, json!({"requestId": rid, "allow": false})).await,
        "NO_SUCH_PERMISSION"
    );
    let got = await_pushbacks(&server, &d, 1).await;
    assert!(got[0].contains("allowed Bash"), "{got:?}");

    // A turn the person starts in the Worker asks the person: nothing reaches the
    // Driver, and the Driver may not answer it.
    let mut wws = server.ws().await;
    wws.subscribe(&w, 0).await;
    wws.ok(json!({"type": "chat.send", "sessionId": w, "content": asking("mine")}))
        .await;
    let request = wws
        .recv_until(|v| v["kind"] == "permission_request" && v["requestId"] != rid.as_str())
        .await;
    let mine = request.last().unwrap()["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        refused(&mut ws, &d, json!({"requestId": mine, "allow": true})).await,
        "NO_SUCH_PERMISSION"
    );
    person_answers(&mut wws, &w, &mine, false).await;
    wws.recv_until(|v| v["kind"] == "turn_completed" && v["sessionId"] == w.as_str())
        .await;
    assert_eq!(pushbacks(&server, &d).await.len(), 1);
}

#[actix_rt::test]
async fn bypass_allows_at_once_and_user_leaves_the_request_to_the_person() {
    let server = Server::start();
    let (mut ws, d, w) = paired(&server, "bypass").await;
    let out = delegate_asking(&mut ws, &d, "done").await;
    assert_eq!(out["status"], "complete", "{out}");
    assert!(
        out["response"].as_str().unwrap().contains("allowed Bash"),
        "{out}"
    );
    let resolved = decided(&server, &w).await;
    assert_eq!(resolved[0]["decidedBy"], "bypass", "{resolved:?}");

    // `user` (the default): the request waits for a person; the Driver may not
    // answer it, and its waiting call is not interrupted by it.
    let (mut ws, d, w) = paired(&server, "user").await;
    delegate_detached(&mut ws, &d, "mine").await;
    let rid = pending_request(&server, &w).await;
    assert_eq!(
        refused(&mut ws, &d, json!({"requestId": rid, "allow": true})).await,
        "NO_SUCH_PERMISSION"
    );
    person_answers(&mut ws, &w, &rid, true).await;
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("allowed Bash"), "{got:?}");
    assert_eq!(decided(&server, &w).await[0]["decidedBy"], "user");
}

#[actix_rt::test]
async fn refusals_have_codes() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let d = ws.create_session().await;
    // An unknown setting.
    let bad = ws
        .request(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerApprovals": "sometimes"}),
        )
        .await;
    assert_eq!(bad["code"], "INVALID_ARGUMENT", "{bad}");
    let (status, body) = server
        .post(
            "/api/v1/pairs",
            &json!({"driverId": d, "worker": {"vendor": "scripted"}, "workerApprovals": 3}),
        )
        .await;
    assert!(status == 400 || status == 422, "{status} {body}");
    // Not a Driver.
    assert_eq!(
        refused(&mut ws, &d, json!({"requestId": "perm_x", "allow": true})).await,
        "TOOL_NOT_AVAILABLE"
    );
    // `allow` is required.
    let (mut ws, d, _) = paired(&server, "driver").await;
    assert_eq!(
        refused(&mut ws, &d, json!({"requestId": "perm_x"})).await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        refused(
            &mut ws,
            &d,
            json!({"requestId": "perm_nowhere", "allow": true})
        )
        .await,
        "NO_SUCH_PERMISSION"
    );
}

/// A Worker on node b, its pair and Driver on node a: the request crosses to a, the
/// Driver's answer crosses back, and the Worker's history on b says the Driver
/// decided.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_worker_on_another_node_is_approved_by_its_driver() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    crate::cluster_pairs::knows(&a, &b).await;
    let mut ws = a.ws().await;
    let d = ws.create_session().await;
    ws.subscribe(&d, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    let created = ws
        .ok(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerNode": "b", "workerApprovals": "driver"}),
        )
        .await;
    let w = created["pair"]["workerId"].as_str().unwrap().to_string();

    let out = delegate_asking(&mut ws, &d, "listed on b").await;
    assert_eq!(out["status"], "approval", "{out}");
    let rid = out["approval"]["requestId"].as_str().unwrap().to_string();
    assert_eq!(pending_request(&b, &w).await, rid);
    let (ans, err) = ws
        .scripted_tool(
            &d,
            "approve_worker",
            json!({"requestId": rid, "allow": true}),
        )
        .await;
    assert!(!err, "{ans}");
    let got = await_pushbacks(&a, &d, 1).await;
    assert!(
        got[0].contains("allowed Bash") && got[0].contains("listed on b"),
        "{got:?}"
    );
    assert_eq!(decided(&b, &w).await[0]["decidedBy"], "driver");
    assert_eq!(
        refused(&mut ws, &d, json!({"requestId": rid, "allow": true})).await,
        "NO_SUCH_PERMISSION"
    );
}
