//! `bench gitstate`: what computing a session's `git_state` at turn end costs, on a
//! repository of `--files` files (default 10,000) of which `--changed` (default 100)
//! are modified in a worktree session's worktree. It calls the very function a session
//! runs on the blocking pool after `turn_completed`
//! ([`tandem_actors::workspace::state::compute`]), which runs the `git` binary, so the
//! numbers are git's process starts and index scans plus our parsing. Prints the median
//! and p99 over `--runs` computations (after one warm-up), for the worktree session and
//! for a shared session in the base checkout with the same changes.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;
use tandem_actors::workspace::{state, worktree};

use super::args::Flags;
use super::report;
use super::stats::percentile;

pub(super) fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
        .status()
        .map_err(|e| format!("git {args:?}: {e}"))?
        .success();
    ok.then_some(())
        .ok_or_else(|| format!("git {args:?} failed"))
}

/// Writes `files` files of a few lines in 100 directories, commits them.
pub(super) fn make_repo(dir: &Path, files: usize) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    git(dir, &["init", "-q", "-b", "main"])?;
    for i in 0..files {
        let sub = dir.join(format!("d{:02}", i % 100));
        std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
        std::fs::write(
            sub.join(format!("f{i}.txt")),
            format!("file {i}\nline two\nline three\n"),
        )
        .map_err(|e| e.to_string())?;
    }
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "files"])
}

/// Changes `changed` files of the checkout at `dir` (one line replaced, one added).
fn change(dir: &Path, changed: usize) -> Result<(), String> {
    for i in 0..changed {
        let path = dir
            .join(format!("d{:02}", i % 100))
            .join(format!("f{i}.txt"));
        std::fs::write(path, format!("file {i}\nchanged\nline three\nadded\n"))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn measure(
    dir: &Path,
    workspace: Option<&tandem_protocol::workspace::WorkspaceInfo>,
    runs: usize,
) -> Result<(Vec<u32>, usize), String> {
    let first = state::compute(dir, workspace).map_err(|e| e.to_string())?;
    let mut micros = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let s = state::compute(dir, workspace).map_err(|e| e.to_string())?;
        micros.push(u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX));
        if s != first {
            return Err("the state changed between runs".into());
        }
    }
    micros.sort_unstable();
    Ok((micros, first.files.len()))
}

/// Runs the mode.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let files: usize = flags.num("files", 10_000)?;
    let changed: usize = flags.num("changed", 100)?;
    let runs: usize = flags.num("runs", 50)?;
    flags.done()?;
    let tmp = crate::TempDir::new("bench-gitstate");
    let base = tmp.path().join("repo");
    report::note(&format!("making a repository of {files} files"));
    make_repo(&base, files)?;
    let wt_dir = tmp.path().join("worktree");
    let ws =
        worktree::create(&base, &wt_dir, "ses_benchgitstate", None).map_err(|e| e.to_string())?;
    change(&wt_dir, changed)?;
    change(&base, changed)?;
    for (label, dir, workspace) in [
        ("worktree", wt_dir.as_path(), Some(&ws)),
        ("shared", base.as_path(), None),
    ] {
        let (micros, listed) = measure(dir, workspace, runs)?;
        report::line(&json!({
            "mode": "gitstate",
            "session": label,
            "files": files,
            "changed": changed,
            "listed": listed,
            "runs": runs,
            "median_ms": f64::from(percentile(&micros, 50.0)) / 1000.0,
            "p99_ms": f64::from(percentile(&micros, 99.0)) / 1000.0,
        }));
    }
    Ok(())
}
