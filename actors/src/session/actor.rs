//! The session actor: state, history appends, turns and configuration.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::{BackgroundTask, EventBody, SessionInfo, SessionStatus, TurnStatus};

use super::turns::{turn_number, TurnSummary, KEEP_TURNS};
use super::{
    event_frame, Abort, Configure, RespondPermission, SendMessage, SendOutcome, Services,
    SessionShared, StopTask, StoreFailed,
};
use crate::adapter::messages::{AdapterCommand, AgentItem, AgentOutput, Pace, TurnSettings};
use crate::adapter::scripted::ScriptedAgent;
use crate::adapter::{clamp_effort, AdapterContext};
use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::flow::FlowGate;
use crate::gateway::SessionChanged;
use crate::metrics::Metrics;
use crate::record::{QueuedMessage, SessionRecord};
use crate::store::{StoredEvent, WriteOp};
use tandem_protocol::server::PendingPermission;

/// How long an adapter may take to confirm an interrupt before the session closes the
/// turn itself: a stuck vendor must not leave a session running forever.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// Messages a person may queue in one session.
const MAX_QUEUED: usize = 100;
/// Longest title accepted, in characters.
const MAX_TITLE_CHARS: usize = 200;
/// Events a producer may run ahead of fan-out before [`Pace`] makes it wait.
const PACE_WINDOW: u64 = 32;
/// Longest a producer waits at the gate.
const PACE_LIMIT: Duration = Duration::from_secs(1);

/// A delegated turn's response is capped to its last this many characters.
pub(crate) const RESPONSE_TAIL_CHARS: usize = 30_000;

/// The delegation a Worker's turn carries out.
#[derive(Debug, Clone)]
pub(super) struct TurnDelegation {
    pub pair_id: String,
    pub delegation_id: String,
    /// The pair actor, told when the turn ends.
    pub report_to: Recipient<super::WorkerTurnEnded>,
}

/// The turn in flight.
#[derive(Debug)]
pub(super) struct ActiveTurn {
    pub id: String,
    /// Streamed text not yet closed by an `assistant_message`; kept in history as a
    /// partial message if the turn is cut short.
    pub partial: String,
    /// Every assistant message of the turn so far.
    pub text: String,
    pub interrupt_requested: bool,
    pub delegation: Option<TurnDelegation>,
    /// Usage and cost the adapter reported, kept on `turn_completed`.
    pub usage: Option<serde_json::Value>,
}

impl ActiveTurn {
    /// The turn's assistant text including what is still streaming.
    pub fn text_so_far(&self) -> String {
        let mut text = self.text.clone();
        if !self.partial.is_empty() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&self.partial);
        }
        text
    }
}

/// Keeps the last `max` characters of `text`.
pub(crate) fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    text.chars().skip(count - max).collect()
}

/// Children of a parent session waiting to start, and those running.
#[derive(Debug, Default)]
pub(super) struct SpawnState {
    pub pending: VecDeque<String>,
    pub running: HashSet<String>,
}

/// One session: its metadata, its history's next `seq`, its turn and its adapter.
pub struct SessionActor {
    pub(super) id: Arc<str>,
    pub(super) record: SessionRecord,
    pub(super) next_seq: u64,
    pub(super) background: Vec<BackgroundTask>,
    pub(super) turn: Option<ActiveTurn>,
    adapter: Option<Recipient<AdapterCommand>>,
    pub(super) services: Services,
    shared: Arc<SessionShared>,
    /// Writes made by the message being handled; flushed as one batch so each
    /// handler's effect lands on disk atomically.
    pending: Vec<WriteOp>,
    /// Set when the metadata changed during the message being handled.
    dirty: bool,
    /// Summaries of the most recent turns, oldest first.
    recent: VecDeque<TurnSummary>,
    /// Spawned children (when this session is a parent).
    pub(super) spawn: SpawnState,
    /// Advanced by the gateway as this session's events are fanned out.
    gate: Arc<FlowGate>,
    /// Tool approvals the adapter asked for that no one has answered yet.
    permissions: Vec<PendingPermission>,
    /// Set after a failed commit until the failure is recorded in the history.
    store_error: Option<String>,
}

impl SessionActor {
    /// An actor for a session whose history ends at `last_seq`.
    pub fn new(
        record: SessionRecord,
        last_seq: u64,
        services: Services,
        shared: Arc<SessionShared>,
    ) -> Self {
        SessionActor {
            id: record.id.as_str().into(),
            record,
            next_seq: last_seq + 1,
            background: Vec::new(),
            turn: None,
            adapter: None,
            services,
            shared,
            pending: Vec::new(),
            dirty: false,
            recent: VecDeque::new(),
            spawn: SpawnState::default(),
            gate: Arc::new(FlowGate::new(last_seq)),
            permissions: Vec::new(),
            store_error: None,
        }
    }

