//! The adapter actor of one Codex session: its Codex thread on the owner's shared
//! app-server.
//!
//! It starts the thread on the first turn (or resumes it, by the `vendorSessionId`,
//! whenever the thread is not loaded in the live process: after a server restart or a
//! crash), receives the thread's notifications and requests from the connection, maps
//! them onto history events ([`super::mapping`]), and turns approvals into permission
//! requests. After each turn it lists the thread's background terminals and reports
//! the set when it changed.

use std::collections::{HashMap, HashSet, VecDeque};

use actix::prelude::*;
use serde::Serialize;
use serde_json::Value;
use tandem_protocol::{BackgroundTask, EventBody, PermissionMode, TaskType, TurnStatus};

use super::mapping::TurnMapper;
use super::rpc::{Connection, RpcError, ThreadInbound};
use super::server::{AppServer, Busy, Connect, Limits};
use super::shown;
use super::wire::{
    self, method, ApprovalDecision, ApprovalPolicy, ApprovalResponse,
    BackgroundTerminalsListParams, BackgroundTerminalsListResponse,
    BackgroundTerminalsTerminateParams, BackgroundTerminalsTerminateResponse,
    CommandApprovalParams, ElicitationAction, ElicitationParams, ElicitationResponse,
    ErrorNotification, FileChangeApprovalParams, PermissionsApprovalParams,
    PermissionsApprovalResponse, RequestId, SandboxMode, ServerRequestResolved, ThreadResponse,
    ThreadResumeParams, ThreadStartParams, TurnInterruptParams, TurnNotification, TurnStartParams,
    TurnStartResponse, UserInput,
};
use crate::adapter::messages::Pace;
use crate::adapter::messages::{AdapterCommand, AgentItem, AgentOutput, TurnSettings};
use crate::adapter::{AdapterContext, McpAccess};
use crate::clock::{now_ms, random_id};

/// Events between two waits at the session's flow gate.
const AWAIT_EVERY: u64 = 32;
/// Codex turn ids remembered after they ended, to drop their late notifications.
const KEEP_FINISHED: usize = 16;

/// Approval policy and sandbox for a permission mode.
pub fn policy(mode: PermissionMode) -> (ApprovalPolicy, SandboxMode) {
    match mode {
        // Ask before anything that is not known to be harmless.
        PermissionMode::Default => (ApprovalPolicy::Untrusted, SandboxMode::WorkspaceWrite),
        // Edits in the workspace go ahead; leaving the sandbox is asked.
        PermissionMode::AcceptEdits => (ApprovalPolicy::OnRequest, SandboxMode::WorkspaceWrite),
        // Read-only; anything more is asked.
        PermissionMode::Plan => (ApprovalPolicy::OnRequest, SandboxMode::ReadOnly),
        PermissionMode::BypassPermissions => (ApprovalPolicy::Never, SandboxMode::DangerFullAccess),
    }
}

/// The turn in flight.
struct Running {
    /// Our turn id.
    id: String,
    /// Codex's, once `turn/start` answered (or `turn/started` arrived).
    codex_id: Option<String>,
    mapper: TurnMapper,
    /// An interrupt was asked for (possibly before Codex's id was known).
    interrupt: bool,
    /// When set, the turn ends `failed` with this even if Codex says `interrupted`
    /// (the unreachable-model guard interrupted it).
    fail_with: Option<String>,
    /// The last retrying `error` Codex reported.
    retrying: Option<String>,
    /// Armed while Codex retries an unreachable model.
    guard: Option<SpawnHandle>,
    /// A shell command started in this turn (it may outlive the turn).
    ran_commands: bool,
    /// The process generation the turn runs on, once `turn/start` answered; a turn
    /// still starting handles a dying process itself.
    generation: Option<u64>,
}

/// The settings a loaded thread runs with. `turn/start` overrides are sticky ("this
/// turn and subsequent turns"), and app-server takes several milliseconds longer to
/// start a turn that carries any (measured with `bench codex`: ~4 ms even when the
/// values equal the thread's), so a turn sends only the ones that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Applied {
    /// The process the thread is loaded in (a new process resumes it afresh).
    generation: u64,
    approval_policy: ApprovalPolicy,
    sandbox: SandboxMode,
    /// `None`: the thread's default (never overridden).
    model: Option<String>,
    /// `None`: not known (the thread's default, or whatever a resumed thread had).
    effort: Option<String>,
}

/// What kind of answer an approval takes.
#[derive(Debug, Clone)]
enum ApprovalKind {
    /// `{decision}`.
    Decision,
    /// `{permissions}`: the requested profile when allowed.
    Permissions(Value),
    /// `{action}`.
    Elicitation,
}

/// Why an app-server request gets no approval prompt.
#[derive(Debug, PartialEq)]
enum Refused {
    /// Its params do not parse (JSON-RPC -32602).
    Unreadable,
    /// A method tandem does not serve (-32601).
    Unsupported,
}

