//! `session.rebase`: a worktree's branch moved onto the base branch's current head.
//! Its uncommitted changes are committed first (as a merge does), then `git rebase`
//! replays the branch; a conflict aborts it and puts the branch back where it was,
//! so nothing changes but the index (reset to the branch, as after a merge's commit).

use std::path::Path;

use tandem_protocol::workspace::WorkspaceInfo;

use super::{git, merge, WorkspaceError};

/// What a rebase did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebased {
    /// The base branch's head it is now on.
    pub onto: String,
    /// The branch's new tip.
    pub head: String,
    /// False when the branch already contained the base's head (nothing moved).
    pub moved: bool,
}

/// Rebases the worktree at `worktree` (whose workspace is `ws`) onto the head of
/// `ws.base` in the base checkout; `message` names the commit of its uncommitted
/// changes. Blocking.
pub fn rebase(
    worktree: &Path,
    ws: &WorkspaceInfo,
    message: &str,
) -> Result<Rebased, WorkspaceError> {
    let base = Path::new(&ws.base_checkout);
    let onto = git::line(base, &["rev-parse", &format!("refs/heads/{}", ws.base)])?;
    let tip = git::line(worktree, &["rev-parse", "HEAD"])?;
    let merge_base = git::line(worktree, &["merge-base", &tip, &onto])?;
    if merge_base == onto {
        return Ok(Rebased {
            onto,
            head: tip,
            moved: false,
        });
    }
    let branch_ref = format!("refs/heads/{}", ws.branch);
    let snapshot = merge::snapshot(worktree, &tip, message)?;
    if snapshot != tip {
        git::run(worktree, &["update-ref", &branch_ref, &snapshot, &tip])?;
        git::run(worktree, &["reset", "-q"])?;
    }
    if let Err(e) = git::run_committing(worktree, &["rebase", "-q", "--no-autostash", &onto]) {
        let conflicted = git::run(worktree, &["diff", "--name-only", "-z", "--diff-filter=U"])
            .unwrap_or_default();
        let _ = git::run(worktree, &["rebase", "--abort"]);
        // Back to the tip it had; the files stay the snapshot's, which is what they were.
        let _ = git::run(worktree, &["update-ref", &branch_ref, &tip]);
        let _ = git::run(worktree, &["reset", "-q"]);
        let paths: Vec<String> = conflicted
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        return Err(if paths.is_empty() {
            e
        } else {
            WorkspaceError::RebaseConflict { paths }
        });
    }
    let head = git::line(worktree, &["rev-parse", "HEAD"])?;
    Ok(Rebased {
        onto,
        head,
        moved: true,
    })
}
