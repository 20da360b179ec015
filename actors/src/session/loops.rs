//! A loop until done (`loop.start`) in the session actor: each iteration is a turn
//! toward the goal carrying the last check's result; when the turn completes the
//! check runs (a command in the working directory, or a judge's turn); the loop ends
//! when the check passes, after `maxIterations`, on `loop.stop`, or when a person
//! interrupts an iteration's turn (a failed turn ends it too). Where the loop is
//! lives in the record, so a restart resumes it: a turn the restart cut off runs
//! again, a check under way runs again, a cooldown keeps its deadline.

use std::path::Path;
use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::loops::{
    LoopCheck, LoopCheckOutcome, LoopEndReason, LoopInfo, LoopPhase, DEFAULT_CHECK_TIMEOUT,
};
use tandem_protocol::workspace::CheckStatus;
use tandem_protocol::{EventBody, TurnStatus};

use super::turn::tail;
use super::SessionActor;
use crate::clock::{now_ms, random_id};
use crate::error::RuntimeError;
use crate::ids::TurnId;
use crate::judge::JudgeRequest;
use crate::record::LoopRecord;
use crate::workspace::project::CheckSpec;

/// How much of an iteration's answer the check gets, in characters.
const ANSWER_CHARS: usize = 8_000;
/// How much of a failed check's output the next iteration gets, in characters.
const FEEDBACK_CHARS: usize = 4_000;

/// Start a loop (checked by the runtime: the check is one of the two, the judge's
/// vendor exists).
#[derive(Debug, Message)]
#[rtype(result = "Result<LoopInfo, RuntimeError>")]
pub struct StartLoop {
    /// What each iteration works toward.
    pub goal: String,
    /// How each iteration is checked.
    pub check: LoopCheck,
    /// Its last iteration.
    pub max_iterations: u32,
    /// Pause after a failed check, seconds.
    pub cooldown_seconds: u64,
}

/// End the running loop (a turn under way goes on); answers its id and the
/// iterations whose turn started.
#[derive(Debug, Message)]
#[rtype(result = "Result<(String, u32), RuntimeError>")]
pub struct StopLoop;

/// The message of an iteration: the goal first (so an agent reads it as the task),
/// then where the loop is and what the last check said.
fn iteration_text(run: &LoopRecord) -> String {
    let mut text = format!(
        "{}\n\n[tandem loop {}: iteration {} of {}.",
        run.goal.trim(),
        run.loop_id,
        run.iteration,
        run.max_iterations
    );
    match &run.last_check {
        Some(check) => text.push_str(&format!(
            " The last check failed:\n{}]",
            tail(check.output.trim(), FEEDBACK_CHARS)
        )),
        None => text.push(']'),
    }
    text
}

impl SessionActor {
    /// At start: a loop a restart left goes on where it was.
    pub(super) fn resume_loop(&mut self, ctx: &mut Context<Self>) {
        let Some(run) = self.record.loop_run.as_mut() else {
            return;
        };
        match run.phase {
            LoopPhase::Turn => {
                // Its turn, if it had started, died with the process: run it again.
                if run.turn_id.take().is_some() {
                    self.touch();
                }
                self.loop_poke(ctx);
            }
            LoopPhase::Check => self.loop_check(ctx),
            LoopPhase::Cooldown => self.arm_loop(ctx),
        }
    }

    /// Starts the iteration due when the session is free: no turn, nothing queued
    /// before it, no background task (as queued messages wait). Called again when a
    /// turn ends.
    pub(super) fn loop_poke(&mut self, ctx: &mut Context<Self>) {
        let due = self
            .record
            .loop_run
            .as_ref()
            .is_some_and(|r| r.phase == LoopPhase::Turn && r.turn_id.is_none());
        if !due
            || self.turn.is_some()
            || !self.record.queued.is_empty()
            || !self.background.is_empty()
        {
            return;
        }
        let Some(text) = self.record.loop_run.as_ref().map(iteration_text) else {
            return;
        };
        match self.start_turn(text, false, None, ctx) {
            Ok(turn_id) => {
                if let Some(run) = self.record.loop_run.as_mut() {
                    run.turn_id = Some(turn_id);
                    run.turns_started = run.iteration;
                }
                self.touch();
            }
            Err(e) => {
                self.emit(
                    None,
                    EventBody::Error {
                        message: format!("the loop's iteration could not start: {e}"),
                    },
                );
                self.end_loop(LoopEndReason::Failed);
            }
        }
    }

