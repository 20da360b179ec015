//! The session's queue as people change it (the rules are
//! [`crate::message_queue::MessageQueue`]'s).

use actix::prelude::*;
use tandem_protocol::server::QueuedEntry;

use super::SessionActor;
use crate::error::RuntimeError;

/// Take a queued message out of the queue.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<QueuedEntry>, RuntimeError>")]
pub struct CancelQueued {
    /// The message's id (`q_…`).
    pub queue_id: String,
}

/// Replace a queued message's text.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<QueuedEntry>, RuntimeError>")]
pub struct EditQueued {
    /// The message's id (`q_…`).
    pub queue_id: String,
    /// The new text; not blank.
    pub content: String,
}

impl Handler<CancelQueued> for SessionActor {
    type Result = Result<Vec<QueuedEntry>, RuntimeError>;

    fn handle(&mut self, msg: CancelQueued, _: &mut Context<Self>) -> Self::Result {
        self.record.queued.cancel(&msg.queue_id)?;
        self.touch();
        self.flush();
        Ok(self.record.queued.entries())
    }
}

impl Handler<EditQueued> for SessionActor {
    type Result = Result<Vec<QueuedEntry>, RuntimeError>;

    fn handle(&mut self, msg: EditQueued, _: &mut Context<Self>) -> Self::Result {
        self.record.queued.edit(&msg.queue_id, msg.content)?;
        self.touch();
        self.flush();
        Ok(self.record.queued.entries())
    }
}
