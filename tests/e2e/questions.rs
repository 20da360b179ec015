//! A Worker asks its Driver (`ask_driver`), end to end: scripted Workers ask through
//! the same path real agents use (`/tool`), scripted Drivers answer (`answer_worker`),
//! or a person answers instead (`question.answer`, REST); timeouts, restarts and
//! refusals.

use serde_json::{json, Value};
use tandem_tests::{eventually, NatsServer, Server, ServerOptions, WsClient};

use crate::pairs::await_pushbacks;

/// A connected client subscribed to a fresh Driver session.
async fn driver(server: &Server) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    (ws, sid)
}

/// The Worker's script: ask `args` with `ask_driver`, then say `after`.
fn asking(args: Value, after: &str) -> String {
    format!("/tool ask_driver {args}\n{after}")
}

/// The Driver `d` delegates a script that asks `args` (then says `after`); its
/// waiting `send_to_partner` answers with the question. Returns that result, the
/// question's id and the Worker's id.
async fn delegate_asking(
    ws: &mut WsClient,
    d: &str,
    args: Value,
    after: &str,
) -> (Value, String, String) {
    let (out, err) = ws
        .scripted_tool(
            d,
            "send_to_partner",
            json!({"message": asking(args, after)}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "question", "{out}");
    let qid = out["questionId"].as_str().unwrap().to_string();
    let w = out["partnerId"].as_str().unwrap().to_string();
    (out, qid, w)
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

/// The session's `attention` as REST reports it.
async fn attention(server: &Server, sid: &str) -> Value {
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    info["attention"].clone()
}

/// Waits until the Worker's question is stored in its history (with its record: one
/// write), so a kill from here on cannot lose it; the `question` event.
async fn stored_question(server: &Server, worker: &str) -> Value {
    eventually(&format!("a question in {worker}'s history"), async || {
        events_of(server, worker, "question")
            .await
            .into_iter()
            .next()
    })
    .await
}

/// The `output` of the Worker's `ask_driver` call, once its `tool_result` is stored.
async fn ask_result(server: &Server, worker: &str) -> Value {
    eventually(&format!("{worker}'s ask_driver result"), async || {
        events_of(server, worker, "tool_result")
            .await
            .into_iter()
            .next()
            .map(|e| e["output"].clone())
    })
    .await
}

/// Calls `name` as session `sid` over `tool.call`; the whole reply.
async fn tool_call(ws: &mut WsClient, sid: &str, name: &str, arguments: Value) -> Value {
    ws.ok(json!({"type": "tool.call", "sessionId": sid, "name": name, "arguments": arguments}))
        .await
}

/// Asserts one `question` and one `question_answered` (answered `answer` by `by`) in
/// each history.
async fn assert_recorded(server: &Server, sessions: [&str; 2], qid: &str, answer: &str, by: &str) {
    for sid in sessions {
        assert_recorded_in(server, sid, qid, answer, by).await;
    }
}

/// [`assert_recorded`] for one history (waiting for the answer, which reaches the
/// other side's history a moment later).
async fn assert_recorded_in(server: &Server, sid: &str, qid: &str, answer: &str, by: &str) {
    let answered = eventually(&format!("question_answered in {sid}"), async || {
        let got = events_of(server, sid, "question_answered").await;
        (!got.is_empty()).then_some(got)
    })
    .await;
    let asked = events_of(server, sid, "question").await;
    assert_eq!(asked.len(), 1, "{sid}: {asked:?}");
    assert_eq!(asked[0]["questionId"], qid, "{sid}: {asked:?}");
    assert_eq!(answered.len(), 1, "{sid}: {answered:?}");
    assert_eq!(answered[0]["questionId"], qid);
    assert_eq!(answered[0]["answer"], answer, "{sid}: {answered:?}");
    assert_eq!(answered[0]["by"], by, "{sid}: {answered:?}");
}

#[actix_rt::test]
async fn a_waiting_driver_gets_the_question_and_its_answer_reaches_the_worker() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (out, qid, w) = delegate_asking(
        &mut ws,
        &d,
        json!({"question": "Postgres or SQLite?", "choices": ["postgres", "sqlite"]}),
        "going with it",
    )
    .await;
    assert_eq!(out["question"], "Postgres or SQLite?");
    assert_eq!(out["choices"], json!(["postgres", "sqlite"]));
    assert!(qid.starts_with("q_"), "{out}");
    // While the question waits, the Worker asks for input (and says so after the
    // write, for clients that only read the record).
    let asked = stored_question(&server, &w).await;
    assert_eq!(asked["from"], w.as_str());
    assert_eq!(asked["to"], d.as_str());
    assert_eq!(asked["timeoutSeconds"], 600);
    assert_eq!(attention(&server, &w).await, "needs_input");
    // The Driver answers in a turn of its own, as an agent would.
    let (ans, err) = ws
        .scripted_tool(
            &d,
            "answer_worker",
            json!({"questionId": qid, "answer": "sqlite"}),
        )
        .await;
    assert!(!err, "{ans}");
    assert_eq!(
        ans,
        json!({"questionId": qid, "partnerId": w, "workerName": "scripted"})
    );
    // The Worker's call returns the answer and its turn goes on; the delegation's
    // result is pushed back to the Driver once.
    let result = ask_result(&server, &w).await;
    assert_eq!(
        result,
        json!({"questionId": qid, "answer": "sqlite", "answeredBy": "driver"})
    );
    let got = await_pushbacks(&server, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("going with it"), "{}", got[0]);
    assert_ne!(attention(&server, &w).await, "needs_input");
    assert_recorded(&server, [&w, &d], &qid, "sqlite", "driver").await;
    // Answered once: a second answer is refused with its code.
    let again = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": qid, "answer": "postgres"}),
    )
    .await;
    assert_eq!(again["isError"], true, "{again}");
    assert_eq!(again["code"], "NO_SUCH_QUESTION", "{again}");
}