/// An approval request as we show it: how to answer it, the tool it is for, and the
/// `permission_request` input.
fn approval_request(
    method_name: &str,
    params: Value,
) -> Result<(ApprovalKind, String, Value), Refused> {
    fn parse<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, Refused> {
        serde_json::from_value(params).map_err(|_| Refused::Unreadable)
    }
    Ok(match method_name {
        method::COMMAND_APPROVAL => {
            let p: CommandApprovalParams = parse(params)?;
            let input = shown::value(shown::Shell {
                command: p.command.as_deref(),
                cwd: p.cwd.as_deref(),
                reason: p.reason.as_deref(),
            });
            (ApprovalKind::Decision, "shell".to_string(), input)
        }
        method::FILE_CHANGE_APPROVAL => {
            let p: FileChangeApprovalParams = parse(params)?;
            let input = shown::value(shown::PatchApproval {
                item_id: &p.item_id,
                reason: p.reason.as_deref(),
                grant_root: p.grant_root.as_deref(),
            });
            (ApprovalKind::Decision, "apply_patch".to_string(), input)
        }
        method::PERMISSIONS_APPROVAL => {
            let p: PermissionsApprovalParams = parse(params)?;
            let input = shown::value(shown::Permissions {
                permissions: &p.permissions,
                reason: p.reason.as_deref(),
            });
            (
                ApprovalKind::Permissions(p.permissions),
                "permissions".to_string(),
                input,
            )
        }
        method::ELICITATION => {
            let p: ElicitationParams = parse(params)?;
            let meta = p.meta.unwrap_or(Value::Null);
            let name = match meta.get("tool_name").and_then(Value::as_str) {
                Some(tool) => format!("mcp__{}__{tool}", p.server_name),
                None => format!("mcp__{}", p.server_name),
            };
            let input = meta.get("tool_params").cloned().unwrap_or_else(|| {
                shown::value(shown::Elicitation {
                    message: p.message.as_deref(),
                })
            });
            (ApprovalKind::Elicitation, name, input)
        }
        _ => return Err(Refused::Unsupported),
    })
}

/// An approval app-server waits for.
struct Approval {
    request_id: String,
    rpc_id: RequestId,
    generation: u64,
    kind: ApprovalKind,
}

/// A background terminal as last reported.
#[derive(Debug, Clone)]
struct Task {
    task: BackgroundTask,
    item_id: String,
}

/// Adapter actor for one Codex session.
pub struct CodexThread {
    session_id: String,
    cwd: String,
    out: Recipient<AgentOutput>,
    pace: Recipient<Pace>,
    mcp: Option<McpAccess>,
    server: Addr<AppServer>,
    limits: Limits,
    settings: TurnSettings,
    /// Codex's thread id (our `vendorSessionId`), once started.
    thread_id: Option<String>,
    /// The connection the thread is loaded on.
    conn: Option<Connection>,
    /// The instructions the loaded thread was given.
    instructions: Option<String>,
    /// The settings the loaded thread runs with, when known.
    applied: Option<Applied>,
    turn: Option<Running>,
    finished: VecDeque<String>,
    approvals: Vec<Approval>,
    tasks: Vec<Task>,
    /// When each shell command of this session started (background task start times).
    command_starts: HashMap<String, u64>,
    emitted: u64,
    /// Notification methods this adapter does not read, logged once each.
    ignored: HashSet<String>,
    /// What the app-server actor was last told about this session needing it.
    busy: bool,
}

impl CodexThread {
    /// The adapter for the session in `ctx`, on the owner's app-server `server`.
    pub fn new(ctx: AdapterContext, server: Addr<AppServer>, limits: Limits) -> CodexThread {
        CodexThread {
            session_id: ctx.session_id,
            cwd: ctx.cwd.to_string_lossy().into_owned(),
            out: ctx.out,
            pace: ctx.pace,
            mcp: ctx.mcp,
            server,
            limits,
            settings: ctx.settings,
            thread_id: ctx.vendor_session_id,
            conn: None,
            instructions: None,
            applied: None,
            turn: None,
            finished: VecDeque::new(),
            approvals: Vec::new(),
            tasks: Vec::new(),
            command_starts: HashMap::new(),
            emitted: 0,
            ignored: HashSet::new(),
            busy: false,
        }
    }

    /// Tells the app-server actor whether this session needs the process (a turn,
    /// an approval or background work), when that changed.
    fn report_busy(&mut self) {
        let busy = self.turn.is_some() || !self.approvals.is_empty() || !self.tasks.is_empty();
        if busy != self.busy {
            self.busy = busy;
            self.server.do_send(Busy {
                session_id: self.session_id.clone(),
                busy,
            });
        }
    }

    fn live_conn(&self) -> Option<Connection> {
        self.conn.clone().filter(|c| !c.is_closed())
    }

    fn output(&self, turn_id: Option<String>, item: AgentItem) {
        self.out.do_send(AgentOutput { turn_id, item });
    }

