//! Going back and branching, against real git and a real server: `chat.edit-send`
//! with `restoreFiles` puts the files back as they were when the edited turn began,
//! and `session.fork` makes a session whose conversation ends with an earlier turn
//! (the scripted agent remembers exactly those turns), in its own worktree holding
//! that turn's files, leaving the source as it was; and the refusals.

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions, WsClient};

use crate::workspaces::{git, repo};

/// Runs one turn; its events up to its `checkpoint` (or `turn_completed` when
/// `checkpoint` is false).
async fn turn(ws: &mut WsClient, sid: &str, content: &str, checkpoint: bool) -> Vec<Value> {
    let sent = ws
        .ok(json!({"type": "chat.send", "sessionId": sid, "content": content}))
        .await;
    let id = sent["turnId"].as_str().unwrap().to_string();
    let kind = if checkpoint {
        "checkpoint"
    } else {
        "turn_completed"
    };
    ws.recv_until(|v| v["kind"] == kind && v["turnId"] == id.as_str() && v["sessionId"] == sid)
        .await
}

/// The `seq` of the `user_message` among `events`.
fn user_seq(events: &[Value]) -> u64 {
    events
        .iter()
        .find(|e| e["kind"] == "user_message")
        .and_then(|e| e["seq"].as_u64())
        .unwrap()
}

/// The assistant messages among `events`.
fn said(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "assistant_message")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// A subscribed client and a session created with `extra` fields.
async fn session(server: &Server, extra: Value) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let mut create = json!({"type": "session.create"});
    for (k, v) in extra.as_object().unwrap() {
        create[k] = v.clone();
    }
    let sid = ws.ok(create).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    (ws, sid)
}

#[actix_rt::test]
async fn edit_send_with_restore_files_puts_back_the_files_the_turn_started_with() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let (mut ws, sid) = session(&server, json!({"cwd": dir})).await;
    turn(&mut ws, &sid, "/write a.txt one", true).await;
    let second = turn(&mut ws, &sid, "/write a.txt two\n/write b.txt new", true).await;
    turn(&mut ws, &sid, "/write a.txt three", true).await;
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "three\n"
    );

    // The first turn's message: nothing was recorded before it, so nothing happens.
    let first_seq = server
        .all_events(&sid)
        .await
        .iter()
        .find(|e| e["kind"] == "user_message")
        .and_then(|e| e["seq"].as_u64())
        .unwrap();
    let refused = ws
        .request(json!({"type": "chat.edit-send", "sessionId": sid,
            "anchorSeq": first_seq, "content": "/history", "restoreFiles": true}))
        .await;
    assert_eq!(refused["code"], "NO_SUCH_CHECKPOINT", "{refused}");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "three\n"
    );

    // Edit the second turn's message: the files go back to the first turn's end.
    let reply = ws
        .ok(json!({"type": "chat.edit-send", "sessionId": sid,
            "anchorSeq": user_seq(&second), "content": "/history", "restoreFiles": true}))
        .await;
    let restored = &reply["restored"];
    assert_eq!(restored["turnId"], "turn_1", "{reply}");
    assert_eq!(restored["files"], json!(["a.txt", "b.txt"]), "{reply}");
    let events = ws.events_until_turn_end(&sid).await;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let at = |k: &str| kinds.iter().position(|x| *x == k).unwrap();
    assert!(
        at("restored") < at("history_rewound") && at("history_rewound") < at("turn_started"),
        "files first, then the rewind, then the new turn: {kinds:?}"
    );
    assert_eq!(said(&events), ["history: /write a.txt one"]);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "one\n");
    assert!(
        !dir.join("b.txt").exists(),
        "the second turn's new file is gone"
    );

    // The restore is undone like any other: back to the third turn's files.
    let undo = restored["undo"].as_str().unwrap();
    ws.ok(json!({"type": "session.restore", "sessionId": sid, "turnId": undo}))
        .await;
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "three\n"
    );
    assert_eq!(std::fs::read_to_string(dir.join("b.txt")).unwrap(), "new\n");
}

#[actix_rt::test]
async fn a_fork_holds_the_turns_up_to_its_anchor_and_the_source_stays() {
    let server = Server::start();
    let (mut ws, sid) = session(&server, json!({"title": "the source"})).await;
    turn(&mut ws, &sid, "first", false).await;
    let second = turn(&mut ws, &sid, "second", false).await;
    turn(&mut ws, &sid, "third", false).await;

    let anchor = user_seq(&second);
    let (status, forked) = server
        .post(
            &format!("/api/v1/sessions/{sid}/fork"),
            &json!({"anchorSeq": anchor}),
        )
        .await;
    assert_eq!(status, 201, "{forked}");
    assert_eq!(forked["conversation"], "transcript");
    let fork = forked["session"].clone();
    let fid = fork["id"].as_str().unwrap().to_string();
    assert_ne!(fid, sid);
    assert_eq!(
        fork["forkedFrom"],
        json!({"sessionId": sid, "anchorSeq": anchor})
    );
    assert_eq!(fork["title"], "the source · fork");
    assert_eq!(
        fork["cwd"],
        server.get(&format!("/api/v1/sessions/{sid}")).await.1["cwd"]
    );
    let first = &server.all_events(&fid).await[0];
    assert_eq!(first["kind"], "forked", "{first}");
    assert_eq!(first["sourceSessionId"], sid.as_str());
    assert_eq!(first["sourceTitle"], "the source");
    assert_eq!(first["anchorSeq"], anchor);
    assert_eq!(first["turns"], 2);

    // The fork's agent has the first two turns, and runs only the new message.
    ws.subscribe(&fid, 0).await;
    let next = turn(&mut ws, &fid, "/history", false).await;
    assert_eq!(said(&next), ["history: first | second"]);
    let user = next.iter().find(|e| e["kind"] == "user_message").unwrap();
    assert_eq!(
        user["text"], "/history",
        "history keeps the message as written"
    );
    let again = turn(&mut ws, &fid, "/history", false).await;
    assert_eq!(said(&again), ["history: first | second | /history"]);

    // The source is unchanged and remembers all three.
    let source = turn(&mut ws, &sid, "/history", false).await;
    assert_eq!(said(&source), ["history: first | second | third"]);
    assert!(server
        .get(&format!("/api/v1/sessions/{sid}"))
        .await
        .1
        .get("forkedFrom")
        .is_none());
}

