//! The REST API against its OpenAPI description: the server serves the checked-in
//! snapshot, every documented route answers with its documented status, every answer
//! (errors included) validates against the described schema, and the control routes
//! added for REST parity refuse what the WebSocket refuses, with the same codes.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::images::PNG;
use tandem_tests::json_schema::validate;
use tandem_tests::vendor_clis::repo_root;
use tandem_tests::{eventually, Server, WsClient};

use crate::schedule::{now_ms, rfc3339};

/// Calls routes and checks each answer against the description.
struct Checker<'a> {
    server: &'a Server,
    doc: Value,
    /// `(method, path template)` of every route that answered with success.
    covered: BTreeSet<(String, String)>,
}

impl Checker<'_> {
    /// Sends `method path` with `body` (its content type and bytes); returns the
    /// status and the answer's bytes.
    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> (u16, Vec<u8>) {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(30))
            .finish();
        let url = format!("{}/api/v1{path}", self.server.base);
        let req = match method {
            "get" => client.get(url),
            "post" => client.post(url),
            "patch" => client.patch(url),
            "delete" => client.delete(url),
            "put" => client.put(url),
            other => panic!("method {other}"),
        };
        let sent = match body {
            Some((content_type, bytes)) => {
                req.insert_header(("Content-Type", content_type))
                    .send_body(bytes)
                    .await
            }
            None => req.send().await,
        };
        let mut resp = sent.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let bytes = resp.body().limit(64 << 20).await.unwrap();
        (resp.status().as_u16(), bytes.to_vec())
    }

    /// The documented operation `method template`.
    fn op(&self, method: &str, template: &str) -> Value {
        let op = self.doc["paths"][format!("/api/v1{template}")][method].clone();
        assert!(op.is_object(), "{method} {template} is not documented");
        op
    }

    /// `method path` (concrete) for the documented `template`; checks the answer and
    /// returns its status and body.
    async fn call(
        &mut self,
        method: &str,
        path: &str,
        template: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let body = match body {
            Some(b) => Some(("application/json", b.to_string().into_bytes())),
            // The guard wants the JSON content type on every POST, body or not.
            None if method == "post" => Some(("application/json", Vec::new())),
            None => None,
        };
        let (status, bytes) = self.send(method, path, body).await;
        self.check_json(method, path, template, status, &bytes)
    }

    /// Checks a JSON answer against the description: a documented success status
    /// with its schema, or an error with the error schema.
    fn check_json(
        &mut self,
        method: &str,
        path: &str,
        template: &str,
        status: u16,
        bytes: &[u8],
    ) -> (u16, Value) {
        let value: Value = serde_json::from_slice(bytes)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e})"));
        let op = self.op(method, template);
        // Errors too: each operation lists the error statuses it answers with.
        let schema =
            op["responses"][status.to_string()]["content"]["application/json"]["schema"].clone();
        assert!(
            !schema.is_null(),
            "{method} {path}: undocumented status {status}: {value}"
        );
        if status < 400 {
            self.covered
                .insert((method.to_string(), template.to_string()));
        }
        if let Err(e) = validate(&schema, &value, &self.doc) {
            panic!("{method} {path} ({status}): the answer does not match the description: {e}\n{value}");
        }
        (status, value)
    }

    /// A route documented with raw bytes (`*/*`) as its body or its answer, which must
    /// succeed: `body` goes as it is; a JSON answer is checked as [`Checker::call`]
    /// does, a bytes answer must be documented as such. Returns the answer's bytes.
    async fn ok_bytes(
        &mut self,
        method: &str,
        path: &str,
        template: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Vec<u8> {
        let op = self.op(method, template);
        if body.is_some() {
            assert!(
                op["requestBody"]["content"]["*/*"].is_object(),
                "{method} {template}: its body is not documented as bytes"
            );
        }
        let (status, bytes) = self.send(method, path, body).await;
        assert!(status < 300, "{method} {path}: {status}");
        if op["responses"][status.to_string()]["content"]["*/*"].is_object() {
            self.covered
                .insert((method.to_string(), template.to_string()));
        } else {
            self.check_json(method, path, template, status, &bytes);
        }
        bytes
    }

    /// [`Checker::call`] that must succeed.
    async fn ok(&mut self, method: &str, path: &str, template: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, path, template, body).await;
        assert!(status < 300, "{method} {path}: {status} {value}");
        value
    }
}

