//! Generated input against everything that reads client bytes: the frame parser, the
//! frame reassembler and the REST bodies. Over 100,000 cases in all (see `CASES`);
//! none may panic, and every frame must be answered (parsed, or refused with a code).
//!
//! The same entry points are fuzzed without bounds by `fuzz/` (cargo-fuzz, nightly).

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Map, Value};
use tandem_protocol::client::{SessionConfigureParams, SessionCreateParams, SessionsListParams};
use tandem_protocol::incoming::{Fragment, Incoming, Reassembler};
use tandem_protocol::rest::PostMessage;
use tandem_protocol::{parse_client_frame, ErrorCode};

/// Cases per property; seven properties make 119,000.
const CASES: u32 = 17_000;

fn config() -> Config {
    Config {
        cases: CASES,
        // Shrinking a failure is welcome; persisting it to a file is not needed.
        failure_persistence: None,
        ..Config::default()
    }
}

/// Every client message type and the fields it reads.
const TYPES: &[(&str, &[&str])] = &[
    (
        "session.create",
        &[
            "vendor",
            "model",
            "effort",
            "title",
            "cwd",
            "permissionMode",
            "visibility",
        ],
    ),
    ("chat.send", &["content", "options", "queue"]),
    ("chat.abort", &[]),
    ("chat.stop-task", &["taskId"]),
    ("chat.subscribe", &["sessions"]),
    ("chat.unsubscribe", &["sessionIds"]),
    (
        "session.configure",
        &["model", "effort", "vendor", "permissionMode", "title"],
    ),
    ("sessions.watch", &["limit", "cursor"]),
    ("sessions.list", &["limit", "cursor"]),
    ("tool.call", &["name", "arguments"]),
    (
        "proposal.respond",
        &["proposalId", "accepted", "vendor", "model", "effort"],
    ),
    ("pair.create", &["driverId", "worker"]),
    ("pair.close", &["pairId"]),
    ("session.handoff", &["targetVendor", "model", "effort"]),
    ("session.schedule", &["content", "at"]),
    ("session.schedule-cancel", &["scheduleId"]),
    ("ping", &[]),
];

/// Short strings, cheaply: arbitrary bytes made UTF-8 (invalid ones become U+FFFD),
/// some multi-byte and control characters, and the field names the parser knows.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..24)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => prop::sample::select(vec![
            "", "\u{0}", "é", "日本", "🦀", "\u{202e}", "\\", "\"", "type", "sessionId",
            "requestId", "content", "sessions", "lastSeq", "limit", "cursor",
        ])
        .prop_map(str::to_string),
    ]
}

/// Any JSON value: wrong types, huge and negative numbers, odd strings, nesting.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
        Just(json!("")),
        Just(json!("x".repeat(2_000))),
        Just(json!("ses_nope")),
        Just(json!("low")),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A frame of a known type whose fields (and `requestId`, `sessionId`) have random
/// values, some of them left out.
fn typed_frame() -> impl Strategy<Value = (usize, Value)> {
    (
        0..TYPES.len(),
        prop::collection::vec(prop::option::of(json_value()), 12),
        prop::option::of(json_value()),
        prop::option::of(json_value()),
    )
        .prop_map(|(t, values, request_id, session_id)| {
            let (kind, fields) = TYPES[t];
            let mut obj = Map::new();
            obj.insert("type".into(), json!(kind));
            if let Some(v) = request_id {
                obj.insert("requestId".into(), v);
            }
            if let Some(v) = session_id {
                obj.insert("sessionId".into(), v);
            }
            for (field, value) in fields.iter().zip(values) {
                if let Some(v) = value {
                    obj.insert((*field).into(), v);
                }
            }
            (t, Value::Object(obj))
        })
}

