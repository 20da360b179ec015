//! Recurring schedules: the RFC 5545 `RRULE` subset tandem takes (`FREQ` MINUTELY to
//! WEEKLY, `INTERVAL`, `BYDAY`, `BYHOUR`, `BYMINUTE`, `COUNT`, `UNTIL`) and its
//! occurrences in an IANA time zone. Pure: every time is passed in, so daylight-saving
//! changes are tested with any instant.
//!
//! MINUTELY and HOURLY step in real time (every 60 minutes is every 60 minutes, across
//! a clock change); DAILY and WEEKLY step in the zone's wall-clock time (9:00 stays
//! 9:00). A wall-clock time a spring-forward skips is taken as the time after the gap,
//! one a fall-back repeats as its first instant.

use jiff::civil::{DateTime, Weekday};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, Zoned};

/// Occurrences `COUNT` may ask for, at most.
pub const MAX_COUNT: u32 = 10_000;
/// Periods (minutes, hours, days or weeks of the rule) searched for the next
/// occurrence before giving up: a rule whose filters match nothing ends there.
const MAX_PERIODS: u64 = 600_000;

/// How often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freq {
    /// Every `INTERVAL` minutes.
    Minutely,
    /// Every `INTERVAL` hours.
    Hourly,
    /// Every `INTERVAL` days.
    Daily,
    /// Every `INTERVAL` weeks (weeks start on Monday).
    Weekly,
}

/// A parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `FREQ`.
    pub freq: Freq,
    /// `INTERVAL` (default 1).
    pub interval: u32,
    /// `BYDAY` (weekdays, no ordinals).
    pub by_day: Vec<Weekday>,
    /// `BYHOUR`, 0 to 23.
    pub by_hour: Vec<i8>,
    /// `BYMINUTE`, 0 to 59.
    pub by_minute: Vec<i8>,
    /// `COUNT`: occurrences in all.
    pub count: Option<u32>,
    /// `UNTIL`: the last instant an occurrence may have, inclusive.
    pub until: Option<Timestamp>,
}

/// Why a rule or a time zone was refused; the message names the part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rrule: {0}")]
pub struct RuleError(String);

fn bad(why: impl Into<String>) -> RuleError {
    RuleError(why.into())
}

/// Parses `FREQ=DAILY;BYHOUR=9;BYMINUTE=30` (an optional `RRULE:` prefix, parts in any
/// order, each at most once).
pub fn parse(text: &str) -> Result<Rule, RuleError> {
    let text = text.trim();
    let text = text.strip_prefix("RRULE:").unwrap_or(text);
    let mut seen = std::collections::HashSet::new();
    let (mut freq, mut interval) = (None, 1u32);
    let mut rule = Rule {
        freq: Freq::Daily,
        interval: 1,
        by_day: Vec::new(),
        by_hour: Vec::new(),
        by_minute: Vec::new(),
        count: None,
        until: None,
    };
    for part in text.split(';').filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| bad(format!("`{part:.32}` is not NAME=VALUE")))?;
        let key = key.trim().to_ascii_uppercase();
        if !seen.insert(key.clone()) {
            return Err(bad(format!("{key} is given twice")));
        }
        let value = value.trim();
        match key.as_str() {
            "FREQ" => {
                freq = Some(match value.to_ascii_uppercase().as_str() {
                    "MINUTELY" => Freq::Minutely,
                    "HOURLY" => Freq::Hourly,
                    "DAILY" => Freq::Daily,
                    "WEEKLY" => Freq::Weekly,
                    other => {
                        return Err(bad(format!(
                            "FREQ `{other:.16}` is not taken (MINUTELY, HOURLY, DAILY or WEEKLY)"
                        )))
                    }
                })
            }
            "INTERVAL" => {
                interval = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| bad("INTERVAL must be 1 to 1000"))?
            }
            "BYDAY" => rule.by_day = list(value, weekday)?,
            "BYHOUR" => rule.by_hour = list(value, |v| number(v, 23, "BYHOUR"))?,
            "BYMINUTE" => rule.by_minute = list(value, |v| number(v, 59, "BYMINUTE"))?,
            "COUNT" => {
                rule.count = Some(
                    value
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_COUNT).contains(n))
                        .ok_or_else(|| bad(format!("COUNT must be 1 to {MAX_COUNT}")))?,
                )
            }
            "UNTIL" => rule.until = Some(until(value)?),
            other => {
                return Err(bad(format!(
                "{other:.16} is not taken (FREQ, INTERVAL, BYDAY, BYHOUR, BYMINUTE, COUNT, UNTIL)"
            )))
            }
        }
    }
    if rule.count.is_some() && rule.until.is_some() {
        return Err(bad("COUNT and UNTIL cannot both be given"));
    }
    rule.freq = freq.ok_or_else(|| bad("FREQ is missing"))?;
    rule.interval = interval;
    Ok(rule)
}

