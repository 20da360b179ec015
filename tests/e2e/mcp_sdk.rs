//! `/mcp` in the protocol's two eras: the official MCP Python SDK (`mcp` in
//! tests/python-requirements.txt, driven by tests/python/mcp_client.py) negotiates
//! `2025-11-25` through `initialize` and speaks the stateless `2026-07-28` (after
//! `server/discover`, or straight away); and raw requests show the errors a client
//! gets for what it sends wrong.

use std::process::Command;

use serde_json::{json, Value};
use tandem_tests::{vendor_clis, Server};

/// A fresh scripted session (unpaired) and the MCP token bound to it.
async fn session_token(server: &Server) -> String {
    let (status, created) = server.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap();
    let (status, tok) = server
        .post(&format!("/api/v1/sessions/{id}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 200, "{tok}");
    tok["token"].as_str().unwrap().to_string()
}

/// Runs the SDK script in `mode` against a fresh session and returns what it printed.
async fn sdk(server: &Server, mode: &str) -> Value {
    let token = session_token(server).await;
    let script = vendor_clis::repo_root().join("tests/python/mcp_client.py");
    // The server is another process, so blocking this test's thread stalls nothing;
    // the script gives up by itself after 60 s.
    let out = Command::new(vendor_clis::python_path())
        .arg(script)
        .arg(format!("{}/mcp", server.base))
        .arg(mode)
        .env("TANDEM_MCP_TOKEN", token)
        .output()
        .unwrap_or_else(|e| panic!("running the MCP SDK script: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{mode}: {}\n{stderr}", out.status);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{mode}: {e}: {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The methods that went over the wire, in order.
fn methods(out: &Value) -> Vec<&str> {
    out["wire"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["method"].as_str())
        .collect()
}

/// What every mode shares: the unpaired session's tools, a refused call, a delegation
/// the scripted Worker answers, and the Driver's tools after it.
fn assert_tools_work(out: &Value) {
    assert_eq!(
        out["toolsBefore"],
        json!({"names": ["send_to_partner", "propose_worker", "spawn_sessions",
            "check_spawned_sessions"], "objectSchemas": true}),
        "{out}"
    );
    assert_eq!(out["refused"]["isError"], true, "{out}");
    assert_eq!(
        out["refused"]["structured"]["error"]["code"], "TOOL_NOT_AVAILABLE",
        "{out}"
    );
    assert_eq!(out["delegated"]["isError"], false, "{out}");
    assert_eq!(
        out["delegated"]["structured"]["status"], "complete",
        "{out}"
    );
    assert_eq!(
        out["delegated"]["structured"]["response"], "hello from the MCP SDK",
        "{out}"
    );
    assert_eq!(
        out["toolsAfter"]["names"],
        json!([
            "send_to_partner",
            "read_partner",
            "interrupt_partner",
            "close_partner",
            "answer_worker",
            "approve_worker",
            "spawn_sessions",
            "check_spawned_sessions"
        ]),
        "{out}"
    );
}

/// The unpaired session's system instruction reached the client.
fn assert_instructions(out: &Value) {
    assert!(
        out["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("send_to_partner")),
        "{out}"
    );
}

/// Every request of a stateless run names 2026-07-28 in its header; none is `initialize`.
fn assert_stateless_wire(out: &Value) {
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    for r in out["wire"].as_array().unwrap() {
        assert_eq!(r["version"], "2026-07-28", "{out}");
        assert_ne!(r["method"], "initialize", "{out}");
    }
}

#[actix_rt::test]
#[cfg_attr(
    not(has_pytools),
    ignore = "needs .venv-tools (tests/python-requirements.txt)"
)]
async fn the_official_sdk_negotiates_2025_11_25_through_initialize() {
    let server = Server::start();
    let out = sdk(&server, "legacy").await;
    assert_eq!(out["protocolVersion"], "2025-11-25", "{out}");
    assert_eq!(out["serverInfo"]["name"], "tandem", "{out}");
    // 2025-11-25 added `description` to the server's identity.
    assert!(out["serverInfo"]["description"].is_string(), "{out}");
    assert_tools_work(&out);
    assert_instructions(&out);
    assert_eq!(
        methods(&out),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call",
            "tools/list"
        ],
        "{out}"
    );
    // After the handshake every request names the negotiated revision.
    for r in &out["wire"].as_array().unwrap()[1..] {
        assert_eq!(r["version"], "2025-11-25", "{out}");
    }
}

#[actix_rt::test]
#[cfg_attr(
    not(has_pytools),
    ignore = "needs .venv-tools (tests/python-requirements.txt)"
)]
async fn the_official_sdk_discovers_the_stateless_2026_07_28() {
    let server = Server::start();
    let out = sdk(&server, "discover").await;
    assert_stateless_wire(&out);
    // From the `_meta` stamp of the `server/discover` result.
    assert_eq!(out["serverInfo"]["name"], "tandem", "{out}");
    assert_tools_work(&out);
    assert_instructions(&out);
    assert_eq!(methods(&out)[0], "server/discover", "{out}");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_pytools),
    ignore = "needs .venv-tools (tests/python-requirements.txt)"
)]
async fn the_sdks_default_client_settles_on_2026_07_28() {
    let server = Server::start();
    let out = sdk(&server, "auto").await;
    assert_stateless_wire(&out);
    assert_tools_work(&out);
    assert_instructions(&out);
    assert_eq!(methods(&out)[0], "server/discover", "{out}");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_pytools),
    ignore = "needs .venv-tools (tests/python-requirements.txt)"
)]
async fn a_2026_07_28_client_needs_no_discovery_and_no_handshake() {
    let server = Server::start();
    let out = sdk(&server, "pinned").await;
    assert_stateless_wire(&out);
    assert_eq!(
        methods(&out),
        ["tools/list", "tools/call", "tools/call", "tools/list"],
        "{out}"
    );
    assert_tools_work(&out);
}