/// Asserts a parse answered: a request, or a refusal with a message.
fn answered(text: &str) -> Result<(), ErrorCode> {
    match parse_client_frame(text) {
        Ok(_) => Ok(()),
        Err(e) => {
            assert!(!e.message.is_empty(), "empty message for {text:.200}");
            Err(e.code)
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_is_answered(t in text(), u in any::<String>()) {
        let _ = answered(&t);
        let _ = answered(&u);
    }

    #[test]
    fn any_bytes_as_text_are_answered(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        // What arrives as a frame is first checked for UTF-8, then parsed.
        let mut r = Reassembler::new(1 << 20);
        match r.text(&bytes) {
            Incoming::Text(t) => { let _ = answered(&t); }
            Incoming::Refused { code, .. } => prop_assert_eq!(code, ErrorCode::InvalidJson),
            Incoming::Pending => prop_assert!(false, "a whole frame is never pending"),
        }
    }

    #[test]
    fn wrong_field_types_get_field_codes((t, frame) in typed_frame()) {
        let text = frame.to_string();
        if let Err(code) = answered(&text) {
            let allowed = [
                ErrorCode::InvalidArgument,
                ErrorCode::SessionIdRequired,
                ErrorCode::TaskIdRequired,
            ];
            prop_assert!(allowed.contains(&code), "{} got {:?}: {:.300}", TYPES[t].0, code, text);
            // The requestId is echoed whenever it was a string.
            let err = parse_client_frame(&text).err();
            if let (Some(err), Some(id)) = (err, frame["requestId"].as_str()) {
                prop_assert_eq!(err.request_id.as_deref(), Some(id));
            }
        }
    }

    #[test]
    fn mangled_json_and_deep_nesting_are_answered(
        (_, frame) in typed_frame(),
        cut in any::<prop::sample::Index>(),
        depth in 0usize..300,
        junk in text(),
    ) {
        let text = frame.to_string();
        let at = cut.index(text.len() + 1);
        let mut cut_text: String = text.chars().take(at).collect();
        cut_text.push_str(&junk);
        let _ = answered(&cut_text);
        let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        prop_assert_eq!(answered(&nested), Err(ErrorCode::InvalidJson));
        let nested_obj = format!(
            "{{\"type\":\"chat.send\",\"sessionId\":\"s\",\"content\":{}1{}}}",
            "{\"a\":".repeat(depth),
            "}".repeat(depth)
        );
        let _ = answered(&nested_obj);
    }

    #[test]
    fn fragmented_and_whole_frames_are_answered_alike(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        max in 1usize..400,
    ) {
        let whole = Reassembler::new(max).text(&bytes);
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        // A fragmented message has a first frame and a last one at least.
        points.push(0);
        points.sort_unstable();
        points.dedup();
        let mut r = Reassembler::new(max);
        let mut start = 0;
        let mut kind = Fragment::FirstText;
        for p in points {
            prop_assert_eq!(r.fragment(kind, &bytes[start..p]), Incoming::Pending);
            prop_assert!(r.held() <= max);
            kind = Fragment::Continue;
            start = p;
        }
        let pieces = r.fragment(Fragment::Last, &bytes[start..]);
        match (&whole, &pieces) {
            (Incoming::Text(a), Incoming::Text(b)) => prop_assert_eq!(a, b),
            (Incoming::Refused { code: a, .. }, Incoming::Refused { code: b, .. }) => {
                prop_assert_eq!(a, b)
            }
            _ => prop_assert!(false, "whole {:?} but fragmented {:?}", whole, pieces),
        }
    }

    #[test]
    fn any_frame_sequence_is_answered(
        ops in prop::collection::vec((0u8..6, prop::collection::vec(any::<u8>(), 0..48)), 0..16),
    ) {
        let mut r = Reassembler::new(100);
        for (op, bytes) in ops {
            let answer = match op {
                0 => r.text(&bytes),
                1 => r.binary(),
                2 => r.fragment(Fragment::FirstText, &bytes),
                3 => r.fragment(Fragment::FirstBinary, &bytes),
                4 => r.fragment(Fragment::Continue, &bytes),
                _ => r.fragment(Fragment::Last, &bytes),
            };
            prop_assert!(r.held() <= 100);
            if let Incoming::Text(t) = answer {
                prop_assert!(t.len() <= 100);
                let _ = answered(&t);
            }
        }
    }

    #[test]
    fn rest_bodies_never_panic(value in json_value(), bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let text = value.to_string();
        for input in [text.as_bytes(), bytes.as_slice()] {
            let _ = serde_json::from_slice::<SessionCreateParams>(input);
            let _ = serde_json::from_slice::<PostMessage>(input);
            let _ = serde_json::from_slice::<SessionsListParams>(input);
            let _ = serde_json::from_slice::<SessionConfigureParams>(input);
        }
    }
}
