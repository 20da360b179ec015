//! [`UploadService`]: uploaded files, each its uploader's, and readable by whoever may
//! see a session that used it; also the parts of uploads other cluster nodes hand
//! over.

use super::SessionAccess;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::{SessionId, UploadId};
use crate::uploads::Uploads;

/// The uploads service.
pub struct UploadService {
    access: SessionAccess,
    /// The files and their uses (also what messages and archiving use).
    pub(super) store: Uploads,
}

impl UploadService {
    /// Serves `store`'s uploads, checking sessions through `access`.
    pub(super) fn new(access: SessionAccess, store: Uploads) -> Self {
        UploadService { access, store }
    }

    /// `POST /api/v1/uploads`: stores `bytes` for `who`.
    pub async fn put(
        &self,
        who: &Principal,
        bytes: bytes::Bytes,
        mime_type: &str,
        name: Option<String>,
    ) -> Result<tandem_protocol::rest::UploadInfo, RuntimeError> {
        let mime_type = crate::uploads::sniff::normalize(mime_type)?;
        crate::uploads::sniff::check_declared(&mime_type, &bytes)?;
        let uploads = self.store.clone();
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
    pub async fn own(
        &self,
        who: &Principal,
        id: &UploadId,
    ) -> Result<(crate::uploads::Upload, Vec<u8>), RuntimeError> {
        let uploads = self.store.clone();
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
    pub async fn receive_part(
        &self,
        who: &Principal,
        part: crate::uploads::transfer::Part,
    ) -> Result<bool, RuntimeError> {
        let uploads = self.store.clone();
        let owner = who.user_id.clone();
        actix_rt::task::spawn_blocking(move || uploads.receive_part(&owner, &part))
            .await
            .map_err(|e| RuntimeError::Internal(format!("upload task failed: {e}")))?
    }

    /// At most `len` bytes at `offset` of upload `id` as used in session
    /// `session_id`, which `who` may read: the upload and the bytes (another cluster
    /// node serving the page's thumbnails of this node's session).
    pub async fn read_in_session(
        &self,
        who: &Principal,
        session_id: &SessionId,
        id: &UploadId,
        offset: u64,
        len: usize,
    ) -> Result<(crate::uploads::Upload, Vec<u8>), RuntimeError> {
        self.access.visible(who, session_id)?;
        let uploads = self.store.clone();
        let (session, id) = (session_id.to_string(), id.to_string());
        actix_rt::task::spawn_blocking(move || uploads.read_part(&session, &id, offset, len))
            .await
            .map_err(|e| RuntimeError::Internal(format!("upload task failed: {e}")))?
    }

    /// The largest file `POST /api/v1/uploads` takes.
    pub fn max_file_bytes(&self) -> u64 {
        self.store.limits.max_file_bytes
    }

    /// An upload's media type and bytes: `who`'s own, or (with `session`) one used in
    /// a session `who` may read.
    pub async fn bytes(
        &self,
        who: &Principal,
        upload_id: &UploadId,
        session: Option<&str>,
    ) -> Result<(String, Vec<u8>), RuntimeError> {
        if let Some(id) = session {
            self.access.visible(who, id)?;
        }
        let uploads = self.store.clone();
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
