//! Generated and malformed frames over a real socket, written byte by byte (so frames
//! no WebSocket library would send can be sent): every data frame is answered, the
//! socket stays usable, and a text message that is not UTF-8 gets the same answer
//! whether it comes whole or in fragments.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::Server;

/// A WebSocket client on a plain TCP socket.
struct RawSocket {
    stream: TcpStream,
}

impl RawSocket {
    fn connect(server: &Server) -> RawSocket {
        let host = server.base.trim_start_matches("http://").to_string();
        let mut stream = TcpStream::connect(&host).unwrap_or_else(|e| panic!("{e}"));
        let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
        let _ = stream.set_nodelay(true);
        let req = format!(
            "GET /ws HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        );
        stream
            .write_all(req.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream
                .read_exact(&mut byte)
                .unwrap_or_else(|e| panic!("upgrade: {e}"));
            head.push(byte[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        RawSocket { stream }
    }

    /// Sends one frame (client frames are masked).
    fn frame(&mut self, fin: bool, opcode: u8, payload: &[u8]) {
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        let len = payload.len();
        if len < 126 {
            out.push(0x80 | len as u8);
        } else if len <= u16::MAX as usize {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
        let mask = [0x12, 0x34, 0x56, 0x78];
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream
            .write_all(&out)
            .unwrap_or_else(|e| panic!("send: {e}"));
    }

    fn text(&mut self, payload: &[u8]) {
        self.frame(true, 1, payload);
    }

    /// The next text frame as JSON; `None` when the server closed the socket.
    fn recv(&mut self) -> Option<Value> {
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).ok()?;
            let opcode = head[0] & 0x0f;
            let mut len = (head[1] & 0x7f) as u64;
            if len == 126 {
                let mut b = [0u8; 2];
                self.stream.read_exact(&mut b).ok()?;
                len = u16::from_be_bytes(b) as u64;
            } else if len == 127 {
                let mut b = [0u8; 8];
                self.stream.read_exact(&mut b).ok()?;
                len = u64::from_be_bytes(b);
            }
            let mut payload = vec![0u8; len as usize];
            self.stream.read_exact(&mut payload).ok()?;
            match opcode {
                1 => return serde_json::from_slice(&payload).ok(),
                8 => return None,
                9 => self.frame(true, 10, &payload),
                _ => {}
            }
        }
    }

    /// A `ping` request still gets its reply.
    fn assert_usable(&mut self, after: &str) {
        self.text(br#"{"type":"ping","requestId":"alive"}"#);
        let answer = self.recv();
        let answer = answer.unwrap_or_else(|| panic!("socket closed after {after}"));
        assert_eq!(answer["requestId"], "alive", "after {after}: {answer}");
        assert_eq!(answer["pong"], true);
    }
}

#[test]
fn invalid_utf8_is_answered_alike_whole_or_fragmented() {
    let server = Server::start();
    let mut ws = RawSocket::connect(&server);
    let bad = [b'{', b'"', 0xff, 0xfe, b'"', b'}'];
    ws.text(&bad);
    let whole = ws
        .recv()
        .unwrap_or_else(|| panic!("closed on a whole invalid frame"));
    ws.assert_usable("a whole invalid UTF-8 frame");
    ws.frame(false, 1, &bad[..3]);
    ws.frame(true, 0, &bad[3..]);
    let pieces = ws.recv().unwrap_or_else(|| panic!("closed on fragments"));
    ws.assert_usable("a fragmented invalid UTF-8 message");
    assert_eq!(whole["code"], "INVALID_JSON", "{whole}");
    assert_eq!(whole["code"], pieces["code"]);
    assert_eq!(whole["error"], pieces["error"]);
    // Binary, whole and fragmented. (A continuation without a start is a protocol
    // violation that closes the socket, as RFC 6455 asks.)
    ws.frame(true, 2, b"{}");
    assert_eq!(
        ws.recv().map(|v| v["code"].clone()),
        Some(json!("INVALID_JSON"))
    );
    ws.frame(false, 2, b"{");
    ws.frame(true, 0, b"}");
    assert_eq!(
        ws.recv().map(|v| v["code"].clone()),
        Some(json!("INVALID_JSON"))
    );
    ws.assert_usable("binary frames");
    // A fragmented valid request is carried out.
    ws.frame(false, 1, br#"{"type":"pi"#);
    ws.frame(false, 0, br#"ng","requ"#);
    ws.frame(true, 0, br#"estId":"frag"}"#);
    assert_eq!(
        ws.recv().map(|v| v["requestId"].clone()),
        Some(json!("frag"))
    );
}

/// A small deterministic generator (tests must be reproducible).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.next() as usize % items.len()]
    }
}

#[test]
fn generated_frames_are_each_answered_and_the_socket_stays_usable() {
    let server = Server::start();
    let types = [
        "session.create",
        "chat.send",
        "chat.abort",
        "chat.stop-task",
        "chat.subscribe",
        "chat.unsubscribe",
        "session.configure",
        "sessions.watch",
        "sessions.list",
        "tool.call",
        "proposal.respond",
        "pair.create",
        "pair.close",
        "session.handoff",
        "session.schedule",
        "session.schedule-cancel",
        "warp.drive",
    ];
    let fields = [
        "sessionId",
        "content",
        "queue",
        "options",
        "taskId",
        "sessions",
        "sessionIds",
        "limit",
        "cursor",
        "name",
        "arguments",
        "accepted",
        "worker",
        "pairId",
        "at",
        "vendor",
        "effort",
        "permissionMode",
        "visibility",
        "cwd",
        "title",
    ];
    let values = [
        json!(null),
        json!(true),
        json!(-1),
        json!(u64::MAX),
        json!(1e308),
        json!(""),
        json!("ses_nope"),
        json!([1, [2, [3]]]),
        json!({"a": {"b": {}}}),
        json!([{"sessionId": 5}]),
        json!("x".repeat(3000)),
    ];
    let mut rng = Lcg(7);
    let mut answered = 0;
    // The server closes a socket after 50 bad frames in 10 s (abuse), so 40 a socket.
    for _ in 0..8 {
        let mut ws = RawSocket::connect(&server);
        for i in 0..40 {
            let mut frame = serde_json::Map::new();
            frame.insert("type".into(), json!(rng.pick(&types)));
            frame.insert("requestId".into(), json!(format!("g{i}")));
            for _ in 0..rng.next() % 5 {
                frame.insert((*rng.pick(&fields)).into(), rng.pick(&values).clone());
            }
            let text = Value::Object(frame).to_string();
            // Half of them fragmented at a random point.
            if rng.next() & 1 == 0 {
                ws.text(text.as_bytes());
            } else {
                let at = rng.next() as usize % text.len();
                ws.frame(false, 1, &text.as_bytes()[..at]);
                ws.frame(true, 0, &text.as_bytes()[at..]);
            }
            // The answer to this frame: a reply or an error, carrying its requestId.
            // (A successful chat.send may be followed by events; those carry no
            // requestId and are skipped.)
            loop {
                let v = ws
                    .recv()
                    .unwrap_or_else(|| panic!("closed after {text:.200}"));
                if v["requestId"] == json!(format!("g{i}")) {
                    assert!(
                        v["kind"] == "reply" || v["code"].is_string(),
                        "{text:.200} → {v}"
                    );
                    answered += 1;
                    break;
                }
            }
        }
        ws.assert_usable("generated frames");
    }
    assert_eq!(answered, 320);
}

#[actix_rt::test]
async fn generated_rest_bodies_get_json_answers() {
    let server = Server::start();
    let (_, session) = server.post("/api/v1/sessions", &json!({})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    let values = [
        json!(null),
        json!(false),
        json!(-7),
        json!(u64::MAX),
        json!(1.5e300),
        json!(""),
        json!("low"),
        // A script step as a generated value (a 1 ms turn if it lands as content),
        // not a window: nothing here waits on it.
        json!("/sleep 1"),
        json!(["a", 1]),
        json!({"model": {"deep": [[[]]]}}),
    ];
    let fields = [
        "content",
        "queue",
        "options",
        "title",
        "vendor",
        "model",
        "effort",
        "permissionMode",
        "visibility",
        "cwd",
        "junk",
    ];
    let paths = [
        ("POST", "/api/v1/sessions".to_string()),
        ("POST", format!("/api/v1/sessions/{sid}/messages")),
        ("PATCH", format!("/api/v1/sessions/{sid}")),
    ];
    let client = awc::Client::default();
    let mut rng = Lcg(11);
    for i in 0..150 {
        let (method, path) = rng.pick(&paths);
        let body = match i % 5 {
            // Raw bytes: cut JSON, invalid UTF-8, nothing.
            0 => vec![b'{', 0xff, b'"'],
            1 => b"{\"content\": \"unterminated".to_vec(),
            2 => Vec::new(),
            _ => {
                let mut obj = serde_json::Map::new();
                for _ in 0..rng.next() % 4 {
                    obj.insert((*rng.pick(&fields)).into(), rng.pick(&values).clone());
                }
                Value::Object(obj).to_string().into_bytes()
            }
        };
        let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
        let mut resp = client
            .request(method, format!("{}{path}", server.base))
            .insert_header(("Content-Type", "application/json"))
            .send_body(body.clone())
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let status = resp.status().as_u16();
        let bytes = resp.body().await.unwrap();
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            panic!(
                "{path} {:?}: not JSON: {bytes:?}",
                String::from_utf8_lossy(&body)
            )
        });
        assert!(status < 500, "{path}: {status} {answer}");
        if status >= 400 {
            assert!(answer["error"]["code"].is_string(), "{path}: {answer}");
        }
    }
    // Still serving.
    assert_eq!(server.get("/api/v1/health").await.0, 200);
}
