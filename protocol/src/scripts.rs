//! A worktree's scripts (`.tandem/worktree.toml`, or `conductor.json` /
//! `.cursor/worktrees.json`): `setup` once the worktree is made, `run` on request
//! (`session.run` / `session.run-stop`, its output read with `session.run-log`),
//! `archive` as the worktree goes. Each reports through `script` events.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

/// Which script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ScriptName {
    /// Prepares a new worktree (after `copy`); the session's first turn waits for it.
    Setup,
    /// The long-running process (a dev server) `session.run` starts.
    Run,
    /// Cleans up as the worktree is discarded or archived.
    Archive,
}

/// Where a script is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ScriptStatus {
    /// Started, or still running (`logTail` is its output so far).
    Running,
    /// Exited with code 0.
    Passed,
    /// Exited with another code, or could not start.
    Failed,
    /// Killed at its time limit (setup 30 minutes, archive 5).
    TimedOut,
    /// Stopped by `session.run-stop`, or with its session or the server.
    Stopped,
}

/// A `script` event: a script started, made progress or ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScriptReport {
    /// Which script.
    pub name: ScriptName,
    /// Where it is.
    pub status: ScriptStatus,
    /// Its exit code, once it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The end of its output so far (stdout and stderr as they interleaved), at most
    /// 8 KiB.
    pub log_tail: String,
}

/// Fields of `session.run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRunParams {
    /// The session whose repository declares a `run` script.
    pub session_id: SessionId,
}

/// Fields of `session.run-stop`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRunStopParams {
    /// The session.
    pub session_id: SessionId,
}

/// Fields of `session.run-log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRunLogParams {
    /// The session.
    pub session_id: SessionId,
}

/// Reply of `session.run` and `session.run-stop`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRunResult {
    /// The session.
    pub session_id: SessionId,
    /// Whether the run script is running now.
    pub running: bool,
    /// `TANDEM_PORT` of the script (the worktree's port), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// Reply of `session.run-log`: the run script's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRunLogResult {
    /// The session.
    pub session_id: SessionId,
    /// Whether the run script is running now.
    pub running: bool,
    /// How its last run ended (absent while it runs, or before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ScriptStatus>,
    /// Its exit code, once it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The output of its latest run (stdout and stderr as they interleaved): the last
    /// 1 MiB of it.
    pub log: String,
    /// Bytes of that run's output dropped from the front to keep it to 1 MiB.
    pub dropped_bytes: u64,
}