    pub(super) fn info(&self) -> SessionInfo {
        self.record.to_info(self.next_seq - 1, &self.background)
    }

    /// Summaries of the turns this actor has seen, oldest first.
    pub(super) fn recent_turns(&self) -> Vec<TurnSummary> {
        let mut list: Vec<TurnSummary> = self.recent.iter().cloned().collect();
        if let Some(turn) = &self.turn {
            if let Some(last) = list
                .last_mut()
                .filter(|t| Some(t.number) == turn_number(&turn.id))
            {
                last.response = turn.text_so_far();
            }
        }
        list
    }

    /// Appends one event to the history: next `seq`, serialized once, written with
    /// the rest of this message's writes.
    pub(super) fn emit(&mut self, turn_id: Option<String>, body: EventBody) {
        let ts = now_ms();
        let seq = self.next_seq;
        let frame = match event_frame(&self.id, seq, ts, turn_id, body) {
            Ok(frame) => frame,
            Err(e) => {
                tracing::error!(session = %self.id, error = %e, "event dropped");
                return;
            }
        };
        self.next_seq += 1;
        self.record.last_activity = ts;
        self.pending.push(WriteOp::Event(StoredEvent {
            session_id: self.id.clone(),
            seq,
            frame: frame.into(),
            gate: self.gate.clone(),
        }));
        self.shared.set_last_seq(seq);
        Metrics::inc(&self.services.metrics.events_appended);
    }

    /// Marks the metadata as changed; [`SessionActor::flush`] persists and publishes it.
    pub(super) fn touch(&mut self) {
        self.dirty = true;
    }

    /// Hands this message's writes to the store as one atomic batch and publishes
    /// changed metadata. Every handler ends with it.
    pub(super) fn flush(&mut self) {
        if self.dirty {
            self.pending
                .push(WriteOp::Session(Box::new(self.record.clone())));
        }
        let op = match self.pending.len() {
            0 => None,
            1 => self.pending.pop(),
            _ => Some(WriteOp::Batch(std::mem::take(&mut self.pending))),
        };
        if let Some(op) = op {
            if let Err(e) = self.services.writer.write(op) {
                tracing::error!(session = %self.id, error = %e, "writes not stored");
            }
        }
        if std::mem::take(&mut self.dirty) {
            let info = self.info();
            self.shared.set(info.clone());
            self.services.gateway.do_send(SessionChanged(info));
        }
    }

