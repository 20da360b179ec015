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
}
