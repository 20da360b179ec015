//! [`ClaudeAgent`]: the adapter actor for one Claude session.
//!
//! It starts `claude` on the first turn (with `--resume` once the Claude session id
//! is known), keeps the process between turns, and closes it after an idle time; the
//! next turn resumes in a new process. Model and permission-mode changes reach a live
//! process through control requests; effort and the system prompt are command-line
//! only, so a change to them restarts the process (resuming) at the next turn.
//!
//! What the CLI writes is handled in [`super::lines`] (turn accounting) and
//! [`super::approvals`] (tool approvals).

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::TurnStatus;

use super::approvals::{ClaudeApproval, PlanLookup};
use super::mapping::StreamMapper;
use super::mcp_file::McpFile;
use super::tasks::TaskTracker;
use super::transport::{self, cli_args, cli_mode, StdoutLine};
use super::wire::{line, new_uuid, OutboundControlRequest, OutboundRequest, UserTurn};
use super::DEFAULT_IDLE_CLOSE;
use crate::adapter::core::{Approvals, Emitter, Phase, Stop, TurnSlot};
use crate::adapter::fleet::{Admission, Evict, Place, Seat};
use crate::adapter::messages::{AdapterCommand, AgentItem, ImageInput, TurnSettings};
use crate::adapter::supervisor::{Closing, Exited, LiveProcess, ProcessHub};
use crate::adapter::{AdapterContext, McpAccess, VendorId, VendorProcess};
use crate::ids::{SessionId, TurnId};
use tandem_protocol::EventBody;

/// How long Claude Code may keep retrying an API it cannot reach before the turn is
/// stopped and fails (it would retry for minutes); `TANDEM_CLAUDE_UNREACHABLE_MS`
/// shortens it for tests.
const UNREACHABLE_LIMIT: Duration = Duration::from_secs(30);

fn unreachable_limit() -> Duration {
    std::env::var("TANDEM_CLAUDE_UNREACHABLE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(UNREACHABLE_LIMIT, Duration::from_millis)
}

/// What the live process was started with or has been switched to.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Applied {
    /// Model (`--model` / `set_model`); empty for the default.
    model: String,
    /// The CLI's mode name; a change is sent as `set_permission_mode`, no restart.
    pub(super) mode: &'static str,
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

/// How far a live process's start got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Started, and it has not announced its session (`system/init`) yet. A `result`
    /// now belongs to a start that failed; with `resumed` (started with `--resume`),
    /// an exit now means the Claude session could not be resumed.
    Starting {
        /// Started with `--resume`.
        resumed: bool,
    },
    /// It announced its session.
    Ready,
}

/// The process while it runs.
#[derive(Debug)]
pub(super) struct Up {
    /// Its stdin and kill switch.
    pub(super) proc: LiveProcess,
    /// What it runs with.
    pub(super) applied: Applied,
    /// How far its start got.
    pub(super) stage: Stage,
    /// It reports `command_lifecycle` lines (older CLIs do not: then every line after
    /// our message counts as our turn's).
    pub(super) lifecycle: bool,
    /// Closes it after it has been idle for the adapter's `idle_close`.
    idle: Option<SpawnHandle>,
    /// Its `--mcp-config` file, kept while it runs and removed with it (never read
    /// here: it is held for its `Drop`).
    _mcp_file: Option<McpFile>,
}

/// The CLI process as this adapter knows it.
#[derive(Debug)]
pub(super) enum Process {
    /// None runs (not started yet, closed, or exited): the next turn starts one.
    Down,
    /// One runs.
    Up(Box<Up>),
}

/// Claude's side of our turn in flight (the slot holds whether the CLI started working
/// on it and whether it is being interrupted).
#[derive(Debug)]
pub(super) struct ClaudeTurn {
    /// The user text, kept to send again if a `--resume` start fails.
    pub(super) text: String,
    /// The turn's images, sent after the text.
    pub(super) images: Vec<ImageInput>,
    /// The turn already moved to a fresh Claude session once.
    pub(super) retried_fresh: bool,
    /// The id our user message carries; `command_lifecycle` lines name it.
    pub(super) uuid: String,
    /// Armed while the CLI retries an API it cannot reach; cancelled by any output.
    pub(super) unreachable: Option<SpawnHandle>,
}

