//! `chat.edit-send` with the scripted vendor: the rewind, the `history_rewound`
//! event and the session's `superseded` ranges, the scripted agent forgetting the
//! superseded turns, the refusals and their codes, and pairs.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, WsClient};

/// A client subscribed to a fresh scripted session.
async fn session(server: &Server) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    (ws, sid)
}

/// Runs one turn with `content`; returns its events.
async fn turn(ws: &mut WsClient, sid: &str, content: &str) -> Vec<Value> {
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": content}))
        .await;
    ws.events_until_turn_end(sid).await
}

/// The `seq` of the turn's `user_message`.
fn user_seq(events: &[Value]) -> u64 {
    events
        .iter()
        .find(|e| e["kind"] == "user_message")
        .and_then(|e| e["seq"].as_u64())
        .unwrap()
}

/// The turn's assistant messages.
fn said(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "assistant_message")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

#[actix_rt::test]
async fn edit_send_rewinds_the_scripted_agent_and_marks_the_branch_superseded() {
    let server = Server::start();
    let (mut ws, sid) = session(&server).await;
    let one = turn(&mut ws, &sid, "one").await;
    let two = turn(&mut ws, &sid, "two").await;
    let three = turn(&mut ws, &sid, "three\n/history").await;
    assert_eq!(said(&three), vec!["three", "history: one | two"]);
    let last = three.last().unwrap()["seq"].as_u64().unwrap();

    // Edit turn 2's message: turns 2 and 3 are superseded, the agent forgets them.
    let anchor = user_seq(&two);
    let reply = ws
        .ok(
            json!({"type": "chat.edit-send", "sessionId": sid, "anchorSeq": anchor,
            "content": "two, edited\n/history"}),
        )
        .await;
    assert_eq!(reply["turnId"], "turn_4");
    let range = json!({"anchorSeq": anchor, "supersededFrom": anchor - 1,
        "supersededTo": last, "turns": 2, "rewoundAt": last + 1});
    assert_eq!(reply["superseded"], range);
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(events[0]["kind"], "history_rewound");
    assert_eq!(events[0]["seq"], last + 1);
    assert_eq!(events[0]["anchorSeq"], anchor);
    assert_eq!(events[0]["supersededFrom"], anchor - 1);
    assert_eq!(events[0]["supersededTo"], last);
    assert_eq!(events[0]["turns"], 2);
    assert_eq!(events[1]["kind"], "turn_started");
    assert_eq!(events[1]["turnId"], "turn_4");
    assert_eq!(said(&events), vec!["two, edited", "history: one"]);

    // The log is append-only: everything before is stored as it was.
    let stored = server.all_events(&sid).await;
    assert_eq!(&stored[..one.len()], &one[..]);
    assert_eq!(
        stored
            .iter()
            .filter(|e| e["kind"] == "user_message")
            .count(),
        4
    );
    // The session carries the range, for clients that read pages without the event.
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["superseded"], json!([range]));

    // Over REST, anchored in the new branch: only turn 4 goes.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/edit-send"),
            &json!({"anchorSeq": user_seq(&events), "content": "/history"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["turnId"], "turn_5");
    assert_eq!(body["superseded"]["turns"], 1);
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(said(&events), vec!["history: one"]);
    // Earlier anchors still work: the first turn's message, live turns 1 and 5 go
    // (2, 3 and 4 were already superseded and are not counted again).
    let reply = ws
        .ok(
            json!({"type": "chat.edit-send", "sessionId": sid, "anchorSeq": user_seq(&one),
            "content": "/history"}),
        )
        .await;
    assert_eq!(reply["superseded"]["turns"], 2);
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(said(&events), vec!["history: "]);
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["superseded"].as_array().map(Vec::len), Some(3));
}

