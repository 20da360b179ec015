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
        "{}\n[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = {{ Authorization = \"Bearer hidden-token\" }}\n\n[mcp_servers.broken]\ncommand = \"/bin/false\"\n",
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
    assert!(
        probed["error"].as_str().unwrap().contains("exited"),
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
