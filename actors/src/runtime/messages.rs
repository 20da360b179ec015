//! Messages into a session: `send`, and the content a message carries (its images
//! and files checked, stored as uploads and recorded as the session's uses, or taken
//! back when the session refuses the message); uploads themselves.

use tandem_protocol::client::TurnOptions;
use tandem_protocol::MessageContent;

use super::Runtime;
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::error::RuntimeError;
use crate::ids::{SessionId, UserId};
use crate::session::{SendMessage, SendOutcome, SessionHandle};

impl Runtime {
    /// Starts a turn (or queues the message).
    pub async fn send(
        &self,
        who: &Principal,
        id: &SessionId,
        content: MessageContent,
        options: Option<TurnOptions>,
        queue: bool,
    ) -> Result<SendOutcome, RuntimeError> {
        let handle = self.access().drivable(who, id)?;
        self.has_workspace(id, &handle)?;
        let mut prepared = self.prepare_content(who, &handle, content).await?;
        let answer = handle
            .ask(SendMessage {
                content: std::mem::take(&mut prepared.text),
                attachments: std::mem::take(&mut prepared.attachments),
                options,
                queue,
                review: None,
            })
            .await
            .and_then(|r| r);
        if answer.is_err() {
            // Refused (busy, limits): nothing of the message stays.
            self.take_back(prepared).await;
        }
        answer
    }

    /// Refuses a turn for session `id` while its worktree is being merged or
    /// discarded, or after it was discarded (it has no working directory then).
    pub(crate) fn has_workspace(
        &self,
        id: &str,
        handle: &SessionHandle,
    ) -> Result<(), RuntimeError> {
        if self.inner.workspaces.busy(id) {
            return Err(RuntimeError::Conflict(format!(
                "session {id}'s worktree is being merged or discarded; try again when that ends"
            )));
        }
        if handle
            .shared
            .info()
            .workspace
            .is_some_and(|w| w.state == tandem_protocol::workspace::WorktreeState::Discarded)
        {
            return Err(RuntimeError::Conflict(format!(
                "session {id}'s worktree was discarded; it has no working directory"
            )));
        }
        Ok(())
    }

    /// A message's `content` for the session `handle`, as its actor takes it: the
    /// text, and its images and files checked, stored and recorded as the session's
    /// uses (off the actors' threads). A caller whose session then refuses the
    /// message calls [`Runtime::take_back`].
    pub(crate) async fn prepare_content(
        &self,
        who: &Principal,
        handle: &SessionHandle,
        content: MessageContent,
    ) -> Result<PreparedContent, RuntimeError> {
        let info = handle.shared.info();
        // The block limit holds for every message, text-only ones included.
        if let MessageContent::Blocks(blocks) = &content {
            let max = self.inner.uploads.store.limits.max_blocks;
            if blocks.len() > max {
                return Err(RuntimeError::AttachmentTooLarge(format!(
                    "the message has {} blocks; at most {max} are taken",
                    blocks.len()
                )));
            }
        }
        if !content.has_attachments() {
            return Ok(PreparedContent {
                text: content.text(),
                owner: who.user_id.clone(),
                session: info.id,
                ..PreparedContent::default()
            });
        }
        let images = self
            .inner
            .services
            .catalog
            .get(&VendorId::from(info.vendor.as_str()))
            .is_some_and(|spec| spec.capabilities.iter().any(|c| c == "images"));
        let uploads = self.inner.uploads.store.clone();
        let owner = who.user_id.clone();
        actix_rt::task::spawn_blocking(move || {
            let resolved = crate::uploads::resolve::resolve(
                &uploads,
                &owner,
                content,
                std::path::Path::new(&info.cwd),
                images,
                &info.vendor,
            )?;
            let new_uses = match uploads.record_uses(&owner, &resolved.used, &info.id) {
                Ok(added) => added,
                Err(e) => {
                    crate::uploads::resolve::undo_files(&resolved.saved);
                    uploads.undo(&owner, &info.id, &[], &resolved.created);
                    return Err(e);
                }
            };
            Ok(PreparedContent {
                text: resolved.text,
                attachments: resolved.attachments,
                owner,
                session: info.id,
                new_uses,
                created: resolved.created,
                saved: resolved.saved,
            })
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("attachment task failed: {e}")))?
    }

    /// Takes back what [`Runtime::prepare_content`] stored for a message its session
    /// refused: its new uses, uploads nothing else uses, files it saved.
    pub(crate) async fn take_back(&self, prepared: PreparedContent) {
        if prepared.new_uses.is_empty() && prepared.created.is_empty() && prepared.saved.is_empty()
        {
            return;
        }
        let uploads = self.inner.uploads.store.clone();
        let _ = actix_rt::task::spawn_blocking(move || {
            crate::uploads::resolve::undo_files(&prepared.saved);
            uploads.undo(
                &prepared.owner,
                &prepared.session,
                &prepared.new_uses,
                &prepared.created,
            );
        })
        .await;
    }
}

/// A message's content resolved for its session by [`Runtime::prepare_content`].
#[derive(Debug, Default)]
pub(crate) struct PreparedContent {
    /// What `user_message.text` shows.
    pub text: String,
    /// Images, files' text and history blocks, for the session actor.
    pub attachments: crate::adapter::messages::Attachments,
    /// Who sent it (owner of the uploads).
    owner: UserId,
    /// The session it is for.
    session: SessionId,
    /// Uses of uploads this message recorded.
    new_uses: Vec<String>,
    /// Uploads this message created (inline images).
    created: Vec<String>,
    /// Files it saved in the working directory.
    saved: Vec<std::path::PathBuf>,
}
