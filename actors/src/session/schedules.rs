//! Scheduled messages on the session's side: armed as timers on this actor, claimed
//! exactly once (the status change and the turn it starts are written together).

use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::EventBody;

use super::SessionActor;
use crate::clock::{now_ms, random_id};
use crate::error::RuntimeError;
use crate::record::QueuedMessage;
use crate::schedule::rrule::{self, Recurrence};
use crate::schedule::{ScheduleRecord, ScheduleStatus, MAX_AHEAD_MS};
use tandem_protocol::schedule::{IfBusy, OccurrenceOutcome, Recurring};

/// Pending schedules one session may hold.
const MAX_PENDING: usize = 50;
/// Finished schedules kept for listing.
const KEEP_FINISHED: usize = 50;

/// Schedule a message.
#[derive(Debug, Message)]
#[rtype(result = "Result<ScheduleRecord, RuntimeError>")]
pub struct ScheduleMessage {
    /// The user message to run when due (a one-time message interrupts a running
    /// turn; a recurring one does as its `if_busy` says); not blank.
    pub content: String,
    /// When, epoch ms (past times fire at once); a recurring schedule's start.
    pub at: u64,
    /// Repeat: the rule (checked by [`crate::schedule::rrule::parse`]), its zone and
    /// what to do while busy.
    pub recurring: Option<(String, String, IfBusy)>,
}

/// Occurrences listed ahead of a recurring schedule's next one.
const UPCOMING: usize = 5;

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
        if self.record.schedules[index].rrule.is_some() {
            self.fire_recurring(index, content, ctx);
            return;
        }
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
                .push_front(QueuedMessage::new(content, false));
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

    /// An occurrence of a recurring schedule came due: it runs, waits in the queue or
    /// is skipped as `if_busy` says (never interrupting), is recorded as an event, and
    /// the schedule moves to its next occurrence after now (so occurrences missed while
    /// the server was down run once, not in a burst), or ends.
    fn fire_recurring(&mut self, index: usize, content: String, ctx: &mut Context<Self>) {
        let schedule = self.record.schedules[index].clone();
        let Some(recurring) = schedule.rrule.clone() else {
            return;
        };
        let busy = self.turn.is_some() || !self.background.is_empty();
        let (outcome, reason) = match (busy, recurring.if_busy) {
            (true, IfBusy::Skip) => (OccurrenceOutcome::Skipped, None),
            (true, IfBusy::Queue) => {
                self.record.queued.push(QueuedMessage::new(content, false));
                (OccurrenceOutcome::Queued, None)
            }
            (false, _) => match self.start_turn(content, false, None, ctx) {
                Ok(_) => (OccurrenceOutcome::Sent, None),
                Err(e) => (OccurrenceOutcome::Failed, Some(e.to_string())),
            },
        };
        let number = recurring.occurrences + 1;
        self.emit(
            None,
            EventBody::ScheduleOccurrence {
                schedule_id: schedule.schedule_id.clone(),
                number,
                at: schedule.at,
                outcome,
            },
        );
        let next = next_occurrence(&recurring, schedule.at.max(now_ms()));
        let entry = &mut self.record.schedules[index];
        if let Some(r) = entry.rrule.as_mut() {
            r.occurrences = number;
        }
        entry.reason = reason;
        match next {
            Some(at) => {
                entry.at = at;
                let id = entry.schedule_id.clone();
                self.arm(id, at, ctx);
            }
            None => entry.status = ScheduleStatus::Sent,
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
        let (at, recurring) = match msg.recurring {
            None => (msg.at, None),
            Some((rule, time_zone, if_busy)) => {
                let recurring = Recurring {
                    rule,
                    time_zone,
                    start: msg.at,
                    if_busy,
                    occurrences: 0,
                };
                let first = next_occurrence(&recurring, msg.at.saturating_sub(1))
                    .ok_or_else(|| RuntimeError::unusable("the rule has no occurrence"))?;
                (first, Some(recurring))
            }
        };
        if at > now_ms() + MAX_AHEAD_MS {
            return Err(RuntimeError::unusable(
                "the first occurrence is more than 365 days ahead",
            ));
        }
        let schedule = ScheduleRecord {
            schedule_id: random_id("sch_", 8),
            content: msg.content,
            at,
            status: ScheduleStatus::Pending,
            reason: None,
            rrule: recurring,
            upcoming: Vec::new(),
        };
        self.record.schedules.push(schedule.clone());
        self.touch();
        self.flush();
        self.arm(schedule.schedule_id.clone(), schedule.at, ctx);
        Ok(with_upcoming(schedule))
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
        MessageResult(
            self.record
                .schedules
                .iter()
                .cloned()
                .map(with_upcoming)
                .collect(),
        )
    }
}

/// The recurrence `recurring` describes; `None` when its rule or zone no longer reads
/// (both were checked when it was made).
fn recurrence(recurring: &Recurring) -> Option<Recurrence> {
    let rule = rrule::parse(&recurring.rule).ok()?;
    let zone = rrule::zone(&recurring.time_zone).ok()?;
    Recurrence::new(rule, recurring.start, zone).ok()
}

/// The occurrence of `recurring` after `after` (epoch ms); `None` when it has ended.
fn next_occurrence(recurring: &Recurring, after: u64) -> Option<u64> {
    recurrence(recurring)?.next_after(after).map(|(at, _)| at)
}

/// `schedule` with the occurrences after its next one, when it recurs and is pending.
fn with_upcoming(mut schedule: ScheduleRecord) -> ScheduleRecord {
    if schedule.status == ScheduleStatus::Pending {
        if let Some(r) = schedule.rrule.as_ref().and_then(recurrence) {
            schedule.upcoming = r.upcoming(schedule.at, UPCOMING);
        }
    }
    schedule
}