    fn adapter(
        &mut self,
        ctx: &mut Context<Self>,
    ) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        if let Some(adapter) = &self.adapter {
            if adapter.connected() {
                return Ok(adapter.clone());
            }
        }
        let context = AdapterContext {
            session_id: self.record.id.clone(),
            owner_id: self.record.owner_id.clone(),
            cwd: self.record.cwd.clone().into(),
            vendor_session_id: self.record.vendor_session_id.clone(),
            settings: self.turn_settings(),
            out: ctx.address().recipient(),
            pace: ctx.address().recipient(),
            mcp: self.services.mcp.access(&self.record.id),
            process: self.services.vendors.get(&self.record.vendor).cloned(),
        };
        let adapter = match self.record.vendor.as_str() {
            "scripted" => ScriptedAgent::new(
                context.session_id,
                context.out,
                context.pace,
                self.services.tools.clone(),
            )
            .start()
            .recipient(),
            "codex" => crate::adapter::codex::start(context, &self.services.codex)?,
            "claude" => crate::adapter::claude::start(context, &self.services.claude)?,
            other => return Err(RuntimeError::VendorNotInstalled(other.to_string())),
        };
        self.adapter = Some(adapter.clone());
        Ok(adapter)
    }

    /// Starts a turn with `text`. `internal` marks server-written messages (pushed-back
    /// results); `delegation` marks a Worker turn delegated by its Driver.
    pub(super) fn start_turn(
        &mut self,
        text: String,
        internal: bool,
        delegation: Option<(TurnDelegation, String)>,
        ctx: &mut Context<Self>,
    ) -> Result<String, RuntimeError> {
        let adapter = self.adapter(ctx)?;
        self.record.turn_count += 1;
        let turn_id = format!("turn_{}", self.record.turn_count);
        self.record.status = SessionStatus::Running;
        self.record.current_turn_id = Some(turn_id.clone());
        self.record.turn_started_at = Some(now_ms());
        let (delegation, delegated_by) = match delegation {
            Some((d, by)) => (Some(d), Some(by)),
            None => (None, None),
        };
        self.recent.push_back(TurnSummary {
            number: self.record.turn_count,
            user: text.clone(),
            delegated: delegated_by.is_some(),
            response: String::new(),
        });
        while self.recent.len() > KEEP_TURNS {
            self.recent.pop_front();
        }
        self.turn = Some(ActiveTurn {
            id: turn_id.clone(),
            partial: String::new(),
            text: String::new(),
            interrupt_requested: false,
            delegation,
            usage: None,
        });
        self.emit(Some(turn_id.clone()), EventBody::TurnStarted {});
        self.emit(
            Some(turn_id.clone()),
            EventBody::UserMessage {
                text: text.clone(),
                internal,
                delegated_by,
            },
        );
        self.touch();
        adapter.do_send(AdapterCommand::StartTurn {
            turn_id: turn_id.clone(),
            text,
            internal,
            settings: self.turn_settings(),
        });
        Ok(turn_id)
    }

    /// Model and behaviour as the session's record says now.
    fn turn_settings(&self) -> TurnSettings {
        TurnSettings {
            model: self.record.model.clone(),
            effort: self.record.effort.clone(),
            permission_mode: self.record.permission_mode,
            system_prompt: super::prompts::system_prompt(&self.record),
        }
    }

    /// Publishes the pending permission requests for new subscribers.
    fn publish_permissions(&self) {
        self.shared.set_permissions(self.permissions.clone());
    }

    /// Withdraws every pending permission request (its turn is over).
    fn withdraw_permissions(&mut self) {
        for pending in std::mem::take(&mut self.permissions) {
            self.emit(
                None,
                EventBody::PermissionResolved {
                    request_id: pending.request_id,
                },
            );
        }
        self.publish_permissions();
    }

    fn on_permission_response(&mut self, msg: RespondPermission) -> Result<(), RuntimeError> {
        let Some(pos) = self
            .permissions
            .iter()
            .position(|p| p.request_id == msg.request_id)
        else {
            return Err(RuntimeError::NoSuchPermission(msg.request_id));
        };
        let pending = self.permissions.remove(pos);
        self.publish_permissions();
        self.emit(
            None,
            EventBody::PermissionResolved {
                request_id: pending.request_id.clone(),
            },
        );
        match &self.adapter {
            Some(adapter) => {
                adapter.do_send(AdapterCommand::PermissionResponse {
                    request_id: pending.request_id,
                    allow: msg.allow,
                    updated_input: msg.updated_input,
                    message: msg.message,
                });
                Ok(())
            }
            None => Err(RuntimeError::NoSuchPermission(pending.request_id)),
        }
    }

    pub(super) fn finish_turn(
        &mut self,
        status: TurnStatus,
        error: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        let response = turn.text_so_far();
        if !turn.partial.is_empty() {
            self.emit(
                Some(turn.id.clone()),
                EventBody::AssistantMessage { text: turn.partial },
            );
        }
        if !self.permissions.is_empty() {
            self.withdraw_permissions();
        }
        self.emit(
            Some(turn.id.clone()),
            EventBody::TurnCompleted {
                status,
                error: error.clone(),
                usage: turn.usage,
            },
        );
        if let Some(last) = self
            .recent
            .back_mut()
            .filter(|t| Some(t.number) == turn_number(&turn.id))
        {
            last.response = response.clone();
        }
        self.record.status = match status {
            TurnStatus::Completed => SessionStatus::Idle,
            TurnStatus::Interrupted => SessionStatus::Interrupted,
            TurnStatus::Failed => SessionStatus::Failed,
        };
        self.record.current_turn_id = None;
        self.record.turn_started_at = None;
        self.touch();
        if let Some(d) = turn.delegation {
            self.notify_pair(d, status, response, error.clone());
        }
        self.notify_parent();
        self.dispatch_queued(ctx);
    }

    /// Sends the oldest queued message when nothing runs: no turn and no background
    /// work (a new turn would kill that work).
    pub(super) fn dispatch_queued(&mut self, ctx: &mut Context<Self>) {
        if self.turn.is_some() || !self.background.is_empty() || self.record.queued.is_empty() {
            return;
        }
        let next = self.record.queued.remove(0);
        self.touch();
        if let Err(e) = self.start_turn(next.text, next.internal, None, ctx) {
            self.emit(
                None,
                EventBody::Error {
                    message: format!("queued message could not start: {e}"),
                },
            );
        }
    }

    /// Runs `text` now if the session is free, else queues it.
    pub(super) fn run_or_queue(&mut self, text: String, internal: bool, ctx: &mut Context<Self>) {
        self.record.queued.push(QueuedMessage { text, internal });
        self.touch();
        self.dispatch_queued(ctx);
    }

    fn apply_config(&mut self, change: Configure) -> Result<(), RuntimeError> {
        let catalog = self.services.catalog.clone();
        let mut record = self.record.clone();
        if let Some(vendor) = change.vendor.filter(|v| *v != record.vendor) {
            if record.vendor_session_id.is_some() {
                return Err(RuntimeError::InvalidArgument(format!(
                    "the vendor cannot change once the {} conversation has started; hand the session off instead",
                    record.vendor
                )));
            }
            if self.turn.is_some() {
                return Err(RuntimeError::RunInProgress(record.id.clone()));
            }
            let spec = catalog.get(&vendor).ok_or_else(|| {
                RuntimeError::InvalidArgument(format!("unknown vendor `{vendor}`"))
            })?;
            if !spec.installed {
                return Err(RuntimeError::VendorNotInstalled(vendor));
            }
            // A model named for the old vendor means nothing to the new one.
            if !spec.knows_model(&record.model) {
                record.model.clear();
            }
            record.effort = clamp_effort(&record.effort, spec.effort_levels)
                .map_err(RuntimeError::InvalidArgument)?;
            record.vendor = vendor;
            self.adapter = None;
        }
        if let Some(model) = change.model {
            record.model = model.trim().to_string();
        }
        if let Some(effort) = change.effort {
            let spec = catalog
                .get(&record.vendor)
                .ok_or_else(|| RuntimeError::InvalidArgument("unknown vendor".into()))?;
            record.effort = clamp_effort(effort.trim(), spec.effort_levels)
                .map_err(RuntimeError::InvalidArgument)?;
        }
        if let Some(mode) = change.permission_mode {
            record.permission_mode = mode;
        }
        if let Some(title) = change.title {
            record.title = validate_title(&title)?;
        }
        let config_changed = record.model != self.record.model
            || record.effort != self.record.effort
            || record.vendor != self.record.vendor
            || record.permission_mode != self.record.permission_mode;
        if config_changed || record.title != self.record.title {
            self.touch();
        }
        self.record = record;
        if config_changed {
            if let Some(adapter) = &self.adapter {
                adapter.do_send(AdapterCommand::Configure {
                    settings: self.turn_settings(),
                });
            }
            self.emit(
                None,
                EventBody::ConfigChanged {
                    model: self.record.model.clone(),
                    effort: self.record.effort.clone(),
                    vendor: self.record.vendor.clone(),
                    permission_mode: self.record.permission_mode,
                },
            );
        }
        Ok(())
    }

    fn on_send(
        &mut self,
        msg: SendMessage,
        ctx: &mut Context<Self>,
    ) -> Result<SendOutcome, RuntimeError> {
        if msg.content.trim().is_empty() {
            return Err(RuntimeError::InvalidArgument("content is empty".into()));
        }
        let busy = self.turn.is_some() || !self.background.is_empty();
        if self.turn.is_some() && !msg.queue {
            return Err(RuntimeError::RunInProgress(self.record.id.clone()));
        }
        if let Some(options) = msg.options {
            self.apply_config(Configure {
                model: options.model,
                effort: options.effort,
                permission_mode: options.permission_mode,
                ..Configure::default()
            })?;
        }
        if msg.queue && (busy || !self.record.queued.is_empty()) {
            if self.record.queued.len() >= MAX_QUEUED {
                return Err(RuntimeError::InvalidArgument(format!(
                    "the queue already holds {MAX_QUEUED} messages"
                )));
            }
            self.record.queued.push(QueuedMessage {
                text: msg.content,
                internal: false,
            });
            self.touch();
            return Ok(SendOutcome::Queued {
                position: self.record.queued.len(),
            });
        }
        let turn_id = self.start_turn(msg.content, false, None, ctx)?;
        Ok(SendOutcome::Started { turn_id })
    }

    fn on_output(&mut self, msg: AgentOutput, ctx: &mut Context<Self>) {
        let current = self.turn.as_ref().map(|t| t.id.as_str());
        if msg.turn_id.is_some() && msg.turn_id.as_deref() != current {
            tracing::debug!(session = %self.id, turn = ?msg.turn_id, "output of a finished turn ignored");
            return;
        }
        match msg.item {
            AgentItem::Event(body) => {
                if let Some(turn) = self.turn.as_mut().filter(|_| msg.turn_id.is_some()) {
                    match &body {
                        EventBody::TextDelta { text } => turn.partial.push_str(text),
                        EventBody::AssistantMessage { text } => {
                            turn.partial.clear();
                            if !turn.text.is_empty() {
                                turn.text.push_str("\n\n");
                            }
                            turn.text.push_str(text);
                        }
                        _ => {}
                    }
                }
                self.emit(msg.turn_id, body);
            }
            AgentItem::TurnEnded { status, error } => {
                if msg.turn_id.is_some() {
                    self.finish_turn(status, error, ctx);
                }
            }
            AgentItem::BackgroundTasks(tasks) => {
                if tasks != self.background {
                    self.background = tasks.clone();
                    self.emit(None, EventBody::BackgroundTasks { tasks });
                    self.touch();
                    self.dispatch_queued(ctx);
                }
            }
            AgentItem::VendorSessionId(id) => {
                if self.record.vendor_session_id.as_deref() != Some(id.as_str()) {
                    self.record.vendor_session_id = Some(id);
                    self.touch();
                }
            }
            AgentItem::PermissionRequest {
                request_id,
                tool_name,
                input,
            } => {
                self.permissions.push(PendingPermission {
                    request_id: request_id.clone(),
                    tool_name: tool_name.clone(),
                    input: input.clone(),
                });
                self.publish_permissions();
                self.emit(
                    msg.turn_id,
                    EventBody::PermissionRequest {
                        request_id,
                        tool_name,
                        input,
                    },
                );
            }
            AgentItem::PermissionResolved { request_id } => {
                let before = self.permissions.len();
                self.permissions.retain(|p| p.request_id != request_id);
                if self.permissions.len() != before {
                    self.publish_permissions();
                    self.emit(msg.turn_id, EventBody::PermissionResolved { request_id });
                }
            }
            AgentItem::Usage(usage) => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.usage = Some(usage);
                }
            }
        }
    }

    /// Asks the adapter to stop the turn, and closes it anyway if the adapter does not
    /// confirm in time.
    pub(super) fn interrupt(&mut self, ctx: &mut Context<Self>) -> Result<(), RuntimeError> {
        let Some(turn) = self.turn.as_mut() else {
            return Err(RuntimeError::NoActiveRun(self.record.id.clone()));
        };
        if turn.interrupt_requested {
            return Ok(());
        }
        turn.interrupt_requested = true;
        let turn_id = turn.id.clone();
        if let Some(adapter) = &self.adapter {
            adapter.do_send(AdapterCommand::Interrupt {
                turn_id: turn_id.clone(),
            });
        }
        ctx.run_later(INTERRUPT_GRACE, move |act, ctx| {
            if act.turn.as_ref().is_some_and(|t| t.id == turn_id) {
                tracing::warn!(session = %act.id, "adapter did not confirm the interrupt; closing the turn");
                act.finish_turn(
                    TurnStatus::Interrupted,
                    Some("the agent did not stop in time".into()),
                    ctx,
                );
                act.flush();
            }
        });
        Ok(())
    }
}

