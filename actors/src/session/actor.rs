//! The session actor: its state, history appends and flushes, configuration and
//! background tasks. A turn's life cycle is in `turn.rs`, approvals in
//! `permissions.rs`, recovery from a failed commit in `store_failure.rs`.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use actix::prelude::*;
use tandem_protocol::{BackgroundTask, EventBody, SessionInfo};

use super::turn::ActiveTurn;
use super::turns::{turn_number, TurnSummary};
use super::{event_frame, Configure, Services, SessionShared, StopTask};
use crate::adapter::messages::AdapterCommand;
use crate::adapter::{clamp_effort, VendorCatalog, VendorId, VendorSpec};
use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::flow::FlowGate;
use crate::gateway::SessionChanged;
use crate::ids::{SessionId, TurnId, UserId};
use crate::metrics::Metrics;
use crate::record::SessionRecord;
use crate::store::{StoredEvent, WriteOp};

/// Longest title accepted, in characters.
const MAX_TITLE_CHARS: usize = 200;

/// Children of a parent session waiting to start, and those running.
#[derive(Debug, Default)]
pub(super) struct SpawnState {
    pub pending: VecDeque<SessionId>,
    pub running: HashSet<SessionId>,
}

/// One session: its metadata, its history's next `seq`, its turn and its adapter.
pub struct SessionActor {
    /// The session id, shared with every event it tags.
    pub(super) id: Arc<str>,
    /// What is stored of the session; written through `flush`.
    pub(super) record: SessionRecord,
    /// The `seq` the next event gets: gap-free, assigned only here.
    pub(super) next_seq: u64,
    /// Work the adapter reported still running after its turn (shells, agents).
    pub(super) background: Vec<BackgroundTask>,
    /// The turn in flight, if any; at most one. Boxed: most sessions are idle, and
    /// an idle session should not carry a turn's worth of empty fields.
    pub(super) turn: Option<Box<ActiveTurn>>,
    /// The vendor adapter, started with the first turn (not at load, so idle sessions
    /// cost no process).
    pub(super) adapter: Option<Recipient<AdapterCommand>>,
    /// What this actor was constructed with.
    pub(super) services: Arc<Services>,
    /// The metadata copy listing and access checks read without messaging the actor.
    pub(super) shared: Arc<SessionShared>,
    /// Writes made by the message being handled; flushed as one batch so each
    /// handler's effect lands on disk atomically.
    pub(super) pending: Vec<WriteOp>,
    /// Set when the metadata changed during the message being handled.
    pub(super) dirty: bool,
    /// Summaries of the most recent turns, oldest first.
    pub(super) recent: VecDeque<TurnSummary>,
    /// Spawned children (when this session is a parent).
    pub(super) spawn: SpawnState,
    /// Advanced by the gateway as this session's events are fanned out.
    pub(super) gate: Arc<FlowGate>,
    /// Tool approvals the adapter asked for that no one has answered yet.
    pub(super) permissions: super::pending::PendingPermissions,
    /// Set after a failed commit until the failure is recorded in the history.
    pub(super) store_error: Option<String>,
    /// Git work after turns: the current `git_state`, running checkpoints, who
    /// waits for them.
    pub(super) git: super::git_work::GitWork,
    /// A turn that waits for the previous turns' checkpoints before its agent starts
    /// (so its writes stay out of them): the adapter and its `StartTurn`.
    pub(super) deferred_start: Option<(Recipient<AdapterCommand>, AdapterCommand)>,
    /// The ticket of the turn waiting in line for a turn slot
    /// ([`crate::turn_slots`]); its agent starts once the slot comes.
    pub(super) slot_wait: Option<u64>,
    /// The new worktree's setup runs ([`super::workspace::Preparing`]): a turn's agent
    /// starts once it ended.
    pub(super) preparing: bool,
    /// Told how the next turn ends ([`super::turn::WhenTurnEnds`]).
    pub(super) turn_waiters: Vec<tokio::sync::oneshot::Sender<super::turn::TurnEnd>>,
    /// The attention the owner's devices were last considered for
    /// ([`super::notify`]): a push goes out only when it changes.
    pub(super) pushed: tandem_protocol::Attention,
    /// The `ask_driver` call waiting for this Worker's question, and its timeout.
    pub(super) question: super::question::WaitingCall,
}