/// One raw POST to `/mcp`: status and JSON body (null if none). No answer mints an
/// `Mcp-Session-Id`: neither era keeps a session here.
async fn raw(server: &Server, token: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let mut req = awc::Client::default()
        .post(format!("{}/mcp", server.base))
        .insert_header(("Authorization", format!("Bearer {token}")))
        .insert_header(("Content-Type", "application/json"));
    for (name, value) in headers {
        req = req.append_header((*name, *value));
    }
    let mut resp = req
        .send_body(body.to_string())
        .await
        .unwrap_or_else(|e| panic!("POST /mcp: {e}"));
    assert!(resp.headers().get("mcp-session-id").is_none());
    let bytes = resp.body().await.unwrap();
    (
        resp.status().as_u16(),
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A 2026-07-28 request body for `method` with `params` and the `_meta` envelope.
fn stateless(method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

const V: (&str, &str) = ("MCP-Protocol-Version", "2026-07-28");

/// A request that must be refused: what it gets wrong, its headers and body, and the
/// HTTP status and JSON-RPC code it must get.
type BadRequest = (
    &'static str,
    Vec<(&'static str, &'static str)>,
    String,
    u16,
    i64,
);

#[actix_rt::test]
async fn stateless_requests_get_clear_errors() {
    let server = Server::start();
    let token = session_token(&server).await;
    let post = |headers: Vec<(&'static str, &'static str)>, body: String| {
        let (server, token) = (&server, token.clone());
        async move { raw(server, &token, &headers, &body).await }
    };

    // Discovery works, and a tool call whose name is sent in the base64 form.
    let (status, disc) = post(
        vec![V, ("Mcp-Method", "server/discover")],
        stateless("server/discover", json!({})),
    )
    .await;
    assert_eq!(status, 200, "{disc}");
    assert_eq!(
        disc["result"]["supportedVersions"][0], "2026-07-28",
        "{disc}"
    );
    assert_eq!(disc["result"]["resultType"], "complete", "{disc}");
    assert_eq!(disc["result"]["cacheScope"], "private", "{disc}");
    let (status, call) = post(
        vec![
            V,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "=?base64?Y2xvc2VfcGFydG5lcg==?="),
        ],
        stateless("tools/call", json!({"name": "close_partner"})),
    )
    .await;
    assert_eq!(status, 200, "{call}");
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert_eq!(
        call["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "tandem",
        "{call}"
    );

    let cases: Vec<BadRequest> = vec![
        (
            "unknown method",
            vec![V, ("Mcp-Method", "resources/list")],
            stateless("resources/list", json!({})),
            404,
            -32601,
        ),
        (
            "initialize is not stateless",
            vec![V, ("Mcp-Method", "initialize")],
            stateless("initialize", json!({})),
            404,
            -32601,
        ),
        (
            "ping is gone",
            vec![V, ("Mcp-Method", "ping")],
            stateless("ping", json!({})),
            404,
            -32601,
        ),
        (
            "unsupported revision",
            vec![
                ("MCP-Protocol-Version", "2099-01-01"),
                ("Mcp-Method", "tools/list"),
            ],
            stateless("tools/list", json!({})),
            400,
            -32022,
        ),
        (
            "malformed JSON",
            vec![V, ("Mcp-Method", "tools/list")],
            "{\"jsonrpc\": ".into(),
            400,
            -32700,
        ),
        (
            "a batch",
            vec![V, ("Mcp-Method", "tools/list")],
            format!("[{}]", stateless("tools/list", json!({}))),
            400,
            -32600,
        ),
        (
            "no envelope",
            vec![V, ("Mcp-Method", "tools/list")],
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
            400,
            -32602,
        ),
        (
            "envelope without the version header",
            vec![("Mcp-Method", "tools/list")],
            stateless("tools/list", json!({})),
            400,
            -32020,
        ),
        (
            "method header differs",
            vec![V, ("Mcp-Method", "tools/list")],
            stateless("tools/call", json!({"name": "close_partner"})),
            400,
            -32020,
        ),
        (
            "no name header",
            vec![V, ("Mcp-Method", "tools/call")],
            stateless("tools/call", json!({"name": "close_partner"})),
            400,
            -32020,
        ),
        (
            "version header twice",
            vec![V, V, ("Mcp-Method", "tools/list")],
            stateless("tools/list", json!({})),
            400,
            -32020,
        ),
        (
            "tools/call without a name",
            vec![V, ("Mcp-Method", "tools/call")],
            stateless("tools/call", json!({})),
            400,
            -32602,
        ),
    ];
    for (what, headers, body, want_status, want_code) in cases {
        let (status, answer) = post(headers, body).await;
        assert_eq!(
            (status, answer["error"]["code"].as_i64()),
            (want_status, Some(want_code)),
            "{what}: {answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}: {answer}"
        );
    }
    let (_, unsupported) = post(
        vec![("MCP-Protocol-Version", "2099-01-01")],
        stateless("tools/list", json!({})),
    )
    .await;
    assert_eq!(
        unsupported["error"]["data"],
        json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
            "requested": "2099-01-01"}),
        "{unsupported}"
    );
    // A notification is acknowledged.
    let (status, _) = post(
        vec![V],
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}).to_string(),
    )
    .await;
    assert_eq!(status, 202);
}