    /// Appends an event to the current turn; every [`AWAIT_EVERY`] events the actor
    /// waits at the session's flow gate before handling more.
    fn emit(&mut self, body: EventBody, ctx: &mut Context<Self>) {
        let turn_id = self.turn.as_ref().map(|t| t.id.clone());
        self.output(turn_id, AgentItem::Event(body));
        self.emitted += 1;
        if self.emitted.is_multiple_of(AWAIT_EVERY) {
            ctx.wait(self.pace.send(Pace).into_actor(self).map(|_, _, _| ()));
        }
    }

    /// Ends the current turn exactly once.
    fn end_turn(&mut self, status: TurnStatus, error: Option<String>, ctx: &mut Context<Self>) {
        let Some(mut turn) = self.turn.take() else {
            return;
        };
        if let Some(guard) = turn.guard.take() {
            ctx.cancel_future(guard);
        }
        let (closing, usage) = turn.mapper.close();
        for body in closing {
            self.output(Some(turn.id.clone()), AgentItem::Event(body));
        }
        if let Some(usage) = usage {
            self.output(Some(turn.id.clone()), AgentItem::Usage(usage));
        }
        self.output(
            Some(turn.id.clone()),
            AgentItem::TurnEnded { status, error },
        );
        if let Some(codex_id) = turn.codex_id {
            self.remember_finished(codex_id);
        }
        // The session withdraws whatever is still pending when the turn ends.
        self.approvals.clear();
        // Only a shell command can become a background terminal: a turn that ran none
        // cannot have changed the set (finished ones report their end by themselves).
        if turn.ran_commands || !self.tasks.is_empty() {
            self.refresh_tasks(ctx);
        }
        self.report_busy();
    }

    fn remember_finished(&mut self, codex_id: String) {
        if self.finished.len() == KEEP_FINISHED {
            self.finished.pop_front();
        }
        self.finished.push_back(codex_id);
    }

    /// Per-thread config: our `tandem` MCP server with this session's token. Given per
    /// thread (not on the command line) because one process serves many sessions; the
    /// tools run without a Codex approval prompt since they are the server's own.
    fn thread_config(&self) -> Option<Value> {
        self.mcp
            .as_ref()
            .map(|m| shown::value(shown::ThreadConfig::tandem(&m.url, &m.token)))
    }

    fn model(&self) -> Option<String> {
        Some(self.settings.model.clone()).filter(|m| !m.is_empty())
    }

    /// Starts a turn: connect, load the thread if this process does not have it,
    /// register its route, then `turn/start`.
    fn begin(&mut self, turn_id: String, text: String, ctx: &mut Context<Self>) {
        let (approval_policy, sandbox) = policy(self.settings.permission_mode);
        let known = self.live_conn();
        let me = ctx.address().recipient::<ThreadInbound>();
        let timeout = self.limits.request;
        let thread_id = self.thread_id.clone();
        let instructions = self.settings.system_prompt.clone();
        let config = self.thread_config();
        let cwd = self.cwd.clone();
        let model = self.model();
        let mut input: Vec<UserInput> = Vec::new();
        // A loaded thread keeps the instructions it was given; a change (the session
        // became a Driver) goes in front of the message.
        if known.is_some() && instructions.is_some() && instructions != self.instructions {
            input.push(UserInput::Text {
                text: instructions.clone().unwrap_or_default(),
                text_elements: Vec::new(),
            });
        }
        input.push(UserInput::Text {
            text,
            text_elements: Vec::new(),
        });
        let applied = self.applied.clone();
        let plan = TurnPlan {
            server: self.server.clone(),
            me,
            timeout,
            thread_id,
            cwd,
            approval_policy,
            sandbox,
            model,
            effort: Some(self.settings.effort.clone()).filter(|e| !e.is_empty()),
            instructions,
            config,
            input,
            applied,
        };
        let work = async move {
            let reused = known.is_some();
            match plan.run(known).await {
                // The process died between turns and we had not heard yet: start a
                // fresh one (resuming the thread) once.
                Err(RpcError::Closed(why)) if reused => {
                    tracing::info!("codex app-server had exited ({why}); starting a new one");
                    plan.run(None).await
                }
                other => other,
            }
        };
        ctx.spawn(work.into_actor(self).map(move |res, act, ctx| {
            act.began(turn_id, res, ctx);
        }));
    }