#[actix_rt::test]
async fn a_detached_delegation_gets_the_question_pushed_as_a_message() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let script = asking(json!({"question": "Which port?"}), "done asking");
    let (out, _) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": script, "wait": false}),
        )
        .await;
    assert_eq!(out["status"], "running", "{out}");
    let w = out["partnerId"].as_str().unwrap().to_string();
    // The question arrives as an internal message naming its id.
    let asked = stored_question(&server, &w).await;
    let qid = asked["questionId"].as_str().unwrap().to_string();
    let pushed = eventually("the question pushed into the Driver", async || {
        crate::pairs::pushbacks(&server, &d)
            .await
            .into_iter()
            .find(|t| t.contains("[Question from your Worker"))
    })
    .await;
    assert!(
        pushed.contains(&qid) && pushed.contains("Which port?"),
        "{pushed}"
    );
    let (ans, err) = ws
        .scripted_tool(
            &d,
            "answer_worker",
            json!({"questionId": qid, "answer": "8080"}),
        )
        .await;
    assert!(!err, "{ans}");
    assert_eq!(ask_result(&server, &w).await["answer"], "8080");
    // The question and then the Worker's result: two push-backs, each once.
    let got = await_pushbacks(&server, &d, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].contains("done asking"), "{got:?}");
    assert_recorded(&server, [&w, &d], &qid, "8080", "driver").await;
}

#[actix_rt::test]
async fn the_user_answers_instead_and_the_drivers_later_answer_is_refused() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (_, qid, w) =
        delegate_asking(&mut ws, &d, json!({"question": "Ship it?"}), "shipping").await;
    stored_question(&server, &w).await;
    // An unknown question, over WebSocket and REST.
    let unknown = ws
        .request(json!({"type": "question.answer", "sessionId": w, "questionId": "q_nope", "answer": "x"}))
        .await;
    assert_eq!(unknown["code"], "NO_SUCH_QUESTION", "{unknown}");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{w}/questions/q_nope/answer"),
            &json!({"answer": "x"}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "NO_SUCH_QUESTION", "{body}");
    // The user answers from the page.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{w}/questions/{qid}/answer"),
            &json!({"answer": "yes, ship"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"sessionId": w, "questionId": qid}));
    assert_eq!(
        ask_result(&server, &w).await,
        json!({"questionId": qid, "answer": "yes, ship", "answeredBy": "user"})
    );
    // The Driver's answer comes too late, and so does a second one over WebSocket.
    let late = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": qid, "answer": "no"}),
    )
    .await;
    assert_eq!(late["isError"], true, "{late}");
    assert_eq!(late["code"], "NO_SUCH_QUESTION", "{late}");
    let again = ws
        .request(
            json!({"type": "question.answer", "sessionId": w, "questionId": qid, "answer": "x"}),
        )
        .await;
    assert_eq!(again["code"], "NO_SUCH_QUESTION", "{again}");
    let got = await_pushbacks(&server, &d, 1).await;
    assert!(got[0].contains("shipping"), "{got:?}");
    assert_recorded(&server, [&w, &d], &qid, "yes, ship", "user").await;
}