fn list<T: PartialEq>(
    value: &str,
    one: impl Fn(&str) -> Result<T, RuleError>,
) -> Result<Vec<T>, RuleError> {
    let mut out = Vec::new();
    for item in value.split(',') {
        let item = one(item.trim())?;
        if !out.contains(&item) {
            out.push(item);
        }
    }
    Ok(out)
}

fn number(value: &str, max: i8, key: &str) -> Result<i8, RuleError> {
    value
        .parse()
        .ok()
        .filter(|n| (0..=max).contains(n))
        .ok_or_else(|| bad(format!("{key} values are 0 to {max}, not `{value:.8}`")))
}

fn weekday(value: &str) -> Result<Weekday, RuleError> {
    Ok(match value.to_ascii_uppercase().as_str() {
        "MO" => Weekday::Monday,
        "TU" => Weekday::Tuesday,
        "WE" => Weekday::Wednesday,
        "TH" => Weekday::Thursday,
        "FR" => Weekday::Friday,
        "SA" => Weekday::Saturday,
        "SU" => Weekday::Sunday,
        other => {
            return Err(bad(format!(
                "BYDAY takes MO, TU, WE, TH, FR, SA, SU (no ordinals), not `{other:.8}`"
            )))
        }
    })
}

/// `UNTIL` as `20270101T000000Z` (UTC), or a date `20270101` (its end, UTC).
fn until(value: &str) -> Result<Timestamp, RuleError> {
    let wrong = || bad(format!("UNTIL `{value:.24}` is not like 20270101T000000Z"));
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let (date, time) = match value.split_once('T') {
        Some((d, t)) => (d, Some(t.strip_suffix('Z').ok_or_else(wrong)?)),
        None => (value, None),
    };
    if date.len() != 8 || !digits(date) || time.is_some_and(|t| t.len() != 6 || !digits(t)) {
        return Err(wrong());
    }
    let n = |s: &str| s.parse::<i16>().map_err(|_| wrong());
    let (h, m, s) = match time {
        Some(t) => (n(&t[0..2])?, n(&t[2..4])?, n(&t[4..6])?),
        None => (23, 59, 59),
    };
    let dt = DateTime::new(
        n(&date[0..4])?,
        i8::try_from(n(&date[4..6])?).map_err(|_| wrong())?,
        i8::try_from(n(&date[6..8])?).map_err(|_| wrong())?,
        i8::try_from(h).map_err(|_| wrong())?,
        i8::try_from(m).map_err(|_| wrong())?,
        i8::try_from(s).map_err(|_| wrong())?,
        0,
    )
    .map_err(|_| wrong())?;
    dt.to_zoned(TimeZone::UTC)
        .map(|z| z.timestamp())
        .map_err(|_| wrong())
}

/// The time zone named `name` (IANA, like `Europe/Berlin`; `UTC`).
pub fn zone(name: &str) -> Result<TimeZone, RuleError> {
    TimeZone::get(name.trim()).map_err(|_| {
        bad(format!(
            "time zone `{name:.48}` is not an IANA name like Europe/Berlin"
        ))
    })
}

/// A rule anchored at its first instant in a zone.
#[derive(Debug, Clone)]
pub struct Recurrence {
    rule: Rule,
    start: Zoned,
}

impl Recurrence {
    /// `rule` starting at `start_ms` (epoch ms), in `zone`.
    pub fn new(rule: Rule, start_ms: u64, zone: TimeZone) -> Result<Recurrence, RuleError> {
        let ms = i64::try_from(start_ms).map_err(|_| bad("the start is out of range"))?;
        let start = Timestamp::from_millisecond(ms)
            .map_err(|_| bad("the start is out of range"))?
            .to_zoned(zone);
        Ok(Recurrence { rule, start })
    }