/// The adapter actor for one Claude session.
pub struct ClaudeAgent {
    /// Our session id; only used to tag log lines.
    pub(super) session_id: SessionId,
    /// The session's working directory; `claude` is started there.
    cwd: PathBuf,
    /// How to start the CLI.
    pub(super) process: VendorProcess,
    /// The agent tools endpoint, passed as `--mcp-config`.
    mcp: Option<McpAccess>,
    /// Everything for the session goes through it.
    pub(super) emitter: Emitter,
    /// Shared with every Claude adapter: our pids (to tell outside runs apart), shutdown.
    hub: ProcessHub,
    /// Settings as the session last gave them.
    pub(super) settings: TurnSettings,
    /// The Claude session to resume, once known.
    pub(super) vendor_session_id: Option<String>,
    /// The process, while it runs.
    pub(super) live: Process,
    /// Processes asked to close, killed if still there after the grace period.
    closing: Closing,
    /// Bumped per process; stdout lines and exits of an older process are ignored.
    pub(super) generation: u64,
    /// Our turn in flight.
    pub(super) turn: TurnSlot<ClaudeTurn>,
    /// Turns stream-json lines into history events; reset for each new process.
    pub(super) mapper: StreamMapper,
    /// Background tasks of the live process.
    pub(super) tasks: TaskTracker,
    /// Approvals waiting for a person.
    pub(super) approvals: Approvals<ClaudeApproval>,
    /// A plan approval held back until the CLI says what the plan is.
    /// When the usage limit the CLI reported (`rate_limit_event`, rejected) lifts,
    /// epoch ms; told with the turn it ends.
    pub(super) limit_resets_at: Option<u64>,
    pub(super) plan_lookup: Option<PlanLookup>,
    /// How long an idle process is kept.
    idle_close: Duration,
    /// Counter for our control request ids.
    next_control: u64,
    /// The turns this adapter ran, oldest first, each with the id of its newest
    /// top-level message in the CLI's transcript: where a rewind resumes.
    pub(super) marks: Vec<super::rewind::Mark>,
    /// Set by a rewind, or given to a fork's adapter: processes resume at this
    /// message, forking the Claude session (`--resume-session-at ID --fork-session`),
    /// until the CLI names the new session.
    pub(super) resume_at: Option<String>,
    /// Its process's seat in the server's fleet.
    pub(super) place: Place,
}

impl ClaudeAgent {
    /// An adapter for the session `ctx` describes, running `process`.
    pub fn new(ctx: AdapterContext, process: VendorProcess, hub: ProcessHub) -> Self {
        let emitter = ctx.emitter();
        let place = Place::new(ctx.fleet.clone(), &ctx.session_id, &VendorId::CLAUDE);
        ClaudeAgent {
            place,
            session_id: ctx.session_id,
            cwd: ctx.cwd,
            idle_close: process.idle_close.unwrap_or(DEFAULT_IDLE_CLOSE),
            process,
            mcp: ctx.mcp,
            turn: TurnSlot::new(&emitter),
            emitter,
            hub,
            settings: ctx.settings,
            vendor_session_id: ctx.vendor_session_id,
            live: Process::Down,
            closing: Closing::default(),
            generation: 0,
            mapper: StreamMapper::default(),
            tasks: TaskTracker::default(),
            approvals: Approvals::new(ctx.remembered),
            plan_lookup: None,
            limit_resets_at: None,
            next_control: 0,
            marks: Vec::new(),
            resume_at: match ctx.fork_on_open {
                Some(crate::adapter::messages::ForkOnOpen::At(message)) => Some(message),
                _ => None,
            },
        }
    }

    /// The live process.
    pub(super) fn up(&self) -> Option<&Up> {
        match &self.live {
            Process::Up(up) => Some(up),
            Process::Down => None,
        }
    }

    fn up_mut(&mut self) -> Option<&mut Up> {
        match &mut self.live {
            Process::Up(up) => Some(up),
            Process::Down => None,
        }
    }

    /// Our turn, if the CLI is working on it: its output belongs to the turn. Until the
    /// CLI picks our message up, output belongs to a turn it started by itself (after
    /// a background task finished).
    pub(super) fn current_turn(&self) -> Option<TurnId> {
        let lifecycle = self.up().is_some_and(|u| u.lifecycle);
        let picked_up = !matches!(self.turn.phase(), Some(Phase::Starting));
        self.turn.turn_id().filter(|_| picked_up || !lifecycle)
    }

    /// Writes one line to the live process's stdin; false without one.
    pub(super) fn write(&self, bytes: Vec<u8>) -> bool {
        self.up().is_some_and(|u| u.proc.write(bytes))
    }