    /// A turn ended: the loop's own goes to its check, or ends the loop when it did
    /// not complete.
    pub(super) fn loop_turn_ended(
        &mut self,
        turn_id: &TurnId,
        status: TurnStatus,
        answer: &str,
        ctx: &mut Context<Self>,
    ) {
        let Some(run) = self
            .record
            .loop_run
            .as_mut()
            .filter(|r| r.turn_id.as_deref() == Some(turn_id))
        else {
            return;
        };
        run.turn_id = None;
        match status {
            TurnStatus::Completed => {
                run.phase = LoopPhase::Check;
                run.last_answer = tail(answer, ANSWER_CHARS);
                self.touch();
                self.loop_check(ctx);
            }
            TurnStatus::Interrupted => self.end_loop(LoopEndReason::Interrupted),
            TurnStatus::Failed | TurnStatus::Limited => self.end_loop(LoopEndReason::Failed),
        }
    }

    /// Runs the check of the iteration under way, off this actor; its outcome comes
    /// back to [`SessionActor::loop_checked`].
    fn loop_check(&mut self, ctx: &mut Context<Self>) {
        let Some(run) = self.record.loop_run.clone() else {
            return;
        };
        let checks = self.services.checks.clone();
        let info = self.info();
        let (loop_id, iteration) = (run.loop_id.clone(), run.iteration);
        let check = async move {
            if let Some(command) = run.check.command.clone() {
                let spec = CheckSpec {
                    name: "loop".into(),
                    command,
                    timeout_secs: run.check.timeout_seconds.unwrap_or(DEFAULT_CHECK_TIMEOUT),
                };
                let result = checks.run_one(&spec, Path::new(&info.cwd)).await;
                return LoopCheckOutcome {
                    passed: result.status == CheckStatus::Passed,
                    output: result.log_tail,
                    exit_code: result.exit_code,
                    judge_session_id: None,
                };
            }
            let (Some(judge), Some(hook)) = (run.check.judge.clone(), checks.judge.clone()) else {
                return LoopCheckOutcome {
                    passed: false,
                    output: "the loop has no check this server can run".into(),
                    exit_code: None,
                    judge_session_id: None,
                };
            };
            let (session, verdict) = (hook.0)(JudgeRequest {
                session: info,
                vendor: judge.vendor,
                judge_session_id: run.judge_session_id,
                prompt: judge.prompt,
                goal: run.goal,
                iteration: run.iteration,
                answer: run.last_answer,
            })
            .await;
            let (passed, output) = match verdict {
                Ok(v) => (v.passed, v.reasons),
                Err(why) => (false, why.0),
            };
            LoopCheckOutcome {
                passed,
                output,
                exit_code: None,
                judge_session_id: session,
            }
        };
        ctx.spawn(actix::fut::wrap_future(check).map(
            move |outcome, act: &mut SessionActor, ctx| {
                act.loop_checked(&loop_id, iteration, outcome, ctx);
                act.flush();
            },
        ));
    }

