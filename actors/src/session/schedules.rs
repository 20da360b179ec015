//! Scheduled messages on the session's side: armed as timers on this actor, claimed
//! exactly once (the status change and the turn it starts are written together).

use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::EventBody;

use super::SessionActor;
use crate::clock::{now_ms, random_id};
use crate::error::RuntimeError;
use crate::record::QueuedMessage;
use crate::schedule::{ScheduleRecord, ScheduleStatus, MAX_AHEAD_MS};

/// Pending schedules one session may hold.
const MAX_PENDING: usize = 50;
/// Finished schedules kept for listing.
const KEEP_FINISHED: usize = 50;

/// Schedule a message.
#[derive(Debug, Message)]
#[rtype(result = "Result<ScheduleRecord, RuntimeError>")]
pub struct ScheduleMessage {
    /// The user message to run when due (it interrupts a running turn); not blank.
    pub content: String,
    /// When, epoch ms (past times fire at once).
    pub at: u64,
}

/// Cancel a pending schedule.
#[derive(Debug, Message)]
#[rtype(result = "Result<ScheduleRecord, RuntimeError>")]
pub struct CancelSchedule {
    /// Its id (`sch_…`); only a pending schedule can be cancelled.
    pub schedule_id: String,
}

/// List the session's schedules: pending ones and the latest finished ones.
#[derive(Debug, Message)]
#[rtype(result = "Vec<ScheduleRecord>")]
pub struct ListSchedules;

impl SessionActor {
    /// Sets a timer for a pending schedule.
    pub(super) fn arm(&mut self, id: String, at: u64, ctx: &mut Context<Self>) {
        let delay = Duration::from_millis(at.saturating_sub(now_ms()));
        ctx.run_later(delay, move |act, ctx| {
            act.fire(&id, ctx);
            act.flush();
        });
    }

    /// Arms every pending schedule (at start: past times fire at once).
    pub(super) fn arm_all(&mut self, ctx: &mut Context<Self>) {
        let pending: Vec<(String, u64)> = self
            .record
            .schedules
            .iter()
            .filter(|s| s.status == ScheduleStatus::Pending)
            .map(|s| (s.schedule_id.clone(), s.at))
            .collect();
        for (id, at) in pending {
            self.arm(id, at, ctx);
        }
    }

    /// A schedule came due: it interrupts a running turn and runs next.
    fn fire(&mut self, id: &str, ctx: &mut Context<Self>) {
        let Some(index) = self
            .record
            .schedules
            .iter()
            .position(|s| s.schedule_id == id && s.status == ScheduleStatus::Pending)
        else {
            return;
        };
        let content = self.record.schedules[index].content.clone();
        self.emit(
            None,
            EventBody::Info {
                text: format!("scheduled message {id} is due"),
            },
        );
        let outcome = if self.turn.is_some() {
            // It goes first in the queue and runs as soon as the turn has stopped.
            self.record
                .queued
                .insert(0, QueuedMessage::new(content, false));
            self.interrupt(ctx)
        } else {
            self.start_turn(content, false, None, ctx).map(|_| ())
        };
        let schedule = &mut self.record.schedules[index];
        match outcome {
            Ok(()) => schedule.status = ScheduleStatus::Sent,
            Err(e) => {
                schedule.status = ScheduleStatus::Failed;
                schedule.reason = Some(e.to_string());
            }
        }
        self.prune_schedules();
        self.touch();
    }

    fn prune_schedules(&mut self) {
        let finished = self
            .record
            .schedules
            .iter()
            .filter(|s| s.status != ScheduleStatus::Pending)
            .count();
        let mut drop = finished.saturating_sub(KEEP_FINISHED);
        self.record.schedules.retain(|s| {
            if drop > 0 && s.status != ScheduleStatus::Pending {
                drop -= 1;
                return false;
            }
            true
        });
    }
}

impl Handler<ScheduleMessage> for SessionActor {
    type Result = Result<ScheduleRecord, RuntimeError>;

    fn handle(&mut self, msg: ScheduleMessage, ctx: &mut Context<Self>) -> Self::Result {
        if msg.content.trim().is_empty() {
            return Err(RuntimeError::InvalidArgument("content is empty".into()));
        }
        if msg.at > now_ms() + MAX_AHEAD_MS {
            // Relative to the server's clock: not a rule of the request's shape.
            return Err(RuntimeError::unusable(
                "a message can be scheduled at most 365 days ahead",
            ));
        }
        let pending = self
            .record
            .schedules
            .iter()
            .filter(|s| s.status == ScheduleStatus::Pending)
            .count();
        if pending >= MAX_PENDING {
            return Err(RuntimeError::LimitExceeded(format!(
                "this session already has {MAX_PENDING} scheduled messages"
            )));
        }
        let schedule = ScheduleRecord {
            schedule_id: random_id("sch_", 8),
            content: msg.content,
            at: msg.at,
            status: ScheduleStatus::Pending,
            reason: None,
        };
        self.record.schedules.push(schedule.clone());
        self.touch();
        self.flush();
        self.arm(schedule.schedule_id.clone(), schedule.at, ctx);
        Ok(schedule)
    }
}

impl Handler<CancelSchedule> for SessionActor {
    type Result = Result<ScheduleRecord, RuntimeError>;

    fn handle(&mut self, msg: CancelSchedule, _: &mut Context<Self>) -> Self::Result {
        let Some(schedule) = self
            .record
            .schedules
            .iter_mut()
            .find(|s| s.schedule_id == msg.schedule_id)
        else {
            return Err(RuntimeError::NoSuchSchedule(msg.schedule_id));
        };
        if schedule.status != ScheduleStatus::Pending {
            return Err(RuntimeError::Conflict(
                "only a pending scheduled message can be cancelled".into(),
            ));
        }
        schedule.status = ScheduleStatus::Cancelled;
        let cancelled = schedule.clone();
        self.prune_schedules();
        self.touch();
        self.flush();
        Ok(cancelled)
    }
}

impl Handler<ListSchedules> for SessionActor {
    type Result = MessageResult<ListSchedules>;

    fn handle(&mut self, _: ListSchedules, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.record.schedules.clone())
    }
}
