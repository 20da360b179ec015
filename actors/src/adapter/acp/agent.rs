//! [`AcpAgent`]: the adapter actor for one session of an ACP agent.
//!
//! It starts the agent on the first turn, does `initialize` and opens the agent's
//! session (`session/new`, or `session/resume` / `session/load` once the agent's
//! session id is known), then runs each turn as one `session/prompt`. The process is
//! kept between turns and closed after an idle time; the next turn reopens the
//! session in a new process the same way a restart does.
//!
//! It is built on the adapter core: the [`Emitter`] reports and paces, the
//! [`TurnSlot`] holds the turn (`Starting` while the session is being opened and the
//! prompt not yet sent, `Live` once prompted, `Stopping` after an interrupt) and is the
//! only producer of its `TurnEnded`, and [`Approvals`] holds the permission requests
//! (bypass and remembered rules answer by themselves). The process is one more enum,
//! [`Link`]: none, or a process in one [`Stage`] of its start.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use serde::Serialize;
use serde_json::Value;
use tandem_protocol::{EventBody, PermissionKind, PermissionMode, TurnStatus};

use super::mapping::{self, TurnMapper};
use super::models::{self, ModelSwitch};
use super::transport::{self, Incoming};
use super::wire::{
    line, AgentCapabilities, CancelParams, ClientCapabilities, Frame, HttpHeader, ImageBlock,
    Implementation, InitializeParams, InitializeResult, ListSessionsParams, McpServer, Mode,
    NewSessionParams, OpenSessionParams, OutNotification, OutRequest, OutResponse,
    PermissionAnswer, PermissionOption, PermissionOutcome, PromptBlock, PromptParams, PromptResult,
    RequestPermissionParams, RpcError, SessionNotification, SessionOpened, SessionPage,
    SessionUpdate, SetConfigOptionParams, SetModeParams, SetModelParams, TextBlock,
    METHOD_NOT_FOUND, PROTOCOL_VERSION,
};
use super::AcpVendor;
use crate::adapter::clamp_effort;
use crate::adapter::core::{Approvals, Asked, Emitter, Phase, Stop, TurnSlot};
use crate::adapter::fleet::{Admission, Evict, Place, Seat};
use crate::adapter::messages::{
    AdapterCommand, AgentItem, CannotBranch, ForkOnOpen, ImageInput, TurnSettings, VendorFork,
};
use crate::adapter::supervisor::{Closing, Exited, LiveProcess, ProcessHub};
use crate::adapter::{AdapterContext, McpAccess};
use crate::ids::{SessionId, TurnId};

/// How long a turn the agent answered waits for the results of tool calls still open.
/// An agent may send a call's last `tool_call_update` just after its `session/prompt`
/// answer (codex-acp does, now and then, for a command it ran); the turn ends when
/// the last one arrives, or after this, without them. (2 s was not always enough for
/// codex-acp on a loaded machine: its last update came later in 3 of 10 runs.)
const SETTLE_GRACE: Duration = Duration::from_secs(5);
/// JSON-RPC "invalid params": the answer to a request tandem cannot read.
const INVALID_PARAMS: i64 = -32602;

mod approvals;
mod opening;

use opening::{EffortChoice, Link, Open, Pending, Stage};

/// What the adapter keeps about the turn in the slot.
#[derive(Debug, Default)]
struct TurnData {
    /// The user text, until it is prompted (the session may still be opening).
    text: Option<String>,
    /// The turn's images, prompted after the text.
    images: Vec<ImageInput>,
    /// The turn's updates → events.
    mapper: TurnMapper,
    /// The agent's answer to the prompt, held while tool calls are still open (see
    /// [`SETTLE_GRACE`]).
    answered: Option<(TurnStatus, Option<String>, Option<super::wire::PromptUsage>)>,
}

/// A permission request the agent is waiting on (the core's approval handle).
#[derive(Debug)]
struct AcpApproval {
    /// The agent's JSON-RPC id, echoed in our answer.
    rpc_id: Value,
    /// The agent's options; the answer is mapped onto them by kind.
    options: Vec<PermissionOption>,
}

