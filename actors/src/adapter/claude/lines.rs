//! What a Claude process writes, and what it means for our turn.
//!
//! Turn accounting: a turn we started ends with the next `result` line the CLI writes
//! for a user message. Turns the CLI starts by itself (after a background task
//! finished, `origin` set on their `result`) produce events outside any turn.

use actix::prelude::*;
use serde_json::Value;
use tandem_protocol::{EventBody, TurnStatus};

use super::actor::{ClaudeAgent, Stage};
use super::mapping::turn_outcome;
use super::wire::{CliMessage, ResultMessage, SystemMessage};
use crate::adapter::core::Phase;
use crate::adapter::messages::AgentItem;
use crate::adapter::supervisor::Exited;
use crate::clock::now_ms;

/// Longest piece of a malformed line quoted in the log.
const LOG_LINE_CHARS: usize = 200;

impl ClaudeAgent {
    /// One stdout line of the live process.
    pub(super) fn on_line(&mut self, text: &str, ctx: &mut Context<Self>) {
        let msg: CliMessage = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                let quoted: String = text.chars().take(LOG_LINE_CHARS).collect();
                tracing::warn!(session = %self.session_id, error = %e, line = %quoted, "malformed line from claude skipped");
                return;
            }
        };
        let turn_id = self.current_turn();
        if let Some(turn) = &turn_id {
            self.mark(turn, &msg);
        }
        let events = self.mapper.events(&msg);
        if !events.is_empty() {
            self.disarm_unreachable_guard(ctx);
        }
        for body in events {
            self.emitter.event(turn_id.clone(), body);
        }
        match msg {
            CliMessage::System(system) => self.on_system(system, ctx),
            CliMessage::Result(result) => self.on_result(result, ctx),
            CliMessage::RateLimitEvent(event) => {
                if let Some(at) = event.rejected_until() {
                    self.limit_resets_at = Some(at);
                }
            }
            CliMessage::ControlRequest(request) => self.on_control_request(request),
            CliMessage::CommandLifecycle(progress) => {
                if let super::actor::Process::Up(up) = &mut self.live {
                    up.lifecycle = true;
                }
                let ours = self
                    .turn
                    .get()
                    .is_some_and(|t| t.data.uuid == progress.command_uuid);
                if ours && progress.state == "started" {
                    self.turn.go_live();
                }
            }
            CliMessage::ControlResponse(response) => {
                let body = response.response;
                if body.subtype != "success" {
                    tracing::warn!(session = %self.session_id, request = %body.request_id,
                        error = ?body.error, "claude refused a control request");
                }
                self.on_control_response(&body.request_id, body.response);
            }
            CliMessage::ControlCancelRequest(cancel) => self.on_cancel(&cancel.request_id),
            _ => {}
        }
    }

    fn on_system(&mut self, system: SystemMessage, ctx: &mut Context<Self>) {
        match system.subtype.as_str() {
            "init" => {
                if let super::actor::Process::Up(up) = &mut self.live {
                    up.stage = Stage::Ready;
                }
                if let Some(names) = system.slash_commands {
                    let commands = names
                        .into_iter()
                        .filter(|n| !n.is_empty())
                        .map(|name| tandem_protocol::session::VendorCommand {
                            name,
                            description: String::new(),
                            input_hint: None,
                        })
                        .collect();
                    self.emitter.send(None, AgentItem::Commands(commands));
                }
                if let Some(id) = system.session_id.filter(|s| !s.is_empty()) {
                    if self.vendor_session_id.as_deref() != Some(id.as_str()) {
                        // A fork (edit & resend, session.fork) is made: later
                        // processes resume it plainly.
                        self.resume_at = None;
                        self.vendor_session_id = Some(id.clone());
                        self.emitter.send(None, AgentItem::VendorSessionId(id));
                    }
                }
            }
            // No HTTP status: the request got no answer at all.
            "api_retry" if system.error_status.as_ref().is_none_or(Value::is_null) => {
                self.arm_unreachable_guard(system.error.unwrap_or_default(), ctx);
            }
            "background_tasks_changed" => {
                let list = system.tasks.unwrap_or_default();
                if self.tasks.replace(&list, now_ms()) {
                    self.emitter
                        .send(None, AgentItem::BackgroundTasks(self.tasks.tasks()));
                    self.arm_idle(ctx);
                }
            }
            "task_updated" | "task_notification" => {
                let status = match system.subtype.as_str() {
                    "task_updated" => system
                        .patch
                        .as_ref()
                        .and_then(|p| p["status"].as_str().map(str::to_string)),
                    _ => system
                        .status
                        .as_ref()
                        .and_then(|s| s.as_str().map(str::to_string)),
                };
                if let (Some(id), Some(status)) = (system.task_id, status) {
                    if self.tasks.finished(&id, &status) {
                        self.emitter
                            .send(None, AgentItem::BackgroundTasks(self.tasks.tasks()));
                        self.arm_idle(ctx);
                    }
                }
            }
            _ => {}
        }
    }

    fn on_result(&mut self, result: ResultMessage, ctx: &mut Context<Self>) {
        if matches!(self.up().map(|u| u.stage), Some(Stage::Starting { .. })) {
            // A start that failed (an unknown `--resume` id): the process exits next
            // and its exit decides what happens to the turn.
            tracing::debug!(session = %self.session_id, "result before init ignored");
            return;
        }
        if result.is_self_started() {
            tracing::debug!(session = %self.session_id, "a turn claude started itself ended");
            return;
        }
        let Some(turn_id) = self.current_turn() else {
            return;
        };
        let usage = self.mapper.usage(&result);
        self.emitter.send(Some(turn_id), AgentItem::Usage(usage));
        let stopping = matches!(self.turn.phase(), Some(Phase::Stopping(_)));
        let (status, error) = turn_outcome(&result, stopping);
        let resets = self.limit_resets_at.take();
        if let (TurnStatus::Limited, Some(at), Some(turn_id)) =
            (status, resets, self.current_turn())
        {
            self.emitter.send(Some(turn_id), AgentItem::LimitResets(at));
        }
        self.approvals.drain();
        self.plan_lookup = None;
        self.turn.end(status, error);
        self.arm_idle(ctx);
    }

    /// The process exited: a failed resume is retried once in a fresh Claude session;
    /// otherwise the turn in flight fails with the stderr tail.
    pub(super) fn on_exit(&mut self, exit: Exited, ctx: &mut Context<Self>) {
        let failed_resume = matches!(
            self.up().map(|u| u.stage),
            Some(Stage::Starting { resumed: true })
        );
        if !self.reap(exit.generation) {
            return;
        }
        if failed_resume && self.turn.get().is_some_and(|t| !t.data.retried_fresh) {
            self.resume_fresh(&exit, ctx);
            return;
        }
        tracing::debug!(session = %self.session_id, status = %exit.status, "claude exited");
        self.process_gone();
        // A turn being interrupted ends `interrupted` (the slot's rule).
        self.turn
            .end(TurnStatus::Failed, Some(exit.turn_error("Claude Code")));
    }

    /// The Claude session could not be resumed (its transcript is gone): carry the
    /// turn on in a new one rather than failing every turn from now on.
    fn resume_fresh(&mut self, exit: &Exited, ctx: &mut Context<Self>) {
        let Some(turn) = self.turn.get_mut() else {
            return;
        };
        turn.data.retried_fresh = true;
        let turn_id = turn.id.clone();
        let old = self.vendor_session_id.take().unwrap_or_default();
        tracing::warn!(session = %self.session_id, claude_session = %old, tail = %exit.stderr_tail, "resume failed; starting a new Claude session");
        self.emitter.event(
            Some(turn_id),
            EventBody::Info {
                text: format!(
                    "Claude Code could not resume its session {old}; this turn starts a new one."
                ),
            },
        );
        self.start_process(ctx);
    }
}
