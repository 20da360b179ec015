//! A Driver with several Workers, end to end: each Worker is a pair of its own with a
//! name; the partner tools take `worker`; delegations to different Workers run at
//! once and are each reported once; the group survives a restart and spans nodes.

use serde_json::{json, Value};
use tandem_tests::{eventually, NatsServer, Server, ServerOptions, WsClient};

use crate::pairs::await_pushbacks;

/// A client subscribed to a fresh Driver session.
async fn driver(server: &Server) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    (ws, sid)
}

/// `POST /api/v1/pairs` for Driver `d` with a scripted Worker and `extra` fields.
async fn add_worker(server: &Server, d: &str, extra: Value) -> (u16, Value) {
    let mut body = json!({"driverId": d, "worker": {"vendor": "scripted"}});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    server.post("/api/v1/pairs", &body).await
}

/// Calls `name` as `sid` over `tool.call`: `{result, isError, code?}`.
async fn call(ws: &mut WsClient, sid: &str, name: &str, arguments: Value) -> Value {
    ws.ok(json!({"type": "tool.call", "sessionId": sid, "name": name, "arguments": arguments}))
        .await
}

/// The Driver's `workers` as `[(name, worker id, pair id)]`.
async fn workers(server: &Server, d: &str) -> Vec<(String, String, String)> {
    let (status, info) = server.get(&format!("/api/v1/sessions/{d}")).await;
    assert_eq!(status, 200, "{info}");
    info["workers"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .map(|w| {
                    let s = |k: &str| w[k].as_str().unwrap_or_default().to_string();
                    (s("workerName"), s("workerId"), s("pairId"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The pairs of Driver `d` listed by `GET /pairs` that hold a delegation.
async fn delegating(server: &Server, d: &str) -> usize {
    let (_, pairs) = server.get("/api/v1/pairs").await;
    pairs["pairs"].as_array().map_or(0, |ps| {
        ps.iter()
            .filter(|p| p["driverId"] == d && p.get("delegation").is_some())
            .count()
    })
}

#[actix_rt::test]
async fn a_driver_gets_several_named_workers_and_delegates_to_them_at_once() {
    let server = Server::start();
    let (mut ws, d) = driver(&server).await;

    // The first Worker is named after its vendor; the next one as asked.
    let (status, first) = add_worker(&server, &d, json!({})).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["pair"]["workerName"], "scripted");
    let (status, beta) = add_worker(&server, &d, json!({"workerName": "beta"})).await;
    assert_eq!(status, 201, "{beta}");
    assert_eq!(beta["pair"]["workerName"], "beta");
    let w1 = first["pair"]["workerId"].as_str().unwrap().to_string();
    let w2 = beta["pair"]["workerId"].as_str().unwrap().to_string();
    assert_ne!(first["pair"]["pairId"], beta["pair"]["pairId"]);
    // A default name taken gets a number.
    let (status, third) = add_worker(&server, &d, json!({})).await;
    assert_eq!(status, 201, "{third}");
    assert_eq!(third["pair"]["workerName"], "scripted-2");
    let w3 = third["pair"]["workerId"].as_str().unwrap().to_string();

    // Refusals: a name taken, a malformed name, a Worker asked to drive.
    let (status, taken) = add_worker(&server, &d, json!({"workerName": "beta"})).await;
    assert_eq!(
        (status, &taken["error"]["code"]),
        (409, &json!("CONFLICT")),
        "{taken}"
    );
    assert!(
        taken["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("beta")),
        "{taken}"
    );
    let (status, bad) = add_worker(&server, &d, json!({"workerName": "ses_1"})).await;
    assert_eq!(
        (status, &bad["error"]["code"]),
        (400, &json!("INVALID_ARGUMENT")),
        "{bad}"
    );
    let (status, bad) = add_worker(&server, &d, json!({"workerName": "two words"})).await;
    assert!(status == 400 || status == 422, "{status} {bad}");
    let (status, nested) = add_worker(&server, &w1, json!({})).await;
    assert_eq!(
        (status, &nested["error"]["code"]),
        (409, &json!("CONFLICT")),
        "{nested}"
    );

    let listed = workers(&server, &d).await;
    let names: Vec<&str> = listed.iter().map(|w| w.0.as_str()).collect();
    assert_eq!(names, ["scripted", "beta", "scripted-2"]);
    assert_eq!(listed[1].1, w2);
    let (_, dinfo) = server.get(&format!("/api/v1/sessions/{d}")).await;
    assert_eq!(dinfo["role"], "driver");
    assert_eq!(dinfo["pairId"], first["pair"]["pairId"], "the first pair");
    let (_, w2info) = server.get(&format!("/api/v1/sessions/{w2}")).await;
    assert_eq!(w2info["role"], "worker");
    assert_eq!(w2info["title"], "test · Worker beta");
    assert!(w2info.get("workers").is_none(), "{w2info}");

    // With several Workers, a call must say which; an unknown one is named.
    let r = call(&mut ws, &d, "read_partner", json!({})).await;
    assert_eq!(
        (&r["isError"], &r["code"]),
        (&json!(true), &json!("INVALID_ARGUMENT")),
        "{r}"
    );
    let text = r["result"].as_str().unwrap_or_default();
    assert!(text.contains("beta") && text.contains(&w3), "{r}");
    // An id none of them has is not taken for a new Worker's name.
    let r = call(
        &mut ws,
        &d,
        "send_to_partner",
        json!({"worker": "ses_nobody", "message": "x"}),
    )
    .await;
    assert_eq!(r["code"], "INVALID_ARGUMENT", "{r}");
    let r = call(&mut ws, &d, "interrupt_partner", json!({"worker": "gamma"})).await;
    assert_eq!(r["code"], "INVALID_ARGUMENT", "{r}");
    assert!(
        r["result"]
            .as_str()
            .is_some_and(|t| t.contains("no Worker `gamma`")),
        "{r}"
    );
    // By name or by session id.
    let r = call(&mut ws, &d, "read_partner", json!({"worker": w2})).await;
    assert_eq!(
        (&r["isError"], &r["result"]["workerName"]),
        (&json!(false), &json!("beta")),
        "{r}"
    );

    // Two delegations at once: both Workers stand at their hold together.
    for (name, hold) in [("scripted", "first"), ("beta", "second")] {
        let message = format!("/hold {hold}\n{name} is done");
        let (out, err) = ws
            .scripted_tool(
                &d,
                "send_to_partner",
                json!({"worker": name, "message": message, "wait": false}),
            )
            .await;
        assert!(!err, "{out}");
        assert_eq!(
            (&out["status"], &out["workerName"]),
            (&json!("running"), &json!(name)),
            "{out}"
        );
    }
    server.wait_held("first").await;
    server.wait_held("second").await;
    assert_eq!(delegating(&server, &d).await, 2);
    // The third Worker is free while the others work.
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"worker": "scripted-2", "message": "third answer"}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(
        (&out["status"], &out["response"]),
        (&json!("complete"), &json!("third answer")),
        "{out}"
    );
    server.release("second").await;
    server.release("first").await;

    // Each result is pushed back once, signed by its Worker.
    let got = await_pushbacks(&server, &d, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    for (name, worker) in [("scripted", &w1), ("beta", &w2)] {
        let mine: Vec<&String> = got
            .iter()
            .filter(|t| t.contains(&format!("{name} is done")))
            .collect();
        assert_eq!(mine.len(), 1, "{got:?}");
        assert!(
            mine[0].contains(&format!("From your Worker `{name}`, session {worker}")),
            "{mine:?}"
        );
    }

    // A name none of the Workers has makes a new Worker.
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"worker": "gamma", "message": "gamma here"}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(
        (&out["workerCreated"], &out["workerName"], &out["response"]),
        (&json!(true), &json!("gamma"), &json!("gamma here")),
        "{out}"
    );

    // Closing one Worker leaves the others; closing the first makes the next the
    // Driver's first.
    let r = call(&mut ws, &d, "close_partner", json!({"worker": "beta"})).await;
    assert_eq!(
        (&r["isError"], &r["result"]["partnerId"]),
        (&json!(false), &json!(w2)),
        "{r}"
    );
    let (_, w2info) = server.get(&format!("/api/v1/sessions/{w2}")).await;
    assert!(w2info.get("role").is_none(), "{w2info}");
    let r = call(&mut ws, &d, "close_partner", json!({"worker": "scripted"})).await;
    assert_eq!(r["isError"], false, "{r}");
    let listed = workers(&server, &d).await;
    let names: Vec<&str> = listed.iter().map(|w| w.0.as_str()).collect();
    assert_eq!(names, ["scripted-2", "gamma"]);
    let (_, dinfo) = server.get(&format!("/api/v1/sessions/{d}")).await;
    assert_eq!(
        (&dinfo["role"], &dinfo["pairId"]),
        (&json!("driver"), &json!(listed[0].2))
    );
    // A name freed by a closed Worker may be given again.
    let (status, again) = add_worker(&server, &d, json!({"workerName": "beta"})).await;
    assert_eq!(status, 201, "{again}");
}

#[actix_rt::test]
async fn a_drivers_workers_survive_a_restart_and_answers_find_their_worker() {
    let server = Server::start_process(Default::default());
    let (mut ws, d) = driver(&server).await;
    for name in ["alpha", "beta"] {
        let (status, made) = add_worker(&server, &d, json!({"workerName": name})).await;
        assert_eq!(status, 201, "{made}");
    }
    // beta asks while it works for a detached delegation; the question is pushed
    // into the Driver, which answers without saying which Worker asked.
    let ask = json!({"question": "which colour?"});
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"worker": "beta", "wait": false,
                "message": format!("/tool ask_driver {ask}\nbeta went on")}),
        )
        .await;
    assert!(!err, "{out}");
    let question = eventually("beta's question pushed into the Driver", async || {
        let events = server.all_events(&d).await;
        events
            .iter()
            .find(|e| e["kind"] == "question")
            .map(|e| e["questionId"].as_str().unwrap_or_default().to_string())
    })
    .await;
    let r = call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": question, "answer": "blue"}),
    )
    .await;
    assert_eq!(
        (&r["isError"], &r["result"]["workerName"]),
        (&json!(false), &json!("beta")),
        "{r}"
    );
    let got = await_pushbacks(&server, &d, 2).await;
    assert!(
        got.iter()
            .any(|t| t.contains("[Question from your Worker") && t.contains("`beta`")),
        "{got:?}"
    );
    assert!(got.iter().any(|t| t.contains("beta went on")), "{got:?}");
    // An answer to a question no Worker has is refused as unknown.
    let r = call(
        &mut ws,
        &d,
        "answer_worker",
        json!({"questionId": "q_nope", "answer": "x"}),
    )
    .await;
    assert_eq!(r["code"], "NO_SUCH_QUESTION", "{r}");

    let before = workers(&server, &d).await;
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    assert_eq!(workers(&server, &d).await, before);
    let (_, pairs) = server.get("/api/v1/pairs").await;
    let running = pairs["pairs"].as_array().map_or(0, |ps| {
        ps.iter().filter(|p| p["driverId"] == d.as_str()).count()
    });
    assert_eq!(running, 2, "{pairs}");
    // Both still take work, by name.
    let (_, info) = server.get(&format!("/api/v1/sessions/{d}")).await;
    let mut ws = server.ws().await;
    ws.subscribe(&d, info["lastSeq"].as_u64().unwrap_or(0))
        .await;
    for name in ["alpha", "beta"] {
        let (out, err) = ws
            .scripted_tool(
                &d,
                "send_to_partner",
                json!({"worker": name, "message": format!("{name} after")}),
            )
            .await;
        assert!(!err, "{out}");
        assert_eq!(out["response"], format!("{name} after"), "{out}");
    }
}

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_driver_has_workers_on_two_nodes_at_once() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    crate::cluster_pairs::knows(&a, &b).await;
    let (mut ws, d) = driver(&a).await;
    let local = ws
        .ok(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerName": "here"}),
        )
        .await;
    let remote = ws
        .ok(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerName": "there", "workerNode": "b"}),
        )
        .await;
    let w_remote = remote["pair"]["workerId"].as_str().unwrap().to_string();
    assert_eq!(local["pair"]["workerName"], "here");
    // The name is taken across nodes too: it is the Driver's.
    let taken = ws
        .request(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerName": "there", "workerNode": "b"}),
        )
        .await;
    assert_eq!(taken["code"], "CONFLICT", "{taken}");

    for (name, hold) in [("here", "on-a"), ("there", "on-b")] {
        let (out, err) = ws
            .scripted_tool(
                &d,
                "send_to_partner",
                json!({"worker": name, "wait": false,
                    "message": format!("/hold {hold}\n{name} finished")}),
            )
            .await;
        assert!(!err, "{out}");
    }
    a.wait_held("on-a").await;
    b.wait_held("on-b").await;
    assert_eq!(delegating(&a, &d).await, 2);
    // The remote Worker is read where it runs.
    let r = call(&mut ws, &d, "read_partner", json!({"worker": "there"})).await;
    assert_eq!(
        (&r["result"]["partnerId"], &r["result"]["status"]),
        (&json!(w_remote), &json!("running")),
        "{r}"
    );
    b.release("on-b").await;
    a.release("on-a").await;
    let got = await_pushbacks(&a, &d, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    for name in ["here", "there"] {
        assert_eq!(
            got.iter()
                .filter(
                    |t| t.contains(&format!("{name} finished")) && t.contains(&format!("`{name}`"))
                )
                .count(),
            1,
            "{got:?}"
        );
    }
    // Closing the remote one leaves the local one.
    let r = call(&mut ws, &d, "close_partner", json!({"worker": "there"})).await;
    assert_eq!(r["isError"], false, "{r}");
    let names: Vec<String> = workers(&a, &d).await.into_iter().map(|w| w.0).collect();
    assert_eq!(names, ["here"]);
}

/// The user messages of session `id` on `server`, oldest first.
async fn user_messages(server: &Server, id: &str) -> Vec<Value> {
    server
        .all_events(id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "user_message")
        .collect()
}

/// A Driver's scheduled message and its loop's iterations delegate like any message,
/// to a named Worker on another node.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn scheduled_and_looped_work_of_a_driver_reaches_its_worker_on_another_node() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    crate::cluster_pairs::knows(&a, &b).await;
    let (mut ws, d) = driver(&a).await;
    ws.ok(
        json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
        "workerName": "here"}),
    )
    .await;
    let far = ws
        .ok(
            json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"},
            "workerName": "far", "workerNode": "b"}),
        )
        .await;
    let w = far["pair"]["workerId"].as_str().unwrap().to_string();

    // A message scheduled for now, naming the Worker on b.
    let delegate = |message: &str| {
        format!(
            "/tool send_to_partner {}",
            json!({"worker": "far", "message": message})
        )
    };
    let (status, made) = a
        .post(
            &format!("/api/v1/sessions/{d}/schedules"),
            &json!({"content": delegate("scheduled work"),
                "at": crate::schedule::rfc3339(crate::schedule::now_ms())}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let got = eventually("the scheduled task on b", async || {
        user_messages(&b, &w)
            .await
            .into_iter()
            .find(|m| m["text"] == "scheduled work")
    })
    .await;
    assert_eq!(got["delegatedBy"], d.as_str(), "{got}");
    let result = eventually("the Driver's send_to_partner result", async || {
        a.all_events(&d)
            .await
            .into_iter()
            .find(|e| e["kind"] == "tool_result" && e["output"]["response"] == "scheduled work")
    })
    .await;
    assert_eq!(result["output"]["workerName"], "far", "{result}");

    // A loop whose goal delegates: its first iteration reaches b, its check passes.
    let started = ws
        .ok(
            json!({"type": "loop.start", "sessionId": d, "goal": delegate("loop work"),
            "check": {"command": "true"}, "maxIterations": 2}),
        )
        .await;
    assert!(started["loop"]["loopId"].is_string(), "{started}");
    let end = eventually("the loop's end", async || {
        a.all_events(&d)
            .await
            .into_iter()
            .find(|e| e["kind"] == "loop_ended")
    })
    .await;
    assert_eq!(
        (&end["reason"], &end["iterations"]),
        (&json!("passed"), &json!(1)),
        "{end}"
    );
    let on_b = user_messages(&b, &w).await;
    assert_eq!(
        on_b.iter().filter(|m| m["text"] == "loop work").count(),
        1,
        "{on_b:?}"
    );
}
