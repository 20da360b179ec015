//! A request target too long for the HTTP layer (over 64 KiB) is answered with a JSON
//! error like every other refusal, not with an empty `400`; the server goes on serving.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use tandem_tests::Server;

/// Sends `request` on a fresh connection and returns everything the server answers.
fn exchange(server: &Server, request: &[u8]) -> String {
    let addr = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap_or_else(|e| panic!("{e}"));
    stream.write_all(request).unwrap_or_else(|e| panic!("{e}"));
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).to_string()
}

#[actix_rt::test]
async fn an_oversized_path_id_gets_a_json_error() {
    let server = Server::start();
    let host = server.base.trim_start_matches("http://").to_string();
    for len in [70_000, 100_000, 200_000] {
        let id = "x".repeat(len);
        let request = format!("GET /api/v1/sessions/{id} HTTP/1.1\r\nHost: {host}\r\n\r\n");
        let answer = exchange(&server, request.as_bytes());
        let (head, body) = answer
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no HTTP answer for a {len}-byte id: {answer:?}"));
        assert!(head.starts_with("HTTP/1.1 414"), "{len}: {head}");
        assert!(head.contains("application/json"), "{len}: {head}");
        let body: serde_json::Value =
            serde_json::from_str(body).unwrap_or_else(|e| panic!("{len}: {e}: {body:?}"));
        assert_eq!(body["error"]["code"], "INVALID_ARGUMENT", "{body}");
    }
    // A long id that the HTTP layer does take is still answered by the route, and a
    // body longer than 64 KiB is not mistaken for a request target.
    let (status, body) = server
        .get(&format!("/api/v1/sessions/{}", "y".repeat(60_000)))
        .await;
    assert!(status == 400 || status == 404, "{status} {body}");
    assert!(body["error"]["code"].is_string(), "{body}");
    let long_title = "t".repeat(100);
    let payload = serde_json::json!({"title": long_title, "cwd": null, "x": "z ".repeat(40_000)});
    let (status, body) = server.post("/api/v1/sessions", &payload).await;
    assert_eq!(status, 201, "{body}");
    // WebSockets still work through the same connection layer.
    let mut ws = server.ws().await;
    assert_eq!(
        ws.request(serde_json::json!({"type": "ping"})).await["pong"],
        true
    );
}
