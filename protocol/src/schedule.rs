//! Scheduled messages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a scheduled message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ScheduleStatus {
    /// Waiting for its time.
    Pending,
    /// Came due and was handed to the session (run, or queued behind an interrupt).
    Sent,
    /// Came due but could not be sent; `reason` says why.
    Failed,
    /// Cancelled before it came due.
    Cancelled,
}

/// A scheduled message (kept in its session's record; listed by
/// `GET /api/v1/sessions/{id}/schedules`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleInfo {
    /// Its id.
    pub schedule_id: String,
    /// The message.
    pub content: String,
    /// When it comes due, epoch ms.
    pub at: u64,
    /// Where it stands.
    pub status: ScheduleStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A recurring schedule's rule (RFC 5545 `RRULE` subset); `at` is then its next
    /// occurrence, and it stays `pending` until the rule ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrule: Option<Recurring>,
    /// The next occurrences after `at` (up to 5), as listed; not kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upcoming: Vec<u64>,
}

/// What a recurring schedule repeats by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recurring {
    /// The rule, as given.
    pub rule: String,
    /// The IANA time zone its wall-clock times are in.
    pub time_zone: String,
    /// Its first instant, epoch ms (`DTSTART`: the rule counts from it).
    pub start: u64,
    /// What an occurrence does while a turn runs.
    pub if_busy: IfBusy,
    /// Occurrences so far.
    pub occurrences: u32,
}

/// What an occurrence of a recurring schedule does while the session is busy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum IfBusy {
    /// Nothing: this occurrence is skipped (its event says so).
    #[default]
    Skip,
    /// The message waits in the queue behind the running turn.
    Queue,
}

/// How one occurrence of a recurring schedule went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OccurrenceOutcome {
    /// Its turn started.
    Sent,
    /// Queued behind the running turn.
    Queued,
    /// Skipped: a turn ran.
    Skipped,
    /// Could not be sent (`reason` on the schedule says why).
    Failed,
}
