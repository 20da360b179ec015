//! Computing a working directory's [`GitState`]: branch, base, ahead/behind, and the
//! changed files with their line counts. Blocking (runs git): call from a blocking
//! thread, never from a session actor.

use std::collections::BTreeMap;
use std::path::Path;

use tandem_protocol::workspace::{ChangedFile, FileStatus, GitState, WorkspaceInfo};

use super::git;
use super::WorkspaceError;

/// git's empty tree: what a repository without commits is compared against.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// What the changes of a working directory are counted against.
pub struct Against {
    /// The commit (or tree) diffs start from.
    pub rev: String,
    /// The base branch's name, for `GitState.base`.
    pub base: Option<String>,
    /// The ref ahead/behind are counted against.
    pub count_ref: Option<String>,
}

/// The diff base of `dir`: the merge base with the workspace's base branch for a
/// worktree session, `HEAD` (or the empty tree) with the upstream for counting for a
/// shared one.
pub fn against(dir: &Path, workspace: Option<&WorkspaceInfo>) -> Against {
    if let Some(ws) = workspace {
        let base_ref = format!("refs/heads/{}", ws.base);
        let rev = git::line(dir, &["merge-base", "HEAD", &base_ref])
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| ws.base_commit.clone());
        return Against {
            rev,
            base: Some(ws.base.clone()),
            count_ref: git::commit_of(dir, &base_ref).map(|_| base_ref),
        };
    }
    let rev = git::commit_of(dir, "HEAD").unwrap_or_else(|| EMPTY_TREE.to_string());
    let upstream = git::line(
        dir,
        &[
            "rev-parse",
            "--abbrev-ref",
            "--symbolic-full-name",
            "@{upstream}",
        ],
    )
    .ok()
    .filter(|s| !s.is_empty());
    Against {
        rev,
        base: upstream.clone(),
        count_ref: upstream,
    }
}

/// The state of the working directory at `dir`; `NOT_A_GIT_REPOSITORY` outside one.
pub fn compute(dir: &Path, workspace: Option<&WorkspaceInfo>) -> Result<GitState, WorkspaceError> {
    let top = git::toplevel(dir)
        .ok_or_else(|| WorkspaceError::NotAGitRepository(dir.display().to_string()))?;
    let against = against(&top, workspace);
    let branch = git::current_branch(&top);
    let (ahead, behind) = match &against.count_ref {
        Some(r) if git::commit_of(&top, "HEAD").is_some() => {
            let range = format!("HEAD...{r}");
            let counts = git::line(&top, &["rev-list", "--left-right", "--count", &range])?;
            let mut it = counts
                .split_whitespace()
                .map(|n| n.parse::<u64>().unwrap_or(0));
            (it.next().unwrap_or(0), it.next().unwrap_or(0))
        }
        _ => (0, 0),
    };
    let files = changed_files(&top, &against.rev)?;
    let status = git::run(
        &top,
        &["status", "--porcelain=v1", "-z", "--untracked-files=normal"],
    )?;
    Ok(GitState {
        branch,
        base: against.base,
        ahead,
        behind,
        dirty: !status.is_empty(),
        files,
    })
}

/// Every file that differs between `rev` and the working tree, untracked files
/// included (as added), sorted by path.
pub fn changed_files(top: &Path, rev: &str) -> Result<Vec<ChangedFile>, WorkspaceError> {
    let mut files: BTreeMap<String, ChangedFile> = BTreeMap::new();
    let status = git::run(
        top,
        &[
            "diff",
            "--no-ext-diff",
            "--no-renames",
            "--name-status",
            "-z",
            rev,
        ],
    )?;
    let mut parts = status.split('\0').filter(|p| !p.is_empty());
    while let (Some(code), Some(path)) = (parts.next(), parts.next()) {
        let status = match code.chars().next() {
            Some('A') => FileStatus::Added,
            Some('D') => FileStatus::Deleted,
            Some('R') => FileStatus::Renamed,
            _ => FileStatus::Modified,
        };
        files.insert(
            path.to_string(),
            ChangedFile {
                path: path.to_string(),
                status,
                added: 0,
                removed: 0,
                binary: false,
            },
        );
    }
    let numstat = git::run(
        top,
        &[
            "diff",
            "--no-ext-diff",
            "--no-renames",
            "--numstat",
            "-z",
            rev,
        ],
    )?;
    for entry in numstat.split('\0').filter(|p| !p.is_empty()) {
        let mut cols = entry.splitn(3, '\t');
        let (Some(a), Some(r), Some(path)) = (cols.next(), cols.next(), cols.next()) else {
            continue;
        };
        if let Some(f) = files.get_mut(path) {
            if a == "-" {
                f.binary = true;
            } else {
                f.added = a.parse().unwrap_or(0);
                f.removed = r.parse().unwrap_or(0);
            }
        }
    }
    let untracked = git::run(top, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    for path in untracked.split('\0').filter(|p| !p.is_empty()) {
        let (lines, binary) = count_lines(&top.join(path));
        files.insert(
            path.to_string(),
            ChangedFile {
                path: path.to_string(),
                status: FileStatus::Added,
                added: lines,
                removed: 0,
                binary,
            },
        );
    }
    Ok(files.into_values().collect())
}

/// Lines of a new file and whether it is binary (a NUL in its first 8 KiB, as git
/// decides); 0 lines for a binary or unreadable file.
fn count_lines(path: &Path) -> (u64, bool) {
    let Ok(bytes) = std::fs::read(path) else {
        return (0, false);
    };
    if bytes[..bytes.len().min(8000)].contains(&0) {
        return (0, true);
    }
    let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    let unterminated = u64::from(!bytes.is_empty() && bytes.last() != Some(&b'\n'));
    (newlines + unterminated, false)
}

/// A worktree session's branch and diff summary, for a delegation's outcome; `None`
/// for a session without an active worktree, or when git fails (logged). Runs git on
/// a blocking thread, so actors may await it off their mailbox.
pub async fn delegation_changes(
    info: &tandem_protocol::SessionInfo,
) -> Option<tandem_protocol::workspace::ChangeSummary> {
    let workspace = info
        .workspace
        .clone()
        .filter(|w| w.state == tandem_protocol::workspace::WorktreeState::Active)?;
    let cwd = info.cwd.clone();
    let summed = actix_rt::task::spawn_blocking(move || {
        compute(Path::new(&cwd), Some(&workspace))
            .map(|s| tandem_protocol::workspace::ChangeSummary::of(&workspace.branch, &s))
    })
    .await;
    match summed {
        Ok(Ok(summary)) => Some(summary),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "Worker changes not summed up");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "Worker changes task failed");
            None
        }
    }
}