#[actix_rt::test]
async fn an_unanswered_question_times_out_and_the_worker_decides() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (_, qid, w) = delegate_asking(
        &mut ws,
        &d,
        json!({"question": "Tabs or spaces?", "timeoutSeconds": 1}),
        "decided myself",
    )
    .await;
    assert_eq!(
        ask_result(&server, &w).await,
        json!({"questionId": qid, "answer": "no answer: decide yourself", "answeredBy": "timeout"})
    );
    let got = await_pushbacks(&server, &d, 1).await;
    assert!(got[0].contains("decided myself"), "{got:?}");
    assert_recorded(
        &server,
        [&w, &d],
        &qid,
        "no answer: decide yourself",
        "timeout",
    )
    .await;
    let late = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": qid, "answer": "tabs"}),
    )
    .await;
    assert_eq!(late["code"], "NO_SUCH_QUESTION", "{late}");
}

/// A restart kills the Worker's turn, and with it the waiting `ask_driver` call. The
/// question survives in the Worker's record (still `needs_input`); its answer, given
/// once after the restart, reaches the Worker as a new message, exactly once across
/// further restarts.
#[actix_rt::test]
async fn a_question_survives_a_restart_and_is_answered_once() {
    let server = Server::start_process(Default::default());
    let (mut ws, d) = driver(&server).await;
    let (_, qid, w) = delegate_asking(
        &mut ws,
        &d,
        json!({"question": "Keep the cache?"}),
        "never said",
    )
    .await;
    stored_question(&server, &w).await;
    ws.close().await;
    let dir = server.kill();
    let server = Server::start_process_in(dir, Default::default());
    // The Worker's turn was cut off, the delegation reported interrupted once; the
    // question still waits.
    let got = await_pushbacks(&server, &d, 1).await;
    assert!(got[0].contains("restarted"), "{got:?}");
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(winfo["status"], "interrupted", "{winfo}");
    assert_eq!(winfo["attention"], "needs_input", "{winfo}");
    let mut ws = server.ws().await;
    ws.subscribe(&d, 0).await;
    let (ans, err) = ws
        .scripted_tool(
            &d,
            "answer_worker",
            json!({"questionId": qid, "answer": "drop it"}),
        )
        .await;
    assert!(!err, "{ans}");
    // The answer comes to the Worker as a message of its own (its call died).
    let delivered = eventually("the answer delivered to the Worker", async || {
        let texts = crate::pairs::pushbacks(&server, &w).await;
        (!texts.is_empty()).then_some(texts)
    })
    .await;
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert!(
        delivered[0].contains(&qid) && delivered[0].contains("drop it"),
        "{delivered:?}"
    );
    assert_recorded(&server, [&w, &d], &qid, "drop it", "driver").await;
    ws.close().await;
    // Another restart delivers nothing again, and the question stays answered.
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    let mut ws = server.ws().await;
    let late = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": qid, "answer": "again"}),
    )
    .await;
    assert_eq!(late["code"], "NO_SUCH_QUESTION", "{late}");
    assert_ne!(attention(&server, &w).await, "needs_input");
    assert_eq!(crate::pairs::pushbacks(&server, &w).await.len(), 1);
    assert_recorded(&server, [&w, &d], &qid, "drop it", "driver").await;
}

/// A person stops the Worker while its question waits: the call is gone, the question
/// is not. The Driver's answer then reaches the Worker as a new message, once.
#[actix_rt::test]
async fn an_interrupted_worker_gets_the_answer_as_a_message() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let script = asking(json!({"question": "Rename it?"}), "never said");
    let (out, _) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": script, "wait": false}),
        )
        .await;
    let w = out["partnerId"].as_str().unwrap().to_string();
    let qid = stored_question(&server, &w).await["questionId"]
        .as_str()
        .unwrap()
        .to_string();
    ws.ok(json!({"type": "chat.abort", "sessionId": w})).await;
    eventually("the Worker's turn to end", async || {
        let (_, info) = server.get(&format!("/api/v1/sessions/{w}")).await;
        (info["status"] == "interrupted").then_some(())
    })
    .await;
    assert_eq!(attention(&server, &w).await, "needs_input");
    let answered = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": qid, "answer": "keep the name"}),
    )
    .await;
    assert_eq!(answered["isError"], false, "{answered}");
    let delivered = eventually("the answer delivered to the Worker", async || {
        let texts = crate::pairs::pushbacks(&server, &w).await;
        (!texts.is_empty()).then_some(texts)
    })
    .await;
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert!(delivered[0].contains("keep the name"), "{delivered:?}");
    assert_recorded(&server, [&w, &d], &qid, "keep the name", "driver").await;
}

