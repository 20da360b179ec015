//! Hand-made WebSocket clients on plain TCP sockets, for tests that must control what
//! the socket does below the protocol: never read (with a tiny receive buffer), send a
//! frame header that lies about its length, or see exactly how the connection ends.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use socket2::{Domain, Socket, Type};

/// A WebSocket text frame from a client (masked, as clients must).
pub fn client_frame(text: &str) -> Vec<u8> {
    let payload = text.as_bytes();
    let mask = [0x12u8, 0x34, 0x56, 0x78];
    let mut out = vec![0x81];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= 0xffff => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Connects to `base` (`http://HOST:PORT`), optionally with a small receive buffer
/// (set before connecting, so the window is small from the start), completes the
/// WebSocket upgrade and returns the socket right after the `101` response.
pub fn upgrade(base: &str, receive_buffer: Option<usize>) -> TcpStream {
    let host = base.trim_start_matches("http://");
    let addr: SocketAddr = host
        .parse()
        .unwrap_or_else(|e| panic!("server address {host}: {e}"));
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap_or_else(|e| panic!("{e}"));
    if let Some(size) = receive_buffer {
        socket
            .set_recv_buffer_size(size)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    socket
        .connect(&addr.into())
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let mut stream: TcpStream = socket.into();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            other => panic!("handshake: {other:?}"),
        }
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    stream
}

/// Resident memory of a process in KiB, from /proc (0 when unreadable).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
