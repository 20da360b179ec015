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
use tokio::sync::oneshot;

use super::mapping::{self, TurnMapper};
use super::transport::{self, Exited, Incoming, LiveProcess};
use super::wire::{
    line, AgentCapabilities, CancelParams, ClientCapabilities, Frame, HttpHeader, Implementation,
    InitializeParams, InitializeResult, McpServer, Mode, NewSessionParams, OpenSessionParams,
    OutNotification, OutRequest, OutResponse, PermissionAnswer, PermissionOption,
    PermissionOutcome, PromptParams, PromptResult, RequestPermissionParams, RpcError,
    SessionNotification, SessionOpened, SetModeParams, TextBlock, METHOD_NOT_FOUND,
    PROTOCOL_VERSION,
};
use super::{AcpHub, AcpVendor};
use crate::adapter::core::{Approvals, Asked, Emitter, Phase, Stop, TurnSlot};
use crate::adapter::messages::{AdapterCommand, AgentItem, TurnSettings};
use crate::adapter::{AdapterContext, McpAccess};

/// A process asked to close is killed if it is still there after this long.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// JSON-RPC "invalid params": the answer to a request tandem cannot read.
const INVALID_PARAMS: i64 = -32602;

/// How the agent's session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// `session/new`: a new conversation.
    New,
    /// `session/load`: the agent replays the conversation (the replay is not shown).
    Load,
    /// `session/resume`: the agent reopens it without replaying.
    Resume,
}

impl Open {
    fn method(self) -> &'static str {
        match self {
            Open::New => "session/new",
            Open::Load => "session/load",
            Open::Resume => "session/resume",
        }
    }
}

/// Where a live process is in its start.
#[derive(Debug)]
enum Stage {
    /// `initialize` sent, not answered.
    Initializing,
    /// The session is being opened.
    Opening {
        /// How.
        how: Open,
        /// What `initialize` said the agent can do.
        caps: AgentCapabilities,
    },
    /// The session is open: turns can be prompted.
    Ready {
        /// The agent's session id.
        session: String,
        /// The modes it offers (empty: it has none).
        modes: Vec<Mode>,
        /// The mode in force, as far as tandem knows.
        mode: String,
        /// The instruction text last sent (the Driver's pair instruction), so it is
        /// sent again only when it changes.
        instructions: Option<String>,
    },
}

/// The agent process, if there is one.
#[derive(Debug)]
enum Link {
    /// No process; the next turn starts one.
    Down,
    /// A process, in one stage of its start.
    Up {
        /// The process.
        process: LiveProcess,
        /// Its stage.
        stage: Stage,
    },
}

/// A request of ours waiting for its answer.
#[derive(Debug)]
enum Pending {
    /// `initialize`.
    Initialize,
    /// `session/new`, `session/load` or `session/resume`.
    Open(Open),
    /// `session/set_mode` to this mode.
    SetMode(String),
    /// `session/prompt` of this turn.
    Prompt(String),
}

/// What the adapter keeps about the turn in the slot.
#[derive(Debug, Default)]
struct TurnData {
    /// The user text, until it is prompted (the session may still be opening).
    text: Option<String>,
    /// The turn's updates → events.
    mapper: TurnMapper,
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
    session_id: String,
    /// The configured agent.
    vendor: AcpVendor,
    /// The session's working directory (absolute).
    cwd: PathBuf,
    /// The agent tools endpoint, passed in `mcpServers` when the agent takes HTTP.
    mcp: Option<McpAccess>,
    /// Reports to the session and paces.
    emitter: Emitter,
    /// Shared with every ACP adapter: pids and the shutdown signal.
    hub: AcpHub,
    /// Settings as the session last gave them.
    settings: TurnSettings,
    /// The agent's session id, once known: reopened after a restart or idle close.
    vendor_session_id: Option<String>,
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
    /// Processes asked to close, with their kill switches.
    closing: Vec<(u64, Option<oneshot::Sender<()>>)>,
    /// Closes the process after it has been idle for the configured time.
    idle: Option<SpawnHandle>,
}

