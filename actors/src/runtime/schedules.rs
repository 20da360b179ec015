//! [`ScheduleService`]: what a session does later or again by itself: messages
//! scheduled into it, once or by a rule (here), and loops (`loops.rs`). The session's
//! actor keeps and runs them; this checks what needs the server first.

use std::sync::Arc;

use tandem_protocol::schedule::ScheduleInfo;

use super::SessionAccess;
use crate::access::Principal;
use crate::adapter::VendorCatalog;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::schedule::{parse_rfc3339, rrule, TimeError};
use crate::session::{CancelSchedule, ListSchedules, ScheduleMessage};
use tandem_protocol::client::SessionScheduleParams;

/// The schedules service.
pub struct ScheduleService {
    /// Who may see or drive which session.
    pub(super) access: SessionAccess,
    /// The vendors a loop's judge may name.
    pub(super) catalog: Arc<VendorCatalog>,
}

impl ScheduleService {
    /// Serves the sessions `access` finds; a judge's vendor is looked up in `catalog`.
    pub(super) fn new(access: SessionAccess, catalog: Arc<VendorCatalog>) -> Self {
        ScheduleService { access, catalog }
    }

    /// `session.schedule`: a message into session `params.session_id` at `params.at` (RFC
    /// 3339), once or by `params.rrule` in `params.time_zone`. A rule outside the
    /// subset or an unknown zone is 422 (the schema cannot say which rules are taken).
    pub async fn add(
        &self,
        who: &Principal,
        params: SessionScheduleParams,
    ) -> Result<ScheduleInfo, RuntimeError> {
        let at = parse_rfc3339(&params.at).map_err(|e| match e {
            TimeError::Malformed { .. } => RuntimeError::InvalidArgument(e.to_string()),
            TimeError::Before1970 => RuntimeError::unusable(e.to_string()),
        })?;
        let recurring = match params.rrule {
            None => None,
            Some(rule) => {
                rrule::parse(&rule).map_err(|e| RuntimeError::unusable(e.to_string()))?;
                let time_zone = params.time_zone.unwrap_or_else(|| "UTC".into());
                rrule::zone(&time_zone).map_err(|e| RuntimeError::unusable(e.to_string()))?;
                Some((rule, time_zone, params.if_busy.unwrap_or_default()))
            }
        };
        self.access
            .drivable(who, &params.session_id)?
            .ask(ScheduleMessage {
                content: params.content,
                at,
                recurring,
            })
            .await?
    }

    /// `session.schedule-cancel`: cancels a pending schedule.
    pub async fn cancel(
        &self,
        who: &Principal,
        id: &SessionId,
        schedule_id: String,
    ) -> Result<ScheduleInfo, RuntimeError> {
        self.access
            .drivable(who, id)?
            .ask(CancelSchedule { schedule_id })
            .await?
    }

    /// `session.schedules`: a session's schedules (pending and recently finished).
    pub async fn list(
        &self,
        who: &Principal,
        id: &SessionId,
    ) -> Result<Vec<ScheduleInfo>, RuntimeError> {
        self.access.visible(who, id)?.ask(ListSchedules).await
    }
}
