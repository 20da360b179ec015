//! A request body that stops arriving is timed out (`--request-timeout-secs`) rather
//! than held (issue 28, point 6b): answered 408 `REQUEST_TIMEOUT` within the timeout,
//! its connection closed, nothing stored, and the server keeps answering. An upload
//! that keeps sending, slowly but steadily, is not cut.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions};

/// A server that times bodies out after 2 s without a byte.
fn server() -> Server {
    Server::start_with(ServerOptions {
        args: vec!["--request-timeout-secs".into(), "2".into()],
        ..ServerOptions::default()
    })
}

/// A connection to the server with `head` (request line and headers, no body) sent.
fn send_head(server: &Server, head: &str) -> TcpStream {
    let host = server.base.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = head.replace("HOST", host);
    tcp.write_all(head.as_bytes()).unwrap();
    tcp
}

/// Reads until the server closes the connection (or 20 s pass, which fails the read);
/// returns what came.
fn read_to_close(tcp: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "the connection stayed open ({e}); so far: {}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The JSON body of a raw HTTP/1.1 answer (after the blank line).
fn json_body(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

/// Sends `path` a head announcing 1000 bytes and half of them, then nothing; asserts
/// the 408 comes within the timeout and the connection is closed.
fn stall(server: &Server, path: &str, content_type: &str, token: &str) {
    let started = Instant::now();
    let mut tcp = send_head(
        server,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: HOST\r\nContent-Type: {content_type}\r\n\
             Authorization: Bearer {token}\r\nContent-Length: 1000\r\n\r\n"
        ),
    );
    tcp.write_all(&[b' '; 500]).unwrap();
    let answer = read_to_close(&mut tcp);
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
    assert_eq!(
        json_body(&answer)["error"]["code"],
        "REQUEST_TIMEOUT",
        "{path}: {answer}"
    );
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(10),
        "{path}: answered after {took:?}"
    );
}

#[actix_rt::test]
async fn a_body_that_stops_half_way_is_answered_408_and_its_connection_closed() {
    let server = server();
    stall(&server, "/api/v1/sessions", "application/json", "none");
    stall(
        &server,
        "/api/v1/uploads?name=half.txt",
        "text/plain",
        "none",
    );
    // Nothing was created, and the server still answers.
    let (status, list) = server.get("/api/v1/sessions").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        list["sessions"],
        json!([]),
        "a half-sent session was created"
    );
    let (status, created) = server.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 201, "{created}");
    // The agent tools endpoint too.
    let sid = created["id"].as_str().unwrap();
    let (status, tok) = server
        .post(&format!("/api/v1/sessions/{sid}/mcp-token"), &json!({}))
        .await;
    assert_eq!(status, 200, "{tok}");
    stall(
        &server,
        "/mcp",
        "application/json",
        tok["token"].as_str().unwrap(),
    );
    let (status, _) = server.get("/api/v1/health").await;
    assert_eq!(status, 200);
}

#[actix_rt::test]
async fn an_upload_that_keeps_sending_slowly_is_not_cut() {
    let server = server();
    let chunks = 5;
    let mut tcp = send_head(
        &server,
        &format!(
            "POST /api/v1/uploads?name=slow.txt HTTP/1.1\r\nHost: HOST\r\n\
             Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            chunks * 1000
        ),
    );
    // A chunk a second: 5 s in all, more than twice the timeout, but never 2 s
    // without a byte.
    let started = Instant::now();
    for _ in 0..chunks {
        std::thread::sleep(Duration::from_secs(1));
        tcp.write_all(&[b'a'; 1000]).unwrap();
    }
    let answer = read_to_close(&mut tcp);
    assert!(started.elapsed() > Duration::from_secs(4));
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert_eq!(json_body(&answer)["size"], 5000, "{answer}");
}

/// A WebSocket's stream is not a request body: a socket quiet for longer than the
/// timeout stays open.
#[actix_rt::test]
async fn a_quiet_websocket_is_not_timed_out() {
    let server = server();
    let mut ws = server.ws().await;
    assert_eq!(ws.request(json!({"type": "ping"})).await["pong"], true);
    // The duration is the subject: quiet for twice the 2 s request timeout (the server
    // has no clock the test could move instead).
    actix_rt::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(ws.request(json!({"type": "ping"})).await["pong"], true);
}