/// The adapter actor for one session of an ACP agent.
pub struct AcpAgent {
    /// Our session id; only used to tag log lines.
    session_id: SessionId,
    /// The configured agent.
    vendor: AcpVendor,
    /// The session's working directory (absolute).
    cwd: PathBuf,
    /// The agent tools endpoint, passed in `mcpServers` when the agent takes HTTP.
    mcp: Option<McpAccess>,
    /// Reports to the session and paces.
    emitter: Emitter,
    /// Shared with every ACP adapter: pids and the shutdown signal.
    hub: ProcessHub,
    /// Settings as the session last gave them.
    settings: TurnSettings,
    /// The agent's session id, once known: reopened after a restart or idle close.
    vendor_session_id: Option<String>,
    /// A fork's adapter: `vendor_session_id` is the source's, opened with
    /// `session/fork` (never reopened as this session's own).
    fork_on_open: bool,
    /// The process.
    link: Link,
    /// Bumped per process; frames and exits of an older process are ignored.
    generation: u64,
    /// Our next request id.
    next_id: u64,
    /// Our requests waiting for answers, by id.
    pending: HashMap<u64, Pending>,
    /// The turn in flight.
    slot: TurnSlot<TurnData>,
    /// Permission requests waiting for a person, and the remembered rules.
    approvals: Approvals<AcpApproval>,
    /// Processes asked to close, killed if still there after the grace period.
    closing: Closing,
    /// Closes the process after it has been idle for the configured time.
    idle: Option<SpawnHandle>,
    /// The agent offers `session/close`: it is sent before its process is closed.
    closes: bool,
    /// The session's cumulative cost in USD (ACP's `usage_update` `cost`) when the last
    /// turn ended, from which a turn's own cost is taken; `None` while not known (a
    /// session this process reopened, whose earlier cost it never saw).
    cost_base: Option<f64>,
    /// Its process's seat in the server's fleet.
    place: Place,
    /// Bumped per start step (`initialize`, each `session/list` page, each open): only
    /// the newest step's time limit applies.
    start_step: u64,
}

impl AcpAgent {
    /// Where a fork without the newest `drop_turns` turns opens: this agent session,
    /// forked by the fork's adapter with `session/fork`. That copies a whole session,
    /// so only a fork at the last turn can use it (else the fork gets a transcript).
    fn fork_point(&self, drop_turns: u64) -> Result<VendorFork, CannotBranch> {
        if drop_turns > 0 {
            return Err(
                "ACP's session/fork copies a whole session; a fork before its last turn \
                 gets a transcript"
                    .into(),
            );
        }
        let Some(session) = self.vendor_session_id.clone() else {
            return Err("the agent has no session yet".into());
        };
        Ok(VendorFork {
            vendor_session_id: session,
            fork_on_open: Some(ForkOnOpen::Whole),
        })
    }

    /// An adapter for the session `ctx` describes, running `vendor`.
    pub fn new(ctx: AdapterContext, vendor: AcpVendor, hub: ProcessHub) -> Self {
        let emitter = ctx.emitter();
        let place = Place::new(ctx.fleet.clone(), &ctx.session_id, &vendor.id);
        AcpAgent {
            slot: TurnSlot::new(&emitter),
            approvals: Approvals::new(ctx.remembered),
            emitter,
            session_id: ctx.session_id,
            vendor,
            cwd: ctx.cwd,
            mcp: ctx.mcp,
            hub,
            settings: ctx.settings,
            vendor_session_id: ctx.vendor_session_id,
            fork_on_open: matches!(ctx.fork_on_open, Some(ForkOnOpen::Whole)),
            link: Link::Down,
            generation: 0,
            next_id: 0,
            pending: HashMap::new(),
            closing: Closing::default(),
            idle: None,
            closes: false,
            cost_base: None,
            place,
            start_step: 0,
        }
    }

    fn emit_events(&mut self, turn_id: &str, events: Vec<EventBody>) {
        for body in events {
            self.emitter.event(Some(turn_id.into()), body);
        }
    }