    /// `turn/start` answered (or failed).
    fn began(&mut self, turn_id: String, res: Result<Started, RpcError>, ctx: &mut Context<Self>) {
        let current = self.turn.as_ref().is_some_and(|t| t.id == turn_id);
        match res {
            Ok(Started {
                conn,
                loaded,
                codex_id,
                applied,
            }) => {
                self.applied = Some(applied);
                if let Some(loaded) = loaded {
                    let fresh = self.thread_id.as_deref() != Some(loaded.thread_id.as_str());
                    self.thread_id = Some(loaded.thread_id.clone());
                    self.instructions = self.settings.system_prompt.clone();
                    if fresh {
                        self.output(None, AgentItem::VendorSessionId(loaded.thread_id));
                    }
                    if let Some(note) = loaded.note {
                        self.output(
                            Some(turn_id.clone()),
                            AgentItem::Event(EventBody::Info { text: note }),
                        );
                    }
                } else {
                    self.instructions = self.settings.system_prompt.clone();
                }
                self.conn = Some(conn);
                if self.finished.contains(&codex_id) {
                    return; // it already ended (a very fast turn)
                }
                if !current {
                    // Our turn was superseded while starting: stop Codex's.
                    self.remember_finished(codex_id.clone());
                    self.send_interrupt(codex_id, ctx);
                    return;
                }
                let generation = self.conn.as_ref().map(Connection::generation);
                let interrupt = match self.turn.as_mut() {
                    Some(turn) => {
                        turn.codex_id.get_or_insert(codex_id.clone());
                        turn.generation = generation;
                        turn.interrupt
                    }
                    None => false,
                };
                if let Some(conn) = self.conn.as_ref().filter(|c| c.is_closed()) {
                    // It died right after answering; its exit was already handled.
                    let detail = conn.stderr_tail();
                    self.conn = None;
                    self.end_turn(
                        TurnStatus::Failed,
                        Some(format!("codex app-server exited: {detail}")),
                        ctx,
                    );
                    return;
                }
                if interrupt {
                    self.send_interrupt(codex_id, ctx);
                }
            }
            Err(e) => {
                // Whether the thread took any overrides is unknown: send them all next.
                self.applied = None;
                if matches!(e, RpcError::Closed(_) | RpcError::Timeout { .. }) {
                    self.conn = None;
                }
                if current {
                    let interrupted = self.turn.as_ref().is_some_and(|t| t.interrupt);
                    if interrupted {
                        self.end_turn(TurnStatus::Interrupted, None, ctx);
                    } else {
                        self.end_turn(TurnStatus::Failed, Some(e.to_string()), ctx);
                    }
                }
            }
        }
    }

    /// Asks Codex to stop `codex_id`; if it cannot be asked, the turn ends here.
    fn send_interrupt(&mut self, codex_id: String, ctx: &mut Context<Self>) {
        let (Some(conn), Some(thread_id)) = (self.live_conn(), self.thread_id.clone()) else {
            self.end_turn(TurnStatus::Interrupted, None, ctx);
            return;
        };
        let timeout = self.limits.request;
        let params = TurnInterruptParams {
            thread_id,
            turn_id: codex_id.clone(),
        };
        let work = async move {
            conn.request_value(method::TURN_INTERRUPT, &params, timeout)
                .await
        };
        ctx.spawn(work.into_actor(self).map(move |res, act, ctx| {
            if let Err(e) = res {
                tracing::warn!(session = %act.session_id, error = %e, "turn/interrupt failed");
                let ours = act
                    .turn
                    .as_ref()
                    .is_some_and(|t| t.codex_id.as_deref() == Some(codex_id.as_str()));
                if ours {
                    let failure = act.turn.as_ref().and_then(|t| t.fail_with.clone());
                    match failure {
                        Some(f) => act.end_turn(TurnStatus::Failed, Some(f), ctx),
                        None => act.end_turn(TurnStatus::Interrupted, None, ctx),
                    }
                }
            }
        }));
    }

    /// Lists the thread's background terminals and reports the set if it changed.
    fn refresh_tasks(&mut self, ctx: &mut Context<Self>) {
        let (Some(conn), Some(thread_id)) = (self.live_conn(), self.thread_id.clone()) else {
            return;
        };
        let timeout = self.limits.request;
        let work = async move {
            let mut all = Vec::new();
            let mut cursor = None;
            loop {
                let page: BackgroundTerminalsListResponse = conn
                    .request(
                        method::TERMINALS_LIST,
                        &BackgroundTerminalsListParams {
                            thread_id: thread_id.clone(),
                            cursor: cursor.take(),
                        },
                        timeout,
                    )
                    .await?;
                all.extend(page.data);
                match page.next_cursor {
                    Some(next) if !next.is_empty() => cursor = Some(next),
                    _ => return Ok::<_, RpcError>(all),
                }
            }
        };
        ctx.spawn(work.into_actor(self).map(|res, act, _| match res {
            Ok(terminals) => {
                let tasks: Vec<Task> = terminals
                    .into_iter()
                    .map(|t| Task {
                        task: BackgroundTask {
                            task_id: t.process_id,
                            task_type: TaskType::Shell,
                            description: t.command,
                            started_at: Some(
                                act.command_starts
                                    .get(&t.item_id)
                                    .copied()
                                    .unwrap_or_else(now_ms),
                            ),
                        },
                        item_id: t.item_id,
                    })
                    .collect();
                act.set_tasks(tasks);
            }
            Err(e) => {
                tracing::debug!(session = %act.session_id, error = %e, "background terminals not listed");
            }
        }));
    }