    /// The first occurrence strictly after `after_ms` and its number (1-based), or
    /// `None` when the rule has ended (`COUNT`, `UNTIL`) or matches nothing soon.
    pub fn next_after(&self, after_ms: u64) -> Option<(u64, u32)> {
        let after = i64::try_from(after_ms).ok()?;
        let mut number = 0u32;
        // Without COUNT the occurrences before `after` need not be counted: start a
        // little before it. With COUNT every one is counted (COUNT bounds them).
        let skip = match self.rule.count {
            Some(_) => 0,
            None => self.periods_before(after).saturating_sub(2),
        };
        for k in skip..skip.saturating_add(MAX_PERIODS) {
            let mut found = self.period(k)?;
            found.sort();
            found.dedup();
            for ts in found {
                if ts < self.start.timestamp() {
                    continue;
                }
                if self.rule.until.is_some_and(|u| ts > u) {
                    return None;
                }
                number += 1;
                if self.rule.count.is_some_and(|c| number > c) {
                    return None;
                }
                let ms = ts.as_millisecond();
                if ms > after {
                    return Some((u64::try_from(ms).ok()?, number));
                }
            }
        }
        None
    }

    /// The next `n` occurrences after `after_ms`.
    pub fn upcoming(&self, after_ms: u64, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        let mut at = after_ms;
        while out.len() < n {
            let Some((next, _)) = self.next_after(at) else {
                break;
            };
            out.push(next);
            at = next;
        }
        out
    }

    /// About how many whole periods lie between the start and `at` (a lower bound).
    fn periods_before(&self, at: i64) -> u64 {
        let unit_ms: i64 = match self.rule.freq {
            Freq::Minutely => 60_000,
            Freq::Hourly => 3_600_000,
            // A day is at least 23 hours of real time, a week 167.
            Freq::Daily => 23 * 3_600_000,
            Freq::Weekly => 167 * 3_600_000,
        } * i64::from(self.rule.interval);
        let from = self.start.timestamp().as_millisecond();
        let periods = (at - from).max(0) / unit_ms;
        // Wall-clock periods are counted from a longer unit: this is at most the real
        // number, never more.
        u64::try_from(periods).unwrap_or(0) * 23 / 25
    }

    /// The candidate instants of period `k` (unsorted); `None` past the calendar's end.
    fn period(&self, k: u64) -> Option<Vec<Timestamp>> {
        let steps = i64::try_from(k)
            .ok()?
            .checked_mul(i64::from(self.rule.interval))?;
        match self.rule.freq {
            Freq::Minutely | Freq::Hourly => self.clock_period(steps),
            Freq::Daily | Freq::Weekly => self.calendar_period(steps),
        }
    }

    /// A MINUTELY or HOURLY rule's candidates `steps` units after the start: the
    /// instant itself, or its hour's BYMINUTE minutes, that pass the filters.
    fn clock_period(&self, steps: i64) -> Option<Vec<Timestamp>> {
        let r = &self.rule;
        let zone = self.start.time_zone().clone();
        let unit = if r.freq == Freq::Minutely {
            Span::new().try_minutes(steps).ok()?
        } else {
            Span::new().try_hours(steps).ok()?
        };
        let at = self.start.timestamp().checked_add(unit).ok()?;
        let local = at.to_zoned(zone.clone());
        let minutes: Vec<i8> = if r.freq == Freq::Hourly && !r.by_minute.is_empty() {
            r.by_minute.clone()
        } else {
            vec![local.minute()]
        };
        let mut out = Vec::new();
        for minute in minutes {
            let shifted = at
                .checked_add(Span::new().minutes(i64::from(minute - local.minute())))
                .ok()?;
            let here = shifted.to_zoned(zone.clone());
            if self.filters(&here, r.freq == Freq::Minutely) {
                out.push(shifted);
            }
        }
        Some(out)
    }