#[actix_rt::test]
async fn the_handshake_offers_2025_11_25_and_keeps_older_revisions() {
    let server = Server::start();
    let token = session_token(&server).await;
    let init = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string()
    };
    for (asked, answered, described) in [
        ("2025-11-25", "2025-11-25", true),
        ("2025-06-18", "2025-06-18", false),
        ("2025-03-26", "2025-03-26", false),
        ("2024-11-05", "2024-11-05", false),
        // Unknown, or stateless (which has no handshake): our newest handshake revision.
        ("2031-01-01", "2025-11-25", true),
        ("2026-07-28", "2025-11-25", true),
    ] {
        let (status, answer) = raw(&server, &token, &[], &init(asked)).await;
        assert_eq!(status, 200, "{answer}");
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], answered, "{asked}: {answer}");
        assert_eq!(
            result["serverInfo"]["description"].is_string(),
            described,
            "{asked}: {answer}"
        );
        assert!(result.get("resultType").is_none(), "{answer}");
    }
    // Later requests name their revision in the header; results stay as before.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, answer) = raw(
        &server,
        &token,
        &[("MCP-Protocol-Version", "2025-11-25")],
        &list,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    assert!(answer["result"].get("ttlMs").is_none(), "{answer}");
    // A revision this server does not speak is 400, as 2025-11-25 requires.
    let (status, answer) = raw(
        &server,
        &token,
        &[("MCP-Protocol-Version", "1999-01-01")],
        &list,
    )
    .await;
    assert_eq!(
        (status, answer["error"]["code"].as_i64()),
        (400, Some(-32022)),
        "{answer}"
    );
    // Errors of the handshake era keep their 200.
    let (status, answer) = raw(
        &server,
        &token,
        &[("MCP-Protocol-Version", "2025-11-25")],
        &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}).to_string(),
    )
    .await;
    assert_eq!(
        (status, answer["error"]["code"].as_i64()),
        (200, Some(-32601)),
        "{answer}"
    );
    let (status, answer) = raw(&server, &token, &[], "not json").await;
    assert_eq!(
        (status, answer["error"]["code"].as_i64()),
        (200, Some(-32700)),
        "{answer}"
    );
}