    /// Reports the task set when its membership changed.
    fn set_tasks(&mut self, tasks: Vec<Task>) {
        let mut old: Vec<&str> = self.tasks.iter().map(|t| t.task.task_id.as_str()).collect();
        let mut new: Vec<&str> = tasks.iter().map(|t| t.task.task_id.as_str()).collect();
        old.sort_unstable();
        new.sort_unstable();
        if old == new {
            return;
        }
        let live = tasks.iter().map(|t| t.task.clone()).collect();
        self.tasks = tasks;
        self.command_starts
            .retain(|item, _| self.tasks.iter().any(|t| t.item_id == *item));
        self.output(None, AgentItem::BackgroundTasks(live));
        self.report_busy();
    }

    fn on_notification(&mut self, method_name: &str, params: Value, ctx: &mut Context<Self>) {
        if method_name == method::REQUEST_RESOLVED {
            if let Ok(r) = serde_json::from_value::<ServerRequestResolved>(params) {
                if let Some(pos) = self.approvals.iter().position(|a| a.rpc_id == r.request_id) {
                    let approval = self.approvals.remove(pos);
                    let turn_id = self.turn.as_ref().map(|t| t.id.clone());
                    self.output(
                        turn_id,
                        AgentItem::PermissionResolved {
                            request_id: approval.request_id,
                        },
                    );
                }
            }
            return;
        }
        let codex_turn = params
            .get("turnId")
            .and_then(Value::as_str)
            .or_else(|| params.pointer("/turn/id").and_then(Value::as_str))
            .map(str::to_string);
        let stale = codex_turn
            .as_ref()
            .is_some_and(|id| self.finished.contains(id));
        let belongs = match (&self.turn, &codex_turn) {
            (Some(turn), Some(id)) => {
                !stale && turn.codex_id.as_ref().is_none_or(|known| known == id)
            }
            _ => false,
        };
        if !belongs {
            // A background terminal finishing reports its item's completion late.
            if method_name == method::ITEM_COMPLETED {
                let item = params.pointer("/item/id").and_then(Value::as_str);
                if item.is_some_and(|id| self.tasks.iter().any(|t| t.item_id == id)) {
                    self.refresh_tasks(ctx);
                }
            }
            return;
        }
        match method_name {
            method::TURN_STARTED => {
                if let (Some(turn), Some(id)) = (self.turn.as_mut(), codex_turn) {
                    turn.codex_id.get_or_insert(id);
                }
            }
            method::TURN_COMPLETED => {
                let Ok(n) = serde_json::from_value::<TurnNotification>(params) else {
                    return;
                };
                if let Some(turn) = self.turn.as_mut() {
                    turn.codex_id.get_or_insert(n.turn.id.clone());
                }
                let failure = self.turn.as_ref().and_then(|t| t.fail_with.clone());
                let error = n.turn.error.as_ref().map(wire::TurnError::describe);
                let (status, error) = match (n.turn.status, failure) {
                    (_, Some(f)) => (TurnStatus::Failed, Some(f)),
                    (wire::TurnStatus::Interrupted, None) => (TurnStatus::Interrupted, error),
                    (wire::TurnStatus::Failed, None) => (
                        TurnStatus::Failed,
                        Some(error.unwrap_or_else(|| "the Codex turn failed".into())),
                    ),
                    (_, None) => (TurnStatus::Completed, None),
                };
                self.end_turn(status, error, ctx);
            }
            method::ERROR => {
                let Ok(n) = serde_json::from_value::<ErrorNotification>(params) else {
                    return;
                };
                if n.will_retry {
                    self.arm_unreachable_guard(n.error.describe(), ctx);
                }
            }
            other if !super::mapping::maps(other) => {
                if self.ignored.insert(other.to_string()) {
                    tracing::debug!(session = %self.session_id, method = other, "Codex notification ignored (logged once)");
                }
            }
            _ => {
                let Some(turn) = self.turn.as_mut() else {
                    return;
                };
                let (events, started) = turn.mapper.notification(method_name, params);
                if turn.mapper.take_progress() {
                    turn.retrying = None;
                    if let Some(guard) = turn.guard.take() {
                        ctx.cancel_future(guard);
                    }
                }
                if let Some(started) = started {
                    turn.ran_commands = true;
                    self.command_starts.insert(started.item_id, now_ms());
                }
                for body in events {
                    self.emit(body, ctx);
                }
            }
        }
    }

    /// Codex retries an unreachable model without end; give it `limits.unreachable`,
    /// then interrupt the turn and end it `failed`.
    fn arm_unreachable_guard(&mut self, error: String, ctx: &mut Context<Self>) {
        let limit = self.limits.unreachable;
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.retrying = Some(error);
        if turn.guard.is_some() {
            return;
        }
        let turn_id = turn.id.clone();
        turn.guard = Some(ctx.run_later(limit, move |act, ctx| {
            let Some(turn) = act.turn.as_mut().filter(|t| t.id == turn_id) else {
                return;
            };
            turn.guard = None;
            let reason = turn.retrying.clone().unwrap_or_default();
            turn.fail_with = Some(format!(
                "the model could not be reached for {} s: {reason}",
                limit.as_secs_f32()
            ));
            turn.interrupt = true;
            match turn.codex_id.clone() {
                Some(codex_id) => act.send_interrupt(codex_id, ctx),
                None => {
                    let failure = turn.fail_with.clone();
                    act.end_turn(TurnStatus::Failed, failure, ctx);
                }
            }
        }));
    }

