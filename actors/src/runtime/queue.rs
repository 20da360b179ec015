//! A session's queue of messages waiting to be sent: listed, cancelled, edited.

use tandem_protocol::server::QueuedEntry;

use super::SessionService;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::session::{CancelQueued, EditQueued};

impl SessionService {
    /// The messages queued in session `id`, oldest first, as last committed.
    pub fn queued(
        &self,
        who: &Principal,
        id: &SessionId,
    ) -> Result<Vec<QueuedEntry>, RuntimeError> {
        Ok(self.access.visible(who, id)?.shared.queued())
    }

    /// Takes `queue_id` out of the queue; returns the queue after the change.
    pub async fn cancel_queued(
        &self,
        who: &Principal,
        id: &SessionId,
        queue_id: String,
    ) -> Result<Vec<QueuedEntry>, RuntimeError> {
        self.access
            .drivable(who, id)?
            .ask(CancelQueued { queue_id })
            .await?
    }

    /// Replaces the text of `queue_id`; returns the queue after the change.
    pub async fn edit_queued(
        &self,
        who: &Principal,
        id: &SessionId,
        queue_id: String,
        content: String,
    ) -> Result<Vec<QueuedEntry>, RuntimeError> {
        self.access
            .drivable(who, id)?
            .ask(EditQueued { queue_id, content })
            .await?
    }
}
