//! The intent journal of merges and discards: one small JSON file per operation in
//! flight, `<data dir>/worktrees/<session id>.journal.json`, written (and synced)
//! before git is touched and removed once the operation's event is on disk. A file
//! left by a crash tells start-up what to finish or undo.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tandem_protocol::workspace::MergeStrategy;

use super::WorkspaceError;

use crate::ids::SessionId;

/// Which operation a journal entry is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Operation {
    /// `session.merge`: rolled back after a crash unless its `merged` was stored.
    Merge,
    /// `session.discard`: completed after a crash.
    Discard,
}

/// One operation in flight and the state it started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// What it is.
    pub op: Operation,
    /// The session.
    pub session_id: SessionId,
    /// The session's branch.
    pub branch: String,
    /// Its worktree directory.
    pub worktree: String,
    /// Where the base branch is checked out.
    pub base_checkout: String,
    /// The base checkout's `HEAD` before the operation.
    pub base_head: String,
    /// The branch's tip before the operation.
    pub branch_tip: String,
    /// For a merge: how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<MergeStrategy>,
    /// For a discard: the branch stays (it was pushed or merged).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_branch: bool,
    /// When it started, epoch ms: a `merged` event at or after this finished it.
    pub started_at: u64,
}

/// The journal file of `session_id`.
pub fn path(data_dir: &Path, session_id: &str) -> PathBuf {
    data_dir
        .join("worktrees")
        .join(format!("{session_id}.journal.json"))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Writes the entry durably (a temporary file synced, then renamed over).
pub fn write(data_dir: &Path, entry: &Entry) -> Result<(), WorkspaceError> {
    let file = path(data_dir, &entry.session_id);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let tmp = file.with_extension("tmp");
    let body = serde_json::to_vec(entry).map_err(|e| WorkspaceError::Io {
        path: tmp.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(&body).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, &file).map_err(io(&file))?;
    if let Some(dir) = file.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Removes the entry of `session_id` (nothing when there is none).
pub fn clear(data_dir: &Path, session_id: &str) -> Result<(), WorkspaceError> {
    let file = path(data_dir, session_id);
    match std::fs::remove_file(&file) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(&file)(e)),
    }
}

/// Every entry left in the journal (by crashes); unreadable files are skipped with a
/// warning.
pub fn pending(data_dir: &Path) -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir(data_dir.join("worktrees")) else {
        return Vec::new();
    };
    let mut entries = Vec::new();
    for file in dir.flatten() {
        let name = file.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".journal.json") {
            continue;
        }
        match std::fs::read(file.path())
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Entry>(&b).map_err(|e| e.to_string()))
        {
            Ok(entry) => entries.push(entry),
            Err(e) => tracing::warn!(file = %name, error = %e, "unreadable workspace journal"),
        }
    }
    entries
}
