//! Cheap field extraction from event frames, without parsing JSON.
//!
//! The server serializes events with serde in a fixed order: the envelope first
//! (`sessionId`, `seq`, `ts`, `turnId`, `kind`), then the body. A key pattern like
//! `"seq":` cannot occur inside a JSON string (quotes there are escaped as `\"`), so
//! the first match is the envelope's field. Control frames have no `"seq":` key
//! (`chat_subscribed` has `"lastSeq":`, which does not match).

/// Position of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let last_start = hay.len() - needle.len();
    let mut i = 0;
    while i <= last_start {
        match hay[i..=last_start].iter().position(|b| *b == first) {
            None => return None,
            Some(p) => {
                i += p;
                if &hay[i..i + needle.len()] == needle {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

/// The unsigned integer right after `key` (e.g. `b"\"seq\":"`).
pub fn u64_after(frame: &[u8], key: &[u8]) -> Option<u64> {
    let start = find(frame, key)? + key.len();
    let mut value: u64 = 0;
    let mut digits = 0;
    for b in &frame[start..] {
        if !b.is_ascii_digit() {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(value)
}

/// The string value right after `key` (e.g. `b"\"kind\":\""`), up to its closing
/// quote; only for values without escapes (kinds, ids).
pub fn str_after<'a>(frame: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let start = find(frame, key)? + key.len();
    let len = frame[start..].iter().position(|b| *b == b'"')?;
    Some(&frame[start..start + len])
}

/// An event's `seq`; `None` for control frames.
pub fn seq(frame: &[u8]) -> Option<u64> {
    u64_after(frame, b"\"seq\":")
}

/// An event's `ts` (epoch ms when the server appended it).
pub fn ts(frame: &[u8]) -> Option<u64> {
    u64_after(frame, b"\"ts\":")
}

/// A frame's `kind`.
pub fn kind(frame: &[u8]) -> Option<&[u8]> {
    str_after(frame, b"\"kind\":\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_envelope_fields() {
        let f = br#"{"sessionId":"ses_1","seq":42,"ts":1700000000123,"turnId":"turn_1","kind":"text_delta","text":"\"seq\":7 \"kind\":\"x\""}"#;
        assert_eq!(seq(f), Some(42));
        assert_eq!(ts(f), Some(1_700_000_000_123));
        assert_eq!(kind(f), Some(&b"text_delta"[..]));
    }

    #[test]
    fn control_frames_have_no_seq() {
        let f = br#"{"kind":"chat_subscribed","sessionId":"s","status":"idle","lastSeq":9}"#;
        assert_eq!(seq(f), None);
        assert_eq!(kind(f), Some(&b"chat_subscribed"[..]));
        assert_eq!(u64_after(f, b"\"lastSeq\":"), Some(9));
    }
}