    /// Ends the turn in the slot (if any): what its mapper still holds is written
    /// first, pending requests are withdrawn, the usage goes before the slot's one
    /// `TurnEnded` (which an interrupt turns into `interrupted`).
    fn finish_turn(
        &mut self,
        status: TurnStatus,
        error: Option<String>,
        usage: Option<super::wire::PromptUsage>,
    ) {
        let Some(turn) = self.slot.get_mut() else {
            return;
        };
        let id = turn.id.clone();
        let tail = turn.data.mapper.finish();
        // ACP's cost is the session's so far: the turn's is what it grew by.
        let mut cost = None;
        if let Some(now) = turn.data.mapper.cost_usd() {
            cost = self.cost_base.map(|base| (now - base).max(0.0));
            self.cost_base = Some(now);
        }
        let usage = turn.data.mapper.usage(usage, cost);
        self.emit_events(&id, tail);
        self.withdraw_approvals(Some(&id));
        if let Some(usage) = usage {
            self.emitter.send(Some(id), AgentItem::Usage(usage));
        }
        self.slot.end(status, error);
    }

    fn name(&self) -> &str {
        &self.vendor.display_name
    }

    fn write(&self, bytes: Vec<u8>) -> bool {
        match &self.link {
            Link::Up { process, .. } => process.write(bytes),
            Link::Down => false,
        }
    }

    fn request<P: Serialize>(&mut self, method: &str, params: P, purpose: Pending) -> bool {
        self.next_id += 1;
        let id = self.next_id;
        let sent = self.write(line(&OutRequest {
            jsonrpc: "2.0",
            id,
            method,
            params,
        }));
        if sent {
            self.pending.insert(id, purpose);
        }
        sent
    }

    fn respond<R: Serialize>(&self, id: Value, result: R) {
        self.write(line(&OutResponse {
            jsonrpc: "2.0",
            id,
            result: Some(result),
            error: None,
        }));
    }

    fn refuse(&self, id: Value, code: i64, message: &str) {
        self.write(line(&OutResponse::<()> {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(RpcError {
                code,
                message: message.into(),
                data: None,
            }),
        }));
    }

    /// Kills the live process at once (it is broken).
    fn kill_live(&mut self) {
        if let Link::Up { process, .. } = std::mem::replace(&mut self.link, Link::Down) {
            process.kill();
        }
        self.place.left();
        self.pending.clear();
    }

    /// Closes the live process: stdin is closed (the agent exits by itself) and it is
    /// killed if still there after the grace period.
    fn close_live(&mut self, ctx: &mut Context<Self>) {
        // An agent that offers it is told first that the session is done with (it is
        // resumed, not reopened from scratch, by a later process).
        if let (
            Link::Up {
                stage: Stage::Ready { session, .. },
                ..
            },
            true,
        ) = (&self.link, self.closes)
        {
            let params = serde_json::json!({"sessionId": session});
            self.next_id += 1;
            self.write(line(&OutRequest {
                jsonrpc: "2.0",
                id: self.next_id,
                method: "session/close",
                params,
            }));
        }
        let Link::Up { process, .. } = std::mem::replace(&mut self.link, Link::Down) else {
            return;
        };
        tracing::debug!(session = %self.session_id, pid = process.pid, "closing idle acp agent");
        self.closing.close(process, ctx, |act| &mut act.closing);
        self.place.left();
        self.pending.clear();
    }

    fn cancel_idle(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.idle.take() {
            ctx.cancel_future(handle);
        }
    }

