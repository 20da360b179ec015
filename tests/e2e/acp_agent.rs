//! `tandem acp`, the Agent Client Protocol agent an editor starts, against a real
//! server: driven by the official ACP Python SDK (`agent-client-protocol` in
//! tests/python-requirements.txt, tests/python/acp_client.py) as an editor would, and
//! by raw lines for what no SDK sends (bad JSON, unknown methods).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::server::server_binary;
use tandem_tests::{vendor_clis, Server, ServerOptions, TempDir};

fn token_server() -> Server {
    Server::start_with(ServerOptions {
        token_auth: true,
        args: Vec::new(),
    })
}

/// A directory `name` under the server's workspace root, as the server stores it.
fn workdir(server: &Server, name: &str) -> String {
    let dir = server.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap().display().to_string()
}

#[actix_rt::test]
#[cfg_attr(
    not(has_pytools),
    ignore = "needs .venv-tools (tests/python-requirements.txt)"
)]
async fn the_official_python_sdk_drives_sessions_through_tandem_acp() {
    let server = token_server();
    let cwd = workdir(&server, "project");
    let other = workdir(&server, "other");
    let token = server.token.clone().unwrap();
    let script = vendor_clis::repo_root().join("tests/python/acp_client.py");
    // The server is another process, so blocking this test's thread stalls nothing;
    // the script gives up by itself after 90 s.
    let ran = Command::new(vendor_clis::python_path())
        .arg(script)
        .arg(json!([server_binary(), "tandem", "acp"]).to_string())
        .args([&server.base, &token, &cwd, &other])
        .env("TANDEM_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{}\n{stderr}", ran.status);
    let out: Value = serde_json::from_slice(&ran.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&ran.stdout)));

    // Everything `tandem acp` wrote was JSON-RPC, and every update parsed into the
    // SDK's models of the ACP schema.
    for wire in [&out["wire"], &out["load"]["wire"]] {
        assert_eq!(wire["notJsonRpc"], json!([]), "{wire}");
        assert!(wire["updates"].as_u64().unwrap() > 0, "{wire}");
        assert_eq!(wire["updates"], wire["parsedUpdates"], "{wire}");
    }

    // initialize: who we are and what we do.
    let init = &out["initialize"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentInfo"]["name"], "tandem", "{init}");
    assert_eq!(
        init["agentInfo"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{init}"
    );
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    assert_eq!(caps["promptCapabilities"]["image"], true, "{init}");
    assert_eq!(
        caps["promptCapabilities"]["embeddedContext"], true,
        "{init}"
    );
    assert_eq!(caps["sessionCapabilities"]["list"], json!({}), "{init}");

    // session/new made a tandem session in that directory.
    let sid = out["sessionId"].as_str().unwrap();
    let (status, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["cwd"], cwd.as_str(), "{info}");

    // A prompt streams its text and tool calls, and ends the turn.
    let reply = &out["reply"];
    assert_eq!(reply["stopReason"], "end_turn", "{reply}");
    assert_eq!(reply["text"], "hello from the SDK", "{reply}");
    let calls = reply["toolCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{reply}");
    assert_eq!(
        (&calls[0]["kind"], &calls[0]["title"]),
        (&json!("read"), &json!("Read: /tmp/a.txt")),
        "{reply}"
    );
    assert_eq!(calls[1]["title"], "close_partner", "{reply}");
    let results = reply["toolResults"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{reply}");
    assert_eq!(results[0]["toolCallId"], calls[0]["toolCallId"], "{reply}");
    assert_eq!(results[0]["status"], "completed", "{reply}");
    // close_partner is refused: the session has no Worker.
    assert_eq!(results[1]["toolCallId"], calls[1]["toolCallId"], "{reply}");
    assert_eq!(results[1]["status"], "failed", "{reply}");
    assert!(!results[1]["text"].as_str().unwrap().is_empty(), "{reply}");
    // The editor's own message is not echoed back to it.
    assert_eq!(reply["users"], json!([]), "{reply}");

    // Permission requests: allowed once, then rejected.
    assert_eq!(out["allowed"]["stopReason"], "end_turn", "{out}");
    assert_eq!(out["allowed"]["text"], "allowed Bash", "{out}");
    assert_eq!(out["denied"]["stopReason"], "end_turn", "{out}");
    assert!(
        out["denied"]["text"]
            .as_str()
            .unwrap()
            .starts_with("denied Bash"),
        "{out}"
    );
    let asked = out["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{out}");
    for ask in asked {
        assert_eq!(ask["sessionId"], sid, "{ask}");
        assert_eq!(ask["toolCall"]["title"], "Bash", "{ask}");
        assert_eq!(ask["toolCall"]["kind"], "execute", "{ask}");
        let kinds: Vec<&Value> = ask["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| &o["kind"])
            .collect();
        assert_eq!(
            kinds,
            ["allow_once", "allow_always", "reject_once"],
            "{ask}"
        );
    }
    assert_eq!(asked[0]["toolCall"]["rawInput"], json!({"command": "ls"}));
    // What the server recorded: the first allowed, the second denied.
    let history = server.all_events(sid).await;
    let said: Vec<&str> = history
        .iter()
        .filter(|e| e["kind"] == "assistant_message")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(said.contains(&"allowed Bash"), "{said:?}");
    assert!(
        said.iter().any(|s| s.starts_with("denied Bash")),
        "{said:?}"
    );

    // session/cancel interrupts the held turn: `cancelled`, and what it said before.
    let cancelled = &out["cancelled"];
    assert_eq!(cancelled["stopReason"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["text"], "before", "{cancelled}");
    let turns: Vec<&Value> = history
        .iter()
        .filter(|e| e["kind"] == "turn_completed")
        .map(|e| &e["status"])
        .collect();
    assert!(turns.contains(&&json!("interrupted")), "{turns:?}");

    // A failed turn fails the prompt with the turn's error.
    let failed = &out["failed"];
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("boom"),
        "{failed}"
    );

    // An image reaches the agent.
    let image = &out["image"];
    assert_eq!(image["stopReason"], "end_turn", "{image}");
    assert!(
        image["text"]
            .as_str()
            .unwrap()
            .contains("received image up_"),
        "{image}"
    );

    // session/list: the three sessions in `project`, in pages of at most two (the server is asked two at a time); the one elsewhere only
    // without the filter.
    let list = &out["list"];
    let pages = list["pages"].as_array().unwrap();
    assert!(pages.len() >= 2, "{list}");
    assert!(
        pages.iter().all(|p| p.as_array().unwrap().len() <= 2),
        "{list}"
    );
    let listed: Vec<&Value> = pages
        .iter()
        .flat_map(|p| p.as_array().unwrap())
        .map(|s| &s["sessionId"])
        .collect();
    let created = list["created"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{list}");
    for s in created {
        assert!(listed.contains(&s), "{list}");
    }
    for page in pages {
        for s in page.as_array().unwrap() {
            assert_eq!(s["cwd"], cwd.as_str(), "{s}");
            assert!(s["title"].is_string(), "{s}");
            assert!(s["updatedAt"].as_str().unwrap().ends_with('Z'), "{s}");
        }
    }
    let all = list["firstPageAll"].as_array().unwrap();
    // The newest two: the one elsewhere among them.
    assert_eq!(all.len(), 2, "{list}");
    assert!(all.contains(&list["elsewhere"]), "{list}");

    // Bad requests are JSON-RPC errors, and the connection goes on.
    let bad = &out["bad"];
    assert_eq!(bad["unknownSession"]["code"], -32002, "{bad}");
    assert_eq!(bad["loadUnknown"]["code"], -32002, "{bad}");
    assert_eq!(bad["outsideRoots"]["code"], -32602, "{bad}");
    assert!(
        bad["outsideRoots"]["message"]
            .as_str()
            .unwrap()
            .contains("workspace root"),
        "{bad}"
    );
    assert_eq!(
        bad["outsideRoots"]["data"]["tandemCode"], "INVALID_ARGUMENT",
        "{bad}"
    );
    assert_eq!(bad["unknownMethod"]["code"], -32601, "{bad}");
    assert_eq!(out["afterBad"]["stopReason"], "end_turn", "{out}");
    assert_eq!(out["afterBad"]["text"], "still here", "{out}");

    // Another editor loads the session: its whole history, then it goes on.
    let load = &out["load"];
    let replay = &load["replay"];
    let prompts: Vec<&str> = history
        .iter()
        .filter(|e| e["kind"] == "user_message")
        .filter_map(|e| e["text"].as_str())
        .collect();
    // Every message the session had when it was loaded; the prompt after it, live.
    assert_eq!(prompts.len(), 8, "{prompts:?}");
    assert_eq!(replay["users"], json!(prompts[..7]), "{replay}");
    assert_eq!(prompts[7], "after the load");
    let text = replay["text"].as_str().unwrap();
    for part in [
        "hello from the SDK",
        "allowed Bash",
        "denied Bash",
        "before",
        "received image",
        "still here",
    ] {
        assert!(text.contains(part), "{part}: {replay}");
    }
    assert_eq!(replay["toolCalls"], reply["toolCalls"], "{replay}");
    assert_eq!(load["next"]["stopReason"], "end_turn", "{load}");
    assert_eq!(load["next"]["text"], "after the load", "{load}");
}

/// `tandem acp` (the tests' server binary runs `tandem ARGS` as `bench tandem ARGS`)
/// as a child whose stdout lines arrive on a channel.
struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Acp {
    fn start(url: &str, token: &str) -> Acp {
        let mut child = Command::new(server_binary())
            .args(["tandem", "acp", "--url", url, "--token", token])
            .env("TANDEM_LOG", "warn")
            .env_remove("TANDEM_TOKEN")
            .env_remove("TANDEM_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Acp {
            child,
            stdin: Some(stdin),
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message; every line on stdout must be a JSON-RPC 2.0 message.
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("no line from tandem acp: {e}"));
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON on stdout: {e}: {line}"));
        assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
        msg
    }

    /// Answers until every id of `ids` was answered (in any order), by id; the
    /// notifications between them are returned too.
    fn answers(&self, ids: &[Value]) -> (Vec<(Value, Value)>, Vec<Value>) {
        let mut answers = Vec::new();
        let mut notes = Vec::new();
        while answers.len() < ids.len() {
            let msg = self.next();
            if msg.get("method").is_some() {
                notes.push(msg);
                continue;
            }
            assert!(ids.contains(&msg["id"]), "unexpected: {msg}");
            answers.push((msg["id"].clone(), msg));
        }
        (answers, notes)
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn answer<'a>(answers: &'a [(Value, Value)], id: &Value) -> &'a Value {
    &answers.iter().find(|(i, _)| i == id).unwrap().1
}

#[actix_rt::test]
async fn bad_lines_and_unknown_methods_are_json_rpc_errors_and_the_connection_stays() {
    let server = token_server();
    let cwd = workdir(&server, "project");
    let mut acp = Acp::start(&server.base, server.token.as_deref().unwrap());

    // Not JSON, then JSON that is no JSON-RPC message: errors without an id.
    acp.send("{not json");
    let parse = acp.next();
    assert_eq!(parse["id"], Value::Null, "{parse}");
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    acp.send("[1, 2]");
    let invalid = acp.next();
    assert_eq!(
        (&invalid["id"], &invalid["error"]["code"]),
        (&Value::Null, &json!(-32600)),
        "{invalid}"
    );

    acp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    acp.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/unknown","params":{}}"#);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "ses_nope", "prompt": [{"type": "text", "text": "hi"}]}})
        .to_string(),
    );
    acp.send(
        &json!({"jsonrpc": "2.0", "id": "four", "method": "session/new",
        "params": {"cwd": "/", "mcpServers": []}})
        .to_string(),
    );
    acp.send(r#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{}}"#);
    let (answers, _) = acp.answers(&[json!(1), json!(2), json!(3), json!("four"), json!(5)]);
    let init = answer(&answers, &json!(1));
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    assert_eq!(answer(&answers, &json!(2))["error"]["code"], -32601);
    assert_eq!(answer(&answers, &json!(3))["error"]["code"], -32002);
    let outside = answer(&answers, &json!("four"));
    assert_eq!(outside["error"]["code"], -32602, "{outside}");
    assert!(
        outside["error"]["message"]
            .as_str()
            .unwrap()
            .contains("workspace root"),
        "{outside}"
    );
    assert_eq!(answer(&answers, &json!(5))["error"]["code"], -32602);

    // The connection still works: a session, a prompt, its updates and its answer.
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}})
        .to_string(),
    );
    let (answers, _) = acp.answers(&[json!(6)]);
    let sid = answers[0].1["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi there"}]}})
        .to_string(),
    );
    let (answers, notes) = acp.answers(&[json!(7)]);
    assert_eq!(answers[0].1["result"], json!({"stopReason": "end_turn"}));
    let text: String = notes
        .iter()
        .inspect(|n| {
            assert_eq!(n["method"], "session/update", "{n}");
            assert_eq!(n["params"]["sessionId"], sid.as_str(), "{n}");
        })
        .filter(|n| n["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|n| n["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "hi there");
}

