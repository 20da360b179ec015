//! A Codex turn's life: starting it (loading the thread when this process does not have
//! it), following its notifications into history events, interrupting it, the guard
//! against a model that cannot be reached, and ending it exactly once.

use actix::prelude::*;
use serde_json::Value;
use tandem_protocol::{EventBody, TurnStatus};

use super::mapping::TurnMapper;
use super::plan::{policy, Started, TurnPlan};
use super::rpc::{RpcError, ThreadInbound};
use super::thread::CodexThread;
use super::wire::{
    self, method, ErrorNotification, ServerRequestResolved, TurnInterruptParams, TurnNotification,
    UserInput,
};
use crate::adapter::core::{Phase, Stop};
use crate::adapter::messages::{AgentItem, ImageInput};
use crate::clock::now_ms;
use crate::ids::TurnId;

/// Codex turn ids remembered after they ended, to drop their late notifications.
const KEEP_FINISHED: usize = 16;

/// Codex's side of the turn in flight (the slot holds whether it is starting, live or
/// being stopped).
#[derive(Default)]
pub(super) struct CodexTurn {
    /// Codex's turn id, once `turn/start` answered or a notification named it.
    pub codex_id: Option<String>,
    /// The process generation the turn runs on, once `turn/start` answered; a turn
    /// still starting handles a dying process itself.
    pub generation: Option<u64>,
    /// Notifications → history events.
    pub mapper: TurnMapper,
    /// Armed while Codex retries a model it cannot reach.
    pub guard: Option<Guard>,
    /// A shell command started in this turn (it may outlive the turn).
    pub ran_commands: bool,
}

/// The unreachable-model guard: fires after `limits.unreachable` of retrying.
pub(super) struct Guard {
    /// Cancels the timer.
    handle: SpawnHandle,
    /// The last retrying error Codex reported, quoted in the failure.
    reason: String,
}