    fn on_request(&mut self, generation: u64, id: RequestId, method_name: &str, params: Value) {
        let Some(conn) = self.live_conn().filter(|c| c.generation() == generation) else {
            return;
        };
        let bypass = self.settings.permission_mode == PermissionMode::BypassPermissions;
        let (kind, tool_name, input) = match approval_request(method_name, params) {
            Ok(request) => request,
            Err(Refused::Unreadable) => {
                conn.respond_error(&id, -32602, "unreadable params");
                return;
            }
            Err(Refused::Unsupported) => {
                // Dynamic tools and user-input prompts are not offered to Codex.
                let message = format!("{method_name} is not supported by tandem");
                conn.respond_error(&id, -32601, &message);
                return;
            }
        };
        let Some(turn_id) = self.turn.as_ref().map(|t| t.id.clone()) else {
            answer(&conn, &id, &kind, false);
            return;
        };
        if bypass {
            answer(&conn, &id, &kind, true);
            return;
        }
        let request_id = random_id("perm_", 12);
        self.approvals.push(Approval {
            request_id: request_id.clone(),
            rpc_id: id,
            generation,
            kind,
        });
        self.output(
            Some(turn_id),
            AgentItem::PermissionRequest {
                request_id,
                tool_name,
                input,
                options: Vec::new(),
            },
        );
    }

    fn on_exit(&mut self, generation: u64, detail: String, ctx: &mut Context<Self>) {
        if self
            .conn
            .as_ref()
            .is_none_or(|c| c.generation() != generation)
        {
            return;
        }
        self.conn = None;
        self.approvals.clear();
        // A turn still starting sees the failure in its own requests (and may retry).
        if self
            .turn
            .as_ref()
            .is_some_and(|t| t.generation == Some(generation))
        {
            self.end_turn(
                TurnStatus::Failed,
                Some(format!("codex app-server exited: {detail}")),
                ctx,
            );
        }
        // Its background terminals died with it.
        self.set_tasks(Vec::new());
    }
}

/// Everything needed to start a turn, detached from the actor (it may run twice).
struct TurnPlan {
    server: Addr<AppServer>,
    me: Recipient<ThreadInbound>,
    timeout: std::time::Duration,
    /// The thread to use or resume; `None` starts one.
    thread_id: Option<String>,
    cwd: String,
    approval_policy: ApprovalPolicy,
    sandbox: SandboxMode,
    model: Option<String>,
    effort: Option<String>,
    instructions: Option<String>,
    config: Option<Value>,
    input: Vec<UserInput>,
    /// The settings the thread runs with on the known connection, when known.
    applied: Option<Applied>,
}

/// A turn Codex accepted.
struct Started {
    /// The connection it runs on.
    conn: Connection,
    /// Set when the thread was (re)loaded for it.
    loaded: Option<Loaded>,
    /// Codex's turn id.
    codex_id: String,
    /// The settings the thread runs with from this turn on.
    applied: Applied,
}

impl TurnPlan {
    /// Connects (unless `known`, a connection the thread is loaded on), loads the
    /// thread if needed and routes it, then `turn/start`.
    async fn run(&self, known: Option<Connection>) -> Result<Started, RpcError> {
        let reuse = known.is_some() && self.thread_id.is_some();
        let conn = match known {
            Some(conn) => conn,
            None => self
                .server
                .send(Connect)
                .await
                .map_err(|e| RpcError::Closed(format!("app-server actor gone: {e}")))??,
        };
        let mut loaded = None;
        let thread = match (reuse, self.thread_id.clone()) {
            (true, Some(id)) => id,
            _ => {
                let outcome = load_thread(&conn, self).await?;
                let id = outcome.thread_id.clone();
                conn.route(&id, self.me.clone());
                loaded = Some(outcome);
                id
            }
        };
        // What the thread runs with before this turn: what loading it just set, or
        // what earlier turns on this connection left.
        let generation = conn.generation();
        let before = match &loaded {
            Some(_) => Some(Applied {
                generation,
                approval_policy: self.approval_policy,
                sandbox: self.sandbox,
                model: self.model.clone(),
                effort: None,
            }),
            None => self.applied.clone().filter(|a| a.generation == generation),
        };
        let wanted = Applied {
            generation,
            approval_policy: self.approval_policy,
            sandbox: self.sandbox,
            model: self
                .model
                .clone()
                .or_else(|| before.as_ref()?.model.clone()),
            effort: self
                .effort
                .clone()
                .or_else(|| before.as_ref()?.effort.clone()),
        };
        let params = overrides(before.as_ref(), &wanted, thread, self.input.clone());
        let started: TurnStartResponse = conn
            .request(method::TURN_START, &params, self.timeout)
            .await?;
        Ok(Started {
            conn,
            loaded,
            codex_id: started.turn.id,
            applied: wanted,
        })
    }
}