#[actix_rt::test]
async fn edit_send_refusals_have_their_own_codes() {
    let server = Server::start();
    let (mut ws, sid) = session(&server).await;
    let one = turn(&mut ws, &sid, "one").await;
    let anchor = user_seq(&one);
    let refuse = async |ws: &mut WsClient, anchor: Value, code: &str| {
        let answer = ws
            .request(
                json!({"type": "chat.edit-send", "sessionId": sid, "anchorSeq": anchor,
                "content": "x"}),
            )
            .await;
        assert_eq!(answer["kind"], "protocol_error", "{answer}");
        assert_eq!(answer["code"], code, "{answer}");
    };
    // Not a user message: the turn's start, its end, past the end, zero, a string.
    refuse(&mut ws, json!(anchor - 1), "INVALID_ANCHOR").await;
    refuse(&mut ws, json!(anchor + 1), "INVALID_ANCHOR").await;
    refuse(&mut ws, json!(999), "INVALID_ANCHOR").await;
    refuse(&mut ws, json!(0), "INVALID_ARGUMENT").await;
    refuse(&mut ws, json!("2"), "INVALID_ARGUMENT").await;
    // A running turn.
    ws.chat(&sid, "/hold slow\nslow").await;
    refuse(&mut ws, json!(anchor), "RUN_IN_PROGRESS").await;
    // The same over REST, with its status.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/edit-send"),
            &json!({"anchorSeq": anchor, "content": "x"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("RUN_IN_PROGRESS"))
    );
    server.release("slow").await;
    ws.events_until_turn_end(&sid).await;
    // Superseded already.
    ws.ok(
        json!({"type": "chat.edit-send", "sessionId": sid, "anchorSeq": anchor,
        "content": "again"}),
    )
    .await;
    ws.events_until_turn_end(&sid).await;
    refuse(&mut ws, json!(anchor), "INVALID_ANCHOR").await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/edit-send"),
            &json!({"anchorSeq": anchor, "content": "x"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (422, json!("INVALID_ANCHOR"))
    );
    // Nothing was recorded by the refusals: one rewind in the history.
    let stored = server.all_events(&sid).await;
    assert_eq!(
        stored
            .iter()
            .filter(|e| e["kind"] == "history_rewound")
            .count(),
        1
    );
    // The capability is listed.
    let (_, vendors) = server.get("/api/v1/vendors").await;
    let scripted = vendors["vendors"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["id"] == "scripted"))
        .cloned()
        .unwrap();
    assert!(
        scripted["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("rewind")),
        "{scripted}"
    );
}

/// The Worker's history of a pair, read from the store.
async fn worker_history(server: &Server, driver: &str) -> (String, Vec<Value>) {
    let (_, info) = server.get(&format!("/api/v1/sessions/{driver}")).await;
    let (_, pairs) = server.get("/api/v1/pairs").await;
    let worker = pairs["pairs"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["pairId"] == info["pairId"]))
        .and_then(|p| p["workerId"].as_str())
        .unwrap()
        .to_string();
    let hist = server.all_events(&worker).await;
    (worker, hist)
}

#[actix_rt::test]
async fn a_driver_rewinds_past_a_delegation_and_the_worker_keeps_its_history() {
    let server = Server::start();
    let (mut ws, d) = session(&server).await;
    let first = turn(&mut ws, &d, "plan").await;
    // A detached delegation: the Driver is idle while the Worker works.
    let (out, _) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/hold worker\nworker result", "wait": false}),
        )
        .await;
    assert_eq!(out["status"], "running", "{out}");
    let refused = ws
        .request(json!({"type": "chat.edit-send", "sessionId": d,
            "anchorSeq": user_seq(&first), "content": "x"}))
        .await;
    assert_eq!(refused["code"], "DELEGATION_IN_FLIGHT", "{refused}");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{d}/edit-send"),
            &json!({"anchorSeq": user_seq(&first), "content": "x"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("DELEGATION_IN_FLIGHT"))
    );
    server.release("worker").await;
    // The result is pushed back into the Driver once, as a turn of its own.
    let pushed = |hist: &[Value]| {
        hist.iter()
            .filter(|e| {
                e["kind"] == "user_message"
                    && e["internal"] == true
                    && e["text"].as_str().unwrap().contains("worker result")
            })
            .count()
    };
    eventually("the push-back to end", async || {
        let (_, pairs) = server.get("/api/v1/pairs").await;
        let hist = server.all_events(&d).await;
        let held = pairs["pairs"][0].get("delegation").is_some();
        let idle = hist.last().is_some_and(|e| e["kind"] == "turn_completed");
        (pushed(&hist) == 1 && !held && idle).then_some(())
    })
    .await;
    let (_, worker_before) = worker_history(&server, &d).await;

    // Rewind the Driver to its first message: the delegating turn and the pushed-back
    // result are superseded; the Worker's history is left alone.
    let reply = ws
        .ok(json!({"type": "chat.edit-send", "sessionId": d,
            "anchorSeq": user_seq(&first), "content": "/history"}))
        .await;
    assert_eq!(reply["superseded"]["turns"], 3, "{reply}");
    let events = ws
        .recv_until(|v| {
            v["kind"] == "turn_completed" && v["sessionId"] == d && v["turnId"] == reply["turnId"]
        })
        .await;
    assert!(events
        .iter()
        .any(|e| e["kind"] == "assistant_message" && e["text"] == "history: "));
    let (_, worker_after) = worker_history(&server, &d).await;
    assert_eq!(worker_after, worker_before);

    // A delegation from the new branch is reported once, after the rewind.
    let (out, _) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/hold second\nsecond result", "wait": false}),
        )
        .await;
    assert_eq!(out["status"], "running", "{out}");
    server.release("second").await;
    // Settled: every push-back of the Driver so far, the superseded first one included.
    let got = crate::pairs::await_pushbacks(&server, &d, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    let hist = server.all_events(&d).await;
    let rewound = hist
        .iter()
        .find(|e| e["kind"] == "history_rewound")
        .and_then(|e| e["seq"].as_u64())
        .unwrap();
    let second: Vec<u64> = hist
        .iter()
        .filter(|e| {
            e["kind"] == "user_message"
                && e["internal"] == true
                && e["text"].as_str().unwrap().contains("second result")
        })
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(second[0] > rewound);
    assert_eq!(pushed(&hist), 1, "the first result is not reported again");
}
