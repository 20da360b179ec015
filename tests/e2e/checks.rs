//! `session.check` against real git, a real shell and a real server: the checks of
//! the repository's `.tandem/worktree.toml` run in order in the working directory,
//! each a `check` event with its status, exit code and output tail; a slow one is
//! killed at its limit with what it started; the merge gate (`merge_requires_checks`)
//! refuses a merge whose last checks did not pass unless forced; a check runs
//! confined like the agents where the kernel has Landlock.

use serde_json::{json, Value};
use tandem_tests::{Server, WsClient};

use crate::workspaces::{git, repo};

/// Writes `.tandem/worktree.toml` into `dir` and commits it.
fn project(dir: &std::path::Path, text: &str) {
    std::fs::create_dir_all(dir.join(".tandem")).unwrap();
    std::fs::write(dir.join(".tandem/worktree.toml"), text).unwrap();
    git(dir, &["add", ".tandem"]);
    git(dir, &["commit", "-q", "-m", "checks"]);
}

/// A subscribed session created with `extra`.
async fn session(ws: &mut WsClient, extra: Value) -> String {
    let mut create = json!({"type": "session.create"});
    for (k, v) in extra.as_object().unwrap() {
        create[k] = v.clone();
    }
    let sid = ws.ok(create).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    sid
}

#[actix_rt::test]
async fn checks_run_in_order_with_status_exit_code_and_output() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    project(
        &dir,
        "[[checks]]\nname = \"unit\"\ncommand = \"test -f a.txt && echo ok\"\n\
         [[checks]]\nname = \"lint\"\ncommand = \"echo bad >&2; exit 2\"\n\
         [[checks]]\nname = \"slow\"\ncommand = \"echo begun; sleep 60 & echo $! > bg.pid; sleep 60\"\ntimeout_secs = 1\n",
    );
    let mut ws = server.ws().await;
    let sid = session(&mut ws, json!({"cwd": dir})).await;
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{sid}/check"), &json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    let checks = body["checks"].as_array().unwrap();
    let summary: Vec<(&str, &str, Value)> = checks
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
                c["exitCode"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("unit", "passed", json!(0)),
            ("lint", "failed", json!(2)),
            ("slow", "timedOut", Value::Null)
        ]
    );
    assert_eq!(checks[0]["logTail"], "ok\n");
    assert_eq!(checks[1]["logTail"], "bad\n");
    assert!(
        checks[2]["logTail"]
            .as_str()
            .unwrap()
            .starts_with("begun\n"),
        "{}",
        checks[2]
    );
    assert!(checks[2]["durationMs"].as_u64().unwrap() < 10_000);
    // What the slow check started went with it.
    let pid = std::fs::read_to_string(dir.join("bg.pid")).unwrap();
    let pid = pid.trim().to_string();
    tandem_tests::eventually("the check's background sleep to end", async || {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let gone = state.is_none_or(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|st| st == "Z" || st == "X")
        });
        gone.then_some(())
    })
    .await;
    // Each check is an event, in order; the session keeps the last outcome.
    let events: Vec<Value> = server
        .all_events(&sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "check")
        .collect();
    assert_eq!(events.len(), 3);
    assert_eq!(events[1]["name"], "lint");
    assert_eq!(events[1]["status"], "failed");
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["lastChecks"], body["checks"]);

    // A repository without the file has no checks; a broken file is a clear 422.
    let bare = repo(&server, "bare");
    let other = session(&mut ws, json!({"cwd": bare})).await;
    let none = ws
        .ok(json!({"type": "session.check", "sessionId": other}))
        .await;
    assert_eq!(none["checks"], json!([]));
    project(&bare, "[[checks]]\nname = \"x\"\n");
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{other}/check"), &json!({}))
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(".tandem/worktree.toml"),
        "{body}"
    );
}

#[actix_rt::test]
async fn a_merge_waits_for_passing_checks_where_the_repository_requires_them() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    project(
        &dir,
        "merge_requires_checks = true\n\
         [[checks]]\nname = \"has-b\"\ncommand = \"test -f b.txt\"\n",
    );
    let mut ws = server.ws().await;
    let sid = session(&mut ws, json!({"cwd": dir, "workspace": "worktree"})).await;
    ws.chat(&sid, "/write c.txt c").await;
    ws.events_until_turn_end(&sid).await;
    let merge = format!("/api/v1/sessions/{sid}/merge");

    let (status, body) = server.post(&merge, &json!({"strategy": "squash"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "CHECKS_FAILED", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("none have run"),
        "{body}"
    );
    let failed = ws
        .ok(json!({"type": "session.check", "sessionId": sid}))
        .await;
    assert_eq!(failed["checks"][0]["status"], "failed");
    let (status, body) = server.post(&merge, &json!({"strategy": "squash"})).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("has-b"),
        "{body}"
    );

    ws.chat(&sid, "/write b.txt b").await;
    ws.events_until_turn_end(&sid).await;
    let passed = ws
        .ok(json!({"type": "session.check", "sessionId": sid}))
        .await;
    assert_eq!(passed["checks"][0]["status"], "passed");
    let (status, body) = server.post(&merge, &json!({"strategy": "squash"})).await;
    assert_eq!(status, 200, "{body}");
    assert!(dir.join("b.txt").exists());
}

