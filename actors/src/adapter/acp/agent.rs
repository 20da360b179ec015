//! [`AcpAgent`]: the adapter actor for one session of an ACP agent.
//!
//! It starts the agent on the first turn, does `initialize` and opens the agent's
//! session (`session/new`, or `session/resume` / `session/load` once the agent's
//! session id is known), then runs each turn as one `session/prompt`. The process is
//! kept between turns and closed after an idle time; the next turn reopens the
//! session in a new process the same way a restart does.
//!
//! Its state is two enums: [`Link`] (no process, or a process in one [`Phase`] of its
//! start) and [`Slot`] (no turn, a turn waiting for the session to open, or a turn
//! prompting). Every turn the session starts ends with exactly one `TurnEnded`,
//! whichever of the prompt's answer, an interrupt, a failed start or the process's exit
//! comes first.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use serde::Serialize;
use serde_json::Value;
use tandem_protocol::{EventBody, PermissionMode, RememberScope, TurnStatus};
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
use crate::adapter::messages::{AdapterCommand, AgentItem, AgentOutput, Pace, TurnSettings};
use crate::adapter::{AdapterContext, McpAccess};
use crate::clock::random_id;

/// The adapter waits at the session's flow gate every this many events.
const AWAIT_EVERY: u64 = 32;
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
enum Phase {
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
    /// A process, in one phase of its start.
    Up {
        /// The process.
        process: LiveProcess,
        /// Its phase.
        phase: Phase,
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

/// The turn the session started.
#[derive(Debug)]
struct Turn {
    /// The session's turn id; every output of the turn carries it.
    id: String,
    /// `session/cancel` was sent: a `cancelled` stop or an error now means
    /// "interrupted".
    cancelling: bool,
    /// The turn's updates → events.
    mapper: TurnMapper,
}

/// The turn slot.
#[derive(Debug)]
enum Slot {
    /// No turn.
    Idle,
    /// A turn waits for the process and session to be ready.
    Waiting {
        /// The turn.
        turn: Turn,
        /// The user text to prompt with.
        text: String,
    },
    /// `session/prompt` was sent for this turn.
    Prompting(Turn),
}

impl Slot {
    fn turn_id(&self) -> Option<&str> {
        match self {
            Slot::Idle => None,
            Slot::Waiting { turn, .. } | Slot::Prompting(turn) => Some(&turn.id),
        }
    }
}

/// A permission request the agent is waiting on.
#[derive(Debug)]
struct Approval {
    /// Our id (`perm_…`), the one clients answer.
    id: String,
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
    /// The session actor.
    out: Recipient<AgentOutput>,
    /// Awaited every [`AWAIT_EVERY`] events.
    pace: Recipient<Pace>,
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
    /// The turn.
    slot: Slot,
    /// Permission requests waiting for a person.
    approvals: Vec<Approval>,
    /// Processes asked to close, with their kill switches.
    closing: Vec<(u64, Option<oneshot::Sender<()>>)>,
    /// Closes the process after it has been idle for the configured time.
    idle: Option<SpawnHandle>,
    /// Events sent so far (for pacing).
    emitted: u64,
}

impl AcpAgent {
    /// An adapter for the session `ctx` describes, running `vendor`.
    pub fn new(ctx: AdapterContext, vendor: AcpVendor, hub: AcpHub) -> Self {
        AcpAgent {
            session_id: ctx.session_id,
            vendor,
            cwd: ctx.cwd,
            mcp: ctx.mcp,
            out: ctx.out,
            pace: ctx.pace,
            hub,
            settings: ctx.settings,
            vendor_session_id: ctx.vendor_session_id,
            link: Link::Down,
            generation: 0,
            next_id: 0,
            pending: HashMap::new(),
            slot: Slot::Idle,
            approvals: Vec::new(),
            closing: Vec::new(),
            idle: None,
            emitted: 0,
        }
    }

    fn emit(&mut self, turn_id: Option<String>, item: AgentItem) {
        if matches!(item, AgentItem::Event(_)) {
            self.emitted += 1;
        }
        self.out.do_send(AgentOutput { turn_id, item });
    }

    fn emit_events(&mut self, turn_id: &str, events: Vec<EventBody>) {
        for body in events {
            self.emit(Some(turn_id.to_string()), AgentItem::Event(body));
        }
    }

    /// Ends the turn in the slot (if any) with `status`: what its mapper still holds
    /// is written first, then the one `TurnEnded`.
    fn end_turn(&mut self, status: TurnStatus, error: Option<String>, usage: Option<Value>) {
        let (mut turn, _) = match std::mem::replace(&mut self.slot, Slot::Idle) {
            Slot::Idle => return,
            Slot::Waiting { turn, text } => (turn, Some(text)),
            Slot::Prompting(turn) => (turn, None),
        };
        let tail = turn.mapper.finish();
        self.emit_events(&turn.id, tail);
        self.withdraw_approvals(Some(&turn.id));
        if let Some(usage) = turn.mapper.usage(usage) {
            self.emit(Some(turn.id.clone()), AgentItem::Usage(usage));
        }
        self.emit(Some(turn.id), AgentItem::TurnEnded { status, error });
    }

    /// Answers every pending permission request `cancelled` and tells the session.
    fn withdraw_approvals(&mut self, turn_id: Option<&str>) {
        for approval in std::mem::take(&mut self.approvals) {
            self.respond(
                approval.rpc_id,
                PermissionAnswer {
                    outcome: PermissionOutcome::Cancelled,
                },
            );
            self.emit(
                turn_id.map(str::to_string),
                AgentItem::PermissionResolved {
                    request_id: approval.id,
                },
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
            phase: Phase::Initializing,
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
                phase: Phase::Initializing,
                ..
            }
        );
        let limit = self.vendor.startup_timeout;
        ctx.run_later(limit, move |act, ctx| {
            let stuck = act.generation == generation
                && match &act.link {
                    Link::Up { phase, .. } => match phase {
                        Phase::Initializing => !opening,
                        Phase::Opening { .. } => opening,
                        Phase::Ready { .. } => false,
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
        self.end_turn(TurnStatus::Failed, Some(error), None);
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
        if matches!(self.link, Link::Down) || !matches!(self.slot, Slot::Idle) {
            return;
        }
        self.idle = Some(ctx.run_later(self.vendor.idle_close, |act, ctx| {
            act.idle = None;
            if matches!(act.slot, Slot::Idle) {
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
        // The session never starts a turn while one runs; if it somehow did, the old
        // one still ends exactly once.
        self.end_turn(
            TurnStatus::Interrupted,
            Some("superseded by a new turn".into()),
            None,
        );
        self.settings = settings;
        self.slot = Slot::Waiting {
            turn: Turn {
                id: turn_id,
                cancelling: false,
                mapper: TurnMapper::default(),
            },
            text,
        };
        if matches!(self.link, Link::Down) {
            if let Err(e) = self.spawn(ctx) {
                let error = format!(
                    "cannot start {} ({}): {e}",
                    self.name(),
                    self.vendor.process.bin.display()
                );
                self.end_turn(TurnStatus::Failed, Some(error), None);
                return;
            }
        }
        self.prompt_if_ready();
    }

    /// Sends the waiting turn's prompt once the session is open.
    fn prompt_if_ready(&mut self) {
        let Link::Up {
            phase: Phase::Ready { session, .. },
            ..
        } = &self.link
        else {
            return;
        };
        let session = session.clone();
        let (turn, text) = match std::mem::replace(&mut self.slot, Slot::Idle) {
            Slot::Waiting { turn, text } => (turn, text),
            other => {
                self.slot = other;
                return;
            }
        };
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
            phase: Phase::Ready {
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
        let turn_id = turn.id.clone();
        let sent = self.request(
            "session/prompt",
            PromptParams {
                session_id: &session,
                prompt,
            },
            Pending::Prompt(turn_id),
        );
        self.slot = Slot::Prompting(turn);
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
                phase: Phase::Ready { modes, mode, .. },
                ..
            } => match mapping::mode_for(self.settings.permission_mode, modes) {
                Some(w) if w != *mode => w,
                _ => return,
            },
            _ => return,
        };
        let Link::Up {
            phase: Phase::Ready { session, mode, .. },
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
        if self.slot.turn_id() != Some(turn_id.as_str()) {
            return;
        }
        match &mut self.slot {
            Slot::Waiting { .. } => {
                // Nothing was prompted yet: the turn is over now.
                self.end_turn(TurnStatus::Interrupted, None, None);
            }
            Slot::Prompting(turn) if !turn.cancelling => {
                turn.cancelling = true;
                let session = match &self.link {
                    Link::Up {
                        phase: Phase::Ready { session, .. },
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
                let id = turn_id.clone();
                self.withdraw_approvals(Some(&id));
                if !sent {
                    // No process to ask.
                    self.end_turn(TurnStatus::Interrupted, None, None);
                }
            }
            _ => {}
        }
    }

    fn answer_permission(
        &mut self,
        request_id: String,
        allow: bool,
        remember: Option<RememberScope>,
    ) {
        let Some(pos) = self.approvals.iter().position(|a| a.id == request_id) else {
            tracing::debug!(session = %self.session_id, request = %request_id, "answer to a request that is no longer pending");
            return;
        };
        let approval = self.approvals.remove(pos);
        let outcome = mapping::answer(&approval.options, allow, remember);
        self.respond(approval.rpc_id, PermissionAnswer { outcome });
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
                if self.slot.turn_id() != Some(turn_id.as_str()) {
                    return;
                }
                let cancelling = matches!(&self.slot, Slot::Prompting(t) if t.cancelling);
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
                    Err(_) if cancelling => (TurnStatus::Interrupted, None, None),
                    Err(e) => (
                        TurnStatus::Failed,
                        Some(format!("{} failed the turn: {e}", self.name())),
                        None,
                    ),
                };
                self.end_turn(status, error, usage);
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
        let turn_id = self.slot.turn_id().map(str::to_string);
        self.emit(turn_id, AgentItem::Event(EventBody::Info { text }));
    }

    fn open(&mut self, how: Open, caps: AgentCapabilities, ctx: &mut Context<Self>) {
        let servers = self.mcp_servers(&caps);
        let cwd = self.cwd.display().to_string();
        if let Link::Up { phase, .. } = &mut self.link {
            *phase = Phase::Opening { how, caps };
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
                phase: Phase::Opening { caps, .. },
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
            self.emit(None, AgentItem::VendorSessionId(session.clone()));
        }
        let (modes, mode) = opened
            .modes
            .map(|m| (m.available_modes, m.current_mode_id))
            .unwrap_or_default();
        if let Link::Up { phase, .. } = &mut self.link {
            *phase = Phase::Ready {
                session,
                modes,
                mode,
                instructions: None,
            };
        }
        if matches!(self.slot, Slot::Idle) {
            self.apply_mode();
            self.arm_idle(ctx);
        }
        self.prompt_if_ready();
    }

    fn on_update(&mut self, params: Value) {
        let loading = matches!(
            self.link,
            Link::Up {
                phase: Phase::Opening {
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
        let Slot::Prompting(turn) = &mut self.slot else {
            return;
        };
        let events = turn.mapper.update(note.update);
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
        let Slot::Prompting(turn) = &mut self.slot else {
            // No turn to ask in: nobody could answer.
            return self.respond(
                rpc_id,
                PermissionAnswer {
                    outcome: PermissionOutcome::Cancelled,
                },
            );
        };
        if turn.cancelling {
            return self.respond(
                rpc_id,
                PermissionAnswer {
                    outcome: PermissionOutcome::Cancelled,
                },
            );
        }
        let turn_id = turn.id.clone();
        let (events, call) = turn.mapper.announce(request.tool_call);
        self.emit_events(&turn_id, events);
        let tool_name = mapping::tool_name(&call);
        let input = mapping::tool_input(&call);
        if self.settings.permission_mode == PermissionMode::BypassPermissions {
            let outcome = mapping::answer(&request.options, true, None);
            return self.respond(rpc_id, PermissionAnswer { outcome });
        }
        let id = random_id("perm_", 12);
        self.approvals.push(Approval {
            id: id.clone(),
            rpc_id,
            options: request.options.clone(),
        });
        self.emit(
            Some(turn_id),
            AgentItem::PermissionRequest {
                request_id: id,
                tool_name,
                input,
                options: mapping::choices(&request.options),
            },
        );
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
        let cancelling = matches!(&self.slot, Slot::Prompting(t) if t.cancelling);
        if matches!(self.slot, Slot::Idle) {
            return;
        }
        if cancelling {
            self.end_turn(TurnStatus::Interrupted, None, None);
        } else {
            let mut error = format!("{} exited during the turn ({})", self.name(), exit.status);
            if !exit.stderr_tail.trim().is_empty() {
                error.push_str(": ");
                error.push_str(exit.stderr_tail.trim());
            }
            self.end_turn(TurnStatus::Failed, Some(error), None);
        }
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
                ..
            } => self.answer_permission(request_id, allow, remember),
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
        let before = self.emitted / AWAIT_EVERY;
        self.on_frame(msg.frame, ctx);
        if self.emitted / AWAIT_EVERY == before {
            return Box::pin(async {});
        }
        // The reader waits for this before the next frame: a fast agent cannot outrun
        // the session's fan-out.
        let pace = self.pace.clone();
        Box::pin(async move {
            let _ = pace.send(Pace).await;
        })
    }
}

impl Handler<Exited> for AcpAgent {
    type Result = ();

    fn handle(&mut self, msg: Exited, ctx: &mut Context<Self>) {
        self.on_exit(msg, ctx);
    }
}