    /// Arms the idle close when a process lives and no turn runs.
    fn arm_idle(&mut self, ctx: &mut Context<Self>) {
        self.cancel_idle(ctx);
        if matches!(self.link, Link::Down) || !self.slot.is_idle() {
            return;
        }
        // Idle: the fleet may close it to make room before the timer does.
        self.place.busy(false);
        if let Link::Up { process, .. } = &self.link {
            if let Some(text) = self
                .place
                .over_memory(process.pid, &self.vendor.display_name)
            {
                self.note(text);
                self.close_live(ctx);
                return;
            }
        }
        self.idle = Some(ctx.run_later(self.vendor.idle_close, |act, ctx| {
            act.idle = None;
            if act.slot.is_idle() {
                act.close_live(ctx);
            }
        }));
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
        self.settings = settings;
        let data = TurnData {
            text: Some(text),
            images,
            mapper: TurnMapper::default(),
            answered: None,
        };
        // The session never starts a turn while one runs; if it somehow did, the slot
        // has ended the old one, and its requests go with it.
        if let Some(old) = self.slot.begin(turn_id, data) {
            self.withdraw_approvals(Some(&old.id));
        }
        self.place.busy(true);
        if matches!(self.link, Link::Down) {
            return self.start_process(ctx);
        }
        self.prompt_if_ready();
    }

    /// Starts a process for the waiting turn once the fleet gives it a seat (at
    /// once, or when another process has made room).
    fn start_process(&mut self, ctx: &mut Context<Self>) {
        if self.place.waiting {
            return; // the seat asked for earlier serves this turn
        }
        match self.place.take(ctx.address().recipient()) {
            Admission::Now(seat) => self.spawn_seated(seat, ctx),
            Admission::Wait(granted) => {
                self.place.waiting = true;
                let text = self.place.waiting_note(self.name());
                self.note(text);
                ctx.spawn(fut::wrap_future::<_, Self>(granted).map(|seat, act, ctx| {
                    act.place.waiting = false;
                    let Ok(seat) = seat else {
                        return;
                    };
                    // A turn interrupted meanwhile needs no process (the seat goes
                    // back as it is dropped).
                    if matches!(act.link, Link::Down) && act.slot.phase() == Some(&Phase::Starting)
                    {
                        act.spawn_seated(seat, ctx);
                    }
                }));
            }
        }
    }

    /// Spawns in `seat`; a process that cannot start fails the turn.
    fn spawn_seated(&mut self, seat: Seat, ctx: &mut Context<Self>) {
        if let Err(e) = self.spawn(seat, ctx) {
            self.place.left();
            let error = format!(
                "cannot start {} ({}): {e}",
                self.name(),
                self.vendor.process.bin.display()
            );
            self.finish_turn(TurnStatus::Failed, Some(error), None);
            self.arm_idle(ctx);
        }
    }

    /// Sends the waiting turn's prompt once the session is open.
    fn prompt_if_ready(&mut self) {
        let Link::Up {
            stage: Stage::Ready { session, .. },
            ..
        } = &self.link
        else {
            return;
        };
        let session = session.clone();
        if self.slot.phase() != Some(&Phase::Starting) {
            return;
        }
        let Some(turn) = self.slot.get_mut() else {
            return;
        };
        let Some(text) = turn.data.text.take() else {
            return;
        };
        let images = std::mem::take(&mut turn.data.images);
        let turn_id = turn.id.clone();
        let mut image_blocks = Vec::with_capacity(images.len());
        for img in &images {
            match img.base64() {
                Ok(data) => image_blocks.push(PromptBlock::Image(ImageBlock {
                    kind: "image",
                    mime_type: img.mime_type.clone(),
                    data,
                })),
                Err(e) => {
                    let error = format!("image {} could not be read: {e}", img.upload_id);
                    self.finish_turn(TurnStatus::Failed, Some(error), None);
                    return;
                }
            }
        }
        self.apply_mode();
        self.apply_model();
        self.apply_effort();
        // ACP has no system prompt: the instruction (the Driver's pair instruction)
        // goes before the user text, once per process and again when it changes.
        let instructions = self
            .settings
            .system_prompt
            .clone()
            .filter(|p| !p.is_empty());
        let mut preface = None;
        if let Link::Up {
            stage: Stage::Ready {
                instructions: sent, ..
            },
            ..
        } = &mut self.link
        {
            if instructions.is_some() && *sent != instructions {
                preface = instructions
                    .as_ref()
                    .map(|i| format!("<instructions>\n{i}\n</instructions>"));
                *sent = instructions;
            }
        }
        let mut prompt = Vec::new();
        if let Some(preface) = preface.as_deref() {
            prompt.push(PromptBlock::Text(TextBlock::new(preface)));
        }
        prompt.push(PromptBlock::Text(TextBlock::new(&text)));
        prompt.extend(image_blocks);
        let sent = self.request(
            "session/prompt",
            PromptParams {
                session_id: &session,
                prompt,
            },
            Pending::Prompt(turn_id),
        );
        self.slot.go_live();
        if !sent {
            // The process is going: its exit ends the turn.
            tracing::debug!(session = %self.session_id, "prompt not written; the agent is exiting");
        }
    }

