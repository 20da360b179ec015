//! `chat.edit-send` on the runtime: access, the Driver's delegation check (the pair
//! owns that state), then the session's own rewind.

use tandem_protocol::client::TurnOptions;
use tandem_protocol::content::MessageContent;

use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::session::{EditOutcome, EditSend};

impl Runtime {
    /// Rewinds session `id` to just before the `user_message` at `anchor_seq` and runs
    /// `content` as the next turn; with `restore_files`, the files go back first to
    /// where they were when that message's turn started. A Driver whose Worker holds a delegation is refused
    /// (`DELEGATION_IN_FLIGHT`): its result belongs to a turn the rewind would drop.
    pub async fn edit_send(
        &self,
        who: &Principal,
        id: &SessionId,
        anchor_seq: u64,
        content: MessageContent,
        options: Option<TurnOptions>,
        restore_files: bool,
    ) -> Result<EditOutcome, RuntimeError> {
        let handle = self.access().drivable(who, id)?;
        let info = handle.shared.info();
        // A Driver whose Worker (any of them) holds a delegation.
        let held = info
            .workers
            .iter()
            .any(|w| self.inner.pairs.holds_delegation(&w.pair_id));
        if held {
            return Err(RuntimeError::DelegationInFlight(id.to_string()));
        }
        self.has_workspace(id, &handle)?;
        let mut prepared = self.prepare_content(who, &handle, content).await?;
        let answer = handle
            .ask(EditSend {
                anchor_seq,
                content: std::mem::take(&mut prepared.text),
                attachments: std::mem::take(&mut prepared.attachments),
                options,
                restore_files,
            })
            .await
            .and_then(|r| r);
        if answer.is_err() {
            // Refused (busy, a bad anchor): nothing of the message stays.
            self.take_back(prepared).await;
        }
        answer
    }
}
