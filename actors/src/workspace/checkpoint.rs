//! A checkpoint of the files at the end of every turn: a commit of the whole working
//! tree (untracked files included, ignored files not) kept under
//! `refs/tandem/checkpoints/<sessionId>/<turnId>`. It is made in an index file of its
//! own, so the checkout's index, `HEAD` and branches are never touched; each
//! checkpoint's parent is the session's previous one (the checkout's `HEAD` for the
//! first), so what a turn changed is the diff to its parent.

use std::path::{Path, PathBuf};

use super::{git, WorkspaceError};

/// Where every session's checkpoints live.
pub const REF_PREFIX: &str = "refs/tandem/checkpoints";

/// The most changed paths a checkpoint lists; the rest are counted.
pub const MAX_FILES: usize = 500;

/// One recorded checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The checkpoint commit.
    pub commit: String,
    /// Paths (relative to the top of the working tree) that differ from the parent,
    /// at most [`MAX_FILES`].
    pub files: Vec<String>,
    /// How many more differ than `files` lists.
    pub files_omitted: u64,
}

/// The ref of one turn's checkpoint; `None` when an id could not be part of a ref
/// name (ids the server makes always can).
pub fn ref_name(session_id: &str, turn_id: &str) -> Option<String> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    (plain(session_id) && plain(turn_id)).then(|| format!("{REF_PREFIX}/{session_id}/{turn_id}"))
}

/// Records the working tree at `dir` as `turn_id`'s checkpoint of `session_id`, whose
/// previous checkpoint (if any) is `previous`. Blocking: run on the blocking pool.
pub fn record(
    dir: &Path,
    session_id: &str,
    turn_id: &str,
    previous: Option<&str>,
) -> Result<Checkpoint, WorkspaceError> {
    // Test builds can slow this down (`sleep(MS)`) to show what waits for it.
    #[cfg(feature = "failpoints")]
    fail::fail_point!("workspace.checkpoint");
    let top = git::toplevel(dir)
        .ok_or_else(|| WorkspaceError::NotAGitRepository(dir.display().to_string()))?;
    snapshot(&top, session_id, turn_id, previous).map(|(checkpoint, _)| checkpoint)
}

/// What [`restore`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The checkpoint of the files as they were before, named `undo` (restoring it
    /// undoes this restore).
    pub before: Checkpoint,
    /// The commit restored.
    pub commit: String,
    /// Paths the restore changed, at most [`MAX_FILES`].
    pub files: Vec<String>,
    /// How many more it changed than `files` lists.
    pub files_omitted: u64,
}

/// Puts the working tree at `dir` back to `turn_id`'s checkpoint of `session_id`:
/// first records the files as they are as checkpoint `undo` (parent `previous`),
/// then moves the working tree from that to the checkpoint, writing and deleting
/// only the files that differ. The checkout's index, `HEAD` and branches are not
/// touched; ignored files are left alone: a restore that would overwrite one is
/// refused (`CONFLICT`) before any file changes. Blocking.
pub fn restore(
    dir: &Path,
    session_id: &str,
    turn_id: &str,
    undo: &str,
    previous: Option<&str>,
) -> Result<Restored, WorkspaceError> {
    let top = git::toplevel(dir)
        .ok_or_else(|| WorkspaceError::NotAGitRepository(dir.display().to_string()))?;
    let target = ref_name(session_id, turn_id)
        .and_then(|name| git::commit_of(&top, &name))
        .ok_or_else(|| {
            WorkspaceError::NoSuchCheckpoint(format!(
                "no checkpoint of turn `{turn_id:.64}` in this session"
            ))
        })?;
    let (before, index) = snapshot(&top, session_id, undo, previous)?;
    let diff = git::run(
        &top,
        &[
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-status",
            "-z",
            &before.commit,
            &target,
        ],
    )?;
    refuse_ignored_in_the_way(&top, &diff)?;
    // A two-way read-tree from `before`, which the scratch index holds, to `target`,
    // updating the files (`-u`). `--reset` rather than `-m`: an entry git marked
    // racily clean when it wrote the index counts as modified to `-m`, which would
    // refuse a file changed in the same second; every file it could lose is in
    // `before`, and ignored ones were checked above.
    git::run_in_index(
        &top,
        &index.path,
        &["read-tree", "--reset", "-u", &before.commit, &target],
    )?;
    drop(index);
    let (files, files_omitted) = changed(&top, Some(&before.commit), &target)?;
    Ok(Restored {
        before,
        commit: target,
        files,
        files_omitted,
    })
}

/// Refuses (`CONFLICT`) a restore that would write where a file the repository
/// ignores is: `diff` is `diff-tree --name-status -z` from the snapshot of everything
/// not ignored to the target. A path the target adds that exists on disk, or whose
/// directory on the way is something other than a directory the restore removes,
/// is an ignored file (the snapshot holds every other one) or a link.
fn refuse_ignored_in_the_way(top: &Path, diff: &str) -> Result<(), WorkspaceError> {
    let mut fields = diff.split('\0').filter(|f| !f.is_empty());
    let mut added = Vec::new();
    let mut deleted = std::collections::HashSet::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        match status {
            "A" => added.push(path),
            "D" => {
                deleted.insert(path);
            }
            _ => {}
        }
    }
    for path in added {
        let in_the_way = |p: &str| std::fs::symlink_metadata(top.join(p)).is_ok();
        let mut blocked = in_the_way(path);
        let mut dir = Path::new(path).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            let name = d.to_string_lossy();
            if let Ok(meta) = std::fs::symlink_metadata(top.join(d)) {
                blocked |= !meta.is_dir() && !deleted.contains(name.as_ref());
            }
            dir = d.parent();
        }
        if blocked {
            return Err(WorkspaceError::Conflict(format!(
                "restoring would overwrite `{path}` (or a directory on its way), which the repository ignores; move it away first"
            )));
        }
    }
    Ok(())
}