#[actix_rt::test]
async fn refusals_and_a_closed_pair() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    // An unknown question.
    let created = ws
        .ok(json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"}}))
        .await;
    let w = created["pair"]["workerId"].as_str().unwrap().to_string();
    let pair_id = created["pair"]["pairId"].as_str().unwrap().to_string();
    let unknown = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": "q_unknown", "answer": "x"}),
    )
    .await;
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert_eq!(unknown["code"], "NO_SUCH_QUESTION", "{unknown}");
    // Each side has only its own tool.
    let refused = tool_call(&mut ws, &d, "ask_driver", json!({"question": "me?"})).await;
    assert_eq!(refused["code"], "TOOL_NOT_AVAILABLE", "{refused}");
    let refused = tool_call(
        &mut ws,
        &w,
        "answer_worker",
        json!({"questionId": "q_x", "answer": "x"}),
    )
    .await;
    assert_eq!(refused["code"], "TOOL_NOT_AVAILABLE", "{refused}");
    let empty = tool_call(&mut ws, &w, "ask_driver", json!({"question": "  "})).await;
    assert_eq!(empty["code"], "INVALID_ARGUMENT", "{empty}");
    // A question waits; a second one is refused while it does.
    let script = asking(json!({"question": "First?"}), "after");
    let (out, _) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": script, "wait": false}),
        )
        .await;
    assert_eq!(out["status"], "running", "{out}");
    let asked = stored_question(&server, &w).await;
    let qid = asked["questionId"].as_str().unwrap().to_string();
    let second = tool_call(&mut ws, &w, "ask_driver", json!({"question": "Second?"})).await;
    assert_eq!(second["code"], "CONFLICT", "{second}");
    assert_eq!(attention(&server, &w).await, "needs_input");
    // The pair closes while the question waits: nobody will answer it.
    ws.ok(json!({"type": "pair.close", "pairId": pair_id}))
        .await;
    eventually("the question closed with the pair", async || {
        (!events_of(&server, &w, "question_answered").await.is_empty()).then_some(())
    })
    .await;
    assert_recorded(
        &server,
        [&w, &d],
        &qid,
        "no answer: the pair was closed",
        "pairClosed",
    )
    .await;
    assert_ne!(attention(&server, &w).await, "needs_input");
    // The former Worker's Driver is gone: a question is refused with its code.
    let gone = tool_call(&mut ws, &w, "ask_driver", json!({"question": "Anyone?"})).await;
    assert_eq!(gone["isError"], true, "{gone}");
    assert_eq!(gone["code"], "NOT_PAIRED", "{gone}");
    let late = ws
        .request(
            json!({"type": "question.answer", "sessionId": w, "questionId": qid, "answer": "x"}),
        )
        .await;
    assert_eq!(late["code"], "NO_SUCH_QUESTION", "{late}");
}

