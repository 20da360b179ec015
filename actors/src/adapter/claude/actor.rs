//! [`ClaudeAgent`]: the adapter actor for one Claude session.
//!
//! It starts `claude` on the first turn (with `--resume` once the Claude session id
//! is known), keeps the process between turns, and closes it after an idle time; the
//! next turn resumes in a new process. Model and permission-mode changes reach a live
//! process through control requests; effort and the system prompt are command-line
//! only, so a change to them restarts the process (resuming) at the next turn.
//!
//! Turn accounting: a turn we started ends with the next `result` line the CLI writes
//! for a user message. Turns the CLI starts by itself (after a background task
//! finished, `origin` set on their `result`) produce events outside any turn.

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tandem_protocol::{EventBody, PermissionMode, TurnStatus};
use tokio::sync::oneshot;

use super::mapping::{turn_outcome, usage_value, StreamMapper};
use super::tasks::TaskTracker;
use super::transport::{self, cli_args, cli_mode, Exited, LiveProcess, StdoutLine};
use super::wire::{
    line, new_uuid, CliMessage, InboundControlRequest, InboundRequest, OutboundControlRequest,
    OutboundControlResponse, OutboundRequest, PermissionDecision, ResultMessage, SystemMessage,
    UserTurn,
};
use super::{ClaudeHub, DEFAULT_IDLE_CLOSE};
use crate::adapter::messages::Pace;
use crate::adapter::messages::{AdapterCommand, AgentItem, AgentOutput, TurnSettings};
use crate::adapter::{AdapterContext, McpAccess, VendorProcess};
use crate::clock::{now_ms, random_id};

/// The adapter waits at the session's flow gate every this many events.
const AWAIT_EVERY: u64 = 32;
/// A process asked to close is killed if it is still there after this long.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// Longest piece of a malformed line quoted in the log.
const LOG_LINE_CHARS: usize = 200;

/// What the live process was started with or has been switched to.
#[derive(Debug, Clone, PartialEq)]
struct Applied {
    /// Model (`--model` / `set_model`); empty for the default.
    model: String,
    /// The CLI's mode name; a change is sent as `set_permission_mode`, no restart.
    mode: &'static str,
    /// `--effort`: changing it needs a new process.
    effort: String,
    /// `--append-system-prompt`: changing it needs a new process.
    system_prompt: Option<String>,
}

impl Applied {
    fn from(settings: &TurnSettings) -> Self {
        Applied {
            model: settings.model.clone(),
            mode: cli_mode(settings.permission_mode),
            effort: settings.effort.clone(),
            system_prompt: settings.system_prompt.clone(),
        }
    }
}

/// Our turn in flight.
#[derive(Debug)]
struct Turn {
    /// The session's turn id; every output of the turn carries it.
    id: String,
    /// The user text, kept to send again if a `--resume` start fails.
    text: String,
    /// An interrupt was sent: an error result now means "interrupted".
    interrupting: bool,
    /// The turn already moved to a fresh Claude session once.
    retried_fresh: bool,
    /// The id our user message carries; `command_lifecycle` lines name it.
    uuid: String,
    /// The CLI started working on our message. Until then, output belongs to a turn
    /// the CLI started by itself (after a background task finished), not to ours.
    started: bool,
}

/// A tool approval the CLI is waiting for.
#[derive(Debug)]
struct Approval {
    /// Our id (`perm_…`), the one clients answer.
    id: String,
    /// The CLI's control request id, echoed in our answer.
    cli_request_id: String,
    /// The tool input, returned as `updatedInput` when allowed unchanged.
    input: Value,
}

