//! Scheduled messages: RFC 3339 times. The persisted state of a schedule is the wire
//! type [`ScheduleRecord`] (`ScheduleInfo` in the protocol crate).

pub use tandem_protocol::schedule::{ScheduleInfo as ScheduleRecord, ScheduleStatus};

/// How far ahead a message may be scheduled.
pub const MAX_AHEAD_MS: u64 = 365 * 24 * 3600 * 1000;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses an RFC 3339 timestamp (`2026-11-29T18:00:00Z`, `…T18:00:00.250+01:00`) into
/// epoch milliseconds.
pub fn parse_rfc3339(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not an RFC 3339 time like 2026-11-29T18:00:00Z");
    let b = text.trim().as_bytes();
    let num = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let s = b.get(range).ok_or_else(bad)?;
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        std::str::from_utf8(s)
            .map_err(|_| bad())?
            .parse()
            .map_err(|_| bad())
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if b.len() < 20
        || !sep(4, b"-")
        || !sep(7, b"-")
        || !sep(10, b"Tt ")
        || !sep(13, b":")
        || !sep(16, b":")
    {
        return Err(bad());
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let mut i = 19;
    let mut millis = 0i64;
    if sep(i, b".") {
        let start = i + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start {
            return Err(bad());
        }
        let digits = &text.trim()[start..end.min(start + 3)];
        millis = format!("{digits:0<3}").parse().map_err(|_| bad())?;
        i = end;
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') if b.len() == i + 1 => 0,
        Some(sign @ (b'+' | b'-')) if b.len() == i + 6 && sep(i + 3, b":") => {
            let m = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'-' {
                -m
            } else {
                m
            }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_min * 60;
    u64::try_from(secs * 1000 + millis)
        .map_err(|_| "times before 1970 are not supported".to_string())
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
        for bad in [
            "",
            "tomorrow",
            "2026-11-29",
            "2026-13-01T00:00:00Z",
            "2026-11-29T18:00:00",
            "2026-11-29T18:00:00+0100",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }
}
