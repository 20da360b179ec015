//! The agents' MCP servers declared in the config (`[mcp_servers.NAME]`): listed with
//! their secrets hidden, probed as an MCP client against a real server no one here
//! wrote (the MCP project's `server-everything`, pinned) and against ones that fail,
//! and refused at start when an entry makes no sense. Reaching a vendor CLI's model
//! through them is tested in `claude.rs` and `codex.rs`.

use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::vendor_clis::{mcp_everything_path, require};
use tandem_tests::{Server, ServerOptions, TempDir};

/// `[mcp_servers.everything]` running the pinned server-everything over stdio.
pub fn everything_section() -> String {
    let js = require(
        Some(mcp_everything_path()).filter(|p| p.is_file()),
        "the MCP test server (server-everything)",
    );
    format!(
        "\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nenv = {{ EVERYTHING_TOKEN = \"s3cret-value\" }}\n",
        json!(js.display().to_string())
    )
}

#[actix_rt::test]
#[cfg_attr(
    not(has_mcp_everything),
    ignore = "the MCP test server is not installed"
)]
async fn declared_servers_are_listed_without_secrets_and_probed() {
    let dir = Arc::new(TempDir::new("mcp-servers"));
    let config = dir.path().join("tandem.toml");
    let text = format!(
        "{}\n[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = {{ Authorization = \"Bearer hidden-token\" }}\n\n[mcp_servers.broken]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"echo cannot open the database >&2; echo \\\"    at frame\\\" >&2; exit 3\"]\n",
        everything_section()
    );
    std::fs::write(&config, text).unwrap();
    let server = Server::start_in(dir, ServerOptions::with_config(&config));

    let (status, listed) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(status, 200, "{listed}");
    let text = listed.to_string();
    assert!(
        !text.contains("s3cret-value") && !text.contains("hidden-token"),
        "{text}"
    );
    let by_name = |name: &str| -> Value {
        listed["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
    };
    let everything = by_name("everything");
    assert_eq!(everything["transport"], "stdio", "{everything}");
    assert_eq!(everything["command"], "node", "{everything}");
    assert_eq!(
        everything["env"],
        json!([{"name": "EVERYTHING_TOKEN", "set": true}])
    );
    let remote = by_name("remote");
    assert_eq!(
        (remote["transport"].as_str(), remote["url"].as_str()),
        (Some("http"), Some("http://127.0.0.1:9/mcp"))
    );
    assert_eq!(
        remote["headers"],
        json!([{"name": "Authorization", "set": true}])
    );

    // A real MCP server: reachable, with its name and tools.
    let (status, probed) = server
        .post("/api/v1/mcp-servers/everything/probe", &json!({}))
        .await;
    assert_eq!(status, 200, "{probed}");
    assert_eq!(probed["reachable"], true, "{probed}");
    assert!(probed["serverName"].is_string(), "{probed}");
    let tools: Vec<&str> = probed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"echo"), "{tools:?}");
    // Nothing listening, a program that exits: not reachable, and why.
    let (_, probed) = server
        .post("/api/v1/mcp-servers/remote/probe", &json!({}))
        .await;
    assert_eq!(probed["reachable"], false, "{probed}");
    assert!(
        probed["error"].as_str().unwrap().contains("cannot reach"),
        "{probed}"
    );
    let (_, probed) = server
        .post("/api/v1/mcp-servers/broken/probe", &json!({}))
        .await;
    assert_eq!(probed["reachable"], false, "{probed}");
    // Why: its last words on stderr, stack frames left out (it may have exited before
    // or after the probe wrote to it: the first words say which).
    let error = probed["error"].as_str().unwrap();
    assert!(
        error.starts_with("the server exited")
            && error.ends_with(": cannot open the database")
            && !error.contains("at frame"),
        "{probed}"
    );
    let (status, body) = server
        .post("/api/v1/mcp-servers/nope/probe", &json!({}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
}

#[test]
fn an_entry_that_is_neither_stdio_nor_http_stops_the_start() {
    let dir = TempDir::new("mcp-bad");
    for (entry, words) in [
        ("[mcp_servers.empty]\nargs = [\"x\"]\n", "give `command`"),
        (
            "[mcp_servers.both]\ncommand = \"node\"\nurl = \"http://127.0.0.1:9/mcp\"\n",
            "do not mix",
        ),
        ("[mcp_servers.tandem]\ncommand = \"node\"\n", "tandem's own"),
        (
            "[mcp_servers.ftp]\nurl = \"ftp://127.0.0.1/\"\n",
            "http:// or https://",
        ),
    ] {
        let config = dir.path().join("tandem.toml");
        std::fs::write(&config, entry).unwrap();
        let out = std::process::Command::new(tandem_tests::server::server_binary())
            .args(["serve", "--port", "0", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(words),
            "{entry}: {stderr}"
        );
    }
}

/// server-everything speaking streamable HTTP on a free loopback port (its own code
/// listens on every interface: a preload binds it to 127.0.0.1); killed when dropped.
struct HttpEverything {
    child: std::process::Child,
    url: String,
}

impl HttpEverything {
    fn start(dir: &std::path::Path) -> HttpEverything {
        let js = require(
            Some(mcp_everything_path()).filter(|p| p.is_file()),
            "the MCP test server (server-everything)",
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let preload = dir.join("loopback.mjs");
        std::fs::write(
            &preload,
            "import net from 'node:net';\n\
             const listen = net.Server.prototype.listen;\n\
             net.Server.prototype.listen = function (port, ...rest) {\n\
               if (typeof port === 'number' || typeof port === 'string') {\n\
                 return listen.call(this, Number(port), '127.0.0.1', ...rest.filter((a) => typeof a === 'function'));\n\
               }\n\
               return listen.call(this, port, ...rest);\n\
             };\n",
        )
        .unwrap();
        let mut child = std::process::Command::new("node")
            .arg("--import")
            .arg(&preload)
            .arg(&js)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut err, &mut line).unwrap_or(0) == 0 {
                let _ = child.kill();
                panic!("server-everything stopped: {seen}");
            }
            seen.push_str(&line);
            if line.contains("listening on port") {
                break;
            }
        }
        // Its later log lines are drained, so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        HttpEverything {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Names of the servers `GET /mcp-servers` shows, with their scope.
fn listed(body: &Value) -> Vec<(String, String)> {
    body["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["scope"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[actix_rt::test]
#[cfg_attr(
    not(has_mcp_everything),
    ignore = "the MCP test server is not installed"
)]
async fn users_add_probe_and_remove_their_own_servers() {
    let dir = Arc::new(TempDir::new("mcp-own"));
    let config = dir.path().join("tandem.toml");
    std::fs::write(&config, "[mcp_servers.shared]\ncommand = \"/bin/false\"\n").unwrap();
    let options = || ServerOptions {
        token_auth: true,
        ..ServerOptions::with_config(&config)
    };
    let server = Server::start_process_in(dir.clone(), options());
    let bob = server.add_user("bob");
    let everything = HttpEverything::start(dir.path());

    // An HTTP server (the real one, over streamable HTTP) and a stdio one with a secret.
    let (status, added) = server
        .post(
            "/api/v1/mcp-servers",
            &json!({"name": "web", "url": everything.url, "headers": {"X-Token": "hdr-s3cret"}}),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    assert_eq!(
        (added["scope"].as_str(), added["transport"].as_str()),
        (Some("user"), Some("http"))
    );
    assert_eq!(added["headers"], json!([{"name": "X-Token", "set": true}]));
    let js = mcp_everything_path().display().to_string();
    let (status, added) = server
        .post(
            "/api/v1/mcp-servers",
            &json!({"name": "local", "command": "node", "args": [js, "stdio"], "env": {"MY_KEY": "env-s3cret"}}),
        )
        .await;
    assert_eq!(status, 201, "{added}");

    let (_, list) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(
        listed(&list),
        [
            ("shared".to_string(), "config".to_string()),
            ("web".into(), "user".into()),
            ("local".into(), "user".into())
        ]
    );
    let text = list.to_string();
    assert!(
        !text.contains("hdr-s3cret") && !text.contains("env-s3cret"),
        "{text}"
    );

    // Over HTTP, the real MCP server answers with its tools.
    let (status, probed) = server
        .post("/api/v1/mcp-servers/web/probe", &json!({}))
        .await;
    assert_eq!(status, 200, "{probed}");
    assert_eq!(probed["reachable"], true, "{probed}");
    assert!(
        probed["tools"].as_array().unwrap().contains(&json!("echo")),
        "{probed}"
    );
    // A user's stdio server runs as their agents would: confined, in their workspace
    // root. One there answers; one whose files lie elsewhere (the test's copy of
    // server-everything) cannot even be read, whatever its arguments name.
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("ping.mjs"), tandem_tests::mcp_ping::PING_SERVER).unwrap();
    let (status, added) = server
        .post(
            "/api/v1/mcp-servers",
            &json!({"name": "ping", "command": "node",
                    "args": [tools.join("ping.mjs").display().to_string()]}),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    let (_, probed) = server
        .post("/api/v1/mcp-servers/ping/probe", &json!({}))
        .await;
    assert_eq!(
        (probed["reachable"].as_bool(), probed["tools"].clone()),
        (Some(true), json!(["ping"])),
        "{probed}"
    );
    let (_, probed) = server
        .post("/api/v1/mcp-servers/local/probe", &json!({}))
        .await;
    assert_eq!(probed["reachable"], false, "confined: {probed}");

    // Another user sees the config's and none of them, and cannot probe or remove them.
    let (_, theirs) = bob.get("/api/v1/mcp-servers").await;
    assert_eq!(
        listed(&theirs),
        [("shared".to_string(), "config".to_string())]
    );
    let (status, _) = bob.post("/api/v1/mcp-servers/web/probe", &json!({})).await;
    assert_eq!(status, 404);
    let (status, _) = bob.delete("/api/v1/mcp-servers/web").await;
    assert_eq!(status, 404);
    // ... and may have a server of that name of their own.
    let (status, body) = bob
        .post(
            "/api/v1/mcp-servers",
            &json!({"name": "web", "url": "http://127.0.0.1:9/mcp"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    // Bad entries: a clear 400; taken names 409; the config's cannot be removed.
    for (entry, says) in [
        (json!({"name": "x"}), "give `command`"),
        (
            json!({"name": "x", "command": "a", "url": "http://h/"}),
            "do not mix",
        ),
        (json!({"name": "x y", "command": "a"}), "1 to 40"),
        (json!({"name": "x", "url": "file:///etc/passwd"}), "http://"),
        (
            json!({"name": "x", "command": "a", "args": null}),
            "invalid type",
        ),
        (json!(["x", "node"]), "a JSON object"),
    ] {
        let (status, body) = server.post("/api/v1/mcp-servers", &entry).await;
        assert_eq!(status, 400, "{entry}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{entry}: {body}");
    }
    for name in ["shared", "web", "tandem"] {
        let (status, body) = server
            .post(
                "/api/v1/mcp-servers",
                &json!({"name": name, "command": "node"}),
            )
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (409, Some("CONFLICT")),
            "{name}: {body}"
        );
    }
    let (status, body) = server.delete("/api/v1/mcp-servers/shared").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("CONFLICT")),
        "{body}"
    );

    // A session's choice: names the caller may use, or entries; others refused.
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            &json!({"mcpServers": ["web", {"name": "inline", "command": "node"}]}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    for (choice, status_wanted, says) in [
        (json!(["nope"]), 422, "no MCP server `nope`"),
        (json!(["web", "web"]), 422, "named twice"),
        (json!([{"name": "x"}]), 400, "give `command`"),
        (
            json!((0..33).map(|i| format!("s{i}")).collect::<Vec<_>>()),
            400,
            "at most 32",
        ),
    ] {
        let (status, body) = server
            .post("/api/v1/sessions", &json!({"mcpServers": choice}))
            .await;
        assert_eq!(status, status_wanted, "{choice}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{choice}: {body}");
    }
    let (status, body) = bob
        .post("/api/v1/sessions", &json!({"mcpServers": ["local"]}))
        .await;
    assert_eq!(status, 422, "another user's server: {body}");

    // Kept across a restart, secrets in a 0600 file; removed for good.
    let mode = std::fs::metadata(dir.path().join("data/tandem.db"))
        .unwrap()
        .permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );
    let token = server.token.clone().unwrap();
    drop(server.kill());
    let server = Server::start_in(dir.clone(), options());
    let server = server.as_user(&token);
    let (_, list) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(listed(&list).len(), 4, "{list}");
    let (status, probed) = server
        .post("/api/v1/mcp-servers/web/probe", &json!({}))
        .await;
    assert_eq!(
        (status, probed["reachable"].as_bool()),
        (200, Some(true)),
        "kept across the restart: {probed}"
    );
    let (status, body) = server.delete("/api/v1/mcp-servers/web").await;
    assert_eq!(
        (status, body["name"].as_str()),
        (200, Some("web")),
        "{body}"
    );
    let (status, _) = server.delete("/api/v1/mcp-servers/web").await;
    assert_eq!(status, 404);
    let (_, list) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(
        listed(&list),
        [
            ("shared".to_string(), "config".to_string()),
            ("local".into(), "user".into()),
            ("ping".into(), "user".into())
        ]
    );
}

#[actix_rt::test]
async fn sessions_made_from_a_session_keep_its_mcp_servers() {
    let server = Server::start();
    let (status, source) = server
        .post(
            "/api/v1/sessions",
            &json!({"title": "source", "mcpServers": [{"name": "own", "url": "http://127.0.0.1:9/mcp"}]}),
        )
        .await;
    assert_eq!(status, 201, "{source}");
    assert_eq!(source["mcpServers"], json!(["own"]), "{source}");
    let id = source["id"].as_str().unwrap().to_string();
    let mut ws = server.ws().await;
    ws.subscribe(&id, 0).await;
    ws.turn(&id, "hello").await;
    let anchor = server
        .all_events(&id)
        .await
        .iter()
        .find(|e| e["kind"] == "user_message")
        .map(|e| e["seq"].clone())
        .unwrap();

    // A session it spawns (the agent tool `spawn_sessions`).
    let (_, err) = ws
        .scripted_tool(
            &id,
            "spawn_sessions",
            json!({"sessions": [{"title": "kid", "prompt": "hi"}]}),
        )
        .await;
    assert!(!err);
    let (_, list) = server.get("/api/v1/sessions").await;
    let kid = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["parentId"] == id.as_str())
        .map(|s| s["id"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no spawned session in {list}"));

    let (status, forked) = server
        .post(
            &format!("/api/v1/sessions/{id}/fork"),
            &json!({"anchorSeq": anchor}),
        )
        .await;
    assert_eq!(status, 201, "{forked}");
    let (status, pair) = server
        .post(
            "/api/v1/pairs",
            &json!({"driverId": id, "worker": {"vendor": "scripted"}}),
        )
        .await;
    assert_eq!(status, 201, "{pair}");
    let made = [
        forked["session"]["id"].as_str().unwrap().to_string(),
        pair["pair"]["workerId"].as_str().unwrap().to_string(),
        kid,
    ];
    for made in made {
        let (_, info) = server.get(&format!("/api/v1/sessions/{made}")).await;
        assert_eq!(info["mcpServers"], json!(["own"]), "{info}");
    }
    // A handoff (outside a pair) too.
    let (_, other) = server
        .post(
            "/api/v1/sessions",
            &json!({"title": "other", "mcpServers": []}),
        )
        .await;
    let other = other["id"].as_str().unwrap().to_string();
    ws.subscribe(&other, 0).await;
    ws.turn(&other, "hello").await;
    let (status, handed) = server
        .post(
            &format!("/api/v1/sessions/{other}/handoff"),
            &json!({"targetVendor": "scripted"}),
        )
        .await;
    assert_eq!(status, 201, "{handed}");
    let target = handed["targetSessionId"].as_str().unwrap();
    let (_, info) = server.get(&format!("/api/v1/sessions/{target}")).await;
    assert_eq!(info["mcpServers"], json!([]), "{info}");
    // A session that chose nothing shows no choice.
    let (_, plain) = server.post("/api/v1/sessions", &json!({})).await;
    assert!(plain.get("mcpServers").is_none(), "{plain}");
}