impl AcpAgent {
    /// An adapter for the session `ctx` describes, running `vendor`.
    pub fn new(ctx: AdapterContext, vendor: AcpVendor, hub: AcpHub) -> Self {
        let emitter = ctx.emitter();
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
            link: Link::Down,
            generation: 0,
            next_id: 0,
            pending: HashMap::new(),
            closing: Vec::new(),
            idle: None,
        }
    }

    fn emit_events(&mut self, turn_id: &str, events: Vec<EventBody>) {
        for body in events {
            self.emitter.event(Some(turn_id.to_string()), body);
        }
    }

    /// Ends the turn in the slot (if any): what its mapper still holds is written
    /// first, pending requests are withdrawn, the usage goes before the slot's one
    /// `TurnEnded` (which an interrupt turns into `interrupted`).
    fn finish_turn(&mut self, status: TurnStatus, error: Option<String>, usage: Option<Value>) {
        let Some(turn) = self.slot.get_mut() else {
            return;
        };
        let id = turn.id.clone();
        let tail = turn.data.mapper.finish();
        let usage = turn.data.mapper.usage(usage);
        self.emit_events(&id, tail);
        self.withdraw_approvals(Some(&id));
        if let Some(usage) = usage {
            self.emitter.send(Some(id), AgentItem::Usage(usage));
        }
        self.slot.end(status, error);
    }

    /// Answers every pending permission request `cancelled` and tells the session.
    fn withdraw_approvals(&mut self, turn_id: Option<&str>) {
        for (request_id, approval) in self.approvals.drain() {
            self.respond(
                approval.rpc_id,
                PermissionAnswer {
                    outcome: PermissionOutcome::Cancelled,
                },
            );
            self.emitter.send(
                turn_id.map(str::to_string),
                AgentItem::PermissionResolved { request_id },
            );
        }
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

    /// Tandem's `/mcp` as this session, for an agent that connects to HTTP MCP servers.
    fn mcp_servers(&self, caps: &AgentCapabilities) -> Vec<McpServer> {
        match &self.mcp {
            Some(mcp) if caps.mcp_capabilities.http => vec![McpServer {
                kind: "http",
                name: "tandem",
                url: mcp.url.clone(),
                headers: vec![HttpHeader {
                    name: "Authorization",
                    value: format!("Bearer {}", mcp.token),
                }],
            }],
            _ => Vec::new(),
        }
    }

    /// Starts a process and sends `initialize`; bounded by the configured start time.
    fn spawn(&mut self, ctx: &mut Context<Self>) -> std::io::Result<()> {
        self.generation += 1;
        let process = transport::spawn(
            &self.vendor.process,
            &self.cwd,
            self.generation,
            &self.hub,
            ctx.address().downgrade(),
        )?;
        tracing::debug!(session = %self.session_id, vendor = %self.vendor.id, pid = process.pid, "acp agent started");
        self.link = Link::Up {
            process,
            stage: Stage::Initializing,
        };
        self.pending.clear();
        self.request(
            "initialize",
            InitializeParams {
                protocol_version: PROTOCOL_VERSION,
                client_capabilities: ClientCapabilities::default(),
                client_info: Implementation {
                    name: "tandem".into(),
                    title: Some("tandem".into()),
                    version: Some(env!("CARGO_PKG_VERSION").into()),
                },
            },
            Pending::Initialize,
        );
        self.arm_startup_limit(ctx, "initialize");
        Ok(())
    }

    /// Fails the start if the phase it is in now has not moved on within the limit.
    fn arm_startup_limit(&mut self, ctx: &mut Context<Self>, step: &'static str) {
        let generation = self.generation;
        let opening = !matches!(
            self.link,
            Link::Up {
                stage: Stage::Initializing,
                ..
            }
        );
        let limit = self.vendor.startup_timeout;
        ctx.run_later(limit, move |act, ctx| {
            let stuck = act.generation == generation
                && match &act.link {
                    Link::Up { stage, .. } => match stage {
                        Stage::Initializing => !opening,
                        Stage::Opening { .. } => opening,
                        Stage::Ready { .. } => false,
                    },
                    Link::Down => false,
                };
            if stuck {
                let error = format!(
                    "{} did not answer `{step}` within {} s",
                    act.name(),
                    limit.as_secs_f32()
                );
                act.fail_start(error, ctx);
            }
        });
    }

    /// The start failed: the process goes, and a turn waiting for it fails with `error`.
    fn fail_start(&mut self, error: String, ctx: &mut Context<Self>) {
        tracing::warn!(session = %self.session_id, vendor = %self.vendor.id, error = %error, "acp agent did not start");
        self.kill_live();
        self.finish_turn(TurnStatus::Failed, Some(error), None);
        self.arm_idle(ctx);
    }

    /// Kills the live process at once (it is broken).
    fn kill_live(&mut self) {
        if let Link::Up { process, .. } = std::mem::replace(&mut self.link, Link::Down) {
            if let Some(kill) = process.close() {
                let _ = kill.send(());
            }
        }
        self.pending.clear();
    }

    /// Closes the live process: stdin is closed (the agent exits by itself) and it is
    /// killed if still there after [`CLOSE_GRACE`].
    fn close_live(&mut self, ctx: &mut Context<Self>) {
        let Link::Up { process, .. } = std::mem::replace(&mut self.link, Link::Down) else {
            return;
        };
        tracing::debug!(session = %self.session_id, pid = process.pid, "closing idle acp agent");
        let generation = process.generation;
        self.closing.push((generation, process.close()));
        self.pending.clear();
        ctx.run_later(CLOSE_GRACE, move |act, _| {
            if let Some(pos) = act.closing.iter().position(|(g, _)| *g == generation) {
                if let (_, Some(kill)) = act.closing.remove(pos) {
                    let _ = kill.send(());
                }
            }
        });
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
        self.idle = Some(ctx.run_later(self.vendor.idle_close, |act, ctx| {
            act.idle = None;
            if act.slot.is_idle() {
                act.close_live(ctx);
            }
        }));
    }

    fn start_turn(
        &mut self,
        turn_id: String,
        text: String,
        settings: TurnSettings,
        ctx: &mut Context<Self>,
    ) {
        self.cancel_idle(ctx);
        self.settings = settings;
        let data = TurnData {
            text: Some(text),
            mapper: TurnMapper::default(),
        };
        // The session never starts a turn while one runs; if it somehow did, the slot
        // has ended the old one, and its requests go with it.
        if let Some(old) = self.slot.begin(turn_id, data) {
            self.withdraw_approvals(Some(&old.id));
        }
        if matches!(self.link, Link::Down) {
            if let Err(e) = self.spawn(ctx) {
                let error = format!(
                    "cannot start {} ({}): {e}",
                    self.name(),
                    self.vendor.process.bin.display()
                );
                self.finish_turn(TurnStatus::Failed, Some(error), None);
                return;
            }
        }
        self.prompt_if_ready();
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
        let turn_id = turn.id.clone();
        self.apply_mode();
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
            prompt.push(TextBlock::new(preface));
        }
        prompt.push(TextBlock::new(&text));
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

    fn interrupt(&mut self, turn_id: String) {
        if !self.slot.is(&turn_id) {
            return;
        }
        match self.slot.stop(Stop::Interrupt) {
            Some(Phase::Starting) => {
                // Nothing was prompted yet: the turn is over now.
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

    fn answer_permission(
        &mut self,
        request_id: String,
        allow: bool,
        remember: bool,
        permission_mode: Option<PermissionMode>,
    ) {
        let Some(approval) = self.approvals.answer(&request_id, allow && remember) else {
            tracing::debug!(session = %self.session_id, request = %request_id, "answer to a request that is no longer pending");
            return;
        };
        let outcome = mapping::answer(&approval.options, allow, remember);
        self.respond(approval.rpc_id, PermissionAnswer { outcome });
        if let Some(mode) = permission_mode.filter(|_| allow) {
            self.settings.permission_mode = mode;
            self.apply_mode();
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
                    self.on_update(params);
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
            Pending::Open(how) => self.on_opened(how, outcome, ctx),
            Pending::SetMode(mode) => {
                if let Err(e) = outcome {
                    tracing::warn!(session = %self.session_id, mode = %mode, error = %e, "the agent refused a mode change");
                }
            }
            Pending::Prompt(turn_id) => {
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
                    Err(e) => (
                        TurnStatus::Failed,
                        Some(format!("{} failed the turn: {e}", self.name())),
                        None,
                    ),
                };
                self.finish_turn(status, error, usage);
                self.arm_idle(ctx);
            }
        }
    }

    fn on_initialized(&mut self, outcome: Result<Value, RpcError>, ctx: &mut Context<Self>) {
        let result = match outcome.map(serde_json::from_value::<InitializeResult>) {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => {
                let error = format!("{} answered `initialize` unreadably: {e}", self.name());
                return self.fail_start(error, ctx);
            }
            Err(e) => {
                let error = format!("{} refused `initialize`: {e}", self.name());
                return self.fail_start(error, ctx);
            }
        };
        if result.protocol_version != PROTOCOL_VERSION {
            let error = format!(
                "{} speaks ACP version {}; tandem speaks {PROTOCOL_VERSION}",
                self.name(),
                result.protocol_version
            );
            return self.fail_start(error, ctx);
        }
        let caps = result.agent_capabilities;
        let how = match &self.vendor_session_id {
            None => Open::New,
            Some(_) if caps.session_capabilities.resume.is_some() => Open::Resume,
            Some(_) if caps.load_session => Open::Load,
            Some(old) => {
                let text = format!(
                    "{} cannot reopen its session {old}; this turn starts a new conversation.",
                    self.name()
                );
                self.note(text);
                self.vendor_session_id = None;
                Open::New
            }
        };
        self.open(how, caps, ctx);
    }

    /// An `info` event in the current turn (or outside turns).
    fn note(&mut self, text: String) {
        let turn_id = self.slot.turn_id();
        self.emitter.event(turn_id, EventBody::Info { text });
    }

    fn open(&mut self, how: Open, caps: AgentCapabilities, ctx: &mut Context<Self>) {
        let servers = self.mcp_servers(&caps);
        let cwd = self.cwd.display().to_string();
        if let Link::Up { stage, .. } = &mut self.link {
            *stage = Stage::Opening { how, caps };
        }
        let purpose = Pending::Open(how);
        match (how, self.vendor_session_id.clone()) {
            (Open::New, _) | (_, None) => self.request(
                Open::New.method(),
                NewSessionParams {
                    cwd: &cwd,
                    mcp_servers: &servers,
                },
                Pending::Open(Open::New),
            ),
            (_, Some(id)) => self.request(
                how.method(),
                OpenSessionParams {
                    session_id: &id,
                    cwd: &cwd,
                    mcp_servers: &servers,
                },
                purpose,
            ),
        };
        self.arm_startup_limit(ctx, how.method());
    }

    fn on_opened(&mut self, how: Open, outcome: Result<Value, RpcError>, ctx: &mut Context<Self>) {
        let caps = match &self.link {
            Link::Up {
                stage: Stage::Opening { caps, .. },
                ..
            } => caps.clone(),
            _ => return,
        };
        let opened = match outcome.map(serde_json::from_value::<SessionOpened>) {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => {
                let error = format!(
                    "{} answered `{}` unreadably: {e}",
                    self.name(),
                    how.method()
                );
                return self.fail_start(error, ctx);
            }
            Err(e) if how != Open::New => {
                // The agent lost the conversation: carry on in a new one rather than
                // failing every turn from now on.
                let old = self.vendor_session_id.take().unwrap_or_default();
                let text = format!(
                    "{} could not reopen its session {old} ({e}); this turn starts a new conversation.",
                    self.name()
                );
                self.note(text);
                return self.open(Open::New, caps, ctx);
            }
            Err(e) => {
                let error = format!("{} refused `session/new`: {e}", self.name());
                return self.fail_start(error, ctx);
            }
        };
        let session = match (how, opened.session_id, self.vendor_session_id.clone()) {
            (Open::New, Some(id), _) => id,
            (Open::New, None, _) => {
                let error = format!("{} opened a session without an id", self.name());
                return self.fail_start(error, ctx);
            }
            (_, _, Some(id)) => id,
            (_, Some(id), None) => id,
            (_, None, None) => return self.fail_start("no session to reopen".into(), ctx),
        };
        if self.vendor_session_id.as_deref() != Some(session.as_str()) {
            self.vendor_session_id = Some(session.clone());
            self.emitter
                .send(None, AgentItem::VendorSessionId(session.clone()));
        }
        let (modes, mode) = opened
            .modes
            .map(|m| (m.available_modes, m.current_mode_id))
            .unwrap_or_default();
        if let Link::Up { stage, .. } = &mut self.link {
            *stage = Stage::Ready {
                session,
                modes,
                mode,
                instructions: None,
            };
        }
        if self.slot.is_idle() {
            self.apply_mode();
            self.arm_idle(ctx);
        }
        self.prompt_if_ready();
    }

    fn on_update(&mut self, params: Value) {
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
        if loading {
            // `session/load` replays the conversation: it is in our history already.
            return;
        }
        let note = match serde_json::from_value::<SessionNotification>(params) {
            Ok(note) => note,
            Err(e) => {
                tracing::warn!(session = %self.session_id, error = %e, "unreadable session/update skipped");
                return;
            }
        };
        if self.slot.phase().is_none_or(|p| *p == Phase::Starting) {
            // Between turns (command lists, ...), or before our prompt went out.
            return;
        }
        let Some(turn) = self.slot.get_mut() else {
            return;
        };
        let events = turn.data.mapper.update(note.update);
        let turn_id = turn.id.clone();
        self.emit_events(&turn_id, events);
    }

    fn on_permission(&mut self, rpc_id: Value, params: Value) {
        let request = match serde_json::from_value::<RequestPermissionParams>(params) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(session = %self.session_id, error = %e, "unreadable permission request refused");
                return self.refuse(rpc_id, INVALID_PARAMS, "unreadable permission request");
            }
        };
        let live = self.slot.phase() == Some(&Phase::Live);
        let Some(turn) = self.slot.get_mut().filter(|_| live) else {
            // No turn to ask in (or it is being stopped): nobody could answer.
            return self.respond(
                rpc_id,
                PermissionAnswer {
                    outcome: PermissionOutcome::Cancelled,
                },
            );
        };
        let turn_id = turn.id.clone();
        let (events, call) = turn.data.mapper.announce(request.tool_call);
        self.emit_events(&turn_id, events);
        let tool_name = mapping::tool_name(&call);
        let input = mapping::tool_input(&call);
        let choices = mapping::choices(&request.options);
        let approval = AcpApproval {
            rpc_id,
            options: request.options,
        };
        match self
            .approvals
            .ask(self.settings.permission_mode, &tool_name, approval)
        {
            Asked::Allowed(approval) => {
                let outcome = mapping::answer(&approval.options, true, false);
                self.respond(approval.rpc_id, PermissionAnswer { outcome });
            }
            Asked::Pending(request_id) => {
                self.emitter.send(
                    Some(turn_id),
                    AgentItem::PermissionRequest {
                        request_id,
                        tool_name,
                        input,
                        permission_kind: PermissionKind::Tool,
                        choices,
                    },
                );
            }
        }
    }

    fn on_exit(&mut self, exit: Exited, ctx: &mut Context<Self>) {
        self.closing.retain(|(g, _)| *g != exit.generation);
        let current =
            matches!(&self.link, Link::Up { process, .. } if process.generation == exit.generation);
        if !current {
            return;
        }
        self.link = Link::Down;
        self.pending.clear();
        tracing::debug!(session = %self.session_id, status = %exit.status, "acp agent exited");
        if self.slot.is_idle() {
            // Its requests went with it.
            self.withdraw_approvals(None);
            return;
        }
        // After an interrupt the slot reports this as `interrupted`.
        let mut error = format!("{} exited during the turn ({})", self.name(), exit.status);
        if !exit.stderr_tail.trim().is_empty() {
            error.push_str(": ");
            error.push_str(exit.stderr_tail.trim());
        }
        self.finish_turn(TurnStatus::Failed, Some(error), None);
        self.arm_idle(ctx);
    }
}

impl Actor for AcpAgent {
    type Context = Context<Self>;
}

impl Handler<AdapterCommand> for AcpAgent {
    type Result = ();

    fn handle(&mut self, msg: AdapterCommand, ctx: &mut Context<Self>) {
        match msg {
            AdapterCommand::StartTurn {
                turn_id,
                text,
                settings,
                ..
            } => self.start_turn(turn_id, text, settings, ctx),
            AdapterCommand::Interrupt { turn_id } => {
                self.interrupt(turn_id);
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
            AdapterCommand::Configure { settings } => {
                self.settings = settings;
                self.apply_mode();
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