#[actix_rt::test]
async fn a_worktree_fork_starts_with_the_anchor_turns_files() {
    let server = Server::start();
    let dir = repo(&server, "proj");
    let (mut ws, sid) = session(&server, json!({"cwd": dir, "workspace": "worktree"})).await;
    let first = turn(
        &mut ws,
        &sid,
        "/write a.txt one\n/write new.txt fresh",
        true,
    )
    .await;
    turn(&mut ws, &sid, "/write a.txt two", true).await;
    let source = server.get(&format!("/api/v1/sessions/{sid}")).await.1;
    let source_dir = std::path::PathBuf::from(source["cwd"].as_str().unwrap());

    // Forked right after: the default for a worktree source is a worktree.
    let forked = ws
        .ok(json!({"type": "session.fork", "sessionId": sid,
            "anchorSeq": user_seq(&first), "title": "try again"}))
        .await;
    let fork = &forked["session"];
    assert_eq!(fork["title"], "try again");
    let fork_dir = std::path::PathBuf::from(fork["cwd"].as_str().unwrap());
    assert_ne!(fork_dir, source_dir);
    assert_ne!(fork["workspace"]["branch"], source["workspace"]["branch"]);
    assert_eq!(fork["workspace"]["base"], "main");
    assert_eq!(
        std::fs::read_to_string(fork_dir.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(fork_dir.join("new.txt")).unwrap(),
        "fresh\n"
    );
    let status = git(&fork_dir, &["status", "--porcelain"]);
    assert!(
        status.contains("M a.txt") && status.contains("?? new.txt"),
        "{status}"
    );
    assert_eq!(
        git(&fork_dir, &["rev-parse", "HEAD"]),
        git(&dir, &["rev-parse", "main"]),
        "branched where the source was"
    );
    // The source's files are its own.
    assert_eq!(
        std::fs::read_to_string(source_dir.join("a.txt")).unwrap(),
        "two\n"
    );

    // Asked to share, the fork works in the source's directory as it is.
    let shared = ws
        .ok(json!({"type": "session.fork", "sessionId": sid,
            "anchorSeq": user_seq(&first), "workspace": "shared"}))
        .await;
    assert_eq!(shared["session"]["cwd"], source["cwd"]);
    assert!(shared["session"]
        .get("workspace")
        .is_none_or(Value::is_null));
}

#[actix_rt::test]
async fn a_fork_is_refused_for_a_bad_anchor_no_checkpoint_and_to_others() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let (mut ws, sid) = session(&server, json!({})).await;
    let done = turn(&mut ws, &sid, "hello", false).await;
    let path = format!("/api/v1/sessions/{sid}/fork");
    let completed = done
        .iter()
        .find(|e| e["kind"] == "turn_completed")
        .and_then(|e| e["seq"].as_u64())
        .unwrap();
    for anchor in [completed, 999] {
        let (status, body) = server.post(&path, &json!({"anchorSeq": anchor})).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], "INVALID_ANCHOR", "{body}");
    }
    // Outside a repository no turn has a checkpoint for a worktree to start from.
    let (status, body) = server
        .post(
            &path,
            &json!({"anchorSeq": user_seq(&done), "workspace": "worktree"}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "NO_SUCH_CHECKPOINT", "{body}");
    // A turn still running cannot be forked.
    ws.chat(&sid, "/hold fork-running").await;
    server.wait_held("fork-running").await;
    let running = server
        .all_events(&sid)
        .await
        .iter()
        .rev()
        .find(|e| e["kind"] == "user_message")
        .and_then(|e| e["seq"].as_u64())
        .unwrap();
    let (status, body) = server.post(&path, &json!({"anchorSeq": running})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_ANCHOR", "{body}");
    server.release("fork-running").await;

    let other = server.add_user("mallory");
    let (status, body) = other
        .post(&path, &json!({"anchorSeq": user_seq(&done)}))
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "SESSION_NOT_FOUND", "{body}");
    let (status, body) = server
        .post(
            "/api/v1/sessions/ses_nope/fork",
            &json!({"anchorSeq": user_seq(&done)}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    // Nothing was made by the refusals.
    let (_, list) = server.get("/api/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
}