impl SessionActor {
    /// An actor for a session whose history ends at `last_seq`.
    pub fn new(
        record: SessionRecord,
        last_seq: u64,
        services: Arc<Services>,
        shared: Arc<SessionShared>,
    ) -> Self {
        // `shared` already lists the queue (`SessionShared::from_record`).
        // What the devices may already have been told before a restart is not
        // told again.
        let pushed = record.attention(false);
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
            permissions: Default::default(),
            store_error: None,
            git: Default::default(),
            deferred_start: None,
            slot_wait: None,
            preparing: false,
            turn_waiters: Vec::new(),
            pushed,
            question: Default::default(),
        }
    }

    pub(super) fn info(&self) -> SessionInfo {
        let mut info = self.record.to_info(self.next_seq - 1, &self.background);
        info.attention = self.record.attention(!self.permissions.is_empty());
        info
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
    pub(super) fn emit(&mut self, turn_id: Option<TurnId>, body: EventBody) {
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

    /// Publishes the metadata and the queue (one snapshot, see [`Published`]) and
    /// answers the metadata.
    ///
    /// [`Published`]: super::Published
    pub(super) fn publish_metadata(&self) -> SessionInfo {
        let info = self.info();
        let queued = self.record.queued.entries();
        self.shared.publish(|p| {
            p.info = info.clone();
            p.queued = queued;
        });
        info
    }

    /// Hands this message's writes to the store as one atomic batch and publishes
    /// changed metadata. Every handler ends with it.
    pub(super) fn flush(&mut self) {
        // What readers of the shared state see changes before the writer can deliver
        // this batch's events: a client that reads the session right after one of
        // them sees the state it describes.
        let changed = std::mem::take(&mut self.dirty).then(|| {
            let info = self.publish_metadata();
            self.pending
                .push(WriteOp::Session(Box::new(self.record.clone())));
            info
        });
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
        if let Some(info) = changed {
            self.services.gateway.do_send(SessionChanged(info));
        }
        self.push_if_needed();
    }

    /// Refuses work done for this session's owner once that user was revoked: no turn
    /// starts (sent, queued, scheduled, delegated or spawned) until an admin
    /// reassigns the session.
    pub(super) fn owner_allowed(&self) -> Result<(), RuntimeError> {
        if self.services.owners.revoked(&self.record.owner_id) {
            return Err(RuntimeError::OwnerRevoked {
                session: self.record.id.clone(),
                owner: self.record.owner_id.clone(),
            });
        }
        Ok(())
    }

    /// Applies a configure request: every part is checked on a copy of the record,
    /// which then replaces it (touched, reassigned and announced as it changed).
    pub(super) fn apply_config(&mut self, change: Configure) -> Result<(), RuntimeError> {
        let catalog = self.services.catalog.clone();
        let mut record = self.record.clone();
        let new_owner = change.owner_id.filter(|o| *o != record.owner_id);
        if let Some(owner) = &new_owner {
            // The adapter of a running turn works with the old owner's MCP token.
            if self.turn.is_some() {
                return Err(RuntimeError::RunInProgress(record.id.clone()));
            }
            record.owner_id = owner.clone();
        }
        if let Some(vendor) = change.vendor.filter(|v| *v != record.vendor) {
            self.switch_vendor(&catalog, &mut record, vendor)?;
        }
        if let Some(model) = change.model {
            record.model = model.trim().to_string();
        }
        if let Some(effort) = change.effort {
            let spec = known_vendor(&catalog, &record.vendor)?;
            record.effort = clamp_effort(effort.trim(), &spec.effort_levels)?;
        }
        if let Some(mode) = change.permission_mode {
            record.permission_mode = mode;
        }
        if let Some(title) = change.title {
            record.title = validate_title(&title)?;
        }
        if let Some(on_limit) = change.on_limit {
            if let tandem_protocol::session::OnLimit::Handoff(vendor) = &on_limit {
                let known = catalog
                    .get(&crate::adapter::VendorId::from(vendor.as_str()))
                    .is_some_and(|spec| spec.installed);
                if !known {
                    return Err(RuntimeError::unusable(format!(
                        "onLimit: no installed vendor `{vendor:.64}` to hand off to"
                    )));
                }
            }
            record.on_limit = on_limit;
        }
        if let Some(notify) = change.notify {
            record.notify = notify;
        }
        self.adopt_config(record, new_owner);
        Ok(())
    }

    /// Moves `record` to `vendor`, which must be installed, before the vendor's
    /// conversation started and between turns: a model the new vendor does not know
    /// is cleared, the effort moved to its levels, the old adapter dropped.
    fn switch_vendor(
        &mut self,
        catalog: &VendorCatalog,
        record: &mut SessionRecord,
        vendor: VendorId,
    ) -> Result<(), RuntimeError> {
        if record.vendor_session_id.is_some() {
            return Err(RuntimeError::Conflict(format!(
                "the vendor cannot change once the {} conversation has started; hand the session off instead",
                record.vendor
            )));
        }
        if self.turn.is_some() {
            return Err(RuntimeError::RunInProgress(record.id.clone()));
        }
        let spec = known_vendor(catalog, &vendor)?;
        if !spec.installed {
            return Err(RuntimeError::VendorNotInstalled(vendor.to_string()));
        }
        // A model named for the old vendor means nothing to the new one.
        if !spec.knows_model(&record.model) {
            record.model.clear();
        }
        record.effort = clamp_effort(&record.effort, &spec.effort_levels)?;
        record.vendor = vendor;
        self.adapter = None;
        Ok(())
    }

    /// Makes the configured `record` the session's: touched if anything changed; a
    /// new owner gets a new MCP token and adapter, and the change is said; a changed
    /// configuration goes to the adapter and is said.
    fn adopt_config(&mut self, record: SessionRecord, new_owner: Option<UserId>) {
        let config_changed = record.model != self.record.model
            || record.effort != self.record.effort
            || record.vendor != self.record.vendor
            || record.permission_mode != self.record.permission_mode;
        if config_changed
            || record.title != self.record.title
            || record.notify != self.record.notify
            || record.on_limit != self.record.on_limit
            || new_owner.is_some()
        {
            self.touch();
        }
        let old_owner = std::mem::replace(&mut self.record, record).owner_id;
        if let Some(owner) = new_owner {
            // Whoever held the MCP token so far (the old owner may have asked for it)
            // must not act as the new owner's session: a new token is minted, and the
            // next turn starts an adapter that gets it.
            self.services.mcp.forget(&self.record.id);
            self.adapter = None;
            self.emit(
                None,
                EventBody::Info {
                    text: format!("session reassigned from {old_owner} to {owner}"),
                },
            );
        }
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
                    vendor: self.record.vendor.to_string(),
                    permission_mode: self.record.permission_mode,
                },
            );
        }
    }
}

