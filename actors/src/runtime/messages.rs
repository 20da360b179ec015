//! Messages into a session: `send`, and the content a message carries (its images
//! and files checked, stored as uploads and recorded as the session's uses, or taken
//! back when the session refuses the message); uploads themselves.

use tandem_protocol::client::TurnOptions;
use tandem_protocol::MessageContent;

use super::Runtime;
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::error::RuntimeError;
use crate::ids::{SessionId, UploadId, UserId};
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
        let handle = self.drivable(who, id)?;
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
        if self.inner.workspace_ops.contains_key(id) {
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
            let max = self.inner.uploads.limits.max_blocks;
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
        let uploads = self.inner.uploads.clone();
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
        let uploads = self.inner.uploads.clone();
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

    /// `POST /api/v1/uploads`: stores `bytes` for `who`.
    pub async fn upload(
        &self,
        who: &Principal,
        bytes: bytes::Bytes,
        mime_type: &str,
        name: Option<String>,
    ) -> Result<tandem_protocol::rest::UploadInfo, RuntimeError> {
        let mime_type = crate::uploads::sniff::normalize(mime_type)?;
        crate::uploads::sniff::check_declared(&mime_type, &bytes)?;
        let uploads = self.inner.uploads.clone();
        let owner = who.user_id.clone();
        let (upload, _) = actix_rt::task::spawn_blocking(move || {
            uploads.put(&owner, &bytes, &mime_type, name.as_deref())
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("upload task failed: {e}")))??;
        Ok(tandem_protocol::rest::UploadInfo {
            upload_id: upload.id,
            size: upload.size,
            mime_type: upload.mime_type,
        })
    }

    /// `who`'s own upload `id` with its bytes: what a cluster node hands over to the
    /// owner of a session before forwarding a message that uses it.
    pub async fn own_upload(
        &self,
        who: &Principal,
        id: &UploadId,
    ) -> Result<(crate::uploads::Upload, Vec<u8>), RuntimeError> {
        let uploads = self.inner.uploads.clone();
        let (owner, id) = (who.user_id.clone(), id.to_string());
        actix_rt::task::spawn_blocking(move || {
            let upload = uploads.get(&owner, &id)?;
            let bytes = std::fs::read(uploads.blob(&upload.sha256))
                .map_err(|_| RuntimeError::NoSuchUpload(id.clone()))?;
            Ok((upload, bytes))
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("upload task failed: {e}")))?
    }

    /// Takes one part of an upload another cluster node hands over for `who`; true
    /// once it is here whole (see [`crate::uploads::transfer`]).
    pub async fn receive_upload_part(
        &self,
        who: &Principal,
        part: crate::uploads::transfer::Part,
    ) -> Result<bool, RuntimeError> {
        let uploads = self.inner.uploads.clone();
        let owner = who.user_id.clone();
        actix_rt::task::spawn_blocking(move || uploads.receive_part(&owner, &part))
            .await
            .map_err(|e| RuntimeError::Internal(format!("upload task failed: {e}")))?
    }

    /// At most `len` bytes at `offset` of upload `id` as used in session
    /// `session_id`, which `who` may read: the upload and the bytes (another cluster
    /// node serving the page's thumbnails of this node's session).
    pub async fn read_session_upload(
        &self,
        who: &Principal,
        session_id: &SessionId,
        id: &UploadId,
        offset: u64,
        len: usize,
    ) -> Result<(crate::uploads::Upload, Vec<u8>), RuntimeError> {
        self.visible(who, session_id)?;
        let uploads = self.inner.uploads.clone();
        let (session, id) = (session_id.to_string(), id.to_string());
        actix_rt::task::spawn_blocking(move || uploads.read_part(&session, &id, offset, len))
            .await
            .map_err(|e| RuntimeError::Internal(format!("upload task failed: {e}")))?
    }

    /// The largest file `POST /api/v1/uploads` takes.
    pub fn max_upload_bytes(&self) -> u64 {
        self.inner.uploads.limits.max_file_bytes
    }

    /// An upload's media type and bytes: `who`'s own, or (with `session`) one used in
    /// a session `who` may read.
    pub async fn upload_bytes(
        &self,
        who: &Principal,
        upload_id: &UploadId,
        session: Option<&str>,
    ) -> Result<(String, Vec<u8>), RuntimeError> {
        if let Some(id) = session {
            self.visible(who, id)?;
        }
        let uploads = self.inner.uploads.clone();
        let owner = who.user_id.clone();
        let upload_id = upload_id.to_string();
        let session = session.map(str::to_string);
        actix_rt::task::spawn_blocking(move || {
            let upload = match &session {
                Some(s) => uploads.get_in_session(s, &upload_id)?,
                None => uploads.get(&owner, &upload_id)?,
            };
            let bytes = std::fs::read(uploads.blob(&upload.sha256))
                .map_err(|_| RuntimeError::NoSuchUpload(upload_id.clone()))?;
            Ok((upload.mime_type, bytes))
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("upload task failed: {e}")))?
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