/// Trims a title and checks its length.
pub(crate) fn validate_title(title: &str) -> Result<String, RuntimeError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(RuntimeError::InvalidArgument("title is empty".into()));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(RuntimeError::InvalidArgument(format!(
            "title is longer than {MAX_TITLE_CHARS} characters"
        )));
    }
    Ok(title.to_string())
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Messages queued before a restart (including pushed-back results) go out
        // now that the session is free; schedules are armed (past ones fire now).
        self.dispatch_queued(ctx);
        self.arm_all(ctx);
        self.flush();
    }
}

impl Handler<SendMessage> for SessionActor {
    type Result = Result<SendOutcome, RuntimeError>;

    fn handle(&mut self, msg: SendMessage, ctx: &mut Context<Self>) -> Self::Result {
        let result = self.on_send(msg, ctx);
        self.flush();
        result
    }
}

impl Handler<Abort> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, _: Abort, ctx: &mut Context<Self>) -> Self::Result {
        self.interrupt(ctx)
    }
}

impl Handler<StopTask> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, msg: StopTask, _: &mut Context<Self>) -> Self::Result {
        if !self.background.iter().any(|t| t.task_id == msg.task_id) {
            return Err(RuntimeError::NoSuchTask(msg.task_id));
        }
        match &self.adapter {
            Some(adapter) => {
                adapter.do_send(AdapterCommand::StopTask {
                    task_id: msg.task_id,
                });
                Ok(())
            }
            None => Err(RuntimeError::NoSuchTask(msg.task_id)),
        }
    }
}