/// The catalog's spec of `vendor`; an unknown one is an unusable value.
fn known_vendor(
    catalog: &VendorCatalog,
    vendor: &VendorId,
) -> Result<Arc<VendorSpec>, RuntimeError> {
    catalog
        .get(vendor)
        .ok_or_else(|| RuntimeError::unusable(format!("unknown vendor `{:.64}`", vendor.as_str())))
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
        // Remembered "always allow" rules are listed to subscribers from the start.
        self.publish_permissions();
        // Messages queued before a restart (including pushed-back results) go out
        // now that the session is free; schedules are armed (past ones fire now).
        // Before anything can start a turn: a delegation a restart cut off is
        // reported to its pair's node (see `resend_remote_report`).
        self.resend_remote_report();
        self.dispatch_queued(ctx);
        self.arm_all(ctx);
        // A question a restart left waits on (its deadline kept); its answer comes
        // as a new message, since the call that asked died with the process.
        self.arm_question(ctx);
        // A loop a restart left goes on where it was.
        self.resume_loop(ctx);
        self.flush();
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

    fn handle(&mut self, msg: Configure, ctx: &mut Context<Self>) -> Self::Result {
        let reassigned = msg.owner_id.is_some();
        let result = self.apply_config(msg);
        if result.is_ok() && reassigned {
            // Messages a revoked owner's session held back run for the new owner.
            self.dispatch_queued(ctx);
        }
        self.flush();
        result.map(|()| self.info())
    }
}