/// The Worker on another node than its Driver (and its pair): the question travels to
/// the pair's node, the Driver's answer back to the Worker's node, a person's answer
/// through either node; each side's history records both once.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_worker_on_another_node_asks_its_driver() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    crate::cluster_pairs::knows(&a, &b).await;
    let (mut ws, d) = driver(&a).await;
    let w = crate::cluster_pairs::pair_on(&mut ws, &d, "b").await;

    // A waiting delegation gets the question, and the Driver's answer reaches B.
    let (_, qid, partner) = delegate_asking(
        &mut ws,
        &d,
        json!({"question": "Which region?"}),
        "deploying there",
    )
    .await;
    assert_eq!(partner, w);
    stored_question(&b, &w).await;
    assert_eq!(attention(&b, &w).await, "needs_input");
    let unknown = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": "q_nowhere", "answer": "x"}),
    )
    .await;
    assert_eq!(unknown["code"], "NO_SUCH_QUESTION", "{unknown}");
    let (ans, err) = ws
        .scripted_tool(
            &d,
            "answer_worker",
            json!({"questionId": qid, "answer": "eu-west"}),
        )
        .await;
    assert!(!err, "{ans}");
    assert_eq!(
        ask_result(&b, &w).await,
        json!({"questionId": qid, "answer": "eu-west", "answeredBy": "driver"})
    );
    let got = await_pushbacks(&a, &d, 1).await;
    assert!(got[0].contains("deploying there"), "{got:?}");
    assert_recorded_in(&b, &w, &qid, "eu-west", "driver").await;
    assert_recorded_in(&a, &d, &qid, "eu-west", "driver").await;
    let late = tool_call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": qid, "answer": "us-east"}),
    )
    .await;
    assert_eq!(late["code"], "NO_SUCH_QUESTION", "{late}");

    // A Worker's own turn asks: pushed into the Driver on A as a message, and a
    // person answers through A's REST route (the request goes to B).
    let mut wws = b.ws().await;
    wws.subscribe(&w, 0).await;
    wws.ok(json!({"type": "chat.send", "sessionId": w,
        "content": "/tool ask_driver {\"question\": \"Retry?\"}"}))
        .await;
    let second = eventually("the second question on B", async || {
        events_of(&b, &w, "question")
            .await
            .into_iter()
            .find(|e| e["question"] == "Retry?")
    })
    .await;
    let qid2 = second["questionId"].as_str().unwrap().to_string();
    eventually("the question pushed into the Driver on A", async || {
        crate::pairs::pushbacks(&a, &d)
            .await
            .into_iter()
            .find(|t| t.contains(&qid2))
    })
    .await;
    let (status, body) = a
        .post(
            &format!("/api/v1/sessions/{w}/questions/{qid2}/answer"),
            &json!({"answer": "once more"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let result = eventually("the second answer on B", async || {
        events_of(&b, &w, "tool_result")
            .await
            .into_iter()
            .map(|e| e["output"].clone())
            .find(|o| o["questionId"] == qid2.as_str())
    })
    .await;
    assert_eq!(result["answeredBy"], "user", "{result}");
    assert_eq!(result["answer"], "once more", "{result}");
    let answered_on_a = eventually("the second answer recorded on A", async || {
        events_of(&a, &d, "question_answered")
            .await
            .into_iter()
            .find(|e| e["questionId"] == qid2.as_str())
    })
    .await;
    assert_eq!(answered_on_a["by"], "user");
}

/// The Driver's node is killed while its Worker's question (on another node) waits:
/// the Worker's call waits on, and after the restart the Driver's answer reaches it,
/// once; the delegation's result is pushed back once.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn the_drivers_node_restarts_while_a_remote_worker_waits() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    crate::cluster_pairs::knows(&a, &b).await;
    let (mut ws, d) = driver(&a).await;
    let w = crate::cluster_pairs::pair_on(&mut ws, &d, "b").await;
    let (_, qid, partner) = delegate_asking(
        &mut ws,
        &d,
        json!({"question": "Merge now?"}),
        "merged after the restart",
    )
    .await;
    assert_eq!(partner, w);
    stored_question(&b, &w).await;
    ws.close().await;
    let dir = a.kill();
    let a = nats.restart_node(dir, "a");
    let mut ws = a.ws().await;
    let (_, info) = a.get(&format!("/api/v1/sessions/{d}")).await;
    ws.subscribe(&d, info["lastSeq"].as_u64().unwrap()).await;
    let (ans, err) = ws
        .scripted_tool(
            &d,
            "answer_worker",
            json!({"questionId": qid, "answer": "yes"}),
        )
        .await;
    assert!(!err, "{ans}");
    // The call on B never stopped waiting: it returns the answer.
    assert_eq!(
        ask_result(&b, &w).await,
        json!({"questionId": qid, "answer": "yes", "answeredBy": "driver"})
    );
    let got = await_pushbacks(&a, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("merged after the restart"), "{got:?}");
    assert_recorded_in(&b, &w, &qid, "yes", "driver").await;
    assert_recorded_in(&a, &d, &qid, "yes", "driver").await;
}

/// The Driver disappears from the store while the server is stopped and its Worker's
/// question waits: start-up closes the pair and ends the question (nobody can answer
/// it), so the Worker no longer asks for input.
#[actix_rt::test]
async fn a_question_whose_driver_is_gone_at_start_ends_with_the_pair() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;
    let (_, qid, w) = delegate_asking(
        &mut ws,
        &d,
        json!({"question": "Still there?"}),
        "never said",
    )
    .await;
    stored_question(&server, &w).await;
    ws.close().await;
    let dir = server.terminate();
    let db = dir.path().join("data").join("tandem.db");
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    conn.execute("DELETE FROM events WHERE session_id = ?1", [&d])
        .unwrap_or_else(|e| panic!("{e}"));
    let deleted = conn
        .execute("DELETE FROM sessions WHERE id = ?1", [&d])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deleted, 1, "no session row {d}");
    drop(conn);
    let server = Server::start_in(dir, ServerOptions::default());
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert!(winfo.get("pairId").is_none(), "{winfo}");
    assert_ne!(winfo["attention"], "needs_input", "{winfo}");
    assert_recorded_in(
        &server,
        &w,
        &qid,
        "no answer: the pair was closed",
        "pairClosed",
    )
    .await;
    let mut ws = server.ws().await;
    let gone = tool_call(&mut ws, &w, "ask_driver", json!({"question": "Anyone?"})).await;
    assert_eq!(gone["code"], "NOT_PAIRED", "{gone}");
}
