//! Creating and removing a session's own worktree.

use std::path::{Path, PathBuf};

use tandem_protocol::workspace::{WorkspaceInfo, WorkspaceMode, WorktreeState};

use super::git;
use super::WorkspaceError;

/// The branch of a session's worktree: `tandem/` and the first 8 characters of its id
/// after the `ses_` prefix.
pub fn branch_name(session_id: &str) -> String {
    let short: String = session_id
        .strip_prefix("ses_")
        .unwrap_or(session_id)
        .chars()
        .take(8)
        .collect();
    format!("tandem/{short}")
}

/// Where worktrees live: `<data dir>/worktrees/<session id>`.
pub fn worktree_dir(data_dir: &Path, session_id: &str) -> PathBuf {
    data_dir.join("worktrees").join(session_id)
}

/// A new worktree for `session_id`, branched from `base_ref` (default the HEAD of the
/// checkout at `from`), in `dir`. Returns its description; the session works in `dir`.
pub fn create(
    from: &Path,
    dir: &Path,
    session_id: &str,
    base_ref: Option<&str>,
) -> Result<WorkspaceInfo, WorkspaceError> {
    let top = git::toplevel(from)
        .ok_or_else(|| WorkspaceError::NotAGitRepository(from.display().to_string()))?;
    let base_ref = base_ref.map(str::trim).filter(|r| !r.is_empty());
    let base = match base_ref {
        Some(r) if git::is_branch(&top, r) => r.to_string(),
        _ => git::current_branch(&top).ok_or_else(|| {
            WorkspaceError::Unusable(format!(
                "{} has a detached HEAD; give a branch as baseRef",
                top.display()
            ))
        })?,
    };
    let start = base_ref.unwrap_or("HEAD");
    let base_commit = git::commit_of(&top, start).ok_or_else(|| {
        WorkspaceError::Unusable(format!("baseRef `{start:.100}` names no commit here"))
    })?;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|source| WorkspaceError::Io {
            path: parent.display().to_string(),
            source,
        })?;
    }
    let branch = branch_name(session_id);
    let dir_text = dir.to_string_lossy();
    git::run(
        &top,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &branch,
            &dir_text,
            &base_commit,
        ],
    )?;
    Ok(WorkspaceInfo {
        mode: WorkspaceMode::Worktree,
        branch,
        base,
        base_commit,
        base_checkout: top.to_string_lossy().into_owned(),
        state: WorktreeState::Active,
        pushed: None,
        merged: false,
        port: None,
    })
}

/// Removes the worktree at `dir` and deletes `branch` unless `keep_branch` (a pushed
/// or merged one), whatever of them is left (a second call, after a crash, finishes
/// what the first began).
pub fn remove(
    base_checkout: &Path,
    dir: &Path,
    branch: &str,
    keep_branch: bool,
) -> Result<(), WorkspaceError> {
    if dir.exists() {
        let dir_text = dir.to_string_lossy();
        let out = git::output(base_checkout, &["worktree", "remove", "--force", &dir_text])?;
        if !out.status.success() && dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|source| WorkspaceError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
    }
    git::run(base_checkout, &["worktree", "prune"])?;
    if !keep_branch && git::is_branch(base_checkout, branch) {
        git::run(base_checkout, &["branch", "-D", branch])?;
    }
    Ok(())
}