#[actix_rt::test]
async fn without_a_server_initialize_says_so() {
    // Nothing listens on port 1.
    let mut acp = Acp::start("http://127.0.0.1:1", "tdm_nothing");
    acp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    let init = acp.next();
    assert_eq!(init["id"], 1, "{init}");
    assert_eq!(init["error"]["code"], -32603, "{init}");
    let message = init["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("cannot reach the server at http://127.0.0.1:1"),
        "{message}"
    );
    // stdin closed: the agent exits, and its stderr said what went wrong.
    acp.stdin = None;
    let status = acp.child.wait().unwrap();
    assert!(status.success(), "{status}");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut acp.child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("cannot reach the server"), "{stderr}");
}

/// Sends `session/prompt` with `text` as request `id` and returns its answer and the
/// text the updates said.
fn prompt(acp: &mut Acp, id: u64, session: &str, text: &str) -> (Value, String) {
    acp.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
        .to_string(),
    );
    let (mut answers, notes) = acp.answers(&[json!(id)]);
    let said = notes
        .iter()
        .filter(|n| n["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|n| n["params"]["update"]["content"]["text"].as_str())
        .collect();
    (answers.remove(0).1, said)
}

#[actix_rt::test]
async fn a_restarted_server_is_connected_to_again_and_the_session_goes_on() {
    let options = |args: Vec<String>| ServerOptions {
        token_auth: true,
        args,
    };
    let server = Server::start_in(
        std::sync::Arc::new(TempDir::new("acp")),
        options(Vec::new()),
    );
    let port = server.base.rsplit(':').next().unwrap().to_string();
    let cwd = workdir(&server, "project");
    let mut acp = Acp::start(&server.base, server.token.as_deref().unwrap());
    acp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}})
        .to_string(),
    );
    let (answers, _) = acp.answers(&[json!(1), json!(2)]);
    let sid = answer(&answers, &json!(2))["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let (answer_one, said) = prompt(&mut acp, 3, &sid, "one");
    assert_eq!(
        answer_one["result"]["stopReason"], "end_turn",
        "{answer_one}"
    );
    assert_eq!(said, "one");

    // The server goes away and comes back on the same port and data.
    let dir = server.kill();
    let server = Server::start_in(dir, options(vec!["--port".into(), port]));
    let (answer_two, said) = prompt(&mut acp, 4, &sid, "two");
    assert_eq!(
        answer_two["result"]["stopReason"], "end_turn",
        "{answer_two}"
    );
    assert_eq!(said, "two");
    let history = server.all_events(&sid).await;
    let prompts: Vec<&Value> = history
        .iter()
        .filter(|e| e["kind"] == "user_message")
        .map(|e| &e["text"])
        .collect();
    assert_eq!(prompts, [&json!("one"), &json!("two")]);
}