/// The adapter actor for one Claude session.
pub struct ClaudeAgent {
    /// Our session id; only used to tag log lines.
    session_id: String,
    /// The session's working directory; `claude` is started there.
    cwd: PathBuf,
    /// How to start the CLI.
    process: VendorProcess,
    /// The agent tools endpoint, passed as `--mcp-config`.
    mcp: Option<McpAccess>,
    /// The session actor: events, turn ends, approvals and task lists all go there.
    out: Recipient<AgentOutput>,
    /// Awaited every [`AWAIT_EVERY`] events.
    pace: Recipient<Pace>,
    /// Shared with every Claude adapter: our pids (to tell outside runs apart), shutdown.
    hub: ClaudeHub,
    /// Settings as the session last gave them.
    settings: TurnSettings,
    /// The Claude session to resume, once known.
    vendor_session_id: Option<String>,
    /// The process, while it lives.
    live: Option<LiveProcess>,
    /// What the live process runs with.
    applied: Option<Applied>,
    /// The live process announced its session (`system/init`); a `result` before that
    /// belongs to a start that failed.
    started_ok: bool,
    /// The live process was started with `--resume`.
    resumed: bool,
    /// The live process reports `command_lifecycle` (older CLIs do not: then every
    /// line after our message counts as our turn's).
    lifecycle_seen: bool,
    /// Processes asked to close, with their kill switches (dropped = killed).
    closing: Vec<(u64, Option<oneshot::Sender<()>>)>,
    /// Bumped per process; stdout lines and exits of an older process are ignored.
    generation: u64,
    /// The turn the session started and that has not ended; `None` between turns.
    turn: Option<Turn>,
    /// Turns stream-json lines into history events; reset for each new process.
    mapper: StreamMapper,
    /// Background tasks of the live process.
    tasks: TaskTracker,
    /// Approvals waiting for a person.
    approvals: Vec<Approval>,
    /// Closes the process after it has been idle for `idle_close`.
    idle: Option<SpawnHandle>,
    /// How long an idle process is kept.
    idle_close: Duration,
    /// Events sent so far (for pacing).
    emitted: u64,
    /// Counter for our control request ids.
    next_control: u64,
}

impl ClaudeAgent {
    /// An adapter for the session `ctx` describes, running `process`.
    pub fn new(ctx: AdapterContext, process: VendorProcess, hub: ClaudeHub) -> Self {
        ClaudeAgent {
            session_id: ctx.session_id,
            cwd: ctx.cwd,
            idle_close: process.idle_close.unwrap_or(DEFAULT_IDLE_CLOSE),
            process,
            mcp: ctx.mcp,
            out: ctx.out,
            pace: ctx.pace,
            hub,
            settings: ctx.settings,
            vendor_session_id: ctx.vendor_session_id,
            live: None,
            applied: None,
            started_ok: false,
            resumed: false,
            lifecycle_seen: false,
            closing: Vec::new(),
            generation: 0,
            turn: None,
            mapper: StreamMapper::default(),
            tasks: TaskTracker::default(),
            approvals: Vec::new(),
            idle: None,
            emitted: 0,
            next_control: 0,
        }
    }

    fn emit(&mut self, turn_id: Option<String>, item: AgentItem) {
        if matches!(item, AgentItem::Event(_)) {
            self.emitted += 1;
        }
        self.out.do_send(AgentOutput { turn_id, item });
    }

    /// Our turn, if the CLI is working on it (see [`Turn::started`]).
    fn current_turn(&self) -> Option<String> {
        self.turn
            .as_ref()
            .filter(|t| t.started || !self.lifecycle_seen)
            .map(|t| t.id.clone())
    }

    fn end_turn(&mut self, turn_id: String, status: TurnStatus, error: Option<String>) {
        self.emit(Some(turn_id), AgentItem::TurnEnded { status, error });
    }

    fn write(&self, bytes: Vec<u8>) -> bool {
        self.live.as_ref().is_some_and(|l| l.write(bytes))
    }

    fn control(&mut self, request: OutboundRequest<'_>) -> bool {
        self.next_control += 1;
        let id = format!("tandem_{}", self.next_control);
        let bytes = line(&OutboundControlRequest::new(&id, request));
        self.write(bytes)
    }

    /// Starts a new process with the current settings.
    fn spawn(&mut self, ctx: &mut Context<Self>) -> std::io::Result<()> {
        self.generation += 1;
        let resume = self.vendor_session_id.clone();
        let args = cli_args(&self.settings, resume.as_deref(), self.mcp.as_ref());
        let live = transport::spawn(
            &self.process,
            &args,
            &self.cwd,
            self.generation,
            &self.hub,
            ctx.address().downgrade(),
        )?;
        tracing::debug!(session = %self.session_id, pid = live.pid, resume = ?resume, "claude started");
        self.live = Some(live);
        self.applied = Some(Applied::from(&self.settings));
        self.started_ok = false;
        self.resumed = resume.is_some();
        self.lifecycle_seen = false;
        self.mapper = StreamMapper::default();
        Ok(())
    }

    /// Closes the live process: stdin is closed (the CLI exits by itself) and it is
    /// killed if still there after [`CLOSE_GRACE`]. Its tasks and approvals end with it.
    fn close_live(&mut self, ctx: &mut Context<Self>) {
        let Some(mut live) = self.live.take() else {
            return;
        };
        tracing::debug!(session = %self.session_id, pid = live.pid, "closing claude");
        live.stdin = None;
        let generation = live.generation;
        self.closing.push((generation, live.kill.take()));
        ctx.run_later(CLOSE_GRACE, move |act, _| {
            if let Some(pos) = act.closing.iter().position(|(g, _)| *g == generation) {
                let (_, kill) = act.closing.remove(pos);
                if let Some(kill) = kill {
                    let _ = kill.send(());
                }
            }
        });
        self.applied = None;
        self.process_gone();
    }