    /// Sends a control request; its id, or `None` without a live process.
    pub(super) fn control(&mut self, request: OutboundRequest<'_>) -> Option<String> {
        self.next_control += 1;
        let id = format!("tandem_{}", self.next_control);
        let bytes = line(&OutboundControlRequest::new(&id, request));
        self.write(bytes).then_some(id)
    }

    /// Starts a process for the turn in the slot once the fleet gives it a seat (at
    /// once, or when another process has made room), and sends it the turn.
    pub(super) fn start_process(&mut self, ctx: &mut Context<Self>) {
        if self.place.waiting {
            return; // the seat asked for earlier serves this turn
        }
        match self.place.take(ctx.address().recipient()) {
            Admission::Now(seat) => self.spawn_and_send(seat, ctx),
            Admission::Wait(granted) => {
                self.place.waiting = true;
                let text = self.place.waiting_note("Claude Code");
                self.emitter
                    .event(self.turn.turn_id(), EventBody::Info { text });
                ctx.spawn(fut::wrap_future::<_, Self>(granted).map(|seat, act, ctx| {
                    act.place.waiting = false;
                    let Ok(seat) = seat else {
                        return;
                    };
                    // A turn interrupted meanwhile needs no process (the seat goes
                    // back as it is dropped).
                    if act.up().is_none() && act.turn.phase() == Some(&Phase::Starting) {
                        act.spawn_and_send(seat, ctx);
                    }
                }));
            }
        }
    }

    /// Spawns in `seat` and sends the turn; a process that cannot start fails it.
    fn spawn_and_send(&mut self, seat: Seat, ctx: &mut Context<Self>) {
        match self.spawn(seat, ctx) {
            Ok(()) => self.send_user_turn(),
            Err(e) => {
                self.place.left();
                let error = format!(
                    "cannot start Claude Code ({}): {e}",
                    self.process.bin.display()
                );
                self.turn.end(TurnStatus::Failed, Some(error));
            }
        }
    }

    /// Starts a new process in fleet seat `seat` with the current settings.
    fn spawn(&mut self, seat: Seat, ctx: &mut Context<Self>) -> std::io::Result<()> {
        self.generation += 1;
        let resume = self.vendor_session_id.clone();
        // The MCP config holds secrets: in a file only this CLI reads, not in its
        // arguments.
        let mcp_file = match &self.mcp {
            Some(mcp) => Some(McpFile::write(
                &crate::adapter::confine::temp_base(&self.process.environment()),
                &transport::mcp_config(mcp),
            )?),
            None => None,
        };
        let mut args = cli_args(
            &self.settings,
            resume.as_deref(),
            mcp_file.as_ref().map(McpFile::path),
        );
        // Kept until the CLI names the forked session: a process that dies before
        // then must not be followed by one that resumes the old session unforked.
        if let (Some(at), Some(_)) = (self.resume_at.clone(), resume.as_ref()) {
            args.extend(super::rewind::fork_args(&at));
        }
        // The config file is for this process alone to read.
        let mut process = self.process.clone();
        if let (Some(launcher), Some(file)) = (process.confine.as_mut(), &mcp_file) {
            launcher.also_read.push(file.path().to_path_buf());
        }
        self.place.seated(&seat);
        let proc = transport::spawn(
            &process,
            &args,
            &self.cwd,
            self.generation,
            &self.hub,
            seat,
            ctx.address().downgrade(),
        )?;
        tracing::debug!(session = %self.session_id, pid = proc.pid, resume = ?resume, "claude started");
        if resume.is_some() && std::mem::take(&mut self.place.evicted) {
            let text = self.place.resumed_note("Claude Code");
            self.emitter
                .event(self.turn.turn_id(), EventBody::Info { text });
        }
        self.live = Process::Up(Box::new(Up {
            proc,
            applied: Applied::from(&self.settings),
            stage: Stage::Starting {
                resumed: resume.is_some(),
            },
            lifecycle: false,
            idle: None,
            _mcp_file: mcp_file,
        }));
        self.mapper = StreamMapper::default();
        Ok(())
    }

    /// Closes the live process: stdin is closed (the CLI exits by itself) and it is
    /// killed if still there after the grace period. Its tasks and approvals end with it.
    pub(super) fn close_live(&mut self, ctx: &mut Context<Self>) {
        let Process::Up(up) = std::mem::replace(&mut self.live, Process::Down) else {
            return;
        };
        let up = *up;
        tracing::debug!(session = %self.session_id, pid = up.proc.pid, "closing claude");
        if let Some(idle) = up.idle {
            ctx.cancel_future(idle);
        }
        self.closing.close(up.proc, ctx, |act| &mut act.closing);
        self.place.left();
        self.process_gone();
    }