/// `turn/start` for `input`, carrying only the settings that differ from `before`
/// (all of them when it is not known).
fn overrides(
    before: Option<&Applied>,
    wanted: &Applied,
    thread_id: String,
    input: Vec<UserInput>,
) -> TurnStartParams {
    let changed = |same: fn(&Applied, &Applied) -> bool| before.is_none_or(|b| !same(b, wanted));
    TurnStartParams {
        thread_id,
        input,
        model: wanted
            .model
            .clone()
            .filter(|_| changed(|a, b| a.model == b.model)),
        effort: wanted
            .effort
            .clone()
            .filter(|_| changed(|a, b| a.effort == b.effort)),
        approval_policy: Some(wanted.approval_policy)
            .filter(|_| changed(|a, b| a.approval_policy == b.approval_policy)),
        sandbox_policy: Some(wanted.sandbox.into())
            .filter(|_| changed(|a, b| a.sandbox == b.sandbox)),
    }
}

/// A thread loaded into a process.
struct Loaded {
    thread_id: String,
    /// Something the person should know (the old thread could not be resumed).
    note: Option<String>,
}

/// Resumes the plan's thread or, when there is none (or it cannot be resumed), starts
/// a new thread.
async fn load_thread(conn: &Connection, plan: &TurnPlan) -> Result<Loaded, RpcError> {
    let mut note = None;
    if let Some(id) = plan.thread_id.clone() {
        let params = ThreadResumeParams {
            thread_id: id.clone(),
            cwd: plan.cwd.clone(),
            approval_policy: plan.approval_policy,
            sandbox: plan.sandbox,
            model: plan.model.clone(),
            developer_instructions: plan.instructions.clone(),
            config: plan.config.clone(),
            exclude_turns: true,
        };
        match conn
            .request::<_, ThreadResponse>(method::THREAD_RESUME, &params, plan.timeout)
            .await
        {
            Ok(r) => {
                return Ok(Loaded {
                    thread_id: r.thread.id,
                    note: None,
                })
            }
            Err(RpcError::Remote { message, .. }) => {
                note = Some(format!(
                    "Codex could not resume thread {id} ({message}); this turn starts a new Codex thread without the earlier conversation."
                ));
            }
            Err(e) => return Err(e),
        }
    }
    let params = ThreadStartParams {
        cwd: plan.cwd.clone(),
        approval_policy: plan.approval_policy,
        sandbox: plan.sandbox,
        model: plan.model.clone(),
        developer_instructions: plan.instructions.clone(),
        config: plan.config.clone(),
    };
    let r: ThreadResponse = conn
        .request(method::THREAD_START, &params, plan.timeout)
        .await?;
    Ok(Loaded {
        thread_id: r.thread.id,
        note,
    })
}

/// Answers an approval request.
fn answer(conn: &Connection, id: &RequestId, kind: &ApprovalKind, allow: bool) {
    fn send<R: Serialize>(conn: &Connection, id: &RequestId, r: R) {
        conn.respond(id, &r);
    }
    match kind {
        ApprovalKind::Decision => send(
            conn,
            id,
            ApprovalResponse {
                decision: if allow {
                    ApprovalDecision::Accept
                } else {
                    ApprovalDecision::Decline
                },
            },
        ),
        ApprovalKind::Permissions(requested) => send(
            conn,
            id,
            PermissionsApprovalResponse {
                permissions: if allow {
                    requested.clone()
                } else {
                    shown::value(shown::Empty {})
                },
            },
        ),
        ApprovalKind::Elicitation => send(
            conn,
            id,
            ElicitationResponse {
                action: if allow {
                    ElicitationAction::Accept
                } else {
                    ElicitationAction::Decline
                },
                content: allow.then(|| shown::value(shown::Empty {})),
            },
        ),
    }
}

impl Actor for CodexThread {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let (Some(conn), Some(thread_id)) = (&self.conn, &self.thread_id) {
            conn.unroute(thread_id);
        }
    }
}

impl Handler<ThreadInbound> for CodexThread {
    type Result = ();

    fn handle(&mut self, msg: ThreadInbound, ctx: &mut Context<Self>) {
        match msg {
            ThreadInbound::Notification {
                generation,
                method,
                params,
            } => {
                if self
                    .conn
                    .as_ref()
                    .is_some_and(|c| c.generation() != generation)
                {
                    return;
                }
                self.on_notification(&method, params, ctx);
            }
            ThreadInbound::Request {
                generation,
                id,
                method,
                params,
            } => self.on_request(generation, id, &method, params),
            ThreadInbound::Exited { generation, detail } => self.on_exit(generation, detail, ctx),
        }
    }
}

impl Handler<AdapterCommand> for CodexThread {
    type Result = ();

