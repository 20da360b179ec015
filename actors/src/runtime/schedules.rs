//! Scheduling messages into a session.

use tandem_protocol::schedule::ScheduleInfo;

use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::schedule::{parse_rfc3339, TimeError};
use crate::session::{CancelSchedule, ListSchedules, ScheduleMessage};

impl Runtime {
    /// Schedules `content` into session `id` at `at` (RFC 3339).
    pub async fn schedule(
        &self,
        who: &Principal,
        id: &str,
        content: String,
        at: &str,
    ) -> Result<ScheduleInfo, RuntimeError> {
        let at = parse_rfc3339(at).map_err(|e| match e {
            TimeError::Malformed { .. } => RuntimeError::InvalidArgument(e.to_string()),
            TimeError::Before1970 => RuntimeError::unusable(e.to_string()),
        })?;
        self.drivable(who, id)?
            .ask(ScheduleMessage { content, at })
            .await?
    }

    /// Cancels a pending schedule.
    pub async fn cancel_schedule(
        &self,
        who: &Principal,
        id: &str,
        schedule_id: String,
    ) -> Result<ScheduleInfo, RuntimeError> {
        self.drivable(who, id)?
            .ask(CancelSchedule { schedule_id })
            .await?
    }

    /// A session's schedules (pending and recently finished).
    pub async fn schedules(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<Vec<ScheduleInfo>, RuntimeError> {
        self.visible(who, id)?.ask(ListSchedules).await
    }
}