    /// Switches the agent's mode to the one matching the permission mode, where the
    /// agent offers one.
    fn apply_mode(&mut self) {
        let wanted = match &self.link {
            Link::Up {
                stage: Stage::Ready { modes, mode, .. },
                ..
            } => match mapping::mode_for(self.settings.permission_mode, modes) {
                Some(w) if w != *mode => w,
                _ => return,
            },
            _ => return,
        };
        let Link::Up {
            stage: Stage::Ready { session, mode, .. },
            ..
        } = &mut self.link
        else {
            return;
        };
        *mode = wanted.clone();
        let session = session.clone();
        self.request(
            "session/set_mode",
            SetModeParams {
                session_id: &session,
                mode_id: &wanted,
            },
            Pending::SetMode(wanted.clone()),
        );
    }

    /// Switches the agent's model to the session's, where the agent offers a choice
    /// and the session names a model other than the one in force. A model the agent
    /// does not offer is said once (an `info` event) and the agent's stays.
    fn apply_model(&mut self) {
        let wanted = self.settings.model.trim().to_string();
        let name = self.vendor.display_name.clone();
        let Link::Up {
            stage:
                Stage::Ready {
                    session,
                    models: Some(offered),
                    model,
                    unoffered,
                    ..
                },
            ..
        } = &mut self.link
        else {
            return;
        };
        if wanted.is_empty() || model.as_deref() == Some(wanted.as_str()) {
            return;
        }
        if !offered.offers(&wanted) {
            if unoffered.as_deref() == Some(wanted.as_str()) {
                return;
            }
            *unoffered = Some(wanted.clone());
            let text = format!(
                "{name} does not offer the model `{wanted}` (it offers {}); it keeps {}.",
                offered.models.join(", "),
                model.as_deref().unwrap_or("its default")
            );
            return self.note(text);
        }
        *model = Some(wanted.clone());
        let session = session.clone();
        match offered.switch.clone() {
            ModelSwitch::SetModel => self.request(
                "session/set_model",
                SetModelParams {
                    session_id: &session,
                    model_id: &wanted,
                },
                Pending::SetModel(wanted.clone()),
            ),
            ModelSwitch::ConfigOption(option) => self.request(
                "session/set_config_option",
                SetConfigOptionParams {
                    session_id: &session,
                    config_id: &option,
                    value: &wanted,
                },
                Pending::SetModel(wanted.clone()),
            ),
        };
    }

    /// Sets the agent's `thought_level` option to the session's effort (the nearest
    /// level it offers), where it offers one and another level is in force. Sent after
    /// a model change, which an agent may answer with other levels.
    fn apply_effort(&mut self) {
        let wanted = self.settings.effort.trim().to_string();
        let name = self.vendor.display_name.clone();
        let Link::Up {
            stage:
                Stage::Ready {
                    efforts: Some(choice),
                    ..
                },
            ..
        } = &mut self.link
        else {
            return;
        };
        if wanted.is_empty() || choice.current.as_deref() == Some(wanted.as_str()) {
            return;
        }
        let level = clamp_effort(&wanted, &choice.offered.levels).ok();
        if level.as_deref() != Some(wanted.as_str()) && choice.unoffered.as_deref() != Some(&wanted)
        {
            // Another model than the probe's may offer other levels: said once.
            choice.unoffered = Some(wanted.clone());
            let text = format!(
                "{name} does not offer the effort `{wanted}` (it offers {}); it uses {}.",
                choice.offered.levels.join(", "),
                level
                    .as_deref()
                    .or(choice.current.as_deref())
                    .unwrap_or("its default")
            );
            self.note(text);
        }
        self.apply_effort_level(level);
    }

