//! The unified diff of a working directory against its base (worktree sessions) or
//! `HEAD` (shared), capped, with binary files reported instead of dumped.

use std::path::Path;

use tandem_protocol::workspace::{FileDiff, WorkspaceInfo};

use super::{git, state, WorkspaceError};

/// The diff of `path` (or of every changed file) in the working directory at `dir`,
/// at most `cap` bytes of it.
pub fn diff(
    dir: &Path,
    workspace: Option<&WorkspaceInfo>,
    path: Option<&str>,
    cap: usize,
) -> Result<FileDiff, WorkspaceError> {
    let top = git::toplevel(dir)
        .ok_or_else(|| WorkspaceError::NotAGitRepository(dir.display().to_string()))?;
    let path = path.map(str::trim).filter(|p| !p.is_empty());
    if let Some(p) = path {
        super::files::check_relative(p)?;
    }
    let against = state::against(&top, workspace);
    let label = match workspace {
        Some(ws) => ws.base.clone(),
        None => "HEAD".to_string(),
    };
    let mut text: Vec<u8> = Vec::new();
    let mut truncated = false;
    let mut args = vec![
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        "--no-renames",
        against.rev.as_str(),
        "--",
    ];
    if let Some(p) = path {
        args.push(p);
    }
    let (tracked, cut) = git::capped(&top, &args, cap)?;
    text.extend_from_slice(&tracked);
    truncated |= cut;
    if !truncated {
        truncated = untracked(&top, path, cap, &mut text)?;
    }
    let mut diff = String::from_utf8_lossy(&text).into_owned();
    if truncated {
        diff.push_str(FileDiff::TRUNCATION_MARKER);
    }
    let binary_files = binary_files(&diff);
    Ok(FileDiff {
        path: path.map(str::to_string),
        against: label,
        diff,
        truncated,
        binary_files,
    })
}

/// Appends the diffs of the untracked files at `top` (new files: diffs from nothing;
/// only `path` when one is named) to `text` while it is under `cap` bytes; true when
/// it was cut.
fn untracked(
    top: &Path,
    path: Option<&str>,
    cap: usize,
    text: &mut Vec<u8>,
) -> Result<bool, WorkspaceError> {
    let untracked = git::run(
        top,
        &["ls-files", "--others", "--exclude-standard", "-z", "--"],
    )?;
    for file in untracked.split('\0').filter(|f| !f.is_empty()) {
        if path.is_some_and(|p| p != file) {
            continue;
        }
        let left = cap.saturating_sub(text.len());
        let (piece, cut) = git::capped(
            top,
            &[
                "diff",
                "--no-index",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--",
                "/dev/null",
                file,
            ],
            left,
        )?;
        text.extend_from_slice(&piece);
        if cut {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The files a diff reports as binary (`Binary files a/x and b/x differ`).
fn binary_files(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|l| l.strip_prefix("Binary files "))
        .filter_map(|rest| rest.strip_suffix(" differ"))
        .filter_map(|rest| rest.rsplit(" and ").next())
        .map(|b| b.strip_prefix("b/").unwrap_or(b).to_string())
        .collect()
}
