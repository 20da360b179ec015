//! What a hostile web page can make the person's browser send to tandem on loopback:
//! a WebSocket upgrade and fetches with its own `Origin`, "simple" cross-site POSTs
//! (`text/plain`, forms) that need no preflight, and DNS-rebound requests carrying a
//! foreign `Host`. Each is refused with a JSON error, also with `--auth none`;
//! clients that are not browsers (no `Origin`) keep working.

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions, WsClient};

/// A request with exactly these headers (plus the token, if the server has one).
async fn raw(
    server: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value) {
    let client = awc::Client::builder()
        .max_http_version(awc::http::Version::HTTP_11)
        .finish();
    let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client.request(method, format!("{}{path}", server.base));
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    if let Some(t) = &server.token {
        req = req.insert_header(("Authorization", format!("Bearer {t}")));
    }
    let mut resp = req
        .send_body(body.to_string())
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let bytes = resp.body().await.unwrap();
    (
        resp.status().as_u16(),
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A browser's WebSocket upgrade from a page at `origin`, over a plain TCP socket
/// (HTTP client libraries rewrite `Connection`); the status and JSON body (if any).
fn upgrade(server: &Server, origin: &str) -> (u16, Value) {
    use std::io::{Read, Write};
    let host = host_of(server);
    let mut path = "/ws".to_string();
    if let Some(t) = &server.token {
        path = format!("/ws?token={t}");
    }
    let mut stream =
        std::net::TcpStream::connect(&host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(20)));
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nConnection: Upgrade\r\n\
         Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Read the head, then the body it announces.
    loop {
        let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n");
        if let Some(end) = head_end {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let status = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())
                        .flatten()
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body = buf.get(end + 4..).unwrap();
            return (status, serde_json::from_slice(body).unwrap_or(Value::Null));
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => panic!("no answer to the upgrade"),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn host_of(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

#[actix_rt::test]
async fn a_foreign_page_cannot_open_the_websocket() {
    for token_auth in [false, true] {
        let server = Server::start_with(ServerOptions {
            token_auth,
            ..ServerOptions::default()
        });
        let ws = server.ws_url();
        let (status, body) = upgrade(&server, "http://evil.example");
        assert_eq!(status, 403, "auth {token_auth}: {body}");
        assert_eq!(body["error"]["code"], "ORIGIN_NOT_ALLOWED");
        for bad in ["null", "http://127.0.0.1:1", "https://evil.example"] {
            let (status, _) = upgrade(&server, bad);
            assert_eq!(status, 403, "origin {bad}");
        }
        // The server's own page may, and so may a client that sends no Origin.
        let own = server.base.clone();
        let (status, _) = upgrade(&server, &own);
        assert_eq!(status, 101, "own origin");
        let framed = awc::Client::builder()
            .max_http_version(awc::http::Version::HTTP_11)
            .finish()
            .ws(ws.as_str())
            .origin(own.as_str())
            .connect()
            .await;
        assert!(framed.is_ok(), "own origin over a real WebSocket");
        let mut plain = WsClient::connect(&ws).await;
        assert_eq!(plain.request(json!({"type": "ping"})).await["pong"], true);
    }
}

#[actix_rt::test]
async fn cross_site_posts_are_refused_and_change_nothing() {
    let server = Server::start();
    let evil = [
        ("Origin", "http://evil.example"),
        ("Content-Type", "text/plain"),
    ];
    let (status, body) = raw(&server, "POST", "/api/v1/sessions", &evil, "{}").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "ORIGIN_NOT_ALLOWED");
    // Even as JSON (a page would need a preflight, never granted) a foreign Origin is
    // refused.
    let evil_json = [
        ("Origin", "http://evil.example"),
        ("Content-Type", "application/json"),
    ];
    let (status, _) = raw(&server, "POST", "/api/v1/sessions", &evil_json, "{}").await;
    assert_eq!(status, 403);
    // Without an Origin, a simple content type is still refused.
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let (status, body) = raw(
            &server,
            "POST",
            "/api/v1/sessions",
            &[("Content-Type", ct)],
            "{}",
        )
        .await;
        assert_eq!(status, 415, "{ct}: {body}");
        assert_eq!(body["error"]["code"], "UNSUPPORTED_MEDIA_TYPE");
    }
    let (status, _) = raw(&server, "POST", "/api/v1/sessions", &[], "{}").await;
    assert_eq!(status, 415, "no content type");
    // MCP is guarded the same way.
    let (status, body) = raw(&server, "POST", "/mcp", &evil, "{}").await;
    assert_eq!(status, 403, "{body}");
    // Nothing was created.
    let (_, list) = server.get("/api/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(0), "{list}");
    // The same POST from the server's own page, as JSON, works.
    let own = server.base.clone();
    let ok = [
        ("Origin", own.as_str()),
        ("Content-Type", "application/json; charset=utf-8"),
    ];
    let (status, body) = raw(&server, "POST", "/api/v1/sessions", &ok, "{}").await;
    assert_eq!(status, 201, "{body}");
}

#[actix_rt::test]
async fn dns_rebinding_hosts_are_refused() {
    let server = Server::start();
    let port = host_of(&server)
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap();
    for host in [
        format!("evil.example:{port}"),
        "rebind.attacker.test".into(),
    ] {
        let (status, body) = raw(&server, "GET", "/api/v1/sessions", &[("Host", &host)], "").await;
        assert_eq!(status, 403, "{host}: {body}");
        assert_eq!(body["error"]["code"], "HOST_NOT_ALLOWED");
        let (status, _) = raw(&server, "GET", "/ws", &[("Host", &host)], "").await;
        assert_eq!(status, 403, "ws {host}");
    }
    for host in [format!("localhost:{port}"), host_of(&server)] {
        let (status, _) = raw(&server, "GET", "/api/v1/sessions", &[("Host", &host)], "").await;
        assert_eq!(status, 200, "{host}");
    }
}

#[actix_rt::test]
async fn a_foreign_origin_is_refused_even_with_a_valid_token() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let (status, body) = raw(
        &server,
        "GET",
        "/api/v1/sessions",
        &[("Origin", "http://evil.example")],
        "",
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = raw(&server, "GET", "/api/v1/sessions", &[], "").await;
    assert_eq!(status, 200);
}

#[actix_rt::test]
async fn configured_origins_and_hosts_are_accepted() {
    let server = Server::start_with(ServerOptions {
        args: [
            "--allowed-origin",
            "https://app.example",
            "--allowed-host",
            "tandem.test",
        ]
        .map(String::from)
        .to_vec(),
        ..ServerOptions::default()
    });
    let (status, _) = upgrade(&server, "https://app.example");
    assert_eq!(status, 101);
    let headers = [
        ("Host", "tandem.test"),
        ("Origin", "http://tandem.test"),
        ("Content-Type", "application/json"),
    ];
    let (status, body) = raw(&server, "POST", "/api/v1/sessions", &headers, "{}").await;
    assert_eq!(status, 201, "{body}");
    let (status, _) = upgrade(&server, "https://other.example");
    assert_eq!(status, 403);
}