impl CodexThread {
    /// Starts a turn: connect, load the thread if this process does not have it,
    /// register its route, then `turn/start`.
    pub(super) fn begin(
        &mut self,
        turn_id: TurnId,
        text: String,
        images: Vec<ImageInput>,
        ctx: &mut Context<Self>,
    ) {
        // Images go as `data:` URLs after the text (Codex reads no file of ours).
        let mut image_inputs = Vec::with_capacity(images.len());
        for img in &images {
            match img.base64() {
                Ok(data) => image_inputs.push(UserInput::Image {
                    url: format!("data:{};base64,{data}", img.mime_type),
                }),
                Err(e) => {
                    let error = format!("image {} could not be read: {e}", img.upload_id);
                    self.end_turn(TurnStatus::Failed, Some(error), ctx);
                    return;
                }
            }
        }
        let (approval_policy, sandbox) = policy(self.settings.permission_mode, self.confined);
        let known = self.live_conn();
        let instructions = self.settings.system_prompt.clone();
        let mut input: Vec<UserInput> = Vec::new();
        // A loaded thread keeps the instructions it was given; a change (the session
        // became a Driver) goes in front of the message.
        if let Some(changed) = instructions
            .clone()
            .filter(|i| known.is_some() && Some(i) != self.instructions.as_ref())
        {
            input.push(UserInput::Text {
                text: changed,
                text_elements: Vec::new(),
            });
        }
        input.push(UserInput::Text {
            text,
            text_elements: Vec::new(),
        });
        input.extend(image_inputs);
        let plan = TurnPlan {
            session_id: self.session_id.clone(),
            server: self.server.clone(),
            me: ctx.address().recipient::<ThreadInbound>(),
            timeout: self.limits.request,
            thread_id: self.thread_id.clone(),
            cwd: self.cwd.clone(),
            approval_policy,
            sandbox,
            model: Some(self.settings.model.clone()).filter(|m| !m.is_empty()),
            effort: Some(self.settings.effort.clone()).filter(|e| !e.is_empty()),
            instructions,
            config: self.thread_config(),
            input,
            applied: self.applied.clone(),
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
    fn began(&mut self, turn_id: TurnId, res: Result<Started, RpcError>, ctx: &mut Context<Self>) {
        let current = self.turn.is(&turn_id);
        let started = match res {
            Ok(started) => started,
            Err(e) => {
                // Whether the thread took any overrides is unknown: send them all next.
                self.applied = None;
                if matches!(e, RpcError::Closed(_) | RpcError::Timeout { .. }) {
                    self.conn = None;
                }
                if current {
                    // A turn being stopped ends as the slot says (interrupted, or
                    // failed with the guard's reason).
                    self.end_turn(TurnStatus::Failed, Some(e.to_string()), ctx);
                }
                return;
            }
        };
        let Started {
            conn,
            loaded,
            codex_id,
            applied,
        } = started;
        self.applied = Some(applied);
        self.instructions = self.settings.system_prompt.clone();
        if let Some(loaded) = loaded {
            if self.thread_id.as_deref() != Some(loaded.thread_id.as_str()) {
                self.thread_id = Some(loaded.thread_id.clone());
                self.emitter
                    .send(None, AgentItem::VendorSessionId(loaded.thread_id));
            }
            if let Some(note) = self.resumed_note.take() {
                self.emitter
                    .event(Some(turn_id.clone()), EventBody::Info { text: note });
            }
            if let Some(note) = loaded.note {
                self.emitter
                    .event(Some(turn_id.clone()), EventBody::Info { text: note });
            }
        }
        let generation = conn.generation();
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
        if let Some(turn) = self.turn.get_mut() {
            turn.data.codex_id.get_or_insert(codex_id.clone());
            turn.data.generation = Some(generation);
        }
        let stopping = matches!(self.turn.phase(), Some(Phase::Stopping(_)));
        self.turn.go_live();
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
        if stopping {
            self.send_interrupt(codex_id, ctx);
        }
    }

    /// The session asks to stop turn `turn_id`.
    pub(super) fn interrupt(&mut self, turn_id: &str, ctx: &mut Context<Self>) {
        if !self.turn.is(turn_id) {
            return;
        }
        let codex_id = self.turn.get().and_then(|t| t.data.codex_id.clone());
        self.turn.stop(Stop::Interrupt);
        // Without Codex's id yet, `began` sends it once known.
        if let Some(codex_id) = codex_id {
            self.send_interrupt(codex_id, ctx);
        }
    }

    /// Asks Codex to stop `codex_id`; if it cannot be asked and it is our turn, the
    /// turn ends here.
    pub(super) fn send_interrupt(&mut self, codex_id: String, ctx: &mut Context<Self>) {
        let target = codex_id.clone();
        let ours = move |act: &Self| {
            act.turn
                .get()
                .is_some_and(|t| t.data.codex_id.as_deref() == Some(target.as_str()))
        };
        let (Some(conn), Some(thread_id)) = (self.live_conn(), self.thread_id.clone()) else {
            if ours(self) {
                self.end_turn(TurnStatus::Interrupted, None, ctx);
            }
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
                if ours(act) {
                    act.end_turn(TurnStatus::Interrupted, None, ctx);
                }
            }
        }));
    }

    /// Ends the current turn exactly once: closes its open items, reports usage, then
    /// the end (through the slot). Its approvals go with it.
    pub(super) fn end_turn(
        &mut self,
        status: TurnStatus,
        error: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        let Some(turn) = self.turn.get_mut() else {
            return;
        };
        if let Some(guard) = turn.data.guard.take() {
            ctx.cancel_future(guard.handle);
        }
        let (closing, usage) = turn.data.mapper.close();
        let turn_id = turn.id.clone();
        for body in closing {
            self.emitter.event(Some(turn_id.clone()), body);
        }
        if let Some(usage) = usage {
            self.emitter.send(Some(turn_id), AgentItem::Usage(usage));
        }
        let Some(ended) = self.turn.end(status, error) else {
            return;
        };
        if let Some(codex_id) = ended.data.codex_id {
            self.remember_finished(codex_id);
        }
        // The session withdraws whatever is still pending when the turn ends.
        self.approvals.drain();
        // Only a shell command can become a background terminal: a turn that ran none
        // cannot have changed the set (finished ones report their end by themselves).
        if ended.data.ran_commands || !self.terminals.tasks.is_empty() {
            self.refresh_tasks(ctx);
        }
        self.report_busy();
    }

    /// A turn superseded by a new one (the slot already reported it): stop Codex's
    /// side of it.
    pub(super) fn superseded(&mut self, old: CodexTurn, ctx: &mut Context<Self>) {
        if let Some(guard) = old.guard {
            ctx.cancel_future(guard.handle);
        }
        self.approvals.drain();
        if let Some(codex_id) = old.codex_id {
            self.remember_finished(codex_id.clone());
            self.send_interrupt(codex_id, ctx);
        }
    }

    fn remember_finished(&mut self, codex_id: String) {
        if self.finished.len() == KEEP_FINISHED {
            self.finished.pop_front();
        }
        self.finished.push_back(codex_id);
    }

    /// A notification of this thread: approvals settled, the turn's progress and end,
    /// retrying errors, and late completions of background terminals.
    pub(super) fn on_notification(
        &mut self,
        method_name: &str,
        params: Value,
        ctx: &mut Context<Self>,
    ) {
        if method_name == method::REQUEST_RESOLVED {
            if let Ok(r) = serde_json::from_value::<ServerRequestResolved>(params) {
                self.on_resolved(&r.request_id);
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
        let belongs = match (self.turn.get(), &codex_turn) {
            (Some(turn), Some(id)) => {
                !stale && turn.data.codex_id.as_ref().is_none_or(|known| known == id)
            }
            _ => false,
        };
        if !belongs {
            // A background terminal finishing reports its item's completion late.
            if method_name == method::ITEM_COMPLETED {
                let item = params.pointer("/item/id").and_then(Value::as_str);
                if item.is_some_and(|id| self.terminals.has_item(id)) {
                    self.refresh_tasks(ctx);
                }
            }
            return;
        }
        match method_name {
            method::TURN_STARTED => {
                if let (Some(turn), Some(id)) = (self.turn.get_mut(), codex_turn) {
                    turn.data.codex_id.get_or_insert(id);
                }
            }
            method::TURN_COMPLETED => self.on_turn_completed(params, ctx),
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
            _ => self.on_progress(method_name, params, ctx),
        }
    }

    /// `turn/completed`: the turn ends with Codex's status; a limit says when it
    /// resets.
    fn on_turn_completed(&mut self, params: Value, ctx: &mut Context<Self>) {
        let Ok(n) = serde_json::from_value::<TurnNotification>(params) else {
            return;
        };
        if let Some(turn) = self.turn.get_mut() {
            turn.data.codex_id.get_or_insert(n.turn.id.clone());
        }
        let error = n.turn.error.as_ref().map(wire::TurnError::describe);
        let limited = n.turn.error.as_ref().is_some_and(wire::TurnError::is_limit);
        let (status, error) = match n.turn.status {
            wire::TurnStatus::Interrupted => (TurnStatus::Interrupted, error),
            wire::TurnStatus::Failed if limited => {
                let resets = self.conn.as_ref().and_then(|c| c.exhausted_until());
                if let (Some(at), Some(turn)) = (resets, self.turn.get()) {
                    self.emitter
                        .send(Some(turn.id.clone()), AgentItem::LimitResets(at));
                }
                (TurnStatus::Limited, error)
            }
            wire::TurnStatus::Failed => (
                TurnStatus::Failed,
                Some(error.unwrap_or_else(|| "the Codex turn failed".into())),
            ),
            _ => (TurnStatus::Completed, None),
        };
        self.end_turn(status, error, ctx);
    }

    /// A notification the mapper turns into history events.
    fn on_progress(&mut self, method_name: &str, params: Value, ctx: &mut Context<Self>) {
        let Some(turn) = self.turn.get_mut() else {
            return;
        };
        let (events, started) = turn.data.mapper.notification(method_name, params);
        if turn.data.mapper.take_progress() {
            if let Some(guard) = turn.data.guard.take() {
                ctx.cancel_future(guard.handle);
            }
        }
        if started.is_some() {
            turn.data.ran_commands = true;
        }
        let turn_id = turn.id.clone();
        if let Some(started) = started {
            self.terminals
                .command_starts
                .insert(started.item_id, now_ms());
        }
        for body in events {
            self.emitter.event(Some(turn_id.clone()), body);
            if let Some(wait) = self.emitter.take_due() {
                ctx.wait(wait.wait().into_actor(self).map(|_, _, _| ()));
            }
        }
    }

    /// Codex retries an unreachable model without end; give it `limits.unreachable`,
    /// then interrupt the turn and end it `failed`.
    fn arm_unreachable_guard(&mut self, error: String, ctx: &mut Context<Self>) {
        let limit = self.limits.unreachable;
        let Some(turn) = self.turn.get_mut() else {
            return;
        };
        if let Some(guard) = turn.data.guard.as_mut() {
            guard.reason = error;
            return;
        }
        let turn_id = turn.id.clone();
        let handle = ctx.run_later(limit, move |act, ctx| {
            let Some(turn) = act.turn.get_mut().filter(|t| t.id == turn_id) else {
                return;
            };
            let reason = turn.data.guard.take().map(|g| g.reason).unwrap_or_default();
            let codex_id = turn.data.codex_id.clone();
            act.turn.stop(Stop::Fail(format!(
                "the model could not be reached for {} s: {reason}",
                limit.as_secs_f32()
            )));
            match codex_id {
                Some(codex_id) => act.send_interrupt(codex_id, ctx),
                None => act.end_turn(TurnStatus::Failed, None, ctx),
            }
        });
        turn.data.guard = Some(Guard {
            handle,
            reason: error,
        });
    }

    /// The process the thread was loaded in exited.
    pub(super) fn on_exit(
        &mut self,
        generation: u64,
        detail: String,
        evicted: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        if self
            .conn
            .as_ref()
            .is_none_or(|c| c.generation() != generation)
        {
            return;
        }
        self.conn = None;
        self.resumed_note = evicted;
        self.approvals.drain();
        // A turn still starting sees the failure in its own requests (and may retry).
        if self
            .turn
            .get()
            .is_some_and(|t| t.data.generation == Some(generation))
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