    /// A DAILY or WEEKLY rule's candidates `steps` days or weeks after the start: the
    /// wall-clock times of its BYHOUR and BYMINUTE on the day (or the week's BYDAY
    /// days), in the start's zone.
    fn calendar_period(&self, steps: i64) -> Option<Vec<Timestamp>> {
        let r = &self.rule;
        let zone = self.start.time_zone().clone();
        let base = self.start.datetime();
        let days = if r.freq == Freq::Weekly {
            steps.checked_mul(7)?
        } else {
            steps
        };
        let day = base
            .date()
            .checked_add(Span::new().try_days(days).ok()?)
            .ok()?;
        let dates = if r.freq == Freq::Weekly && !r.by_day.is_empty() {
            // The week (Monday first) that holds `day`.
            let monday = day
                .checked_sub(Span::new().days(i64::from(day.weekday().to_monday_zero_offset())))
                .ok()?;
            r.by_day
                .iter()
                .filter_map(|w| {
                    monday
                        .checked_add(Span::new().days(i64::from(w.to_monday_zero_offset())))
                        .ok()
                })
                .collect()
        } else {
            vec![day]
        };
        let hours = if r.by_hour.is_empty() {
            vec![base.hour()]
        } else {
            r.by_hour.clone()
        };
        let minutes = if r.by_minute.is_empty() {
            vec![base.minute()]
        } else {
            r.by_minute.clone()
        };
        let mut out = Vec::new();
        for date in dates {
            if r.freq == Freq::Daily && !r.by_day.is_empty() && !r.by_day.contains(&date.weekday())
            {
                continue;
            }
            for &h in &hours {
                for &m in &minutes {
                    let wall = date.at(h, m, base.second(), 0);
                    // `compatible`: after a gap, the earlier of a repeat.
                    if let Ok(z) = wall.to_zoned(zone.clone()) {
                        out.push(z.timestamp());
                    }
                }
            }
        }
        Some(out)
    }