    /// The live process is gone: its approvals and background tasks went with it.
    pub(super) fn process_gone(&mut self) {
        let turn_id = self.current_turn();
        self.plan_lookup = None;
        for (request_id, _) in self.approvals.drain() {
            self.emitter.send(
                turn_id.clone(),
                AgentItem::PermissionResolved { request_id },
            );
        }
        if self.tasks.clear() {
            self.emitter
                .send(None, AgentItem::BackgroundTasks(Vec::new()));
        }
    }

    /// The process `generation` exited (it may be one asked to close).
    pub(super) fn reap(&mut self, generation: u64) -> bool {
        self.closing.exited(generation);
        if self.up().map(|u| u.proc.generation) != Some(generation) {
            return false;
        }
        self.live = Process::Down;
        self.place.left();
        true
    }

    fn cancel_idle(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.up_mut().and_then(|u| u.idle.take()) {
            ctx.cancel_future(handle);
        }
    }

    /// Arms the idle close when nothing runs in the process.
    pub(super) fn arm_idle(&mut self, ctx: &mut Context<Self>) {
        self.cancel_idle(ctx);
        if !self.turn.is_idle() || !self.tasks.is_empty() {
            return;
        }
        // Idle: the fleet may close it to make room before the timer does.
        self.place.busy(false);
        if let Some(pid) = self.up().map(|u| u.proc.pid) {
            if let Some(text) = self.place.over_memory(pid, "Claude Code") {
                self.emitter.event(None, EventBody::Info { text });
                self.close_live(ctx);
                return;
            }
        }
        let idle_close = self.idle_close;
        let Some(up) = self.up_mut() else {
            return;
        };
        up.idle = Some(ctx.run_later(idle_close, |act, ctx| {
            if let Some(up) = act.up_mut() {
                up.idle = None;
            }
            if act.turn.is_idle() && act.tasks.is_empty() {
                act.close_live(ctx);
            }
        }));
    }

    /// True when the live process runs with an effort or system prompt that differs
    /// from the settings (those are command-line flags only).
    fn needs_restart(&self) -> bool {
        self.up().is_some_and(|u| {
            u.applied.effort != self.settings.effort
                || u.applied.system_prompt != self.settings.system_prompt
        })
    }

