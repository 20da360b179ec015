//! A commit that failed: the session reloads its record and `seq` from disk, stops its
//! turn, and records the failure once the store works again.

use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::{EventBody, SessionStatus, TurnStatus};

use super::actor::SessionActor;
use super::StoreFailed;
use crate::adapter::messages::AdapterCommand;
use crate::gateway::SessionChanged;
use crate::store::WriteOp;

/// How long after a failed commit the session tries to record the failure.
const STORE_RETRY: Duration = Duration::from_secs(1);

impl Handler<StoreFailed> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: StoreFailed, ctx: &mut Context<Self>) {
        self.on_store_failed(msg.error, ctx);
    }
}

impl SessionActor {
    /// A commit with this session's writes failed. Whatever ran ahead of the disk is
    /// dropped: the record and the `seq` counter are reloaded, so the next event
    /// continues the stored history without a hole; the turn is stopped.
    pub(super) fn on_store_failed(&mut self, error: String, ctx: &mut Context<Self>) {
        let stored = match self.services.store.load_session(&self.id) {
            Ok(stored) => stored,
            Err(e) => {
                tracing::error!(session = %self.id, error = %e, "cannot reload after a failed commit");
                None
            }
        };
        self.pending.clear();
        self.dirty = false;
        self.deferred_start = None;
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
        self.permissions.take_all();
        self.publish_permissions();
        let info = self.publish_metadata();
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
    pub(super) fn record_store_failure(&mut self, _ctx: &mut Context<Self>) {
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
                    resets_at: None,
                },
            );
            self.record.status = SessionStatus::Failed;
            self.record.turn_started_at = None;
        }
        self.touch();
        self.flush();
    }
}
