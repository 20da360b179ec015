//! Feeds arbitrary bytes to everything that reads a client's WebSocket frames: the
//! reassembler (whole, fragmented at a fuzzer-chosen point, binary) and the frame
//! parser. Nothing may panic; a complete message is always answered.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tandem_protocol::incoming::{Fragment, Incoming, Reassembler};
use tandem_protocol::parse_client_frame;

fuzz_target!(|data: &[u8]| {
    let Some((&split, bytes)) = data.split_first() else {
        return;
    };
    let max = 4096;
    let whole = Reassembler::new(max).text(bytes);
    let at = (split as usize * bytes.len()) / 255;
    let mut r = Reassembler::new(max);
    assert_eq!(r.fragment(Fragment::FirstText, &bytes[..at]), Incoming::Pending);
    let pieces = r.fragment(Fragment::Last, &bytes[at..]);
    match (&whole, &pieces) {
        (Incoming::Text(a), Incoming::Text(b)) => {
            assert_eq!(a, b);
            let _ = parse_client_frame(a);
        }
        (Incoming::Refused { code: a, .. }, Incoming::Refused { code: b, .. }) => {
            assert_eq!(a, b)
        }
        _ => panic!("whole {whole:?} but fragmented {pieces:?}"),
    }
    let _ = r.binary();
    let _ = serde_json::from_slice::<tandem_protocol::client::SessionCreateParams>(bytes);
});
