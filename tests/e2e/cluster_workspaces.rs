//! The workspace REST routes (`/api/v1/sessions/{id}/changes`, `.../files`,
//! `.../merge`, `.../discard`) of a worktree session on node A, used through node B:
//! B forwards them to A, whose git checkout they read and change. And a worktree
//! Worker on node B whose delegation's outcome, on A, carries B's change summary.

use std::path::PathBuf;

use serde_json::json;
use tandem_tests::{eventually, NatsServer};

use crate::workspaces::{git, repo};

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_worktree_session_of_one_node_is_read_and_merged_through_another() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node("b");
    let base = repo(&a, "proj");
    let mut on_a = a.ws().await;
    let info = on_a
        .ok(json!({"type": "session.create", "title": "wt", "cwd": base, "workspace": "worktree"}))
        .await["session"]
        .clone();
    let sid = info["id"].as_str().unwrap().to_string();
    let cwd = PathBuf::from(info["cwd"].as_str().unwrap());
    on_a.subscribe(&sid, 0).await;
    on_a.ok(json!({"type": "chat.send", "sessionId": sid,
        "content": "/write a.txt changed\n/write b.txt new"}))
        .await;
    on_a.events_until_turn_end(&sid).await;
    on_a.recv_until(|v| v["kind"] == "git_state" && v["sessionId"] == sid.as_str())
        .await;
    let session = format!("/api/v1/sessions/{sid}");
    // B knows the session once the directory has it.
    eventually("B lists the session", async || {
        let (status, _) = b.get(&session).await;
        (status == 200).then_some(())
    })
    .await;

    // Reads through B are A's answers, byte for byte.
    for path in [
        format!("{session}/changes"),
        format!("{session}/changes/diff?path=a.txt"),
        format!("{session}/changes/diff?path=nowhere.txt"),
        format!("{session}/files"),
        format!("{session}/files/content?path=b.txt"),
        format!("{session}/files/content?path=..%2Fsecret"),
    ] {
        assert_eq!(b.get(&path).await, a.get(&path).await, "GET {path}");
    }
    let (status, changes) = b.get(&format!("{session}/changes")).await;
    assert_eq!(status, 200, "{changes}");
    let text = changes.to_string();
    assert!(
        text.contains("a.txt") && text.contains("b.txt"),
        "{changes}"
    );
    let (status, outside) = b
        .get(&format!("{session}/files/content?path=..%2Fsecret"))
        .await;
    assert_eq!(
        (status, outside["error"]["code"].clone()),
        (403, json!("PATH_OUTSIDE_WORKSPACE")),
        "{outside}"
    );

    // A write through B lands in A's worktree.
    let (status, _, saved) = b
        .put(
            &format!("{session}/files/content?path=c.txt"),
            &json!({"content": "from b\n"}),
            Some("*"),
        )
        .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(
        std::fs::read_to_string(cwd.join("c.txt")).unwrap(),
        "from b\n"
    );

    // A dirty base refuses the merge with the same error as on A; then it merges.
    std::fs::write(base.join("a.txt"), "local edit\n").unwrap();
    let (status, dirty) = b
        .post(&format!("{session}/merge"), &json!({"strategy": "squash"}))
        .await;
    assert_eq!(
        (status, dirty["error"]["code"].clone()),
        (409, json!("BASE_DIRTY")),
        "{dirty}"
    );
    std::fs::write(base.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let (status, merged) = b
        .post(
            &format!("{session}/merge"),
            &json!({"strategy": "squash", "message": "merged through b"}),
        )
        .await;
    assert_eq!(status, 200, "{merged}");
    assert_eq!(
        git(&base, &["log", "-1", "--format=%s"]),
        "merged through b"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("c.txt")).unwrap(),
        "from b\n"
    );

    // Discarded through B: A's worktree goes.
    let (status, discarded) = b.post(&format!("{session}/discard"), &json!({})).await;
    assert_eq!(status, 200, "{discarded}");
    assert!(!cwd.exists(), "the worktree is still there");

    // A shared session of A: its state, and the same refusal through B as on A.
    let shared = on_a
        .ok(json!({"type": "session.create", "title": "shared", "cwd": base}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shared_changes = format!("/api/v1/sessions/{shared}/changes");
    eventually("B lists the shared session", async || {
        let (status, _) = b.get(&format!("/api/v1/sessions/{shared}")).await;
        (status == 200).then_some(())
    })
    .await;
    let (status, state) = b.get(&shared_changes).await;
    assert_eq!(
        (status, state["branch"].clone()),
        (200, json!("main")),
        "{state}"
    );
    assert_eq!(b.get(&shared_changes).await, a.get(&shared_changes).await);
    let discard = format!("/api/v1/sessions/{shared}/discard");
    let (status, refused) = b.post(&discard, &json!({})).await;
    assert_eq!(
        (status, refused["error"]["code"].clone()),
        (409, json!("NOT_A_WORKTREE")),
        "{refused}"
    );
    assert_eq!(a.post(&discard, &json!({})).await, (status, refused));
}

/// A Worker on node B in a worktree of its own: its delegation's outcome carries its
/// branch and diff summary, summed up on B, both as the waiting tool's result and in
/// a push-back, as a local worktree Worker's does.
#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_worktree_worker_on_another_node_reports_its_branch_and_changes() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let base = repo(&a, "proj");
    // B may work in A's directories: both nodes share this machine's filesystem.
    let b = nats.node_with(
        "b",
        &[
            "--workspace-root".into(),
            a.dir.path().display().to_string(),
        ],
    );
    let mut on_a = a.ws().await;
    let d = on_a
        .ok(json!({"type": "session.create", "cwd": base}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    on_a.subscribe(&d, 0).await;
    let created = eventually("B to take the Worker", async || {
        let created = on_a
            .request(json!({"type": "pair.create", "driverId": d,
                "worker": {"vendor": "scripted"}, "workerNode": "b",
                "workerWorkspace": "worktree"}))
            .await;
        (created["kind"] == "reply").then_some(created)
    })
    .await;
    let w = created["pair"]["workerId"].as_str().unwrap().to_string();
    let (_, winfo) = b.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(winfo["node"], "b", "{winfo}");
    let branch = winfo["workspace"]["branch"].as_str().unwrap().to_string();

    let (out, err) = on_a
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write a.txt by the worker"}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(
        out["changes"],
        json!({"branch": branch, "files": 1, "added": 1, "removed": 3}),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n",
        "the Worker wrote in its own worktree"
    );
    let ended = a
        .all_events(&d)
        .await
        .into_iter()
        .find(|e| e["kind"] == "delegation" && e["active"] == false)
        .unwrap();
    assert_eq!(ended["changes"], out["changes"], "{ended}");

    // Nobody waits: pushed back with the branch and the summary.
    let (out, err) = on_a
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write b.txt more\n/hold pushed", "wait": false}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "running", "{out}");
    b.release("pushed").await;
    let got = crate::pairs::await_pushbacks(&a, &d, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains(&branch) && got[0].contains("2 files changed, +2 -3 lines"),
        "{}",
        got[0]
    );
}
