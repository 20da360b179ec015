//! A turn's life cycle in the session actor: a message starts a turn (or waits in the
//! queue), the adapter's outputs become numbered events, an interrupt is confirmed or
//! times out, and the turn ends with exactly one `turn_completed`, after which the
//! next queued message runs.

use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::{BackgroundTask, EventBody, SessionStatus, TurnStatus};

use super::actor::SessionActor;
use super::turns::{turn_number, TurnSummary, KEEP_TURNS};
use super::{Abort, Configure, SendMessage, SendOutcome};
use crate::adapter::messages::{
    AdapterCommand, AgentItem, AgentOutput, Attachments, Pace, TurnSettings,
};
use crate::adapter::AdapterContext;
use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::ids::{DelegationId, PairId, SessionId, TurnId};
use crate::record::QueuedMessage;
use crate::turn_slots::{Admission, LinePlace};

/// How long an adapter may take to confirm an interrupt before the session closes the
/// turn itself: a stuck vendor must not leave a session running forever.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// Events a producer may run ahead of fan-out before [`Pace`] makes it wait.
const PACE_WINDOW: u64 = 32;

/// Longest a producer waits at the gate.
const PACE_LIMIT: Duration = Duration::from_secs(1);

/// A delegated turn's response is capped to its last this many characters.
pub(crate) const RESPONSE_TAIL_CHARS: usize = 30_000;

/// The delegation a Worker's turn carries out.
#[derive(Debug, Clone)]
pub(super) struct TurnDelegation {
    /// The pair whose Driver delegated (for logs once the pair is gone).
    pub pair_id: PairId,
    /// Reported back with the turn's end, so the pair resolves the right delegation.
    pub delegation_id: DelegationId,
    /// Who answers the turn's permission requests.
    pub approvals: tandem_protocol::pair::WorkerApprovals,
    /// The pair actor (or the pair's node), told when the turn ends.
    pub report_to: super::pairing::ReportTo,
}

/// The turn in flight.
#[derive(Debug)]
pub(super) struct ActiveTurn {
    pub id: TurnId,
    /// Streamed text not yet closed by an `assistant_message`; kept in history as a
    /// partial message if the turn is cut short.
    pub partial: String,
    /// Every assistant message of the turn so far.
    pub text: String,
    pub interrupt_requested: bool,
    pub delegation: Option<TurnDelegation>,
    /// Usage and cost the adapter reported, kept on `turn_completed`.
    pub usage: Option<tandem_protocol::TurnUsage>,
    /// The turn's message, sent again when a vendor limit ended it and the session
    /// waits for the limit (`onLimit: wait`).
    pub message: String,
    /// When the vendor's limit lifts, epoch ms, once the adapter said.
    pub resets_at: Option<u64>,
    /// Its turn slot (`--max-concurrent-turns`), given back when the turn ends;
    /// `None` while it waits for one.
    pub slot: Option<crate::turn_slots::TurnSlot>,
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

impl Handler<SendMessage> for SessionActor {
    type Result = Result<SendOutcome, RuntimeError>;

    fn handle(&mut self, msg: SendMessage, ctx: &mut Context<Self>) -> Self::Result {
        let result = self.on_send(msg, ctx);
        self.flush();
        result
    }
}

/// How a turn ended, for [`WhenTurnEnds`].
#[derive(Debug, Clone)]
pub struct TurnEnd {
    /// Its status.
    pub status: TurnStatus,
    /// Its assistant text.
    pub text: String,
    /// Its error, if it failed.
    pub error: Option<String>,
}

/// Tell `0` how the session's next turn to end ends (a review session's answer). Sent
/// before the message that starts it, so the end cannot slip past.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WhenTurnEnds(pub tokio::sync::oneshot::Sender<TurnEnd>);

impl Handler<WhenTurnEnds> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: WhenTurnEnds, _: &mut Context<Self>) {
        self.turn_waiters.push(msg.0);
    }
}

