//! `bench checkpoint`: what recording a turn's checkpoint costs, on a repository of
//! `--files` files (default 10,000) of which `--changed` (default 100) differ from
//! the previous checkpoint. It calls the very function a session runs on the blocking
//! pool after `turn_completed` ([`tandem_actors::workspace::checkpoint::record`]), so
//! the numbers are git's process starts, its index scan and hashing plus ours. Before
//! each of `--runs` checkpoints (after one warm-up) the same files are rewritten with
//! new content; prints the median and p99, for a worktree session and for a shared
//! session in the base checkout.

use std::path::Path;
use std::time::Instant;

use serde_json::json;
use tandem_actors::workspace::{checkpoint, worktree};

use super::args::Flags;
use super::gitstate::make_repo;
use super::report;
use super::stats::percentile;

/// Rewrites `changed` files of the checkout at `dir` with content of round `round`.
fn change(dir: &Path, changed: usize, round: usize) -> Result<(), String> {
    for i in 0..changed {
        let path = dir
            .join(format!("d{:02}", i % 100))
            .join(format!("f{i}.txt"));
        std::fs::write(path, format!("file {i}\nround {round}\nline three\n"))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn measure(dir: &Path, session: &str, changed: usize, runs: usize) -> Result<Vec<u32>, String> {
    let mut previous: Option<String> = None;
    let mut micros = Vec::with_capacity(runs);
    for round in 0..=runs {
        change(dir, changed, round)?;
        let turn = format!("turn_{round}");
        let start = Instant::now();
        let made = checkpoint::record(dir, session, &turn, previous.as_deref())
            .map_err(|e| e.to_string())?;
        let took = u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX);
        // Round 0 is the warm-up; its parent is HEAD, so it lists the same files.
        if round > 0 {
            micros.push(took);
        }
        if made.files.len() != changed {
            return Err(format!(
                "checkpoint {round} lists {} files, not {changed}",
                made.files.len()
            ));
        }
        previous = Some(made.commit);
    }
    micros.sort_unstable();
    Ok(micros)
}

/// Runs the mode.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let files: usize = flags.num("files", 10_000)?;
    let changed: usize = flags.num("changed", 100)?;
    let runs: usize = flags.num("runs", 50)?;
    flags.done()?;
    if changed == 0 || changed > files || changed > checkpoint::MAX_FILES {
        return Err(format!(
            "--changed must be 1..={}, and at most --files",
            checkpoint::MAX_FILES
        ));
    }
    let tmp = crate::TempDir::new("bench-checkpoint");
    let base = tmp.path().join("repo");
    report::note(&format!("making a repository of {files} files"));
    make_repo(&base, files)?;
    let wt_dir = tmp.path().join("worktree");
    worktree::create(&base, &wt_dir, "ses_benchcheckpoint", None).map_err(|e| e.to_string())?;
    for (label, dir, session) in [
        ("worktree", wt_dir.as_path(), "ses_benchcheckpoint"),
        ("shared", base.as_path(), "ses_benchshared"),
    ] {
        let micros = measure(dir, session, changed, runs)?;
        report::line(&json!({
            "mode": "checkpoint",
            "session": label,
            "files": files,
            "changed": changed,
            "runs": runs,
            "median_ms": f64::from(percentile(&micros, 50.0)) / 1000.0,
            "p99_ms": f64::from(percentile(&micros, 99.0)) / 1000.0,
        }));
    }
    Ok(())
}