    /// The live process is gone: its approvals and background tasks went with it.
    fn process_gone(&mut self) {
        let turn_id = self.current_turn();
        for approval in std::mem::take(&mut self.approvals) {
            self.emit(
                turn_id.clone(),
                AgentItem::PermissionResolved {
                    request_id: approval.id,
                },
            );
        }
        if self.tasks.clear() {
            self.emit(None, AgentItem::BackgroundTasks(Vec::new()));
        }
    }

    fn cancel_idle(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.idle.take() {
            ctx.cancel_future(handle);
        }
    }

    /// Arms the idle close when nothing runs in the process.
    fn arm_idle(&mut self, ctx: &mut Context<Self>) {
        self.cancel_idle(ctx);
        if self.live.is_none() || self.turn.is_some() || !self.tasks.is_empty() {
            return;
        }
        self.idle = Some(ctx.run_later(self.idle_close, |act, ctx| {
            act.idle = None;
            if act.turn.is_none() && act.tasks.is_empty() {
                act.close_live(ctx);
            }
        }));
    }

    /// True when the live process runs with an effort or system prompt that differs
    /// from the settings (those are command-line flags only).
    fn needs_restart(&self) -> bool {
        self.applied.as_ref().is_some_and(|a| {
            a.effort != self.settings.effort || a.system_prompt != self.settings.system_prompt
        })
    }

    /// Brings the live process's model and permission mode in line with the settings.
    fn apply_live_settings(&mut self) {
        let Some(applied) = self.applied.clone() else {
            return;
        };
        let wanted = Applied::from(&self.settings);
        if applied.model != wanted.model {
            let model = (!wanted.model.is_empty()).then_some(wanted.model.as_str());
            self.control(OutboundRequest::SetModel { model });
        }
        if applied.mode != wanted.mode {
            self.control(OutboundRequest::SetPermissionMode { mode: wanted.mode });
        }
        if let Some(a) = self.applied.as_mut() {
            a.model = wanted.model;
            a.mode = wanted.mode;
        }
    }

    fn start_turn(
        &mut self,
        turn_id: String,
        text: String,
        settings: TurnSettings,
        ctx: &mut Context<Self>,
    ) {
        self.cancel_idle(ctx);
        if let Some(old) = self.turn.take() {
            // The session never starts a turn while one runs; if it somehow did, the
            // old one still ends exactly once.
            self.end_turn(
                old.id,
                TurnStatus::Interrupted,
                Some("superseded by a new turn".into()),
            );
        }
        self.settings = settings;
        if self.live.is_some() && self.needs_restart() {
            self.close_live(ctx);
        }
        if self.live.is_some() {
            self.apply_live_settings();
        } else if let Err(e) = self.spawn(ctx) {
            self.end_turn(
                turn_id,
                TurnStatus::Failed,
                Some(format!(
                    "cannot start Claude Code ({}): {e}",
                    self.process.bin.display()
                )),
            );
            return;
        }
        // A failed write means the process is dying: its exit ends the turn.
        let uuid = new_uuid();
        self.write(line(&UserTurn::new(&text, &uuid)));
        self.turn = Some(Turn {
            id: turn_id,
            text,
            interrupting: false,
            retried_fresh: false,
            uuid,
            started: false,
        });
    }

    fn interrupt(&mut self, turn_id: String) {
        let Some(turn) = self.turn.as_mut().filter(|t| t.id == turn_id) else {
            return;
        };
        if turn.interrupting {
            return;
        }
        turn.interrupting = true;
        if !self.control(OutboundRequest::Interrupt {}) {
            // No process to ask: the turn is over now.
            if let Some(turn) = self.turn.take() {
                self.end_turn(turn.id, TurnStatus::Interrupted, None);
            }
        }
    }

    fn answer_permission(
        &mut self,
        request_id: String,
        allow: bool,
        updated_input: Option<Value>,
        message: Option<String>,
    ) {
        let Some(pos) = self.approvals.iter().position(|a| a.id == request_id) else {
            tracing::debug!(session = %self.session_id, request = %request_id, "answer to a request that is no longer pending");
            return;
        };
        let approval = self.approvals.remove(pos);
        let decision = if allow {
            PermissionDecision::Allow {
                updated_input: updated_input.unwrap_or(approval.input),
            }
        } else {
            PermissionDecision::Deny {
                message: message
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or_else(|| "The user denied this tool use.".into()),
            }
        };
        let bytes = line(&OutboundControlResponse::decision(
            &approval.cli_request_id,
            decision,
        ));
        self.write(bytes);
    }

