//! Scheduled messages: RFC 3339 times. The persisted state of a schedule is the wire
//! type [`ScheduleRecord`] (`ScheduleInfo` in the protocol crate).

pub mod rrule;

pub use tandem_protocol::schedule::{ScheduleInfo as ScheduleRecord, ScheduleStatus};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// How far ahead a message may be scheduled.
pub const MAX_AHEAD_MS: u64 = 365 * 24 * 3600 * 1000;

/// Why a time was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Not an RFC 3339 time: the request is malformed (`INVALID_ARGUMENT`, REST 400).
    #[error("`{text:.64}` is not an RFC 3339 time like 2026-11-29T18:00:00Z ({why})")]
    Malformed {
        /// What was given.
        text: String,
        /// What the parser said.
        why: String,
    },
    /// A well-formed time before the epoch, which schedules do not take (REST 422,
    /// like a time too far ahead: a window, not a format).
    #[error("times before 1970 are not supported")]
    Before1970,
}

/// Parses an RFC 3339 timestamp (`2026-11-29T18:00:00Z`, `…T18:00:00.250+01:00`) into
/// epoch milliseconds (sub-millisecond digits are dropped). The `time` crate checks the
/// calendar: `2026-02-31` is refused, not rolled over into March.
pub fn parse_rfc3339(text: &str) -> Result<u64, TimeError> {
    let at = OffsetDateTime::parse(text.trim(), &Rfc3339).map_err(|e| TimeError::Malformed {
        text: text.to_string(),
        why: e.to_string(),
    })?;
    let ms = at.unix_timestamp_nanos().div_euclid(1_000_000);
    u64::try_from(ms).map_err(|_| TimeError::Before1970)
}

#[cfg(test)]
mod tests {
    use super::{parse_rfc3339, TimeError};

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
            Err(TimeError::Before1970)
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
            assert!(
                matches!(parse_rfc3339(bad), Err(TimeError::Malformed { .. })),
                "{bad}"
            );
        }
    }
}