    /// Brings the live process's model and permission mode in line with the settings.
    fn apply_live_settings(&mut self) {
        let Some(applied) = self.up().map(|u| u.applied.clone()) else {
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
        if let Some(up) = self.up_mut() {
            up.applied.model = wanted.model;
            up.applied.mode = wanted.mode;
        }
    }

    /// Writes our user message for the turn in flight; a failed write means the
    /// process is dying, and its exit ends the turn.
    pub(super) fn send_user_turn(&mut self) {
        let uuid = new_uuid();
        let Some((text, images)) = self
            .turn
            .get()
            .map(|t| (t.data.text.clone(), t.data.images.clone()))
        else {
            return;
        };
        let mut encoded = Vec::with_capacity(images.len());
        for img in &images {
            match img.base64() {
                Ok(data) => encoded.push((img.mime_type.clone(), data)),
                Err(e) => {
                    let error = format!("image {} could not be read: {e}", img.upload_id);
                    self.turn.end(TurnStatus::Failed, Some(error));
                    return;
                }
            }
        }
        self.write(line(&UserTurn::with_images(&text, &encoded, &uuid)));
        if let Some(turn) = self.turn.get_mut() {
            turn.data.uuid = uuid;
        }
    }

    fn start_turn(
        &mut self,
        turn_id: TurnId,
        text: String,
        images: Vec<ImageInput>,
        settings: TurnSettings,
        ctx: &mut Context<Self>,
    ) {
        self.cancel_idle(ctx);
        // The session never starts a turn while one runs; if it somehow did, the slot
        // ends the old one.
        self.turn.begin(
            turn_id,
            ClaudeTurn {
                text,
                images,
                retried_fresh: false,
                uuid: String::new(),
                unreachable: None,
            },
        );
        self.settings = settings;
        if self.needs_restart() {
            self.close_live(ctx);
        }
        if self.up().is_some() {
            self.place.busy(true);
            self.apply_live_settings();
            self.send_user_turn();
        } else {
            self.start_process(ctx);
        }
    }

    fn interrupt(&mut self, turn_id: &str) {
        if self.turn.is(turn_id) {
            // A start waiting for a place in the fleet leaves the line.
            self.place.withdraw();
        }
        self.stop_turn(turn_id, Stop::Interrupt);
    }

    /// Stops turn `turn_id` for `reason` through the CLI's own interrupt; without a
    /// process it ends at once.
    pub(super) fn stop_turn(&mut self, turn_id: &str, reason: Stop) {
        if !self.turn.is(turn_id) {
            return;
        }
        match self.turn.stop(reason) {
            Some(Phase::Starting | Phase::Live) => {}
            _ => return, // already being stopped
        }
        if self.control(OutboundRequest::Interrupt {}).is_none() {
            // No process to ask: the turn is over now (failed, if it was given up).
            self.turn.end(TurnStatus::Interrupted, None);
        }
    }

    /// Claude Code retries an API it cannot reach for minutes; give it
    /// [`unreachable_limit`], then stop the turn and end it `failed`.
    pub(super) fn arm_unreachable_guard(&mut self, error: String, ctx: &mut Context<Self>) {
        let limit = unreachable_limit();
        let Some(turn) = self.turn.get_mut().filter(|t| t.data.unreachable.is_none()) else {
            return;
        };
        let turn_id = turn.id.clone();
        turn.data.unreachable = Some(ctx.run_later(limit, move |act, _| {
            if let Some(turn) = act.turn.get_mut().filter(|t| t.id == turn_id) {
                turn.data.unreachable = None;
            }
            let cause = if error.is_empty() {
                "no answer"
            } else {
                error.as_str()
            };
            let reason = format!(
                "the API could not be reached for {} s ({cause})",
                limit.as_secs_f32()
            );
            act.stop_turn(&turn_id, Stop::Fail(reason));
        }));
    }

    /// The model answered: whatever was retried got through.
    pub(super) fn disarm_unreachable_guard(&mut self, ctx: &mut Context<Self>) {
        if let Some(guard) = self.turn.get_mut().and_then(|t| t.data.unreachable.take()) {
            ctx.cancel_future(guard);
        }
    }

    fn configure(&mut self, settings: TurnSettings, ctx: &mut Context<Self>) {
        self.settings = settings;
        if self.turn.is_idle() && self.tasks.is_empty() && self.needs_restart() {
            self.close_live(ctx);
        } else {
            self.apply_live_settings();
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
                images,
                settings,
                ..
            } => self.start_turn(turn_id, text, images, settings, ctx),
            AdapterCommand::Interrupt { turn_id } => self.interrupt(&turn_id),
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
                remember,
                permission_mode,
            } => self.answer_permission(
                &request_id,
                allow,
                updated_input,
                message,
                remember,
                permission_mode,
            ),
            AdapterCommand::Rewind {
                drop_turns,
                keep_turns,
                done,
            } => {
                let _ = done.send(self.rewind(drop_turns, keep_turns, ctx));
            }
            AdapterCommand::Fork { drop_turns, done } => {
                let _ = done.send(self.fork_point(drop_turns));
            }
            AdapterCommand::Configure { settings } => self.configure(settings, ctx),
        }
    }
}

impl Handler<StdoutLine> for ClaudeAgent {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: StdoutLine, ctx: &mut Context<Self>) -> Self::Result {
        if self.up().map(|u| u.proc.generation) != Some(msg.generation) {
            return Box::pin(async {});
        }
        self.on_line(&msg.line, ctx);
        // The reader waits for this before the next line: a fast stream cannot outrun
        // the session's fan-out.
        match self.emitter.take_due() {
            Some(wait) => Box::pin(async move {
                wait.wait().await;
            }),
            None => Box::pin(async {}),
        }
    }
}

impl Handler<Evict> for ClaudeAgent {
    type Result = ();

    /// The fleet needs room: an idle process (no turn, no background task) is closed
    /// (its session is resumed at the next turn); one busy again by now is kept.
    fn handle(&mut self, msg: Evict, ctx: &mut Context<Self>) {
        if !self.place.is(msg.seat) {
            return; // that process is going already
        }
        if self.up().is_some() && self.turn.is_idle() && self.tasks.is_empty() {
            self.place.evicted = true;
            self.close_live(ctx);
        } else {
            self.place.kept();
        }
    }
}

impl Handler<Exited> for ClaudeAgent {
    type Result = ();

    fn handle(&mut self, msg: Exited, ctx: &mut Context<Self>) {
        self.on_exit(msg, ctx);
    }
}