/// Polls the session's events until one of `kind` is stored (bounded).
async fn stored_event(server: &Server, id: &str, kind: &str) -> Value {
    eventually(&format!("a {kind} event in {id}"), async || {
        server
            .all_events(id)
            .await
            .into_iter()
            .find(|e| e["kind"] == kind)
    })
    .await
}

/// Waits until the session is listed idle (bounded).
async fn idle(server: &Server, id: &str) {
    eventually(&format!("{id} to be idle"), async || {
        let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
        (info["status"] == "idle").then_some(())
    })
    .await;
}

/// The error code a WebSocket request is refused with.
async fn ws_code(ws: &mut WsClient, frame: Value) -> String {
    let answer = ws.request(frame).await;
    answer["code"].as_str().unwrap_or("(accepted)").to_string()
}

#[actix_rt::test]
async fn every_documented_route_answers_as_described() {
    // A Claude Code vendor (never run here) whose HOME holds one transcript, so that
    // `external.import` has something to import.
    let dir = std::sync::Arc::new(tandem_tests::TempDir::new("openapi"));
    use tandem_tests::transcripts::{claude_home, prompt_line};
    let line = prompt_line("cli-1", dir.path(), "say hi");
    let (config, _) = claude_home(
        dir.path(),
        &[("cli-1", line)],
        "\n[mcp_servers.gone]\ncommand = \"/bin/false\"\n",
    );
    let server = Server::start_in(dir, tandem_tests::ServerOptions::with_config(&config));
    let (status, served) = server.get("/api/v1/openapi.json").await;
    assert_eq!(status, 200);
    let snapshot: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("protocol/schemas/openapi.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        served, snapshot,
        "the server serves the checked-in description"
    );
    assert_eq!(served["openapi"], "3.1.0");
    let mut c = Checker {
        server: &server,
        doc: served.clone(),
        covered: BTreeSet::new(),
    };

    c.ok("get", "/health", "/health", None).await;
    c.ok("get", "/openapi.json", "/openapi.json", None).await;
    c.ok("get", "/vendors", "/vendors", None).await;
    c.ok("get", "/fleet", "/fleet", None).await;
    let s1 = c
        .ok(
            "post",
            "/sessions",
            "/sessions",
            Some(json!({"title": "one"})),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let s2 = c
        .ok(
            "post",
            "/sessions",
            "/sessions",
            Some(json!({"title": "two"})),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let s3 = c
        .ok(
            "post",
            "/sessions",
            "/sessions",
            Some(json!({"title": "three"})),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    c.ok("get", "/sessions?limit=2", "/sessions", None).await;
    c.ok("get", "/sessions/running", "/sessions/running", None)
        .await;
    c.ok("get", &format!("/sessions/{s1}"), "/sessions/{id}", None)
        .await;
    c.ok(
        "get",
        &format!("/sessions/{s1}/checkpoints"),
        "/sessions/{id}/checkpoints",
        None,
    )
    .await;
    c.ok(
        "patch",
        &format!("/sessions/{s3}"),
        "/sessions/{id}",
        Some(json!({"title": "renamed"})),
    )
    .await;

    // A message, then the same message edited (a rewind).
    c.ok(
        "post",
        &format!("/sessions/{s3}/messages"),
        "/sessions/{id}/messages",
        Some(json!({"content": "first"})),
    )
    .await;
    let first = stored_event(&server, &s3, "user_message").await;
    idle(&server, &s3).await;
    c.ok(
        "post",
        &format!("/sessions/{s3}/edit-send"),
        "/sessions/{id}/edit-send",
        Some(json!({"anchorSeq": first["seq"], "content": "first, edited"})),
    )
    .await;
    idle(&server, &s3).await;

    // A file: uploaded as raw bytes, used in a message, read back both ways.
    let uploaded = c
        .ok_bytes(
            "post",
            "/uploads?name=dot.png",
            "/uploads",
            Some(("image/png", PNG.to_vec())),
        )
        .await;
    let uploaded: Value = serde_json::from_slice(&uploaded).unwrap();
    let upload_id = uploaded["uploadId"].as_str().unwrap().to_string();
    c.ok(
        "post",
        &format!("/sessions/{s3}/messages"),
        "/sessions/{id}/messages",
        Some(json!({"content": [
            {"type": "text", "text": "see this"},
            {"type": "image", "uploadId": upload_id}
        ]})),
    )
    .await;
    idle(&server, &s3).await;
    let own = c
        .ok_bytes(
            "get",
            &format!("/uploads/{upload_id}"),
            "/uploads/{uploadId}",
            None,
        )
        .await;
    assert_eq!(own, PNG);
    let through_session = c
        .ok_bytes(
            "get",
            &format!("/sessions/{s3}/uploads/{upload_id}"),
            "/sessions/{id}/uploads/{uploadId}",
            None,
        )
        .await;
    assert_eq!(through_session, PNG);

    // A background task, stopped over REST.
    let bg = "/background t1 600000 a long job";
    c.ok(
        "post",
        &format!("/sessions/{s1}/messages"),
        "/sessions/{id}/messages",
        Some(json!({"content": bg})),
    )
    .await;
    stored_event(&server, &s1, "background_tasks").await;
    idle(&server, &s1).await;
    c.ok(
        "post",
        &format!("/sessions/{s1}/tasks/t1/stop"),
        "/sessions/{id}/tasks/{taskId}/stop",
        None,
    )
    .await;
    c.ok(
        "get",
        &format!("/sessions/{s1}/events?after=0&limit=10"),
        "/sessions/{id}/events",
        None,
    )
    .await;

    // A tool approval, answered over REST.
    let ask = "/ask shell {\"command\": \"ls\"}";
    c.ok(
        "post",
        &format!("/sessions/{s2}/messages"),
        "/sessions/{id}/messages",
        Some(json!({"content": ask})),
    )
    .await;
    let request = stored_event(&server, &s2, "permission_request").await;
    let rid = request["requestId"].as_str().unwrap().to_string();
    c.ok(
        "post",
        &format!("/sessions/{s2}/permissions/{rid}"),
        "/sessions/{id}/permissions/{requestId}",
        Some(json!({"allow": false, "message": "not now"})),
    )
    .await;
    idle(&server, &s2).await;
    let said = stored_event(&server, &s2, "assistant_message").await;
    assert!(
        said["text"]
            .as_str()
            .is_some_and(|t| t.contains("denied shell: not now")),
        "{said}"
    );

    // Interrupt a running turn.
    c.ok(
        "post",
        &format!("/sessions/{s2}/messages"),
        "/sessions/{id}/messages",
        Some(json!({"content": "/hold never"})),
    )
    .await;
    c.ok(
        "post",
        &format!("/sessions/{s2}/interrupt"),
        "/sessions/{id}/interrupt",
        None,
    )
    .await;
    c.ok(
        "post",
        &format!("/sessions/{s2}/mcp-token"),
        "/sessions/{id}/mcp-token",
        None,
    )
    .await;

    // The queue and usage.
    // (`ok` checks each answer against its documented schema.)
    c.ok(
        "get",
        &format!("/sessions/{s1}/queue"),
        "/sessions/{id}/queue",
        None,
    )
    .await;
    c.ok(
        "get",
        &format!("/sessions/{s1}/usage"),
        "/sessions/{id}/usage",
        None,
    )
    .await;
    let commands = c
        .ok(
            "get",
            &format!("/sessions/{s1}/commands"),
            "/sessions/{id}/commands",
            None,
        )
        .await;
    assert_eq!(
        commands["commands"],
        json!([]),
        "the scripted vendor lists none"
    );

    // The CLI sessions on this machine: the one transcript, and a session continuing it.
    let external = c
        .ok(
            "get",
            "/external-sessions?vendor=claude",
            "/external-sessions",
            None,
        )
        .await;
    assert_eq!(
        external["sessions"][0]["vendorSessionId"], "cli-1",
        "{external}"
    );
    let imported = c
        .ok(
            "post",
            "/external-sessions/import",
            "/external-sessions/import",
            Some(json!({"vendor": "claude", "vendorSessionId": "cli-1"})),
        )
        .await;
    assert_eq!(imported["vendorSessionId"], "cli-1", "{imported}");

    // The agents' MCP servers: listed, one probed (a program that exits at once).
    let servers = c.ok("get", "/mcp-servers", "/mcp-servers", None).await;
    assert_eq!(servers["servers"][0]["name"], "gone", "{servers}");
    let probed = c
        .ok(
            "post",
            "/mcp-servers/gone/probe",
            "/mcp-servers/{name}/probe",
            Some(json!({})),
        )
        .await;
    assert_eq!(probed["reachable"], false, "{probed}");
    // One of the caller's own: added, then removed.
    let added = c
        .ok(
            "post",
            "/mcp-servers",
            "/mcp-servers",
            Some(json!({"name": "mine", "url": "http://127.0.0.1:9/mcp"})),
        )
        .await;
    assert_eq!(added["scope"], "user", "{added}");
    let removed = c
        .ok("delete", "/mcp-servers/mine", "/mcp-servers/{name}", None)
        .await;
    assert_eq!(removed["name"], "mine", "{removed}");

    // Terminals: open, list, close.
    let term = c
        .ok(
            "post",
            &format!("/sessions/{s1}/terminals"),
            "/sessions/{id}/terminals",
            Some(json!({"cols": 80, "rows": 24})),
        )
        .await;
    let tid = term["terminalId"].as_str().unwrap().to_string();
    let terms = c
        .ok(
            "get",
            &format!("/sessions/{s1}/terminals"),
            "/sessions/{id}/terminals",
            None,
        )
        .await;
    assert_eq!(terms["terminals"][0]["terminalId"], tid.as_str(), "{terms}");
    c.ok(
        "delete",
        &format!("/sessions/{s1}/terminals/{tid}"),
        "/sessions/{id}/terminals/{terminalId}",
        None,
    )
    .await;

    // Schedules: create, list, cancel.
    let at = rfc3339(now_ms() + 3_600_000);
    let made = c
        .ok(
            "post",
            &format!("/sessions/{s1}/schedules"),
            "/sessions/{id}/schedules",
            Some(json!({"content": "later", "at": at})),
        )
        .await;
    let sid = made["scheduleId"].as_str().unwrap().to_string();
    let list = c
        .ok(
            "get",
            &format!("/sessions/{s1}/schedules"),
            "/sessions/{id}/schedules",
            None,
        )
        .await;
    assert!(list.to_string().contains(&sid), "{list}");
    let cancelled = c
        .ok(
            "delete",
            &format!("/sessions/{s1}/schedules/{sid}"),
            "/sessions/{id}/schedules/{scheduleId}",
            None,
        )
        .await;
    assert_eq!(cancelled["status"], "cancelled");

    // A loop on a session of its own: started (its check fails, so it cools down an
    // hour before its second iteration) and stopped.
    let looping = c
        .ok(
            "post",
            "/sessions",
            "/sessions",
            Some(json!({"title": "loop"})),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let started = c
        .ok(
            "post",
            &format!("/sessions/{looping}/loop"),
            "/sessions/{id}/loop",
            Some(
                json!({"goal": "work", "check": {"command": "false"}, "maxIterations": 3,
                "cooldownSeconds": 3600}),
            ),
        )
        .await;
    assert_eq!(started["loop"]["iteration"], 1, "{started}");
    let stopped = c
        .ok(
            "delete",
            &format!("/sessions/{looping}/loop"),
            "/sessions/{id}/loop",
            None,
        )
        .await;
    assert_eq!(stopped["loopId"], started["loop"]["loopId"], "{stopped}");

    // Workspaces: a worktree session in a real repository, its changes, its files,
    // merged and discarded.
    let repo = server.dir.path().join("openapi-repo");
    std::fs::create_dir_all(&repo).unwrap();
    for args in [
        vec!["init", "-q", "-b", "main"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@localhost",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(&args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    let wt = c
        .ok(
            "post",
            "/sessions",
            "/sessions",
            Some(json!({"cwd": repo, "workspace": "worktree"})),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    c.ok(
        "post",
        &format!("/sessions/{wt}/messages"),
        "/sessions/{id}/messages",
        Some(json!({"content": "/write a.txt hello"})),
    )
    .await;
    stored_event(&server, &wt, "git_state").await;
    let checkpoint = stored_event(&server, &wt, "checkpoint").await;
    c.ok(
        "post",
        &format!("/sessions/{wt}/restore"),
        "/sessions/{id}/restore",
        Some(json!({"turnId": checkpoint["turnId"]})),
    )
    .await;
    let bare = server.dir.path().join("openapi-remote.git");
    let made = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&bare)
        .status()
        .unwrap()
        .success();
    assert!(made);
    let added = std::process::Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["remote", "add", "origin"])
        .arg(&bare)
        .status()
        .unwrap()
        .success();
    assert!(added);
    c.ok(
        "post",
        &format!("/sessions/{wt}/push"),
        "/sessions/{id}/push",
        Some(json!({})),
    )
    .await;
    c.ok(
        "post",
        &format!("/sessions/{wt}/check"),
        "/sessions/{id}/check",
        Some(json!({})),
    )
    .await;
    // The run script, declared in the checkout the worktree came from for the while.
    std::fs::create_dir_all(repo.join(".tandem")).unwrap();
    std::fs::write(repo.join(".tandem/worktree.toml"), "run = \"sleep 600\"\n").unwrap();
    let started = c
        .ok(
            "post",
            &format!("/sessions/{wt}/run"),
            "/sessions/{id}/run",
            Some(json!({})),
        )
        .await;
    assert_eq!(started["running"], true);
    c.ok(
        "get",
        &format!("/sessions/{wt}/run/log"),
        "/sessions/{id}/run/log",
        None,
    )
    .await;
    let stopped = c
        .ok(
            "post",
            &format!("/sessions/{wt}/run/stop"),
            "/sessions/{id}/run/stop",
            Some(json!({})),
        )
        .await;
    assert_eq!(stopped["running"], false);
    std::fs::remove_dir_all(repo.join(".tandem")).unwrap();
    c.ok(
        "post",
        &format!("/sessions/{wt}/rebase"),
        "/sessions/{id}/rebase",
        Some(json!({})),
    )
    .await;
    let message = stored_event(&server, &wt, "user_message").await;
    c.ok(
        "post",
        &format!("/sessions/{wt}/review"),
        "/sessions/{id}/review",
        Some(json!({"comments": [{"path": "a.txt", "line": 1, "body": "why?"}]})),
    )
    .await;
    stored_event(&server, &wt, "review").await;
    idle(&server, &wt).await;
    let reviewing = c
        .ok(
            "post",
            &format!("/sessions/{wt}/review-by"),
            "/sessions/{id}/review-by",
            Some(json!({"vendor": "scripted", "instructions": "look closely"})),
        )
        .await;
    idle(&server, reviewing["reviewSessionId"].as_str().unwrap()).await;
    let seen = c
        .ok(
            "post",
            &format!("/sessions/{wt}/seen"),
            "/sessions/{id}/seen",
            Some(json!({"seq": message["seq"]})),
        )
        .await;
    assert_eq!(seen["sessionId"], wt.as_str());
    let forked = c
        .ok(
            "post",
            &format!("/sessions/{wt}/fork"),
            "/sessions/{id}/fork",
            Some(json!({"anchorSeq": message["seq"], "title": "tried again"})),
        )
        .await;
    assert_eq!(forked["session"]["forkedFrom"]["sessionId"], wt.as_str());
    c.ok(
        "get",
        &format!("/sessions/{wt}/changes"),
        "/sessions/{id}/changes",
        None,
    )
    .await;
    c.ok(
        "get",
        &format!("/sessions/{wt}/changes/diff?path=a.txt"),
        "/sessions/{id}/changes/diff",
        None,
    )
    .await;
    c.ok(
        "get",
        &format!("/sessions/{wt}/files"),
        "/sessions/{id}/files",
        None,
    )
    .await;
    c.ok(
        "get",
        &format!("/sessions/{wt}/files/content?path=a.txt"),
        "/sessions/{id}/files/content",
        None,
    )
    .await;
    c.ok(
        "put",
        &format!("/sessions/{wt}/files/content?path=b.txt"),
        "/sessions/{id}/files/content",
        Some(json!({"content": "new\n"})),
    )
    .await;
    c.ok(
        "post",
        &format!("/sessions/{wt}/merge"),
        "/sessions/{id}/merge",
        Some(json!({"strategy": "merge"})),
    )
    .await;
    c.ok(
        "post",
        &format!("/sessions/{wt}/discard"),
        "/sessions/{id}/discard",
        None,
    )
    .await;

    // Handoff, pairs, archive.
    idle(&server, &s1).await;
    let handed = c
        .ok(
            "post",
            &format!("/sessions/{s1}/handoff"),
            "/sessions/{id}/handoff",
            Some(json!({"targetVendor": "scripted"})),
        )
        .await;
    assert_eq!(handed["sourceSessionId"], s1.as_str());
    let pair = c
        .ok(
            "post",
            "/pairs",
            "/pairs",
            Some(json!({"driverId": s3, "worker": {"vendor": "scripted"}})),
        )
        .await;
    let pair_id = pair["pair"]["pairId"].as_str().unwrap().to_string();
    c.ok("get", "/pairs", "/pairs", None).await;
    // The Worker asks its Driver (a turn of its own), and the user answers over REST.
    let worker = pair["pair"]["workerId"].as_str().unwrap().to_string();
    c.ok(
        "post",
        &format!("/sessions/{worker}/messages"),
        "/sessions/{id}/messages",
        Some(json!({"content": "/tool ask_driver {\"question\": \"go on?\"}"})),
    )
    .await;
    let asked = stored_event(&server, &worker, "question").await;
    let qid = asked["questionId"].as_str().unwrap().to_string();
    let answered = c
        .ok(
            "post",
            &format!("/sessions/{worker}/questions/{qid}/answer"),
            "/sessions/{id}/questions/{questionId}/answer",
            Some(json!({"answer": "yes"})),
        )
        .await;
    assert_eq!(answered["questionId"], qid.as_str());
    idle(&server, &worker).await;
    // The question was pushed into the Driver as a message: its turn ends before the
    // Driver is archived below.
    eventually("the question pushed into the Driver", async || {
        server.all_events(&s3).await.into_iter().find(|e| {
            e["kind"] == "user_message"
                && e["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("Question from your Worker"))
        })
    })
    .await;
    idle(&server, &s3).await;
    c.ok(
        "delete",
        &format!("/pairs/{pair_id}"),
        "/pairs/{pairId}",
        None,
    )
    .await;
    c.ok("delete", &format!("/sessions/{s3}"), "/sessions/{id}", None)
        .await;

    // Web Push: a device registered, listed, removed (the keys of a real P-256 point,
    // taken from the server's own public key; the endpoint is never called).
    c.ok("get", "/push/key", "/push/key", None).await;
    let (_, key) = server.get("/api/v1/push/key").await;
    let device = c
        .ok(
            "post",
            "/push/subscriptions",
            "/push/subscriptions",
            Some(json!({
                "endpoint": "http://127.0.0.1:9/push/device",
                "keys": {"p256dh": key["publicKey"], "auth": "AAAAAAAAAAAAAAAAAAAAAA"},
                "label": "phone",
            })),
        )
        .await;
    let device_id = device["subscription"]["id"].as_str().unwrap().to_string();
    c.ok("get", "/push/subscriptions", "/push/subscriptions", None)
        .await;
    c.ok(
        "delete",
        &format!("/push/subscriptions/{device_id}"),
        "/push/subscriptions/{id}",
        None,
    )
    .await;

    // Pairing a device: a code, its exchange (no token needed), the list, a revoke.
    let code = c
        .ok(
            "post",
            "/devices/pair-code",
            "/devices/pair-code",
            Some(json!({})),
        )
        .await;
    let paired = c
        .ok(
            "post",
            "/devices/pair",
            "/devices/pair",
            Some(json!({"code": code["code"], "label": "phone"})),
        )
        .await;
    c.ok("get", "/devices", "/devices", None).await;
    c.ok(
        "delete",
        &format!("/devices/{}", paired["device"]["id"].as_str().unwrap()),
        "/devices/{id}",
        None,
    )
    .await;

    let documented: BTreeSet<(String, String)> = served["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(path, ops)| {
            let template = path.trim_start_matches("/api/v1").to_string();
            ops.as_object()
                .into_iter()
                .flatten()
                .map(move |(method, _)| (method.clone(), template.clone()))
        })
        .collect();
    let missed: Vec<_> = documented.difference(&c.covered).collect();
    assert!(
        missed.is_empty(),
        "documented routes never called: {missed:?}"
    );

    // The control routes refuse what the socket refuses, with the same code.
    let mut ws = server.ws().await;
    let cases: Vec<(Value, &str, String, Option<Value>, &str)> = vec![
        (
            json!({"type": "session.handoff", "sessionId": s1}),
            "post",
            format!("/sessions/{s1}/handoff"),
            Some(json!({})),
            "/sessions/{id}/handoff",
        ),
        (
            json!({"type": "session.handoff", "sessionId": "ses_nope", "targetVendor": "scripted"}),
            "post",
            "/sessions/ses_nope/handoff".into(),
            Some(json!({"targetVendor": "scripted"})),
            "/sessions/{id}/handoff",
        ),
        (
            json!({"type": "session.schedule", "sessionId": s1, "content": "x", "at": "next tuesday"}),
            "post",
            format!("/sessions/{s1}/schedules"),
            Some(json!({"content": "x", "at": "next tuesday"})),
            "/sessions/{id}/schedules",
        ),
        (
            json!({"type": "session.schedule-cancel", "sessionId": s1, "scheduleId": "sch_nope"}),
            "delete",
            format!("/sessions/{s1}/schedules/sch_nope"),
            None,
            "/sessions/{id}/schedules/{scheduleId}",
        ),
        (
            json!({"type": "chat.stop-task", "sessionId": s1, "taskId": "nope"}),
            "post",
            format!("/sessions/{s1}/tasks/nope/stop"),
            None,
            "/sessions/{id}/tasks/{taskId}/stop",
        ),
        (
            json!({"type": "chat.permission-response", "requestId": "perm_nope", "sessionId": s2, "allow": true}),
            "post",
            format!("/sessions/{s2}/permissions/perm_nope"),
            Some(json!({"allow": true})),
            "/sessions/{id}/permissions/{requestId}",
        ),
        (
            json!({"type": "pair.create", "driverId": "ses_nope", "worker": {"vendor": "scripted"}}),
            "post",
            "/pairs".into(),
            Some(json!({"driverId": "ses_nope", "worker": {"vendor": "scripted"}})),
            "/pairs",
        ),
        (
            json!({"type": "pair.create", "driverId": s1, "worker": {"vendor": "gemini"}}),
            "post",
            "/pairs".into(),
            Some(json!({"driverId": s1, "worker": {"vendor": "gemini"}})),
            "/pairs",
        ),
        (
            json!({"type": "pair.close", "pairId": "pair_nope"}),
            "delete",
            "/pairs/pair_nope".into(),
            None,
            "/pairs/{pairId}",
        ),
    ];
    for (frame, method, path, body, template) in cases {
        let on_socket = ws_code(&mut ws, frame.clone()).await;
        let (status, answer) = c.call(method, &path, template, body).await;
        assert!(status >= 400, "{method} {path} was accepted: {answer}");
        assert_eq!(
            answer["error"]["code"].as_str().unwrap(),
            on_socket,
            "{method} {path} vs {frame}: {answer}"
        );
    }
    // A body with an unknown field is refused, not half-read.
    let (status, answer) = c
        .call(
            "post",
            &format!("/sessions/{s1}/handoff"),
            "/sessions/{id}/handoff",
            Some(json!({"targetVendor": "scripted", "vendr": "x"})),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    ws.close().await;
}

/// Sends `method path` (under `/api/v1`) with the given headers and body; returns
/// the status, the `Allow` header and the answer as JSON.
async fn raw(
    server: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Option<String>, Value) {
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish();
    let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client.request(method, format!("{}/api/v1{path}", server.base));
    for header in headers {
        req = req.insert_header(*header);
    }
    let mut resp = req.send_body(body.to_string()).await.unwrap();
    let allow = resp
        .headers()
        .get("allow")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = resp.body().await.unwrap();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (resp.status().as_u16(), allow, value)
}

#[actix_rt::test]
async fn refusals_come_in_the_documented_order() {
    let server = Server::start_with(tandem_tests::ServerOptions {
        token_auth: true,
        ..Default::default()
    });
    let token = format!("Bearer {}", server.token.clone().unwrap());
    let auth = ("Authorization", token.as_str());
    let json = ("Content-Type", "application/json");
    let created = server.post("/api/v1/sessions", &json!({})).await.1;
    let id = created["id"].as_str().unwrap().to_string();

    // A method the path does not take: 405 with the path's methods in `Allow`.
    for (method, path, allowed) in [
        ("PUT", "/sessions".to_string(), "GET, POST"),
        ("TRACE", format!("/sessions/{id}"), "GET, PATCH, DELETE"),
        ("POST", "/health".to_string(), "GET"),
        ("GET", format!("/sessions/{id}/interrupt"), "POST"),
        (
            "DELETE",
            format!("/sessions/{id}/files/content"),
            "GET, PUT",
        ),
    ] {
        let (status, allow, body) = raw(&server, method, &path, &[auth], "").await;
        assert_eq!(status, 405, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], "METHOD_NOT_ALLOWED");
        assert_eq!(allow.as_deref(), Some(allowed), "{method} {path}");
    }

    // Without a valid token: 401 whatever the media type or the body.
    let interrupt = format!("/sessions/{id}/interrupt");
    for headers in [vec![], vec![("Content-Type", "text/plain")], vec![json]] {
        let (status, _, body) = raw(&server, "POST", &interrupt, &headers, "[]").await;
        assert_eq!(status, 401, "{headers:?}: {body}");
        assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    }
    // With it, the media type comes next, before the body.
    let (status, _, body) = raw(&server, "POST", &interrupt, &[auth], "[]").await;
    assert_eq!(status, 415, "{body}");
    assert_eq!(body["error"]["code"], "UNSUPPORTED_MEDIA_TYPE");

    // A JSON body of the wrong type is 400, also where every field is optional, and a
    // field-less POST takes nothing but `{}` or nothing.
    for (path, body) in [
        ("/sessions".to_string(), "[]"),
        ("/sessions".to_string(), "1"),
        (format!("/sessions/{id}/messages"), "\"hello\""),
        (interrupt.clone(), "null"),
        (interrupt.clone(), "{\"now\": true}"),
    ] {
        let (status, _, answer) = raw(&server, "POST", &path, &[auth, json], body).await;
        assert_eq!(status, 400, "{path} {body}: {answer}");
    }
    let (status, _, body) = raw(&server, "POST", &interrupt, &[auth, json], "").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("NO_ACTIVE_RUN"))
    );
    // An integer written with a zero fraction is that integer.
    let (status, _, body) = raw(
        &server,
        "POST",
        &format!("/sessions/{id}/edit-send"),
        &[auth, json],
        r#"{"anchorSeq": 1.0, "content": "again"}"#,
    )
    .await;
    assert_eq!(body["error"]["code"], "INVALID_ANCHOR", "{status} {body}");

    // Path and query bytes no id or name can hold: 400, never 500.
    for path in [
        "/sessions/%00".to_string(),
        "/sessions/%FF/events".to_string(),
        "/sessions?cursor=%C0%AF".to_string(),
        format!("/sessions/{id}/files?path=a%00b"),
        format!("/sessions/{id}/changes/diff?path=%FE"),
    ] {
        let (status, _, body) = raw(&server, "GET", &path, &[auth], "").await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["error"]["code"], "INVALID_ARGUMENT", "{path}");
    }
    // ... and 401 first without the token.
    let (status, _, _) = raw(&server, "GET", "/sessions/%00", &[], "").await;
    assert_eq!(status, 401);
}
