//! A frame that announces more than the hard limit is refused at its header: the
//! server closes the socket (1009) without buffering the payload that follows.

use std::io::{Read, Write};
use std::time::Duration;

use tandem_tests::raw_socket::{rss_kib, upgrade};
use tandem_tests::Server;

#[actix_rt::test]
async fn a_frame_announcing_a_terabyte_is_refused_at_its_header() {
    let server = Server::start();
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
