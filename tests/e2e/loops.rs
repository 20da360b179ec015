//! Loops until done (`loop.start`, `loop.stop`), end to end with the scripted vendor:
//! a command check that passes on its third run, one that never passes, a judge in a
//! session of its own, stop, interrupt, restarts mid-turn and mid-cooldown, and the
//! refusals.

use serde_json::{json, Value};
use tandem_tests::{eventually, Server, ServerOptions, WsClient};

/// Events of `kind` in a session's stored history.
async fn events_of(server: &Server, sid: &str, kind: &str) -> Vec<Value> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// The session's `loop_ended` event, once the loop ended.
async fn ended(server: &Server, sid: &str) -> Value {
    eventually(&format!("{sid}'s loop to end"), async || {
        events_of(server, sid, "loop_ended")
            .await
            .into_iter()
            .next()
    })
    .await
}

/// The texts of the session's user messages, oldest first.
async fn user_messages(server: &Server, sid: &str) -> Vec<String> {
    events_of(server, sid, "user_message")
        .await
        .iter()
        .map(|e| e["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A client and a fresh session it is subscribed to.
async fn session(server: &Server) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    (ws, sid)
}

/// Starts a loop over WebSocket; the reply.
async fn start(ws: &mut WsClient, sid: &str, fields: Value) -> Value {
    let mut body = json!({"type": "loop.start", "sessionId": sid});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    ws.request(body).await
}

/// A check that counts its runs in the working directory and passes on the third.
const THIRD_TIME: &str = r#"n=$(cat loop-count 2>/dev/null || echo 0); n=$((n+1)); echo $n > loop-count; echo "attempt $n"; [ "$n" -ge 3 ]"#;

#[actix_rt::test]
async fn a_command_check_loops_until_it_passes_and_each_iteration_hears_the_last_check() {
    let server = Server::start();
    let (mut ws, sid) = session(&server).await;
    let reply = start(
        &mut ws,
        &sid,
        json!({"goal": "make the third attempt pass", "check": {"command": THIRD_TIME},
            "maxIterations": 5}),
    )
    .await;
    assert_eq!(reply["kind"], "reply", "{reply}");
    let info = &reply["loop"];
    assert_eq!(info["iteration"], 1, "{reply}");
    assert_eq!(info["maxIterations"], 5, "{reply}");
    assert!(info["loopId"].as_str().unwrap().starts_with("loop_"));

    let end = ended(&server, &sid).await;
    assert_eq!(end["reason"], "passed", "{end}");
    assert_eq!(end["iterations"], 3, "{end}");
    let checks = events_of(&server, &sid, "loop_iteration").await;
    let seen: Vec<(u64, bool)> = checks
        .iter()
        .map(|e| (e["n"].as_u64().unwrap(), e["check"]["passed"] == true))
        .collect();
    assert_eq!(seen, vec![(1, false), (2, false), (3, true)], "{checks:?}");
    assert!(
        checks[0]["check"]["output"]
            .as_str()
            .unwrap()
            .contains("attempt 1"),
        "{checks:?}"
    );
    assert_eq!(checks[0]["check"]["exitCode"], 1, "{checks:?}");
    // Each iteration is a turn with the goal first; the later ones carry the last
    // check's output.
    let messages = user_messages(&server, &sid).await;
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages
        .iter()
        .all(|m| m.starts_with("make the third attempt pass")));
    assert!(messages[0].contains("iteration 1 of 5"), "{messages:?}");
    assert!(
        messages[2].contains("iteration 3 of 5")
            && messages[2].contains("The last check failed:\nattempt 2"),
        "{messages:?}"
    );
    let started = events_of(&server, &sid, "loop_started").await;
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["check"]["command"], THIRD_TIME);
    // Over, the session shows no loop.
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert!(info.get("loop").is_none(), "{info}");
}

#[actix_rt::test]
async fn a_check_that_never_passes_ends_at_max_iterations_and_a_cooldown_is_shown() {
    let server = Server::start();
    let (mut ws, sid) = session(&server).await;
    start(
        &mut ws,
        &sid,
        json!({"goal": "try", "check": {"command": "echo nope; exit 3"}, "maxIterations": 2,
            "cooldownSeconds": 1}),
    )
    .await;
    // Between the iterations the session shows the cooldown and when it ends.
    let cooling = eventually("the loop's cooldown on the session", async || {
        let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
        (info["loop"]["phase"] == "cooldown").then_some(info)
    })
    .await;
    assert_eq!(cooling["loop"]["iteration"], 2, "{cooling}");
    assert!(cooling["loop"]["nextAt"].as_u64().is_some(), "{cooling}");
    let end = ended(&server, &sid).await;
    assert_eq!(end["reason"], "maxIterations", "{end}");
    assert_eq!(end["iterations"], 2, "{end}");
    let checks = events_of(&server, &sid, "loop_iteration").await;
    assert_eq!(checks.len(), 2);
    assert!(checks
        .iter()
        .all(|c| c["check"]["passed"] == false && c["check"]["exitCode"] == 3));
}

