//! Merging a worktree's branch into its base, in steps a crash can be undone between:
//! [`prepare`] decides without touching anything (it commits the worktree's changes as
//! a dangling commit and tries the merge with `git merge-tree`), [`apply`] moves the
//! branch and merges in the base checkout, [`roll_back`] restores both from a journal
//! entry.

use std::path::Path;

use tandem_protocol::workspace::{MergeStrategy, WorkspaceInfo};

use super::git;
use super::journal::Entry;
use super::WorkspaceError;

/// A merge that [`prepare`] found possible.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The base checkout's `HEAD` now.
    pub base_head: String,
    /// The branch's tip now.
    pub branch_tip: String,
    /// The commit to merge: the tip plus the worktree's uncommitted changes (the tip
    /// itself when there are none).
    pub commit: String,
}

/// Checks that the merge can go through and prepares its commit; changes no ref, no
/// index and no file of either checkout.
pub fn prepare(worktree: &Path, ws: &WorkspaceInfo, message: &str) -> Result<Plan, WorkspaceError> {
    let base = Path::new(&ws.base_checkout);
    match git::current_branch(base) {
        Some(b) if b == ws.base => {}
        other => {
            return Err(WorkspaceError::Conflict(format!(
                "{} has {} checked out, not the base branch {}; check it out to merge",
                ws.base_checkout,
                other.as_deref().unwrap_or("a detached HEAD"),
                ws.base
            )))
        }
    }
    let base_head = git::line(base, &["rev-parse", "HEAD"])?;
    let branch_tip = git::line(worktree, &["rev-parse", "HEAD"])?;
    let commit = snapshot(worktree, &branch_tip, message)?;
    let merge_base = git::line(base, &["merge-base", &base_head, &commit])?;
    if merge_base == commit {
        return Err(WorkspaceError::Conflict(format!(
            "{} has nothing that {} lacks",
            ws.branch, ws.base
        )));
    }
    let changed = git::run(base, &["diff", "--name-only", "-z", &merge_base, &commit])?;
    let changed: std::collections::BTreeSet<&str> =
        changed.split('\0').filter(|p| !p.is_empty()).collect();
    let dirty = dirty_paths(base)?;
    let overlap: Vec<String> = dirty
        .into_iter()
        .filter(|p| changed.contains(p.as_str()))
        .collect();
    if !overlap.is_empty() {
        return Err(WorkspaceError::BaseDirty { paths: overlap });
    }
    let tried = git::output(
        base,
        &[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            &base_head,
            &commit,
        ],
    )?;
    match tried.status.code() {
        Some(0) => {}
        Some(1) => {
            let text = String::from_utf8_lossy(&tried.stdout);
            let mut paths: Vec<String> = text
                .lines()
                .skip(1)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            paths.dedup();
            return Err(WorkspaceError::MergeConflict { paths });
        }
        _ => return Err(git::failed(&["merge-tree"], &tried)),
    }
    Ok(Plan {
        base_head,
        branch_tip,
        commit,
    })
}

