//! Spawned child sessions, scheduled by their parent: at most
//! [`MAX_RUNNING_CHILDREN`] run at once, the rest wait their turn.

use actix::prelude::*;

use super::SessionActor;

use crate::ids::SessionId;

/// Children of one parent that may run at the same time.
pub const MAX_RUNNING_CHILDREN: usize = 3;

/// Queue these freshly created children (each holds its first prompt) and start as
/// many as the limit allows.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SpawnChildren {
    /// Child session ids, in order.
    pub children: Vec<SessionId>,
}

/// A child's turn ended (sent by the child to its parent).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ChildTurnEnded {
    /// The child whose turn ended; its slot frees for the next waiting child.
    pub child_id: SessionId,
}

/// Start a spawned session's first prompt (sent by its parent).
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct Kick;

impl SessionActor {
    /// Tells the parent that this child's turn ended.
    pub(super) fn notify_parent(&mut self) {
        let Some(parent) = self.record.parent_id.clone() else {
            return;
        };
        if let Some(parent) = self.services.sessions.get(&parent) {
            parent.do_send(ChildTurnEnded {
                child_id: self.record.id.clone(),
            });
        }
    }

    /// Starts waiting children while fewer than the limit run.
    fn pump_children(&mut self, ctx: &mut Context<Self>) {
        while self.spawn.running.len() < MAX_RUNNING_CHILDREN {
            let Some(child) = self.spawn.pending.pop_front() else {
                break;
            };
            let Some(addr) = self
                .services
                .sessions
                .get(&child)
                .and_then(|h| h.addr().ok())
            else {
                continue;
            };
            self.spawn.running.insert(child.clone());
            ctx.spawn(actix::fut::wrap_future(addr.send(Kick)).map(
                move |started, act: &mut SessionActor, ctx| {
                    if !matches!(started, Ok(true)) {
                        // Nothing to run (already started, or gone): free its place.
                        act.spawn.running.remove(&child);
                        act.pump_children(ctx);
                    }
                },
            ));
        }
    }
}

impl Handler<SpawnChildren> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: SpawnChildren, ctx: &mut Context<Self>) {
        self.spawn.pending.extend(msg.children);
        self.pump_children(ctx);
    }
}

impl Handler<ChildTurnEnded> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: ChildTurnEnded, ctx: &mut Context<Self>) {
        self.spawn.running.remove(&msg.child_id);
        self.pump_children(ctx);
    }
}

impl Handler<Kick> for SessionActor {
    type Result = bool;

    fn handle(&mut self, _: Kick, ctx: &mut Context<Self>) -> bool {
        if self.record.pending_prompt.is_none() {
            return false;
        }
        if let Err(e) = self.owner_allowed() {
            // The prompt is kept: the child is not started for a revoked owner.
            self.emit(
                None,
                tandem_protocol::EventBody::Error {
                    message: format!("spawned session could not start: {e}"),
                },
            );
            self.flush();
            return false;
        }
        let Some(prompt) = self.record.pending_prompt.take() else {
            return false;
        };
        self.touch();
        let started = match self.start_turn(prompt, false, None, ctx) {
            Ok(_) => true,
            Err(e) => {
                self.emit(
                    None,
                    tandem_protocol::EventBody::Error {
                        message: format!("spawned session could not start: {e}"),
                    },
                );
                false
            }
        };
        self.flush();
        started
    }
}