#[actix_rt::test]
async fn force_merges_past_failed_checks() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    project(
        &dir,
        "merge_requires_checks = true\n[[checks]]\nname = \"never\"\ncommand = \"false\"\n",
    );
    let mut ws = server.ws().await;
    let sid = session(&mut ws, json!({"cwd": dir, "workspace": "worktree"})).await;
    ws.chat(&sid, "/write c.txt c").await;
    ws.events_until_turn_end(&sid).await;
    ws.ok(json!({"type": "session.check", "sessionId": sid}))
        .await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/merge"),
            &json!({"strategy": "merge", "force": true}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(dir.join("c.txt").exists());
}

/// A check's command comes from a file agents write: it gets what they get. Confined,
/// it cannot read a file beside the working directory (standing for the data
/// directory or another user's root).
#[actix_rt::test]
#[cfg_attr(not(has_landlock), ignore = "the kernel does not enforce Landlock")]
async fn a_check_is_confined_like_the_agents() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let secret = dir.parent().unwrap().join("beside.txt");
    std::fs::write(&secret, "not yours\n").unwrap();
    project(
        &dir,
        &format!(
            "[[checks]]\nname = \"peek\"\ncommand = \"cat {}\"\n",
            secret.display()
        ),
    );
    let mut ws = server.ws().await;
    let sid = session(&mut ws, json!({"cwd": dir})).await;
    let done = ws
        .ok(json!({"type": "session.check", "sessionId": sid}))
        .await;
    let peek = &done["checks"][0];
    assert_eq!(peek["status"], "failed", "{peek}");
    assert!(
        !peek["logTail"].as_str().unwrap().contains("not yours"),
        "{peek}"
    );
}

/// With `checks_on_delegation`, a worktree Worker's delegation end runs the checks on
/// its branch; their outcome travels with its changes to the Driver (the waiting
/// `send_to_partner`'s result, and the pushed-back text) and is in its history.
#[actix_rt::test]
async fn a_workers_delegation_end_runs_the_checks_and_the_driver_sees_them() {
    let server = Server::start_with(tandem_tests::ServerOptions {
        args: vec!["--worker-workspace".into(), "worktree".into()],
        ..tandem_tests::ServerOptions::default()
    });
    let base = repo(&server, "proj");
    project(
        &base,
        "checks_on_delegation = true\n\
         [[checks]]\nname = \"has-w\"\ncommand = \"test -f w.txt && echo found\"\n\
         [[checks]]\nname = \"lint\"\ncommand = \"echo lint says no; exit 4\"\n",
    );
    let mut ws = server.ws().await;
    let d = session(&mut ws, json!({"cwd": base})).await;
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write w.txt by the worker"}),
        )
        .await;
    assert!(!err, "{out}");
    let checks = &out["changes"]["checks"];
    assert_eq!(checks[0]["name"], "has-w", "{out}");
    assert_eq!(checks[0]["status"], "passed", "{out}");
    assert_eq!(checks[0]["logTail"], "found\n", "{out}");
    assert_eq!(checks[1]["status"], "failed", "{out}");
    assert_eq!(checks[1]["exitCode"], 4, "{out}");
    let w = out["partnerId"].as_str().unwrap().to_string();
    let recorded = tandem_tests::eventually("the Worker's check events", async || {
        let events: Vec<Value> = server
            .all_events(&w)
            .await
            .into_iter()
            .filter(|e| e["kind"] == "check")
            .collect();
        (events.len() == 2).then_some(events)
    })
    .await;
    assert_eq!(recorded[1]["name"], "lint");
    let (_, winfo) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(winfo["lastChecks"], *checks);

    // Pushed back, the text says so, with the failing check's output.
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write x.txt more\n/hold checks-pushed", "wait": false}),
        )
        .await;
    assert!(!err, "{out}");
    server.release("checks-pushed").await;
    let pushed = tandem_tests::eventually("the result is pushed back", async || {
        server.all_events(&d).await.into_iter().find(|e| {
            e["kind"] == "user_message"
                && e["internal"] == true
                && e["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("Checks on its branch"))
        })
    })
    .await;
    let text = pushed["text"].as_str().unwrap();
    assert!(
        text.contains("has-w passed, lint FAILED (exit 4)"),
        "{text}"
    );
    assert!(
        text.contains("End of lint's output:\nlint says no"),
        "{text}"
    );
}