/// The worktree's whole state (tracked and untracked files, `.gitignore` respected) as
/// a commit on top of `tip`, made through a temporary index so the worktree's own
/// index is untouched; `tip` itself when nothing is uncommitted.
pub(super) fn snapshot(
    worktree: &Path,
    tip: &str,
    message: &str,
) -> Result<String, WorkspaceError> {
    let index = git::git_dir(worktree)?.join("tandem-merge.index");
    let index_text = index.to_string_lossy().into_owned();
    let with_index = |args: &[&str]| -> Result<String, WorkspaceError> {
        let out = git::command(worktree, args)
            .env("GIT_INDEX_FILE", &index_text)
            .output()
            .map_err(|source| WorkspaceError::Io {
                path: "git".into(),
                source,
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        } else {
            Err(git::failed(args, &out))
        }
    };
    let made = (|| {
        with_index(&["read-tree", tip])?;
        with_index(&["add", "-A", "."])?;
        with_index(&["write-tree"])
    })();
    let _ = std::fs::remove_file(&index);
    let tree = made?;
    let tip_tree = git::line(worktree, &["rev-parse", &format!("{tip}^{{tree}}")])?;
    if tree == tip_tree {
        return Ok(tip.to_string());
    }
    git::run_committing(worktree, &["commit-tree", &tree, "-p", tip, "-m", message])
        .map(|s| s.trim().to_string())
}

/// Paths with uncommitted changes in `checkout` (untracked included).
pub fn dirty_paths(checkout: &Path) -> Result<Vec<String>, WorkspaceError> {
    let status = git::run(
        checkout,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    let mut paths = Vec::new();
    let mut parts = status.split('\0').filter(|p| !p.is_empty());
    while let Some(entry) = parts.next() {
        let code = entry.get(..2).unwrap_or_default();
        if let Some(path) = entry.get(3..) {
            paths.push(path.to_string());
        }
        // A rename's entry is followed by its old name.
        if code.starts_with('R') || code.starts_with('C') {
            if let Some(old) = parts.next() {
                paths.push(old.to_string());
            }
        }
    }
    Ok(paths)
}

/// Moves the branch to the plan's commit (the worktree's files stay as they are; its
/// index follows), then merges it into the base checkout. Returns the base's new
/// `HEAD`. Any failure is rolled back before it is returned.
pub fn apply(
    worktree: &Path,
    ws: &WorkspaceInfo,
    plan: &Plan,
    strategy: MergeStrategy,
    message: &str,
) -> Result<String, WorkspaceError> {
    let base = Path::new(&ws.base_checkout);
    let branch_ref = format!("refs/heads/{}", ws.branch);
    let result = (|| {
        if plan.commit != plan.branch_tip {
            git::run(
                worktree,
                &["update-ref", &branch_ref, &plan.commit, &plan.branch_tip],
            )?;
            git::run(worktree, &["reset", "-q"])?;
        }
        match strategy {
            MergeStrategy::Merge => {
                git::run_committing(
                    base,
                    &[
                        "merge",
                        "-q",
                        "--no-ff",
                        "--no-edit",
                        "-m",
                        message,
                        &branch_ref,
                    ],
                )?;
            }
            MergeStrategy::Squash => {
                git::run_committing(base, &["merge", "-q", "--squash", &branch_ref])?;
                git::run_committing(base, &["commit", "-q", "--no-verify", "-m", message])?;
            }
        }
        git::line(base, &["rev-parse", "HEAD"])
    })();
    if result.is_err() {
        roll_back_to(
            worktree,
            base,
            &ws.branch,
            &plan.base_head,
            &plan.branch_tip,
        );
    }
    result
}

/// Undoes a merge that was journaled but not recorded: the base checkout back to the
/// `HEAD` it had (its other uncommitted changes kept), the branch back to its tip.
pub fn roll_back(entry: &Entry) {
    roll_back_to(
        Path::new(&entry.worktree),
        Path::new(&entry.base_checkout),
        &entry.branch,
        &entry.base_head,
        &entry.branch_tip,
    );
}

fn roll_back_to(worktree: &Path, base: &Path, branch: &str, base_head: &str, tip: &str) {
    let head = git::line(base, &["rev-parse", "HEAD"]).unwrap_or_default();
    let in_progress = git::git_dir(base)
        .map(|d| d.join("MERGE_HEAD").exists() || d.join("SQUASH_MSG").exists())
        .unwrap_or(false);
    if head != base_head || in_progress {
        if let Err(e) = git::run(base, &["reset", "-q", "--merge", base_head]) {
            tracing::error!(error = %e, "merge roll-back: base checkout not reset");
        }
        if let Ok(d) = git::git_dir(base) {
            let _ = std::fs::remove_file(d.join("SQUASH_MSG"));
        }
    }
    let branch_ref = format!("refs/heads/{branch}");
    let now = git::line(base, &["rev-parse", "-q", "--verify", &branch_ref]).unwrap_or_default();
    if now != tip {
        if let Err(e) = git::run(base, &["update-ref", &branch_ref, tip]) {
            tracing::error!(error = %e, "merge roll-back: branch not restored");
        }
        if worktree.exists() {
            let _ = git::run(worktree, &["reset", "-q"]);
        }
    }
}
