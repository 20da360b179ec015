//! Scheduled messages: RFC 3339 times. The persisted state of a schedule is the wire
//! type [`ScheduleRecord`] (`ScheduleInfo` in the protocol crate).

pub use tandem_protocol::schedule::{ScheduleInfo as ScheduleRecord, ScheduleStatus};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// How far ahead a message may be scheduled.
pub const MAX_AHEAD_MS: u64 = 365 * 24 * 3600 * 1000;

/// Parses an RFC 3339 timestamp (`2026-11-29T18:00:00Z`, `…T18:00:00.250+01:00`) into
/// epoch milliseconds (sub-millisecond digits are dropped). The `time` crate checks the
/// calendar: `2026-02-31` is refused, not rolled over into March.
pub fn parse_rfc3339(text: &str) -> Result<u64, String> {
    let at = OffsetDateTime::parse(text.trim(), &Rfc3339)
        .map_err(|e| format!("`{text}` is not an RFC 3339 time like 2026-11-29T18:00:00Z ({e})"))?;
    let ms = at.unix_timestamp_nanos().div_euclid(1_000_000);
    u64::try_from(ms).map_err(|_| "times before 1970 are not supported".to_string())
}

#[cfg(test)]
mod tests {
    use super::parse_rfc3339;

    #[test]
    fn parses_rfc3339() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_rfc3339("2000-03-01T00:00:00Z"), Ok(951_868_800_000));
        assert_eq!(
            parse_rfc3339("2026-11-29T18:00:00.25Z"),
            Ok(1_795_975_200_250)
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T19:00:00+01:00"),
            Ok(1_795_975_200_000)
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T17:30:00-00:30"),
            Ok(1_795_975_200_000)
        );
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z"), Ok(1_709_164_800_000));
        assert_eq!(
            parse_rfc3339(" 2026-11-29t18:00:00z "),
            Ok(1_795_975_200_000)
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T18:00:00.123999Z"),
            Ok(1_795_975_200_123)
        );
        assert_eq!(
            parse_rfc3339("1969-12-31T23:59:59Z"),
            Err("times before 1970 are not supported".into())
        );
        assert!(parse_rfc3339("1969-12-31T23:59:59.9995Z").is_err());
        for bad in [
            "",
            "tomorrow",
            "2026-11-29",
            "2026-13-01T00:00:00Z",
            "2026-11-29T18:00:00",
            "2026-11-29T18:00:00+0100",
            // Days a month does not have are refused, not rolled over.
            "2026-02-31T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-04-31T12:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T18:60:00Z",
            "2026-11-29T18:00:00.Z",
            "2026-11-29T18:00:00+24:00",
            "2026-11-29T18:00:00Zjunk",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }
}