#[actix_rt::test]
async fn a_judge_in_a_session_of_its_own_decides() {
    let server = Server::start();
    let (mut ws, sid) = session(&server).await;
    // The scripted judge answers with the prompt's first line.
    start(
        &mut ws,
        &sid,
        json!({"goal": "write the report", "check": {"judge": {"prompt": "PASS: the report is written"}},
            "maxIterations": 3}),
    )
    .await;
    let end = ended(&server, &sid).await;
    assert_eq!(end["reason"], "passed", "{end}");
    assert_eq!(end["iterations"], 1, "{end}");
    let check = &events_of(&server, &sid, "loop_iteration").await[0]["check"];
    let judge = check["judgeSessionId"].as_str().unwrap().to_string();
    assert!(
        check["output"]
            .as_str()
            .unwrap()
            .starts_with("PASS: the report is written"),
        "{check}"
    );
    let (_, info) = server.get(&format!("/api/v1/sessions/{judge}")).await;
    assert_eq!(info["permissionMode"], "plan", "{info}");
    assert!(
        info["title"].as_str().unwrap().starts_with("Judge of"),
        "{info}"
    );
    // The judge was told the goal and the iteration's answer.
    let asked = user_messages(&server, &judge).await;
    assert!(
        asked[0].contains("Goal: write the report") && asked[0].contains("PASS or FAIL"),
        "{asked:?}"
    );

    // A judge that fails every iteration: asked again in the same session.
    let (mut ws, sid) = session(&server).await;
    start(
        &mut ws,
        &sid,
        json!({"goal": "again", "check": {"judge": {"prompt": "FAIL: no tests", "vendor": "scripted"}},
            "maxIterations": 2}),
    )
    .await;
    let end = ended(&server, &sid).await;
    assert_eq!(end["reason"], "maxIterations", "{end}");
    let checks = events_of(&server, &sid, "loop_iteration").await;
    assert_eq!(checks.len(), 2);
    assert_eq!(
        checks[0]["check"]["judgeSessionId"],
        checks[1]["check"]["judgeSessionId"]
    );
    let messages = user_messages(&server, &sid).await;
    assert!(
        messages[1].contains("The last check failed:\nFAIL: no tests"),
        "{messages:?}"
    );
}

#[actix_rt::test]
async fn stop_and_an_interrupt_end_a_loop() {
    let server = Server::start();
    // Stopped in its cooldown: no further iteration.
    let (mut ws, sid) = session(&server).await;
    start(
        &mut ws,
        &sid,
        json!({"goal": "try", "check": {"command": "false"}, "maxIterations": 5,
            "cooldownSeconds": 3600}),
    )
    .await;
    eventually("the first check", async || {
        events_of(&server, &sid, "loop_iteration")
            .await
            .into_iter()
            .next()
    })
    .await;
    let (status, stopped) = server.delete(&format!("/api/v1/sessions/{sid}/loop")).await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["iterations"], 1, "{stopped}");
    let end = ended(&server, &sid).await;
    assert_eq!(end["reason"], "stopped", "{end}");
    let again = ws
        .request(json!({"type": "loop.stop", "sessionId": sid}))
        .await;
    assert_eq!(again["code"], "CONFLICT", "{again}");

    // Interrupted in an iteration's turn: the loop ends with it.
    let (mut ws, sid) = session(&server).await;
    start(
        &mut ws,
        &sid,
        json!({"goal": "/hold loop-interrupt", "check": {"command": "true"}, "maxIterations": 3}),
    )
    .await;
    server.wait_held("loop-interrupt").await;
    ws.ok(json!({"type": "chat.abort", "sessionId": sid})).await;
    let end = ended(&server, &sid).await;
    assert_eq!(end["reason"], "interrupted", "{end}");
    assert_eq!(end["iterations"], 1, "{end}");
    assert!(events_of(&server, &sid, "loop_iteration").await.is_empty());
}