/// How long after a failed commit the session tries to record the failure.
const STORE_RETRY: Duration = Duration::from_secs(1);

impl SessionActor {
    /// A commit with this session's writes failed. Whatever ran ahead of the disk is
    /// dropped: the record and the `seq` counter are reloaded, so the next event
    /// continues the stored history without a hole; the turn is stopped.
    fn on_store_failed(&mut self, error: String, ctx: &mut Context<Self>) {
        let stored = match self.services.store.load_session(&self.id) {
            Ok(stored) => stored,
            Err(e) => {
                tracing::error!(session = %self.id, error = %e, "cannot reload after a failed commit");
                None
            }
        };
        self.pending.clear();
        self.dirty = false;
        if let Some(turn) = self.turn.take() {
            if let Some(adapter) = &self.adapter {
                adapter.do_send(AdapterCommand::Interrupt {
                    turn_id: turn.id.clone(),
                });
            }
            if let Some(d) = turn.delegation.clone() {
                self.notify_pair(
                    d,
                    TurnStatus::Failed,
                    turn.text_so_far(),
                    Some(format!("the store could not commit: {error}")),
                );
            }
        }
        let Some(stored) = stored else {
            // Its creation never reached the disk: it must not be listed.
            tracing::warn!(session = %self.id, "session dropped: its record was never committed");
            self.services.sessions.remove(&self.id);
            let _ = self.services.writer.write(WriteOp::Resume(self.id.clone()));
            ctx.stop();
            return;
        };
        self.record = stored.record;
        self.next_seq = stored.last_seq + 1;
        self.shared.set_last_seq(stored.last_seq);
        self.permissions.clear();
        self.publish_permissions();
        let info = self.info();
        self.shared.set(info.clone());
        self.services.gateway.do_send(SessionChanged(info));
        // From here on this session's writes are taken again.
        let _ = self.services.writer.write(WriteOp::Resume(self.id.clone()));
        if self.store_error.replace(error).is_none() {
            ctx.run_later(STORE_RETRY, |act, ctx| act.record_store_failure(ctx));
        }
    }

