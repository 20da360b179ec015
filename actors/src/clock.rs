//! Wall-clock time and random ids.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch. A clock before 1970 reads as 0 rather than failing.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `prefix` followed by `bytes` random bytes in lowercase hex, for ids (sessions,
/// pairs, schedules). Ids are not secrets (every access is checked against the
/// caller), so if the OS generator fails they fall back to time-derived bytes rather
/// than stopping the server. Secrets use [`random_token`], which has no fallback.
pub fn random_id(prefix: &str, bytes: usize) -> String {
    match random_token(prefix, bytes) {
        Ok(id) => id,
        Err(e) => {
            tracing::error!(error = %e, "OS random generator failed; using time-derived ids");
            let t = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            let buf: Vec<u8> = (0..bytes)
                .map(|i| (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(151))
                .collect();
            hex(prefix, &buf)
        }
    }
}

/// The OS random generator failed, so no secret can be made.
#[derive(Debug, thiserror::Error)]
#[error("the operating system's random generator failed: {0}")]
pub struct RandomError(String);

/// `prefix` followed by `bytes` bytes from the OS generator in lowercase hex: tokens.
/// Fails closed: a token is never derived from anything guessable.
pub fn random_token(prefix: &str, bytes: usize) -> Result<String, RandomError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| RandomError(e.to_string()))?;
    Ok(hex(prefix, &buf))
}

fn hex(prefix: &str, bytes: &[u8]) -> String {
    let mut out = String::with_capacity(prefix.len() + bytes.len() * 2);
    out.push_str(prefix);
    for b in bytes {
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
        let t = super::random_token("tdm_", 24).unwrap_or_else(|e| panic!("{e}"));
        assert!(t.starts_with("tdm_") && t.len() == 4 + 48);
    }
}
