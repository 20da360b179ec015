//! [`FileService`]: a session's working directory as the page sees it: its git
//! changes and diffs, and its files, read by whoever may see the session and written
//! by whoever may drive it, never outside it nor into its private paths. Git and
//! the disk are reached on the blocking pool.

use std::path::PathBuf;

use tandem_protocol::workspace::{DirListing, FileContent, FileDiff, FileSaved, GitState};
use tandem_protocol::SessionInfo;

use super::workspaces::{blocking, working_dir};
use super::SessionAccess;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::workspace::{diff, files, state, WorkspaceError};

/// The files service.
pub struct FileService {
    access: SessionAccess,
    /// Paths no client reads or writes (the server's data, secrets).
    private: Vec<PathBuf>,
}

impl FileService {
    /// Serves the working directories of the sessions `access` finds, keeping
    /// `private` out of reach.
    pub(super) fn new(access: SessionAccess, private: Vec<PathBuf>) -> Self {
        FileService { access, private }
    }

    /// `GET /sessions/{id}/changes`: the working directory's state, computed now.
    pub async fn changes(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<GitState, RuntimeError> {
        let info = self.access.visible(who, session_id)?.shared.info();
        let (dir, ws) = working_dir(&info)?;
        blocking(move || state::compute(&dir, ws.as_ref())).await
    }

    /// `GET /sessions/{id}/changes/diff`.
    pub async fn diff(
        &self,
        who: &Principal,
        session_id: &SessionId,
        path: Option<String>,
        cap: usize,
    ) -> Result<FileDiff, RuntimeError> {
        let info = self.access.visible(who, session_id)?.shared.info();
        let (dir, ws) = working_dir(&info)?;
        blocking(move || diff::diff(&dir, ws.as_ref(), path.as_deref(), cap)).await
    }

    /// `GET /sessions/{id}/files`.
    pub async fn list(
        &self,
        who: &Principal,
        session_id: &SessionId,
        path: String,
    ) -> Result<DirListing, RuntimeError> {
        let info = self.access.visible(who, session_id)?.shared.info();
        let jail = self.jail(&info)?;
        blocking(move || files::list(&jail()?, &path)).await
    }

    /// `GET /sessions/{id}/files/content`.
    pub async fn read(
        &self,
        who: &Principal,
        session_id: &SessionId,
        path: String,
    ) -> Result<FileContent, RuntimeError> {
        let info = self.access.visible(who, session_id)?.shared.info();
        let jail = self.jail(&info)?;
        blocking(move || files::read(&jail()?, &path)).await
    }

    /// `PUT /sessions/{id}/files/content` (owner only).
    pub async fn write(
        &self,
        who: &Principal,
        session_id: &SessionId,
        path: String,
        content: String,
        if_match: Option<String>,
    ) -> Result<FileSaved, RuntimeError> {
        let info = self.access.drivable(who, session_id)?.shared.info();
        let jail = self.jail(&info)?;
        blocking(move || files::write(&jail()?, &path, &content, if_match.as_deref())).await
    }

    /// What the files API may reach of a session's working directory (made off the
    /// actors' threads: it looks at the disk).
    fn jail(
        &self,
        info: &SessionInfo,
    ) -> Result<impl FnOnce() -> Result<files::Jail, WorkspaceError> + Send + 'static, RuntimeError>
    {
        let (dir, _) = working_dir(info)?;
        let private = self.private.clone();
        Ok(move || files::Jail::new(&dir, &private))
    }
}