    fn on_line(&mut self, text: &str, ctx: &mut Context<Self>) {
        let msg: CliMessage = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                let quoted: String = text.chars().take(LOG_LINE_CHARS).collect();
                tracing::warn!(session = %self.session_id, error = %e, line = %quoted, "malformed line from claude skipped");
                return;
            }
        };
        let turn_id = self.current_turn();
        for body in self.mapper.events(&msg) {
            self.emit(turn_id.clone(), AgentItem::Event(body));
        }
        match msg {
            CliMessage::System(system) => self.on_system(system, ctx),
            CliMessage::Result(result) => self.on_result(result, ctx),
            CliMessage::ControlRequest(request) => self.on_control_request(request),
            CliMessage::CommandLifecycle(progress) => {
                self.lifecycle_seen = true;
                if let Some(turn) = self
                    .turn
                    .as_mut()
                    .filter(|t| t.uuid == progress.command_uuid)
                {
                    if progress.state == "started" {
                        turn.started = true;
                    }
                }
            }
            CliMessage::ControlResponse(response) if response.response.subtype != "success" => {
                tracing::warn!(session = %self.session_id, request = %response.response.request_id,
                    error = ?response.response.error, "claude refused a control request");
            }
            CliMessage::ControlCancelRequest(cancel) => {
                if let Some(pos) = self
                    .approvals
                    .iter()
                    .position(|a| a.cli_request_id == cancel.request_id)
                {
                    let approval = self.approvals.remove(pos);
                    self.emit(
                        turn_id,
                        AgentItem::PermissionResolved {
                            request_id: approval.id,
                        },
                    );
                }
            }
            _ => {}
        }
    }

    fn on_system(&mut self, system: SystemMessage, ctx: &mut Context<Self>) {
        match system.subtype.as_str() {
            "init" => {
                self.started_ok = true;
                if let Some(id) = system.session_id.filter(|s| !s.is_empty()) {
                    if self.vendor_session_id.as_deref() != Some(id.as_str()) {
                        self.vendor_session_id = Some(id.clone());
                        self.emit(None, AgentItem::VendorSessionId(id));
                    }
                }
            }
            "background_tasks_changed" => {
                let list = system.tasks.unwrap_or_default();
                if self.tasks.replace(&list, now_ms()) {
                    self.emit(None, AgentItem::BackgroundTasks(self.tasks.tasks()));
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
                        self.emit(None, AgentItem::BackgroundTasks(self.tasks.tasks()));
                        self.arm_idle(ctx);
                    }
                }
            }
            _ => {}
        }
    }

    fn on_result(&mut self, result: ResultMessage, ctx: &mut Context<Self>) {
        if !self.started_ok {
            // A start that failed (an unknown `--resume` id): the process exits next
            // and its exit decides what happens to the turn.
            tracing::debug!(session = %self.session_id, "result before init ignored");
            return;
        }
        if result.is_self_started() {
            tracing::debug!(session = %self.session_id, "a turn claude started itself ended");
            return;
        }
        if self.current_turn().is_none() {
            return;
        }
        let Some(turn) = self.turn.take() else {
            return;
        };
        self.emit(
            Some(turn.id.clone()),
            AgentItem::Usage(usage_value(&result)),
        );
        let (status, error) = turn_outcome(&result, turn.interrupting);
        self.approvals.clear();
        self.end_turn(turn.id, status, error);
        self.arm_idle(ctx);
    }

    fn on_control_request(&mut self, request: InboundControlRequest) {
        match request.request {
            InboundRequest::CanUseTool {
                tool_name, input, ..
            } => {
                if self.settings.permission_mode == PermissionMode::BypassPermissions {
                    let bytes = line(&OutboundControlResponse::decision(
                        &request.request_id,
                        PermissionDecision::Allow {
                            updated_input: input,
                        },
                    ));
                    self.write(bytes);
                    return;
                }
                let id = random_id("perm_", 12);
                self.approvals.push(Approval {
                    id: id.clone(),
                    cli_request_id: request.request_id,
                    input: input.clone(),
                });
                let turn_id = self.current_turn();
                self.emit(
                    turn_id,
                    AgentItem::PermissionRequest {
                        request_id: id,
                        tool_name,
                        input,
                        options: Vec::new(),
                    },
                );
            }
            InboundRequest::Other => {
                let bytes = line(&OutboundControlResponse::error(
                    &request.request_id,
                    "not supported by tandem",
                ));
                self.write(bytes);
            }
        }
    }

    fn on_exit(&mut self, exit: Exited, ctx: &mut Context<Self>) {
        self.closing.retain(|(g, _)| *g != exit.generation);
        if self.live.as_ref().map(|l| l.generation) != Some(exit.generation) {
            return;
        }
        self.live = None;
        self.applied = None;
        let failed_resume = self.resumed && !self.started_ok;
        if failed_resume {
            if let Some(turn) = self.turn.as_mut().filter(|t| !t.retried_fresh) {
                // The Claude session could not be resumed (its transcript is gone):
                // carry on in a new one rather than failing every turn from now on.
                turn.retried_fresh = true;
                let (turn_id, text) = (turn.id.clone(), turn.text.clone());
                let old = self.vendor_session_id.take().unwrap_or_default();
                tracing::warn!(session = %self.session_id, claude_session = %old, tail = %exit.stderr_tail, "resume failed; starting a new Claude session");
                self.emit(
                    Some(turn_id.clone()),
                    AgentItem::Event(EventBody::Info {
                        text: format!(
                            "Claude Code could not resume its session {old}; this turn starts a new one."
                        ),
                    }),
                );
                match self.spawn(ctx) {
                    Ok(()) => {
                        let uuid = new_uuid();
                        self.write(line(&UserTurn::new(&text, &uuid)));
                        if let Some(turn) = self.turn.as_mut() {
                            turn.uuid = uuid;
                            turn.started = false;
                        }
                    }
                    Err(e) => {
                        self.turn = None;
                        self.end_turn(
                            turn_id,
                            TurnStatus::Failed,
                            Some(format!("cannot start Claude Code: {e}")),
                        );
                    }
                }
                return;
            }
        }
        tracing::debug!(session = %self.session_id, status = %exit.status, "claude exited");
        self.process_gone();
        if let Some(turn) = self.turn.take() {
            let (status, error) = if turn.interrupting {
                (TurnStatus::Interrupted, None)
            } else {
                let mut error = format!("Claude Code exited during the turn ({})", exit.status);
                if !exit.stderr_tail.trim().is_empty() {
                    error.push_str(": ");
                    error.push_str(exit.stderr_tail.trim());
                }
                (TurnStatus::Failed, Some(error))
            };
            self.end_turn(turn.id, status, error);
        }
    }
}

