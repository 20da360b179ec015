//! Archiving a session (`DELETE /api/v1/sessions/{id}`): the session stops, is listed
//! nowhere and is not loaded again; its rows and history stay in the database.

use actix::prelude::*;
use tandem_protocol::SessionInfo;

use super::SessionActor;
use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::schedule::ScheduleStatus;

/// Archive the session, if nothing of it is in flight.
#[derive(Debug, Message)]
#[rtype(result = "Result<SessionInfo, RuntimeError>")]
pub struct Archive;

impl Handler<Archive> for SessionActor {
    type Result = Result<SessionInfo, RuntimeError>;

    fn handle(&mut self, _: Archive, ctx: &mut Context<Self>) -> Self::Result {
        let id = self.record.id.clone();
        let refuse = |why: &str| {
            Err(RuntimeError::Conflict(format!(
                "session {id} cannot be archived: {why}"
            )))
        };
        if self.turn.is_some() || self.record.status.is_busy() {
            return Err(RuntimeError::RunInProgress(id));
        }
        if self.record.pair.is_some() {
            return refuse("it is in a pair (close the pair first)");
        }
        if !self.background.is_empty() {
            return refuse("it has background tasks running");
        }
        if !self.spawn.running.is_empty() || !self.spawn.pending.is_empty() {
            return refuse("sessions it spawned are still running");
        }
        if !self.record.queued.is_empty() {
            return refuse("it has queued messages");
        }
        if self
            .record
            .schedules
            .iter()
            .any(|s| s.status == ScheduleStatus::Pending)
        {
            return refuse("it has pending scheduled messages (cancel them first)");
        }
        self.record.archived_at = Some(now_ms());
        self.touch();
        self.flush();
        ctx.stop();
        Ok(self.info())
    }
}
