//! A frame that announces more than the hard limit is refused at its header: the
//! server closes the socket (1009) without buffering the payload that follows.

use std::io::{Read, Write};
use std::time::Duration;

use tandem_tests::raw_socket::{rss_kib, upgrade};
use tandem_tests::Server;

#[actix_rt::test]
async fn a_frame_announcing_a_terabyte_is_refused_at_its_header() {
    let server = Server::start_process(Default::default());
    let baseline = rss_kib(server.pid());
    let mut stream = upgrade(&server.base, None);
    // A masked text frame header announcing 2^40 bytes.
    let mut header = vec![0x81, 0x80 | 127];
    header.extend_from_slice(&(1u64 << 40).to_be_bytes());
    header.extend_from_slice(&[9, 9, 9, 9]);
    stream.write_all(&header).unwrap_or_else(|e| panic!("{e}"));
    // Then stream (at most 2 GiB, for at most 10 s): the server must end the
    // connection within moments, without buffering what it read.
    let chunk = vec![0u8; 64 << 10];
    let mut sent: usize = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut ended = false;
    while sent < 2 << 30 && std::time::Instant::now() < deadline {
        match stream.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => {
                ended = true;
                break;
            }
        }
    }
    assert!(
        ended,
        "the server kept reading a 2^40-byte frame ({sent} bytes)"
    );
    let after = rss_kib(server.pid());
    eprintln!("sent {sent} bytes before the server closed; RSS {baseline} → {after} KiB");
    assert!(
        after < baseline + 32 * 1024,
        "the payload was buffered: {baseline} → {after} KiB"
    );
    // The close frame, if it got through before the reset, says 1009.
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    if let Some(pos) = reply.windows(2).position(|w| w[0] == 0x88) {
        let code = reply
            .get(pos + 2..pos + 4)
            .map(|c| u16::from_be_bytes([c[0], c[1]]));
        assert_eq!(code, Some(1009), "close frame {:?}", &reply[pos..]);
    }
    // The server goes on serving.
    let mut ws = server.ws().await;
    ws.create_session().await;
}

/// However the client goes on after a refused header (here: junk at a steady pace, as
/// a client that ignores the close frame would), the server ends the connection
/// within 2 s: writes then fail with a reset, and reads see the end.
#[actix_rt::test]
async fn after_a_refused_header_the_connection_ends_within_two_seconds() {
    let server = Server::start();
    let mut stream = upgrade(&server.base, None);
    // A write that cannot go on (the server stopped reading but kept the socket)
    // returns after this instead of blocking the test.
    stream
        .set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut header = vec![0x81, 0x80 | 127];
    header.extend_from_slice(&(1u64 << 40).to_be_bytes());
    header.extend_from_slice(&[9, 9, 9, 9]);
    stream.write_all(&header).unwrap_or_else(|e| panic!("{e}"));
    let refused_at = std::time::Instant::now();
    let chunk = vec![0x55u8; 64 << 10];
    let mut accepted: usize = 0;
    let ended_after = loop {
        let elapsed = refused_at.elapsed();
        if elapsed > Duration::from_secs(20) {
            break None;
        }
        match stream.write(&chunk) {
            Ok(n) => accepted += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break Some(elapsed),
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    eprintln!("the client wrote {accepted} bytes; the connection ended after {ended_after:?}");
    let ended_after =
        ended_after.unwrap_or_else(|| panic!("still open 20 s after the refused header"));
    assert!(
        ended_after <= Duration::from_secs(2),
        "the connection ended only after {ended_after:?}"
    );
    // The read side has ended too (a reset, or the end after the close frame).
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "still open: {e}"),
    }
}

/// A fragmented message that never ends: continuation frames, each within the limit,
/// and never a final one. The server reads it (keeping none of it) only up to 16 times
/// the limit, like a single frame, then closes the connection (1009): it ends within
/// 2 s of the client passing that point, though the client reads the close frame and
/// keeps sending.
#[actix_rt::test]
async fn an_endless_fragmented_message_ends_the_connection() {
    const LIMIT: usize = 4096;
    let server = tandem_tests::Server::start_with(tandem_tests::ServerOptions {
        args: vec!["--max-frame-bytes".into(), LIMIT.to_string()],
        ..tandem_tests::ServerOptions::default()
    });
    let mut stream = upgrade(&server.base, None);
    stream
        .set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap_or_else(|e| panic!("{e}"));
    stream
        .set_nonblocking(false)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut reader = stream.try_clone().unwrap_or_else(|e| panic!("{e}"));
    // The client reads everything the server sends, on its own thread.
    let read_all = std::thread::spawn(move || {
        let mut got = Vec::new();
        let _ = reader.read_to_end(&mut got);
        got
    });
    // A masked frame (zero mask key) with FIN clear: opcode 1 first, then 0.
    let fragment = |opcode: u8, len: usize| {
        let mut f = vec![opcode, 0x80 | 126];
        f.extend_from_slice(&(len as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend(std::iter::repeat_n(b'x', len));
        f
    };
    stream
        .write_all(&fragment(0x1, 1024))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sent = 1024;
    let mut past_cap: Option<std::time::Instant> = None;
    let started = std::time::Instant::now();
    let ended_after = loop {
        if started.elapsed() > Duration::from_secs(30) {
            break None;
        }
        match stream.write(&fragment(0x0, 1024)) {
            Ok(_) => sent += 1024,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break Some(past_cap.map(|t| t.elapsed())),
        }
        if sent > 16 * LIMIT && past_cap.is_none() {
            past_cap = Some(std::time::Instant::now());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let ended_after = ended_after.unwrap_or_else(|| panic!("still open after 30 s ({sent} bytes)"));
    eprintln!("sent {sent} bytes; ended {ended_after:?} after passing 16 × the limit");
    let ended_after = ended_after.unwrap_or_else(|| panic!("ended before the cap: {sent} bytes"));
    assert!(
        ended_after <= Duration::from_secs(2),
        "the connection ended only {ended_after:?} after the cap"
    );
    let got = read_all.join().unwrap_or_else(|_| panic!("reader thread"));
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("FRAME_TOO_LARGE"), "told why: {text}");
}