/// Stages the whole working tree at `top` in a scratch index and records it as
/// checkpoint `id` of `session_id`; the checkpoint and the index, which holds its
/// tree with the working tree's stat data.
fn snapshot(
    top: &Path,
    session_id: &str,
    id: &str,
    previous: Option<&str>,
) -> Result<(Checkpoint, ScratchIndex), WorkspaceError> {
    let name = ref_name(session_id, id).ok_or_else(|| WorkspaceError::Git {
        command: "update-ref".into(),
        stderr: format!("`{session_id}` / `{id}` cannot name a checkpoint"),
    })?;
    let index = ScratchIndex::new(top, session_id)?;
    git::run_in_index(top, &index.path, &["add", "--all", "--", "."])?;
    let tree = git::run_in_index(top, &index.path, &["write-tree"])?
        .trim()
        .to_string();
    let parent = previous
        .and_then(|p| git::commit_of(top, p))
        .or_else(|| git::commit_of(top, "HEAD"));
    let message = format!("tandem checkpoint of {session_id} after {id}");
    let mut args = vec!["commit-tree", tree.as_str(), "-m", message.as_str()];
    if let Some(p) = parent.as_deref() {
        args.extend(["-p", p]);
    }
    let commit = git::run_committing(top, &args)?.trim().to_string();
    git::run(top, &["update-ref", &name, &commit])?;
    let (files, files_omitted) = changed(top, parent.as_deref(), &commit)?;
    let checkpoint = Checkpoint {
        commit,
        files,
        files_omitted,
    };
    Ok((checkpoint, index))
}

/// The paths that differ between `parent` (nothing, when there is none) and `commit`.
fn changed(
    top: &Path,
    parent: Option<&str>,
    commit: &str,
) -> Result<(Vec<String>, u64), WorkspaceError> {
    let listing = match parent {
        Some(p) => git::run(
            top,
            &[
                "diff-tree",
                "-r",
                "--no-renames",
                "--name-only",
                "-z",
                p,
                commit,
            ],
        )?,
        None => git::run(top, &["ls-tree", "-r", "--name-only", "-z", commit])?,
    };
    let mut files: Vec<String> = listing
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    let omitted = files.len().saturating_sub(MAX_FILES) as u64;
    files.truncate(MAX_FILES);
    Ok((files, omitted))
}

/// Makes the files of the fresh checkout at `dir` those of checkpoint `commit` (a
/// fork's new worktree): its index and `HEAD` stay as they are, so the checkpoint's
/// differences show as uncommitted changes. Blocking.
pub fn materialize(dir: &Path, commit: &str) -> Result<(), WorkspaceError> {
    let top = git::toplevel(dir)
        .ok_or_else(|| WorkspaceError::NotAGitRepository(dir.display().to_string()))?;
    let index = ScratchIndex::new(&top, "fork")?;
    // The scratch index is the checkout's, which a fresh checkout wrote from `HEAD`:
    // a two-way read-tree from there updates only the files that differ.
    git::run_in_index(
        &top,
        &index.path,
        &["read-tree", "--reset", "-u", "HEAD", commit],
    )?;
    Ok(())
}

/// Deletes every checkpoint of `session_id` in the repository at `dir` (when its
/// session is archived or its worktree discarded). Blocking.
pub fn remove_all(dir: &Path, session_id: &str) -> Result<(), WorkspaceError> {
    let Some(top) = git::toplevel(dir) else {
        return Ok(());
    };
    let Some(prefix) = ref_name(session_id, "x").map(|r| r.trim_end_matches('x').to_string())
    else {
        return Ok(());
    };
    let refs = git::run(&top, &["for-each-ref", "--format=%(refname)", &prefix])?;
    for name in refs.lines().filter(|l| l.starts_with(&prefix)) {
        git::run(&top, &["update-ref", "-d", name])?;
    }
    Ok(())
}

/// An index file of the checkpoint's own in the repository's git directory, seeded
/// from the checkout's index (so unchanged files are not hashed again); removed when
/// dropped.
struct ScratchIndex {
    path: PathBuf,
}

impl ScratchIndex {
    fn new(top: &Path, session_id: &str) -> Result<ScratchIndex, WorkspaceError> {
        let own = git::line(
            top,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        )?;
        let mut suffix = [0u8; 6];
        getrandom::fill(&mut suffix).map_err(|e| WorkspaceError::Io {
            path: "random".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let hex: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
        let path = PathBuf::from(format!("{own}.tandem-checkpoint-{session_id}-{hex}"));
        let scratch = ScratchIndex { path };
        match std::fs::copy(&own, &scratch.path) {
            Ok(_) => {}
            // A repository with nothing staged yet has no index: start empty.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(WorkspaceError::Io {
                    path: scratch.path.display().to_string(),
                    source,
                })
            }
        }
        Ok(scratch)
    }
}

impl Drop for ScratchIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        // `git add` leaves a lock file only when it dies mid-write.
        let mut lock = self.path.clone().into_os_string();
        lock.push(".lock");
        let _ = std::fs::remove_file(lock);
    }
}
