//! The session's queue as people change it: a queued message can be cancelled or
//! its text replaced (it keeps its place) until it is sent. Messages the server
//! queued (pushed-back results) are not the person's to change.

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

impl SessionActor {
    /// Where `queue_id` sits in the queue, if a person may change it.
    fn changeable(&self, queue_id: &str) -> Result<usize, RuntimeError> {
        let index = self
            .record
            .queued
            .iter()
            .position(|q| q.id == queue_id)
            .ok_or_else(|| RuntimeError::NoSuchQueuedMessage(queue_id.to_string()))?;
        if self.record.queued[index].internal {
            return Err(RuntimeError::Conflict(
                "a message the server queued (a pushed-back result) cannot be changed".into(),
            ));
        }
        Ok(index)
    }

    fn queue_now(&self) -> Vec<QueuedEntry> {
        self.record.queued.iter().map(|q| q.entry()).collect()
    }
}

impl Handler<CancelQueued> for SessionActor {
    type Result = Result<Vec<QueuedEntry>, RuntimeError>;

    fn handle(&mut self, msg: CancelQueued, _: &mut Context<Self>) -> Self::Result {
        let index = self.changeable(&msg.queue_id)?;
        self.record.queued.remove(index);
        self.touch();
        self.flush();
        Ok(self.queue_now())
    }
}

impl Handler<EditQueued> for SessionActor {
    type Result = Result<Vec<QueuedEntry>, RuntimeError>;

    fn handle(&mut self, msg: EditQueued, _: &mut Context<Self>) -> Self::Result {
        if msg.content.trim().is_empty() {
            return Err(RuntimeError::InvalidArgument(
                "content is empty; cancel the message instead".into(),
            ));
        }
        let index = self.changeable(&msg.queue_id)?;
        self.record.queued[index].text = msg.content;
        self.touch();
        self.flush();
        Ok(self.queue_now())
    }
}