impl Actor for ClaudeAgent {
    type Context = Context<Self>;
}

impl Handler<AdapterCommand> for ClaudeAgent {
    type Result = ();

    fn handle(&mut self, msg: AdapterCommand, ctx: &mut Context<Self>) {
        match msg {
            AdapterCommand::StartTurn {
                turn_id,
                text,
                settings,
                ..
            } => self.start_turn(turn_id, text, settings, ctx),
            AdapterCommand::Interrupt { turn_id } => self.interrupt(turn_id),
            AdapterCommand::StopTask { task_id } => {
                if self.tasks.contains(&task_id) {
                    self.control(OutboundRequest::StopTask { task_id: &task_id });
                }
            }
            AdapterCommand::PermissionResponse {
                request_id,
                allow,
                updated_input,
                message,
                ..
            } => self.answer_permission(request_id, allow, updated_input, message),
            AdapterCommand::Configure { settings } => {
                self.settings = settings;
                if self.live.is_some()
                    && self.turn.is_none()
                    && self.tasks.is_empty()
                    && self.needs_restart()
                {
                    self.close_live(ctx);
                } else {
                    self.apply_live_settings();
                }
            }
        }
    }
}

impl Handler<StdoutLine> for ClaudeAgent {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: StdoutLine, ctx: &mut Context<Self>) -> Self::Result {
        if self.live.as_ref().map(|l| l.generation) != Some(msg.generation) {
            return Box::pin(async {});
        }
        let before = self.emitted / AWAIT_EVERY;
        self.on_line(&msg.line, ctx);
        if self.emitted / AWAIT_EVERY == before {
            return Box::pin(async {});
        }
        // The reader waits for this before the next line: a fast stream cannot outrun
        // the session's fan-out.
        let pace = self.pace.clone();
        Box::pin(async move {
            let _ = pace.send(Pace).await;
        })
    }
}

impl Handler<Exited> for ClaudeAgent {
    type Result = ();

    fn handle(&mut self, msg: Exited, ctx: &mut Context<Self>) {
        self.on_exit(msg, ctx);
    }
}