    /// Takes the effort levels from an answer to `session/set_config_option`, which
    /// holds the session's options as they are now (an answer without them changes
    /// nothing).
    fn reread_efforts(&mut self, answer: &Value) {
        let Some(options) = answer.get("configOptions").and_then(Value::as_array) else {
            return;
        };
        let Link::Up {
            stage: Stage::Ready { efforts, .. },
            ..
        } = &mut self.link
        else {
            return;
        };
        *efforts = models::offered_efforts(options).map(EffortChoice::boxed);
    }

    /// Sends `level` as the session's `thought_level` unless it is in force already.
    fn apply_effort_level(&mut self, level: Option<String>) {
        let Link::Up {
            stage:
                Stage::Ready {
                    session,
                    efforts: Some(choice),
                    ..
                },
            ..
        } = &mut self.link
        else {
            return;
        };
        let Some(level) = level.filter(|l| choice.current.as_deref() != Some(l.as_str())) else {
            return;
        };
        choice.current = Some(level.clone());
        let (session, option) = (session.clone(), choice.offered.option.clone());
        self.request(
            "session/set_config_option",
            SetConfigOptionParams {
                session_id: &session,
                config_id: &option,
                value: &level,
            },
            Pending::SetEffort(level.clone()),
        );
    }

    fn interrupt(&mut self, turn_id: TurnId, ctx: &mut Context<Self>) {
        if !self.slot.is(&turn_id) {
            return;
        }
        if self.slot.get().is_some_and(|t| t.data.answered.is_some()) {
            // The agent already answered; only late tool results were awaited.
            self.settle(&turn_id, ctx);
            return;
        }
        match self.slot.stop(Stop::Interrupt) {
            Some(Phase::Starting) => {
                // Nothing was prompted yet: the turn is over now, and a start waiting
                // for a place in the fleet leaves the line.
                self.place.withdraw();
                self.finish_turn(TurnStatus::Interrupted, None, None);
            }
            Some(Phase::Live) => {
                let session = match &self.link {
                    Link::Up {
                        stage: Stage::Ready { session, .. },
                        ..
                    } => session.clone(),
                    _ => String::new(),
                };
                let sent = self.write(line(&OutNotification {
                    jsonrpc: "2.0",
                    method: "session/cancel",
                    params: CancelParams {
                        session_id: &session,
                    },
                }));
                self.withdraw_approvals(Some(&turn_id));
                if !sent {
                    // No process to ask.
                    self.finish_turn(TurnStatus::Interrupted, None, None);
                }
            }
            Some(Phase::Stopping(_)) | None => {}
        }
    }

    fn on_frame(&mut self, frame: Frame, ctx: &mut Context<Self>) {
        match frame {
            Frame::Response { id, outcome } => match self.pending.remove(&id) {
                Some(purpose) => self.on_response(purpose, outcome, ctx),
                None => {
                    tracing::debug!(session = %self.session_id, id, "answer to no request of ours")
                }
            },
            Frame::Notification { method, params } => {
                if method == "session/update" {
                    self.on_update(params, ctx);
                }
            }
            Frame::Request { id, method, params } => {
                if method == "session/request_permission" {
                    self.on_permission(id, params);
                } else {
                    self.refuse(id, METHOD_NOT_FOUND, "not served by tandem");
                }
            }
        }
    }

