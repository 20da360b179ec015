//! The session actor.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::{BackgroundTask, EventBody, SessionInfo, SessionStatus, TurnStatus};

use super::{event_frame, Abort, Configure, Send, SendOutcome, Services, SessionShared, StopTask};
use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::gateway::SessionChanged;
use crate::metrics::Metrics;
use crate::record::SessionRecord;
use crate::store::{StoredEvent, WriteOp};
use crate::vendor::adapter::{AdapterCommand, AgentItem, AgentOutput, TurnSettings};
use crate::vendor::clamp_effort;
use crate::vendor::scripted::ScriptedAgent;

/// How long an adapter may take to confirm an interrupt before the session closes the
/// turn itself: a stuck vendor must not leave a session running forever.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// Longest title accepted, in characters.
const MAX_TITLE_CHARS: usize = 200;

/// The turn in flight.
#[derive(Debug)]
struct ActiveTurn {
    id: String,
    /// Streamed text not yet closed by an `assistant_message`; kept in history as a
    /// partial message if the turn is cut short.
    partial: String,
    interrupt_requested: bool,
}

/// One session: its metadata, its history's next `seq`, its turn and its adapter.
pub struct SessionActor {
    id: Arc<str>,
    record: SessionRecord,
    next_seq: u64,
    background: Vec<BackgroundTask>,
    turn: Option<ActiveTurn>,
    adapter: Option<Recipient<AdapterCommand>>,
    services: Services,
    shared: Arc<SessionShared>,
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
        }
    }

    fn info(&self) -> SessionInfo {
        self.record.to_info(self.next_seq - 1, &self.background)
    }

    /// Appends one event to the history: next `seq`, serialized once, handed to the
    /// store writer (which makes it visible after commit).
    fn emit(&mut self, turn_id: Option<String>, body: EventBody) {
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
        let op = WriteOp::Event(StoredEvent {
            session_id: self.id.clone(),
            seq,
            frame: frame.into(),
        });
        if let Err(e) = self.services.writer.write(op) {
            tracing::error!(session = %self.id, error = %e, "event not stored");
        }
        self.shared.set_last_seq(seq);
        Metrics::inc(&self.services.metrics.events_appended);
    }

    /// Persists the metadata and publishes it to readers and watchers.
    fn publish(&mut self) {
        if let Err(e) = self
            .services
            .writer
            .write(WriteOp::Session(Box::new(self.record.clone())))
        {
            tracing::error!(session = %self.id, error = %e, "session record not stored");
        }
        let info = self.info();
        self.shared.set(info.clone());
        self.services.gateway.do_send(SessionChanged(info));
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
        let adapter = match self.record.vendor.as_str() {
            "scripted" => ScriptedAgent::new(
                self.record.id.clone(),
                ctx.address().recipient(),
                self.services.tools.clone(),
            )
            .start()
            .recipient(),
            other => return Err(RuntimeError::VendorNotInstalled(other.to_string())),
        };
        self.adapter = Some(adapter.clone());
        Ok(adapter)
    }

    fn start_turn(
        &mut self,
        text: String,
        ctx: &mut Context<Self>,
    ) -> Result<String, RuntimeError> {
        let adapter = self.adapter(ctx)?;
        self.record.turn_count += 1;
        let turn_id = format!("turn_{}", self.record.turn_count);
        self.record.status = SessionStatus::Running;
        self.record.current_turn_id = Some(turn_id.clone());
        self.turn = Some(ActiveTurn {
            id: turn_id.clone(),
            partial: String::new(),
            interrupt_requested: false,
        });
        self.emit(Some(turn_id.clone()), EventBody::TurnStarted {});
        self.emit(
            Some(turn_id.clone()),
            EventBody::UserMessage {
                text: text.clone(),
                internal: false,
                delegated_by: None,
            },
        );
        self.publish();
        adapter.do_send(AdapterCommand::StartTurn {
            turn_id: turn_id.clone(),
            text,
            settings: TurnSettings {
                model: self.record.model.clone(),
                effort: self.record.effort.clone(),
                permission_mode: self.record.permission_mode,
            },
        });
        Ok(turn_id)
    }

    fn finish_turn(&mut self, status: TurnStatus, error: Option<String>, ctx: &mut Context<Self>) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        if !turn.partial.is_empty() {
            self.emit(
                Some(turn.id.clone()),
                EventBody::AssistantMessage { text: turn.partial },
            );
        }
        self.emit(Some(turn.id), EventBody::TurnCompleted { status, error });
        self.record.status = match status {
            TurnStatus::Completed => SessionStatus::Idle,
            TurnStatus::Interrupted => SessionStatus::Interrupted,
            TurnStatus::Failed => SessionStatus::Failed,
        };
        self.record.current_turn_id = None;
        self.publish();
        self.dispatch_queued(ctx);
    }

    /// Sends the oldest queued message when nothing runs: no turn and no background
    /// work (a new turn would kill that work).
    fn dispatch_queued(&mut self, ctx: &mut Context<Self>) {
        if self.turn.is_some() || !self.background.is_empty() || self.record.queued.is_empty() {
            return;
        }
        let text = self.record.queued.remove(0);
        if let Err(e) = self.start_turn(text, ctx) {
            self.emit(
                None,
                EventBody::Error {
                    message: format!("queued message could not start: {e}"),
                },
            );
            self.publish();
        }
    }

    fn apply_config(&mut self, change: Configure) -> Result<bool, RuntimeError> {
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
            if !spec.models.contains(&record.model.as_str()) {
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
        let changed = config_changed || record.title != self.record.title;
        self.record = record;
        if config_changed {
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
        Ok(changed)
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
}

impl Handler<Send> for SessionActor {
    type Result = Result<SendOutcome, RuntimeError>;

    fn handle(&mut self, msg: Send, ctx: &mut Context<Self>) -> Self::Result {
        if msg.content.trim().is_empty() {
            return Err(RuntimeError::InvalidArgument("content is empty".into()));
        }
        let busy = self.turn.is_some() || !self.background.is_empty();
        if self.turn.is_some() && !msg.queue {
            return Err(RuntimeError::RunInProgress(self.record.id.clone()));
        }
        if let Some(options) = msg.options {
            if self.apply_config(Configure {
                model: options.model,
                effort: options.effort,
                permission_mode: options.permission_mode,
                ..Configure::default()
            })? {
                self.publish();
            }
        }
        if msg.queue && (busy || !self.record.queued.is_empty()) {
            self.record.queued.push(msg.content);
            let position = self.record.queued.len();
            self.publish();
            return Ok(SendOutcome::Queued { position });
        }
        let turn_id = self.start_turn(msg.content, ctx)?;
        Ok(SendOutcome::Started { turn_id })
    }
}

impl Handler<Abort> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, _: Abort, ctx: &mut Context<Self>) -> Self::Result {
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
            }
        });
        Ok(())
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

impl Handler<Configure> for SessionActor {
    type Result = Result<SessionInfo, RuntimeError>;

    fn handle(&mut self, msg: Configure, _: &mut Context<Self>) -> Self::Result {
        if self.apply_config(msg)? {
            self.publish();
        }
        Ok(self.info())
    }
}

impl Handler<AgentOutput> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: AgentOutput, ctx: &mut Context<Self>) {
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
                        EventBody::AssistantMessage { .. } => turn.partial.clear(),
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
                    self.publish();
                    self.dispatch_queued(ctx);
                }
            }
            AgentItem::VendorSessionId(id) => {
                if self.record.vendor_session_id.as_deref() != Some(id.as_str()) {
                    self.record.vendor_session_id = Some(id);
                    self.publish();
                }
            }
        }
    }
}