    /// An iteration's check came back: recorded, then the loop ends or goes on.
    fn loop_checked(
        &mut self,
        loop_id: &str,
        iteration: u32,
        outcome: LoopCheckOutcome,
        ctx: &mut Context<Self>,
    ) {
        let Some(run) = self.record.loop_run.as_mut().filter(|r| {
            r.loop_id == loop_id && r.iteration == iteration && r.phase == LoopPhase::Check
        }) else {
            // Stopped meanwhile (or a check of a resumed loop ran twice).
            return;
        };
        if outcome.judge_session_id.is_some() {
            run.judge_session_id = outcome.judge_session_id.clone();
        }
        let body = EventBody::LoopIteration {
            loop_id: loop_id.to_string(),
            n: iteration,
            check: outcome.clone(),
        };
        let passed = outcome.passed;
        run.last_check = Some(outcome);
        let last = run.iteration >= run.max_iterations;
        self.emit(None, body);
        self.touch();
        if passed {
            return self.end_loop(LoopEndReason::Passed);
        }
        if last {
            return self.end_loop(LoopEndReason::MaxIterations);
        }
        let Some(run) = self.record.loop_run.as_mut() else {
            return;
        };
        run.iteration += 1;
        if run.cooldown_seconds == 0 {
            run.phase = LoopPhase::Turn;
            self.loop_poke(ctx);
        } else {
            run.phase = LoopPhase::Cooldown;
            run.next_at = Some(now_ms().saturating_add(run.cooldown_seconds * 1000));
            self.arm_loop(ctx);
        }
    }

    /// Arms the end of the cooldown (a past deadline ends it at once).
    fn arm_loop(&mut self, ctx: &mut Context<Self>) {
        let Some(run) = &self.record.loop_run else {
            return;
        };
        let (loop_id, at) = (run.loop_id.clone(), run.next_at.unwrap_or(0));
        let left = Duration::from_millis(at.saturating_sub(now_ms()));
        ctx.run_later(left, move |act, ctx| {
            let Some(run) = act
                .record
                .loop_run
                .as_mut()
                .filter(|r| r.loop_id == loop_id && r.phase == LoopPhase::Cooldown)
            else {
                return;
            };
            run.phase = LoopPhase::Turn;
            run.next_at = None;
            act.touch();
            act.loop_poke(ctx);
            act.flush();
        });
    }

    /// Ends the loop: `loop_ended` with the iterations whose turn started.
    fn end_loop(&mut self, reason: LoopEndReason) {
        let Some(run) = self.record.loop_run.take() else {
            return;
        };
        self.emit(
            None,
            EventBody::LoopEnded {
                loop_id: run.loop_id,
                reason,
                iterations: run.turns_started,
            },
        );
        self.touch();
    }
}

impl Handler<StartLoop> for SessionActor {
    type Result = Result<LoopInfo, RuntimeError>;

    fn handle(&mut self, msg: StartLoop, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(run) = &self.record.loop_run {
            return Err(RuntimeError::Conflict(format!(
                "loop {} still runs in this session; stop it first",
                run.loop_id
            )));
        }
        if self.turn.is_some() || !self.record.queued.is_empty() {
            return Err(RuntimeError::RunInProgress(self.record.id.clone()));
        }
        self.owner_allowed()?;
        let run = LoopRecord {
            loop_id: random_id("loop_", 8),
            goal: msg.goal,
            check: msg.check,
            max_iterations: msg.max_iterations,
            cooldown_seconds: msg.cooldown_seconds,
            iteration: 1,
            turns_started: 0,
            phase: LoopPhase::Turn,
            turn_id: None,
            next_at: None,
            last_answer: String::new(),
            last_check: None,
            judge_session_id: None,
        };
        self.emit(
            None,
            EventBody::LoopStarted {
                loop_id: run.loop_id.clone(),
                goal: run.goal.clone(),
                check: run.check.clone(),
                max_iterations: run.max_iterations,
            },
        );
        self.record.loop_run = Some(run);
        self.touch();
        self.loop_poke(ctx);
        let info = self.record.loop_run.as_ref().map(LoopRecord::to_info);
        self.flush();
        // Ended at once only when its first turn could not start (recorded).
        info.ok_or_else(|| RuntimeError::Conflict("the loop's first turn could not start".into()))
    }
}

impl Handler<StopLoop> for SessionActor {
    type Result = Result<(String, u32), RuntimeError>;

    fn handle(&mut self, _: StopLoop, _: &mut Context<Self>) -> Self::Result {
        let Some(run) = &self.record.loop_run else {
            return Err(RuntimeError::Conflict(format!(
                "session {} runs no loop",
                self.record.id
            )));
        };
        let (loop_id, iterations) = (run.loop_id.clone(), run.turns_started);
        self.end_loop(LoopEndReason::Stopped);
        self.flush();
        Ok((loop_id, iterations))
    }
}
