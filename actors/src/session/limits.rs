//! A turn ended by the vendor's usage or rate limit (status `limited`): the
//! session's `onLimit` says what happens next. `wait` schedules the turn's message
//! again for when the limit lifts (a schedule like any other, listed and
//! cancellable); `{handoff: VENDOR}` hands the conversation to that vendor, whose
//! session carries on with the request; `fail` (the default) leaves it.

use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::session::OnLimit;
use tandem_protocol::EventBody;

use super::SessionActor;
use crate::clock::{now_ms, random_id};
use crate::failover::FailoverRequest;
use crate::ids::SessionId;
use crate::schedule::{ScheduleRecord, ScheduleStatus};

/// How long `wait` waits when the vendor did not say when its limit lifts.
const UNKNOWN_RESET: Duration = Duration::from_secs(15 * 60);

impl SessionActor {
    /// Carries out `onLimit` for a limited turn whose message was `message`.
    pub(super) fn after_limit(
        &mut self,
        message: String,
        resets_at: Option<u64>,
        ctx: &mut Context<Self>,
    ) {
        match self.record.on_limit.clone() {
            OnLimit::Fail => {}
            OnLimit::Wait => {
                // A reset time already past says nothing (a stale snapshot): waiting
                // as for an unknown one keeps a limit that holds from being hit
                // again at once, over and over.
                let now = now_ms();
                let at = resets_at
                    .filter(|at| *at > now)
                    .unwrap_or(now + UNKNOWN_RESET.as_millis() as u64);
                let schedule = ScheduleRecord {
                    schedule_id: random_id("sch_", 8),
                    content: message,
                    at,
                    status: ScheduleStatus::Pending,
                    reason: None,
                    rrule: None,
                    upcoming: Vec::new(),
                };
                self.emit(
                    None,
                    EventBody::Info {
                        text: format!(
                            "the vendor's limit ended the turn; its message is sent again when the limit lifts (schedule {})",
                            schedule.schedule_id
                        ),
                    },
                );
                let id = schedule.schedule_id.clone();
                self.record.schedules.push(schedule);
                self.touch();
                self.arm(id, at, ctx);
            }
            OnLimit::Handoff(vendor) => {
                let Some(hook) = self.services.failover.clone() else {
                    return;
                };
                let request = FailoverRequest {
                    session_id: self.record.id.clone(),
                    owner_id: self.record.owner_id.clone(),
                    vendor: vendor.clone(),
                };
                // Runs once this turn's end is published: a handoff needs the session
                // idle.
                ctx.spawn(actix::fut::wrap_future((hook.0)(request)).map(
                    move |handed: Result<SessionId, crate::failover::HandoffFailed>,
                          act: &mut SessionActor,
                          _| {
                        let text = match handed {
                            Ok(target) => format!(
                                "the vendor's limit ended the turn; the conversation goes on with {vendor} in session {target}"
                            ),
                            Err(e) => format!(
                                "the vendor's limit ended the turn; the handoff to {vendor} failed: {e}"
                            ),
                        };
                        act.emit(None, EventBody::Info { text });
                        act.flush();
                    },
                ));
            }
        }
    }
}