    fn on_response(
        &mut self,
        purpose: Pending,
        outcome: Result<Value, RpcError>,
        ctx: &mut Context<Self>,
    ) {
        match purpose {
            Pending::Initialize => self.on_initialized(outcome, ctx),
            Pending::List(how, page) => self.on_listed(how, page, outcome, ctx),
            Pending::Open(how) => self.on_opened(how, outcome, ctx),
            Pending::SetMode(mode) => {
                if let Err(e) = outcome {
                    tracing::warn!(session = %self.session_id, mode = %mode, error = %e, "the agent refused a mode change");
                }
            }
            Pending::SetModel(model) => {
                if let Err(e) = outcome {
                    tracing::warn!(session = %self.session_id, model = %model, error = %e, "the agent refused a model change");
                    if let Link::Up {
                        stage: Stage::Ready { model: current, .. },
                        ..
                    } = &mut self.link
                    {
                        *current = None;
                    }
                    let text = format!("{} refused the model `{model}`: {e}", self.name());
                    self.note(text);
                } else if let Ok(answer) = outcome {
                    // Another model may offer other effort levels.
                    self.reread_efforts(&answer);
                }
            }
            Pending::SetEffort(level) => match outcome {
                Err(e) => {
                    tracing::warn!(session = %self.session_id, effort = %level, error = %e, "the agent refused an effort change");
                    if let Link::Up {
                        stage:
                            Stage::Ready {
                                efforts: Some(choice),
                                ..
                            },
                        ..
                    } = &mut self.link
                    {
                        choice.current = None;
                    }
                    let text = format!("{} refused the effort `{level}`: {e}", self.name());
                    self.note(text);
                }
                Ok(answer) => self.reread_efforts(&answer),
            },
            Pending::Prompt(turn_id) => self.on_prompted(turn_id, outcome, ctx),
        }
    }

    /// The agent answered turn `turn_id`'s prompt: the turn ends as it says, once its
    /// open tool calls settled (for at most [`SETTLE_GRACE`]) if it completed.
    fn on_prompted(
        &mut self,
        turn_id: TurnId,
        outcome: Result<Value, RpcError>,
        ctx: &mut Context<Self>,
    ) {
        if !self.slot.is(&turn_id) {
            return;
        }
        // An error after an interrupt counts as interrupted (the slot says so).
        let (status, error, usage) = match outcome {
            Ok(value) => match serde_json::from_value::<PromptResult>(value) {
                Ok(result) => {
                    let (status, error) = mapping::turn_outcome(&result.stop_reason);
                    (status, error, result.usage)
                }
                Err(e) => (
                    TurnStatus::Failed,
                    Some(format!(
                        "{} answered the prompt unreadably: {e}",
                        self.name()
                    )),
                    None,
                ),
            },
            Err(e) => {
                let error = format!("{} failed the turn: {e}", self.name());
                // ACP has no code for a vendor limit: the agents' words say it.
                let status = match mapping::is_limit_error(&error) {
                    true => TurnStatus::Limited,
                    false => TurnStatus::Failed,
                };
                (status, Some(error), None)
            }
        };
        if status == TurnStatus::Completed {
            if let Some(turn) = self.slot.get_mut() {
                if turn.data.mapper.calls_open() {
                    turn.data.answered = Some((status, error, usage));
                    ctx.run_later(SETTLE_GRACE, move |act, ctx| act.settle(&turn_id, ctx));
                    return;
                }
            }
        }
        self.finish_turn(status, error, usage);
        self.arm_idle(ctx);
    }

    /// Ends the answered turn `turn_id` if it is still held for open tool calls.
    fn settle(&mut self, turn_id: &str, ctx: &mut Context<Self>) {
        if !self.slot.is(turn_id) {
            return;
        }
        let Some(turn) = self.slot.get_mut() else {
            return;
        };
        if let Some((status, error, usage)) = turn.data.answered.take() {
            self.finish_turn(status, error, usage);
            self.arm_idle(ctx);
        }
    }