#[actix_rt::test]
async fn a_loop_resumes_after_a_restart_mid_turn_and_mid_cooldown() {
    let server = Server::start_process(Default::default());
    let (mut ws, cut) = session(&server).await;
    start(
        &mut ws,
        &cut,
        json!({"goal": "/hold loop-restart\ndone", "check": {"command": "true"}, "maxIterations": 3}),
    )
    .await;
    let (mut ws2, cooling) = session(&server).await;
    start(
        &mut ws2,
        &cooling,
        json!({"goal": "try", "check": {"command": "false"}, "maxIterations": 2,
            "cooldownSeconds": 2}),
    )
    .await;
    server.wait_held("loop-restart").await;
    eventually("the second loop's cooldown", async || {
        let (_, info) = server.get(&format!("/api/v1/sessions/{cooling}")).await;
        (info["loop"]["phase"] == "cooldown").then_some(())
    })
    .await;
    drop((ws, ws2));
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());

    // The cut-off iteration runs again (its turn died with the process).
    server.wait_held("loop-restart").await;
    server.release("loop-restart").await;
    let end = ended(&server, &cut).await;
    assert_eq!(end["reason"], "passed", "{end}");
    assert_eq!(end["iterations"], 1, "{end}");
    assert_eq!(user_messages(&server, &cut).await.len(), 2);
    // The cooldown keeps its deadline, then the second iteration runs.
    let end = ended(&server, &cooling).await;
    assert_eq!(end["reason"], "maxIterations", "{end}");
    assert_eq!(end["iterations"], 2, "{end}");
    assert_eq!(user_messages(&server, &cooling).await.len(), 2);
}

#[actix_rt::test]
async fn refusals_have_codes() {
    let server = Server::start();
    let (mut ws, sid) = session(&server).await;
    let check = json!({"command": "true"});
    for (fields, code) in [
        (
            json!({"goal": "x", "check": {"command": "true", "judge": {"prompt": "p"}}, "maxIterations": 1}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"goal": "x", "check": {}, "maxIterations": 1}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"goal": "x", "check": check, "maxIterations": 0}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"goal": "x", "check": check, "maxIterations": 101}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"goal": "  ", "check": check, "maxIterations": 1}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"goal": "x", "check": {"judge": {"prompt": "p", "vendor": "nobody"}}, "maxIterations": 1}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"goal": "x", "check": {"command": "true", "timeoutSeconds": 0}, "maxIterations": 1}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"goal": "x", "check": check, "maxIterations": 1, "extra": 1}),
            "INVALID_ARGUMENT",
        ),
    ] {
        let reply = start(&mut ws, &sid, fields.clone()).await;
        assert_eq!(reply["code"], code, "{fields}: {reply}");
    }
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/loop"),
            &json!({"goal": "x", "check": {}, "maxIterations": 1}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = server
        .post(
            "/api/v1/sessions/ses_nope/loop",
            &json!({"goal": "x", "check": check, "maxIterations": 1}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = server.delete(&format!("/api/v1/sessions/{sid}/loop")).await;
    assert_eq!(status, 409, "{body}");

    // A busy session, and a second loop while one runs.
    ws.chat(&sid, "/hold loop-busy").await;
    server.wait_held("loop-busy").await;
    let busy = start(
        &mut ws,
        &sid,
        json!({"goal": "x", "check": check, "maxIterations": 1}),
    )
    .await;
    assert_eq!(busy["code"], "RUN_IN_PROGRESS", "{busy}");
    server.release("loop-busy").await;
    ws.recv_until(|v| v["kind"] == "turn_completed").await;
    let first = start(
        &mut ws,
        &sid,
        json!({"goal": "x", "check": {"command": "false"}, "maxIterations": 2,
            "cooldownSeconds": 3600}),
    )
    .await;
    assert_eq!(first["kind"], "reply", "{first}");
    let second = start(
        &mut ws,
        &sid,
        json!({"goal": "y", "check": check, "maxIterations": 1}),
    )
    .await;
    assert_eq!(second["code"], "CONFLICT", "{second}");
}

/// A loop started while background work of an earlier turn runs waits for it, as a
/// queued message does, then runs.
#[actix_rt::test]
async fn an_iteration_waits_for_background_work() {
    let server = Server::start();
    let (mut ws, sid) = session(&server).await;
    ws.ok(
        json!({"type": "chat.send", "sessionId": sid, "content": "/background t1 800 a long job"}),
    )
    .await;
    ws.recv_until(|v| v["kind"] == "turn_completed").await;
    let reply = start(
        &mut ws,
        &sid,
        json!({"goal": "after the job", "check": {"command": "true"}, "maxIterations": 1}),
    )
    .await;
    assert_eq!(reply["kind"], "reply", "{reply}");
    let end = ended(&server, &sid).await;
    assert_eq!(end["reason"], "passed", "{end}");
    // The iteration's turn began only once the background set was empty again.
    let events = server.all_events(&sid).await;
    let emptied = events
        .iter()
        .position(|e| e["kind"] == "background_tasks" && e["tasks"] == json!([]))
        .unwrap_or_else(|| panic!("{events:?}"));
    let iteration = events
        .iter()
        .position(|e| {
            e["kind"] == "user_message"
                && e["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("after the job"))
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert!(emptied < iteration, "{events:?}");
}