impl Handler<Abort> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, _: Abort, ctx: &mut Context<Self>) -> Self::Result {
        let result = self.interrupt(ctx);
        // A turn whose agent had not started (waiting for a slot or for checkpoints)
        // ended here: its end is written now, not with the next message.
        self.flush();
        result
    }
}

impl Handler<Pace> for SessionActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Pace, _: &mut Context<Self>) -> Self::Result {
        let target = (self.next_seq - 1).saturating_sub(PACE_WINDOW);
        let gate = self.gate.clone();
        Box::pin(async move { gate.pace(target, PACE_LIMIT).await })
    }
}

impl Handler<AgentOutput> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: AgentOutput, ctx: &mut Context<Self>) {
        self.on_output(msg, ctx);
        self.flush();
    }
}

impl SessionActor {
    pub(super) fn adapter(
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
            fork_on_open: self.record.vendor_fork_on_open.clone(),
            settings: self.turn_settings(),
            out: ctx.address().recipient(),
            pace: ctx.address().recipient(),
            mcp: self.services.mcp.access(
                &self.record.id,
                self.services
                    .mcp_servers
                    .for_session(&self.record.owner_id, self.record.mcp_servers.as_deref()),
            ),
            tools: self.services.tools.clone(),
            remembered: self
                .record
                .permission_rules
                .iter()
                .map(|r| r.tool_name.clone())
                .collect(),
            env: self
                .record
                .workspace
                .as_ref()
                .and_then(|w| w.port)
                .map(|port| [("TANDEM_PORT".to_string(), port.to_string())].into())
                .unwrap_or_default(),
            fleet: self.services.fleet.clone(),
        };
        let adapter = self.services.vendors.start(&self.record.vendor, context)?;
        self.adapter = Some(adapter.clone());
        Ok(adapter)
    }

    /// Starts a turn with `text`. `internal` marks server-written messages (pushed-back
    /// results); `delegation` marks a Worker turn delegated by its Driver.
    pub(super) fn start_turn(
        &mut self,
        text: String,
        internal: bool,
        delegation: Option<(TurnDelegation, SessionId)>,
        ctx: &mut Context<Self>,
    ) -> Result<TurnId, RuntimeError> {
        self.start_turn_with(text, Attachments::default(), internal, delegation, ctx)
    }

    /// [`SessionActor::start_turn`] for a message with images or files: history
    /// keeps its blocks, the vendor gets the images and the files' text after `text`.
    pub(super) fn start_turn_with(
        &mut self,
        text: String,
        attachments: Attachments,
        internal: bool,
        delegation: Option<(TurnDelegation, SessionId)>,
        ctx: &mut Context<Self>,
    ) -> Result<TurnId, RuntimeError> {
        self.owner_allowed()?;
        let adapter = self.adapter(ctx)?;
        let (delegation, delegated_by) = match delegation {
            Some((d, by)) => (Some(d), Some(by)),
            None => (None, None),
        };
        let delegated = delegated_by.is_some();
        let turn_id = self.open_turn(&text, delegation);
        self.emit(Some(turn_id.clone()), EventBody::TurnStarted {});
        self.emit(
            Some(turn_id.clone()),
            EventBody::UserMessage {
                text: text.clone(),
                internal,
                delegated_by,
                content: attachments.blocks,
            },
        );
        self.touch();
        if let Some(problem) = self.unsupported_cli() {
            // The CLI's version is outside the supported range: the turn fails at once
            // (through the adapters' own path) rather than in some unexpected way.
            ctx.notify(AgentOutput {
                turn_id: Some(turn_id.clone()),
                item: AgentItem::TurnEnded {
                    status: TurnStatus::Failed,
                    error: Some(problem),
                },
            });
            return Ok(turn_id);
        }
        let start = AdapterCommand::StartTurn {
            turn_id: turn_id.clone(),
            text: self.vendor_text(text, &attachments.prompt_text),
            images: attachments.images,
            internal,
            settings: self.turn_settings(),
        };
        self.take_turn_slot(delegated, ctx);
        if self.start_waits_for_checkpoints() || self.slot_wait.is_some() {
            // The previous turn's files are still being recorded: the agent starts
            // once they are, so this turn's writes stay out of that checkpoint.
            self.deferred_start = Some((adapter, start));
        } else {
            adapter.do_send(start);
        }
        Ok(turn_id)
    }

    /// Opens the session's next turn, for message `text` (`delegation`: a Driver
    /// delegated it): numbered, running, and the newest of the recent turns.
    fn open_turn(&mut self, text: &str, delegation: Option<TurnDelegation>) -> TurnId {
        self.record.turn_count += 1;
        let turn_id = TurnId::nth(self.record.turn_count);
        self.record.status = SessionStatus::Running;
        self.record.current_turn_id = Some(turn_id.clone());
        self.record.turn_started_at = Some(now_ms());
        self.recent.push_back(TurnSummary {
            number: self.record.turn_count,
            user: text.to_string(),
            delegated: delegation.is_some(),
            response: String::new(),
        });
        while self.recent.len() > KEEP_TURNS {
            self.recent.pop_front();
        }
        self.turn = Some(Box::new(ActiveTurn {
            id: turn_id.clone(),
            partial: String::new(),
            text: String::new(),
            interrupt_requested: false,
            delegation,
            usage: None,
            message: text.to_string(),
            resets_at: None,
            slot: None,
        }));
        turn_id
    }

    /// What the vendor reads for message `text`: the attachments' `extra` text after
    /// it, and the source's conversation ahead of a fork's first message.
    fn vendor_text(&mut self, text: String, extra: &str) -> String {
        let text = match extra {
            "" => text,
            extra if text.is_empty() => extra.to_string(),
            extra => format!("{text}\n\n{extra}"),
        };
        // A fork's agent reads the source's conversation once, ahead of the first
        // message; history keeps the message as written.
        match self.record.fork_context.take() {
            Some(context) => format!("{context}{text}"),
            None => text,
        }
    }

    /// The problem of this session's vendor CLI when its version is unsupported.
    fn unsupported_cli(&self) -> Option<String> {
        self.services
            .catalog
            .get(&self.record.vendor)
            .filter(|spec| spec.status == crate::adapter::health::VendorStatus::Unsupported)
            .and_then(|spec| spec.problem.clone())
    }

    /// Model and behaviour as the session's record says now.
    pub(super) fn turn_settings(&self) -> TurnSettings {
        TurnSettings {
            model: self.record.model.clone(),
            effort: self.record.effort.clone(),
            permission_mode: self.record.permission_mode,
            system_prompt: super::prompts::system_prompt(&self.record),
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
        // A turn that ends before its agent started (interrupted, timed out) never
        // starts; one waiting for a slot leaves the line.
        self.deferred_start = None;
        if let Some(ticket) = self.slot_wait.take() {
            self.services.turns.withdraw(ticket);
            self.record.waiting_place = None;
        }
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
                resets_at: turn.resets_at.filter(|_| status == TurnStatus::Limited),
            },
        );
        self.record_turn_end(&turn.id, status, &response);
        // A delegated turn's limit is its Driver's to handle: its outcome goes back
        // as an error.
        let limited = (status == TurnStatus::Limited && turn.delegation.is_none())
            .then(|| (turn.message.clone(), turn.resets_at));
        if let Some(d) = turn.delegation {
            self.notify_pair(d, status, response.clone(), error.clone());
        }
        self.notify_parent();
        for waiter in self.turn_waiters.drain(..) {
            let _ = waiter.send(TurnEnd {
                status,
                text: response.clone(),
                error: error.clone(),
            });
        }
        // A loop's turn ends its loop instead (a re-sent iteration would run outside
        // it).
        let loop_turn = self
            .record
            .loop_run
            .as_ref()
            .is_some_and(|r| r.turn_id.as_deref() == Some(turn.id.as_str()));
        self.loop_turn_ended(&turn.id, status, &response, ctx);
        if let Some((message, resets_at)) = limited.filter(|_| !loop_turn) {
            self.after_limit(message, resets_at, ctx);
        }
        self.after_turn_git(turn.id, ctx);
        self.dispatch_queued(ctx);
        self.loop_poke(ctx);
    }

    /// The record once turn `turn_id` ended with `status`: the session's status, no
    /// current turn, where the turn's events end, and its response among the recent
    /// turns.
    fn record_turn_end(&mut self, turn_id: &TurnId, status: TurnStatus, response: &str) {
        self.record.turn_end_seq = self.next_seq - 1;
        if let Some(last) = self
            .recent
            .back_mut()
            .filter(|t| Some(t.number) == turn_number(turn_id))
        {
            last.response = response.to_string();
        }
        self.record.status = match status {
            TurnStatus::Completed => SessionStatus::Idle,
            TurnStatus::Interrupted => SessionStatus::Interrupted,
            TurnStatus::Failed | TurnStatus::Limited => SessionStatus::Failed,
        };
        self.record.current_turn_id = None;
        self.record.turn_started_at = None;
        self.touch();
    }

    /// Sends the oldest queued message when nothing runs: no turn and no background
    /// work (a new turn would kill that work).
    pub(super) fn dispatch_queued(&mut self, ctx: &mut Context<Self>) {
        if self.turn.is_some() || !self.background.is_empty() || self.record.queued.is_empty() {
            return;
        }
        if self.owner_allowed().is_err() {
            // Kept, not dropped: they run once an admin reassigns the session.
            return;
        }
        let Some(next) = self.record.queued.take_next() else {
            return;
        };
        self.touch();
        if let Err(e) = self.start_turn_with(next.text, next.attachments, next.internal, None, ctx)
        {
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
        self.record.queued.push(QueuedMessage::new(text, internal));
        self.touch();
        self.dispatch_queued(ctx);
    }

    pub(super) fn on_send(
        &mut self,
        msg: SendMessage,
        ctx: &mut Context<Self>,
    ) -> Result<SendOutcome, RuntimeError> {
        if msg.content.trim().is_empty() && msg.attachments.is_empty() {
            return Err(RuntimeError::InvalidArgument("content is empty".into()));
        }
        // Also when it would only be queued.
        self.owner_allowed()?;
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
            let mut queued = QueuedMessage::new(msg.content, false);
            queued.attachments = msg.attachments;
            let position = self.record.queued.offer(queued)?;
            // A review waiting its turn is shown now; its message runs later.
            if let Some(review) = msg.review {
                self.emit(None, review);
            }
            self.touch();
            return Ok(SendOutcome::Queued { position });
        }
        let turn_id = self.start_turn_with(msg.content, msg.attachments, false, None, ctx)?;
        if let Some(review) = msg.review {
            self.emit(Some(turn_id.clone()), review);
        }
        Ok(SendOutcome::Started { turn_id })
    }

    /// Appends an adapter's history event, keeping the turn's text up to date.
    fn agent_event(&mut self, turn_id: Option<TurnId>, body: EventBody) {
        if let Some(turn) = self.turn.as_mut().filter(|_| turn_id.is_some()) {
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
        self.emit(turn_id, body);
    }

    /// Takes an adapter's output: what belongs to a finished turn is ignored.
    pub(super) fn on_output(&mut self, msg: AgentOutput, ctx: &mut Context<Self>) {
        let current = self.turn.as_ref().map(|t| t.id.as_str());
        if msg.turn_id.is_some() && msg.turn_id.as_deref() != current {
            tracing::debug!(session = %self.id, turn = ?msg.turn_id, "output of a finished turn ignored");
            return;
        }
        match msg.item {
            AgentItem::Event(body) => self.agent_event(msg.turn_id, body),
            AgentItem::Events(bodies) => {
                for body in bodies {
                    self.agent_event(msg.turn_id.clone(), body);
                }
            }
            AgentItem::TurnEnded { status, error } => {
                if msg.turn_id.is_some() {
                    // A failure the user can fix is told as vendor, cause and fix.
                    let error = match status {
                        TurnStatus::Failed => {
                            error.map(|e| self.services.vendors.explain(&self.record.vendor, e))
                        }
                        _ => error,
                    };
                    self.finish_turn(status, error, ctx);
                }
            }
            AgentItem::LimitResets(at) => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.resets_at = Some(at);
                }
            }
            AgentItem::Commands(commands) => {
                if commands != self.record.commands {
                    self.record.commands = commands.clone();
                    self.emit(None, EventBody::Commands { commands });
                    self.touch();
                }
            }
            AgentItem::BackgroundTasks(tasks) => self.background_tasks(tasks, ctx),
            AgentItem::VendorSessionId(id) => {
                if self.record.vendor_session_id.as_deref() != Some(id.as_str()) {
                    self.record.vendor_session_id = Some(id);
                    // A fork's vendor session is its own now.
                    self.record.vendor_fork_on_open = None;
                    self.touch();
                }
            }
            AgentItem::PermissionRequest(request) => {
                self.permission_requested(msg.turn_id, request);
            }
            AgentItem::PermissionResolved { request_id } => {
                self.permission_withdrawn(msg.turn_id, request_id);
            }
            AgentItem::Usage(usage) => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.usage = Some(usage);
                }
            }
        }
    }

    /// The agent's background tasks are `tasks`: a change is recorded and said, and
    /// queued messages and a loop's next iteration, which wait for them, may go on.
    fn background_tasks(&mut self, tasks: Vec<BackgroundTask>, ctx: &mut Context<Self>) {
        if tasks != self.background {
            self.background = tasks.clone();
            self.emit(None, EventBody::BackgroundTasks { tasks });
            self.touch();
            self.dispatch_queued(ctx);
            // A loop's next iteration waits for background work too.
            self.loop_poke(ctx);
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
        if self.deferred_start.is_some() {
            // Its agent has not started: nothing to stop.
            self.finish_turn(TurnStatus::Interrupted, None, ctx);
            return Ok(());
        }
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

impl SessionActor {
    /// Gives the turn just started a turn slot, or puts it in line for one (status
    /// `waiting`, its place published); a delegated turn never waits.
    fn take_turn_slot(&mut self, delegated: bool, ctx: &mut Context<Self>) {
        let turns = self.services.turns.clone();
        let admission = match delegated {
            true => Admission::Now(turns.exempt()),
            false => turns.admit(&self.record.id, ctx.address().recipient()),
        };
        match admission {
            Admission::Now(slot) => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.slot = Some(slot);
                }
            }
            Admission::Queued {
                ticket,
                place,
                granted,
            } => {
                self.slot_wait = Some(ticket);
                self.record.status = SessionStatus::Waiting;
                self.record.waiting_place = Some(u32::try_from(place).unwrap_or(u32::MAX));
                ctx.spawn(actix::fut::wrap_future(granted).map(
                    move |slot, act: &mut SessionActor, _| {
                        if let Ok(slot) = slot {
                            act.slot_granted(ticket, slot);
                            act.flush();
                        }
                    },
                ));
            }
        }
    }

    /// The slot a waiting turn asked for came: its agent starts (once nothing else
    /// holds it back). A slot for a turn that ended meanwhile goes back at once.
    fn slot_granted(&mut self, ticket: u64, slot: crate::turn_slots::TurnSlot) {
        if self.slot_wait != Some(ticket) {
            return;
        }
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.slot = Some(slot);
        self.slot_wait = None;
        self.record.status = SessionStatus::Running;
        self.record.waiting_place = None;
        self.touch();
        self.release_deferred_start();
    }
}

impl Handler<LinePlace> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: LinePlace, _: &mut Context<Self>) {
        if self.slot_wait == Some(msg.ticket) {
            self.record.waiting_place = Some(u32::try_from(msg.place).unwrap_or(u32::MAX));
            self.touch();
            self.flush();
        }
    }
}