    /// Whether `at` passes the rule's BYDAY, BYHOUR (and, for MINUTELY, BYMINUTE).
    fn filters(&self, at: &Zoned, minutely: bool) -> bool {
        let r = &self.rule;
        (r.by_day.is_empty() || r.by_day.contains(&at.weekday()))
            && (r.by_hour.is_empty() || r.by_hour.contains(&at.hour()))
            && (!minutely || r.by_minute.is_empty() || r.by_minute.contains(&at.minute()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Epoch ms of an RFC 3339 time.
    fn ms(text: &str) -> u64 {
        let ts: Timestamp = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        u64::try_from(ts.as_millisecond()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn rec(rule: &str, start: &str, tz: &str) -> Recurrence {
        let rule = parse(rule).unwrap_or_else(|e| panic!("{e}"));
        Recurrence::new(rule, ms(start), zone(tz).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn daily_keeps_the_wall_clock_across_both_changes() {
        // New York: clocks go forward on 2026-03-08 and back on 2026-11-01.
        let r = rec("FREQ=DAILY", "2026-03-06T14:00:00Z", "America/New_York");
        assert_eq!(
            r.upcoming(ms("2026-03-06T14:00:00Z") - 1, 4),
            [
                ms("2026-03-06T14:00:00Z"),
                ms("2026-03-07T14:00:00Z"),
                ms("2026-03-08T13:00:00Z"),
                ms("2026-03-09T13:00:00Z")
            ]
        );
        let fall = rec(
            "FREQ=DAILY;BYHOUR=9;BYMINUTE=0",
            "2026-10-30T13:00:00Z",
            "America/New_York",
        );
        assert_eq!(
            fall.upcoming(ms("2026-10-30T12:00:00Z"), 3),
            [
                ms("2026-10-30T13:00:00Z"),
                ms("2026-10-31T13:00:00Z"),
                ms("2026-11-01T14:00:00Z")
            ]
        );
    }

    #[test]
    fn a_skipped_wall_time_runs_after_the_gap_and_a_repeated_one_once() {
        // 02:30 does not exist on 2026-03-08 in New York: it runs at 03:30 EDT.
        let gap = rec(
            "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
            "2026-03-07T07:30:00Z",
            "America/New_York",
        );
        assert_eq!(
            gap.upcoming(ms("2026-03-07T07:00:00Z"), 3),
            [
                ms("2026-03-07T07:30:00Z"),
                ms("2026-03-08T07:30:00Z"),
                ms("2026-03-09T06:30:00Z")
            ]
        );
        // 01:30 happens twice on 2026-11-01: once, the first.
        let fold = rec(
            "FREQ=DAILY;BYHOUR=1;BYMINUTE=30",
            "2026-10-31T05:30:00Z",
            "America/New_York",
        );
        assert_eq!(
            fold.upcoming(ms("2026-10-31T05:00:00Z"), 3),
            [
                ms("2026-10-31T05:30:00Z"),
                ms("2026-11-01T05:30:00Z"),
                ms("2026-11-02T06:30:00Z")
            ]
        );
    }

    #[test]
    fn hourly_steps_in_real_time_and_weekly_expands_its_days() {
        let hourly = rec(
            "FREQ=HOURLY;INTERVAL=1",
            "2026-11-01T04:30:00Z",
            "America/New_York",
        );
        // Across the fall-back: every 60 minutes of real time, 01:30 twice.
        assert_eq!(
            hourly.upcoming(ms("2026-11-01T04:30:00Z"), 3),
            [
                ms("2026-11-01T05:30:00Z"),
                ms("2026-11-01T06:30:00Z"),
                ms("2026-11-01T07:30:00Z")
            ]
        );
        // Mondays and Wednesdays at 09:15 in Berlin, from Tuesday 2026-12-01.
        let weekly = rec(
            "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;BYMINUTE=15",
            "2026-12-01T08:15:00Z",
            "Europe/Berlin",
        );
        assert_eq!(
            weekly.upcoming(ms("2026-12-01T00:00:00Z"), 3),
            [
                ms("2026-12-02T08:15:00Z"),
                ms("2026-12-07T08:15:00Z"),
                ms("2026-12-09T08:15:00Z")
            ]
        );
        let every_other = rec(
            "FREQ=MINUTELY;INTERVAL=15;BYHOUR=10",
            "2026-12-01T09:50:00Z",
            "UTC",
        );
        assert_eq!(
            every_other.upcoming(ms("2026-12-01T09:00:00Z"), 3),
            [
                ms("2026-12-01T10:05:00Z"),
                ms("2026-12-01T10:20:00Z"),
                ms("2026-12-01T10:35:00Z")
            ]
        );
    }

    #[test]
    fn count_and_until_end_it_and_numbers_count_from_the_start() {
        let r = rec("FREQ=DAILY;COUNT=3", "2026-12-01T09:00:00Z", "UTC");
        assert_eq!(
            r.next_after(ms("2026-12-01T08:00:00Z")),
            Some((ms("2026-12-01T09:00:00Z"), 1))
        );
        assert_eq!(
            r.next_after(ms("2026-12-02T10:00:00Z")),
            Some((ms("2026-12-03T09:00:00Z"), 3))
        );
        assert_eq!(r.next_after(ms("2026-12-03T09:00:00Z")), None);
        let until = rec(
            "FREQ=DAILY;UNTIL=20261202T090000Z",
            "2026-12-01T09:00:00Z",
            "UTC",
        );
        assert_eq!(until.upcoming(0, 5).len(), 2);
        // Far from the start without COUNT: found without walking every period.
        let minutely = rec("FREQ=MINUTELY", "2026-01-01T00:00:30Z", "UTC");
        assert_eq!(
            minutely
                .next_after(ms("2026-12-31T12:00:00Z"))
                .map(|(at, _)| at),
            Some(ms("2026-12-31T12:00:30Z"))
        );
    }

    #[test]
    fn rules_outside_the_subset_say_what_is_wrong() {
        for (text, says) in [
            ("FREQ=YEARLY", "YEARLY"),
            ("INTERVAL=2", "FREQ is missing"),
            ("FREQ=DAILY;BYDAY=1MO", "ordinals"),
            ("FREQ=DAILY;BYHOUR=24", "BYHOUR"),
            ("FREQ=DAILY;COUNT=0", "COUNT"),
            ("FREQ=DAILY;COUNT=2;UNTIL=20270101T000000Z", "both"),
            ("FREQ=DAILY;BYSETPOS=1", "BYSETPOS"),
            ("FREQ=DAILY;FREQ=DAILY", "twice"),
            ("FREQ=DAILY;UNTIL=tomorrow", "UNTIL"),
        ] {
            let Err(e) = parse(text) else {
                panic!("{text} was taken");
            };
            assert!(e.to_string().contains(says), "{text}: {e}");
        }
        assert!(zone("Mars/Olympus").is_err());
        assert!(parse("RRULE:FREQ=weekly;BYDAY=mo").is_ok());
    }
}