    fn on_update(&mut self, params: Value, ctx: &mut Context<Self>) {
        let loading = matches!(
            self.link,
            Link::Up {
                stage: Stage::Opening {
                    how: Open::Load,
                    ..
                },
                ..
            }
        );
        let note = match serde_json::from_value::<SessionNotification>(params) {
            Ok(note) => note,
            Err(e) => {
                tracing::warn!(session = %self.session_id, error = %e, "unreadable session/update skipped");
                return;
            }
        };
        if let SessionUpdate::AvailableCommandsUpdate { available_commands } = note.update {
            // In or out of a turn: the session records a change.
            let commands = available_commands
                .into_iter()
                .filter(|c| !c.name.is_empty())
                .map(|c| tandem_protocol::session::VendorCommand {
                    input_hint: c
                        .input
                        .as_ref()
                        .and_then(|i| i["hint"].as_str())
                        .map(str::to_string),
                    name: c.name,
                    description: c.description,
                })
                .collect();
            self.emitter.send(None, AgentItem::Commands(commands));
            return;
        }
        if loading {
            // `session/load` replays the conversation: it is in our history already.
            return;
        }
        if self.slot.phase().is_none_or(|p| *p == Phase::Starting) {
            // Between turns (command lists, ...), or before our prompt went out.
            return;
        }
        let Some(turn) = self.slot.get_mut() else {
            return;
        };
        let events = turn.data.mapper.update(note.update);
        let turn_id = turn.id.clone();
        let settled = turn.data.answered.is_some() && !turn.data.mapper.calls_open();
        self.emit_events(&turn_id, events);
        if settled {
            self.settle(&turn_id, ctx);
        }
    }

    fn on_exit(&mut self, exit: Exited, ctx: &mut Context<Self>) {
        self.closing.exited(exit.generation);
        let current =
            matches!(&self.link, Link::Up { process, .. } if process.generation == exit.generation);
        if !current {
            return;
        }
        self.link = Link::Down;
        self.place.left();
        self.pending.clear();
        tracing::debug!(session = %self.session_id, status = %exit.status, "acp agent exited");
        if self.slot.is_idle() {
            // Its requests went with it.
            self.withdraw_approvals(None);
            return;
        }
        // After an interrupt the slot reports this as `interrupted`.
        let error = exit.turn_error(self.name());
        self.finish_turn(TurnStatus::Failed, Some(error), None);
        self.arm_idle(ctx);
    }
}

impl Actor for AcpAgent {
    type Context = Context<Self>;
}

impl Handler<Evict> for AcpAgent {
    type Result = ();

    /// The fleet needs room: an idle process is closed (its session is resumed at the
    /// next turn); one busy again by now is kept.
    fn handle(&mut self, msg: Evict, ctx: &mut Context<Self>) {
        if !self.place.is(msg.seat) {
            return; // that process is going already
        }
        if matches!(self.link, Link::Up { .. }) && self.slot.is_idle() {
            self.place.evicted = true;
            self.cancel_idle(ctx);
            self.close_live(ctx);
        } else {
            self.place.kept();
        }
    }
}

impl Handler<AdapterCommand> for AcpAgent {
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
            AdapterCommand::Interrupt { turn_id } => {
                self.interrupt(turn_id, ctx);
                self.arm_idle(ctx);
            }
            AdapterCommand::StopTask { .. } => {}
            AdapterCommand::PermissionResponse {
                request_id,
                allow,
                remember,
                permission_mode,
                ..
            } => self.answer_permission(request_id, allow, remember, permission_mode),
            AdapterCommand::Rewind { done, .. } => {
                // Not offered (no `rewind` capability): the session refuses first.
                let _ = done.send(Err("this agent cannot rewind".into()));
            }
            AdapterCommand::Fork { drop_turns, done } => {
                let _ = done.send(self.fork_point(drop_turns));
            }
            AdapterCommand::Configure { settings } => {
                self.settings = settings;
                self.apply_mode();
                self.apply_model();
                self.apply_effort();
            }
        }
    }
}

impl Handler<Incoming> for AcpAgent {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: Incoming, ctx: &mut Context<Self>) -> Self::Result {
        let current =
            matches!(&self.link, Link::Up { process, .. } if process.generation == msg.generation);
        if !current {
            return Box::pin(async {});
        }
        self.on_frame(msg.frame, ctx);
        match self.emitter.take_due() {
            // The reader waits for this before the next frame: a fast agent cannot
            // outrun the session's fan-out.
            Some(wait) => Box::pin(async move {
                let _ = wait.wait().await;
            }),
            None => Box::pin(async {}),
        }
    }
}

impl Handler<Exited> for AcpAgent {
    type Result = ();

    fn handle(&mut self, msg: Exited, ctx: &mut Context<Self>) {
        self.on_exit(msg, ctx);
    }
}