    fn handle(&mut self, msg: AdapterCommand, ctx: &mut Context<Self>) {
        match msg {
            AdapterCommand::StartTurn {
                turn_id,
                text,
                settings,
                ..
            } => {
                if self.turn.is_some() {
                    // The session never starts a turn while one runs; if it did, the
                    // old one still ends exactly once.
                    let old = self.turn.as_ref().and_then(|t| t.codex_id.clone());
                    self.end_turn(
                        TurnStatus::Interrupted,
                        Some("superseded by a new turn".into()),
                        ctx,
                    );
                    if let Some(codex_id) = old {
                        self.send_interrupt(codex_id, ctx);
                    }
                }
                self.settings = settings;
                self.turn = Some(Running {
                    id: turn_id.clone(),
                    codex_id: None,
                    mapper: TurnMapper::default(),
                    interrupt: false,
                    fail_with: None,
                    retrying: None,
                    guard: None,
                    ran_commands: false,
                    generation: None,
                });
                self.report_busy();
                self.begin(turn_id, text, ctx);
            }
            AdapterCommand::Interrupt { turn_id } => {
                let Some(turn) = self.turn.as_mut().filter(|t| t.id == turn_id) else {
                    return;
                };
                turn.interrupt = true;
                if let Some(codex_id) = turn.codex_id.clone() {
                    self.send_interrupt(codex_id, ctx);
                }
                // Otherwise `began` sends it once Codex's turn id is known.
            }
            AdapterCommand::StopTask { task_id } => {
                let (Some(conn), Some(thread_id)) = (self.live_conn(), self.thread_id.clone())
                else {
                    return;
                };
                let timeout = self.limits.request;
                let params = BackgroundTerminalsTerminateParams {
                    thread_id,
                    process_id: task_id,
                };
                let work = async move {
                    conn.request::<_, BackgroundTerminalsTerminateResponse>(
                        method::TERMINALS_TERMINATE,
                        &params,
                        timeout,
                    )
                    .await
                };
                ctx.spawn(work.into_actor(self).map(|res, act, ctx| {
                    if let Err(e) = res {
                        tracing::warn!(session = %act.session_id, error = %e, "terminating a background terminal failed");
                    }
                    act.refresh_tasks(ctx);
                }));
            }
            AdapterCommand::PermissionResponse {
                request_id, allow, ..
            } => {
                let Some(pos) = self
                    .approvals
                    .iter()
                    .position(|a| a.request_id == request_id)
                else {
                    return;
                };
                let approval = self.approvals.remove(pos);
                if let Some(conn) = self
                    .live_conn()
                    .filter(|c| c.generation() == approval.generation)
                {
                    answer(&conn, &approval.rpc_id, &approval.kind, allow);
                }
            }
            AdapterCommand::Configure { settings } => {
                // Codex takes model, effort and policies per turn.
                self.settings = settings;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn applied(effort: Option<&str>) -> Applied {
        Applied {
            generation: 1,
            approval_policy: ApprovalPolicy::Untrusted,
            sandbox: SandboxMode::WorkspaceWrite,
            model: None,
            effort: effort.map(str::to_string),
        }
    }

    fn sent(before: Option<&Applied>, wanted: &Applied) -> Value {
        serde_json::to_value(overrides(before, wanted, "t".into(), Vec::new())).unwrap_or_default()
    }

    #[test]
    fn approval_requests_are_shown_or_refused() {
        let (kind, name, input) = approval_request(
            method::COMMAND_APPROVAL,
            json!({"threadId": "t", "turnId": "u", "itemId": "i", "command": "ls", "cwd": "/w"}),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(matches!(kind, ApprovalKind::Decision));
        assert_eq!(name, "shell");
        assert_eq!(input, json!({"command": "ls", "cwd": "/w"}));
        assert_eq!(
            approval_request(method::COMMAND_APPROVAL, json!({"threadId": 1})).err(),
            Some(Refused::Unreadable)
        );
        assert_eq!(
            approval_request("item/tool/requestUserInput", json!({})).err(),
            Some(Refused::Unsupported)
        );
    }

    #[test]
    fn a_turn_sends_only_the_settings_that_changed() {
        let same = applied(Some("high"));
        let params = sent(Some(&same), &same);
        assert_eq!(params, json!({"threadId": "t", "input": []}));

        let unknown = sent(None, &same);
        assert_eq!(unknown["approvalPolicy"], "untrusted", "{unknown}");
        assert_eq!(
            unknown["sandboxPolicy"]["type"], "workspaceWrite",
            "{unknown}"
        );
        assert_eq!(unknown["effort"], "high", "{unknown}");

        let mut bypass = same.clone();
        bypass.approval_policy = ApprovalPolicy::Never;
        bypass.sandbox = SandboxMode::DangerFullAccess;
        let changed = sent(Some(&same), &bypass);
        assert_eq!(changed["approvalPolicy"], "never", "{changed}");
        assert_eq!(
            changed["sandboxPolicy"]["type"], "dangerFullAccess",
            "{changed}"
        );
        assert!(changed.get("effort").is_none(), "{changed}");

        let low = sent(Some(&same), &applied(Some("low")));
        assert_eq!(low["effort"], "low", "{low}");
        assert!(low.get("approvalPolicy").is_none(), "{low}");
    }
}