    /// Records the failure in the history and ends the turn the disk still shows as
    /// running. If this write fails too, another [`StoreFailed`] follows and it is
    /// tried again.
    fn record_store_failure(&mut self, _ctx: &mut Context<Self>) {
        let Some(error) = self.store_error.take() else {
            return;
        };
        let message = format!(
            "the store could not save this session's latest events ({error}); the turn was stopped"
        );
        self.emit(
            None,
            EventBody::Error {
                message: message.clone(),
            },
        );
        if let Some(turn_id) = self.record.current_turn_id.take() {
            self.emit(
                Some(turn_id),
                EventBody::TurnCompleted {
                    status: TurnStatus::Failed,
                    error: Some(message),
                    usage: None,
                },
            );
            self.record.status = SessionStatus::Failed;
            self.record.turn_started_at = None;
        }
        self.touch();
        self.flush();
    }
}

impl Handler<StoreFailed> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: StoreFailed, ctx: &mut Context<Self>) {
        self.on_store_failed(msg.error, ctx);
    }
}

impl Handler<RespondPermission> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, msg: RespondPermission, _: &mut Context<Self>) -> Self::Result {
        let result = self.on_permission_response(msg);
        self.flush();
        result
    }
}

impl Handler<Pace> for SessionActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Pace, _: &mut Context<Self>) -> Self::Result {
        let target = (self.next_seq - 1).saturating_sub(PACE_WINDOW);
        let gate = self.gate.clone();
        Box::pin(async move { gate.wait_for(target, PACE_LIMIT).await })
    }
}

impl Handler<Configure> for SessionActor {
    type Result = Result<SessionInfo, RuntimeError>;

    fn handle(&mut self, msg: Configure, _: &mut Context<Self>) -> Self::Result {
        let result = self.apply_config(msg);
        self.flush();
        result.map(|()| self.info())
    }
}

impl Handler<AgentOutput> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: AgentOutput, ctx: &mut Context<Self>) {
        self.on_output(msg, ctx);
        self.flush();
    }
}
