//! Wall-clock time and random ids.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch. A clock before 1970 reads as 0 rather than failing.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `prefix` followed by `bytes` random bytes in lowercase hex. Ids and tokens come from
/// the operating system's generator, so they are unguessable.
pub fn random_id(prefix: &str, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if let Err(e) = getrandom::fill(&mut buf) {
        // The OS generator failing is not recoverable in any useful way; fall back to
        // time-derived bytes so the server still works, and say so loudly.
        tracing::error!(error = %e, "OS random generator failed; using time-derived ids");
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
    let mut out = String::with_capacity(prefix.len() + bytes * 2);
    out.push_str(prefix);
    for b in buf {
        out.push(char::from_digit((b >> 4) as u32, 16).unwrap_or('0'));
        out.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_distinct_and_prefixed() {
        let a = super::random_id("ses_", 12);
        let b = super::random_id("ses_", 12);
        assert!(a.starts_with("ses_") && a.len() == 4 + 24);
        assert_ne!(a, b);
    }
}
