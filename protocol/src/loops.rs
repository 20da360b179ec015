//! Loops until done (`loop.start`, `loop.stop`): a session works toward a goal turn
//! after turn, each turn followed by a check (a command, or a judge's verdict), until
//! the check passes, `maxIterations` turns ran, someone stops it or interrupts a turn.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

/// Most iterations a loop may run.
pub const MAX_ITERATIONS: u32 = 100;
/// Longest pause between iterations, seconds.
pub const MAX_COOLDOWN_SECONDS: u64 = 86_400;
/// How long a check command may run unless the loop says, seconds.
pub const DEFAULT_CHECK_TIMEOUT: u64 = 600;
/// Longest a check command may run, seconds.
pub const MAX_CHECK_TIMEOUT: u64 = 3_600;
/// Longest goal, command or judge prompt, in characters.
pub const MAX_TEXT_CHARS: usize = 20_000;

/// How an iteration is checked: exactly one of `command` and `judge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoopCheck {
    /// A shell command run in the session's working directory (confined as the
    /// agents are): exit status 0 passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 20000))]
    pub command: Option<String>,
    /// How long the command may run, 1 to 3600 seconds (default 600); killed after.
    #[serde(
        default,
        deserialize_with = "crate::strict::whole_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: Option<u64>,
    /// A judge: a turn in a separate, read-only session answers PASS or FAIL with
    /// its reasons.
    #[serde(
        default,
        deserialize_with = "crate::strict::object_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub judge: Option<JudgeCheck>,
}

/// A judge of a loop's iterations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JudgeCheck {
    /// The judge's vendor (default: the session's); another vendor judges another's
    /// work with fresh eyes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// What the judge looks for; it also gets the goal and the iteration's answer.
    #[schemars(length(min = 1, max = 20000))]
    pub prompt: String,
}

/// Fields of `loop.start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoopStartParams {
    /// The session that works toward the goal; idle, with no loop running.
    pub session_id: SessionId,
    /// What each iteration works toward: the first line of each iteration's message.
    #[schemars(length(min = 1, max = 20000))]
    pub goal: String,
    /// How each iteration is checked.
    #[serde(deserialize_with = "crate::strict::object")]
    pub check: LoopCheck,
    /// Most iterations, 1 to 100.
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(min = 1, max = 100))]
    pub max_iterations: u32,
    /// Pause after a failed check before the next iteration, 0 to 86400 seconds
    /// (default 0).
    #[serde(
        default,
        deserialize_with = "crate::strict::whole_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0, max = 86400))]
    pub cooldown_seconds: Option<u64>,
}

/// Body of `POST /sessions/{id}/loop` (as `loop.start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoopBody {
    /// See [`LoopStartParams::goal`].
    #[schemars(length(min = 1, max = 20000))]
    pub goal: String,
    /// See [`LoopStartParams::check`].
    #[serde(deserialize_with = "crate::strict::object")]
    pub check: LoopCheck,
    /// See [`LoopStartParams::max_iterations`].
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(min = 1, max = 100))]
    pub max_iterations: u32,
    /// See [`LoopStartParams::cooldown_seconds`].
    #[serde(
        default,
        deserialize_with = "crate::strict::whole_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0, max = 86400))]
    pub cooldown_seconds: Option<u64>,
}

/// `loop.start` reply: the loop, as the session shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoopStartResult {
    /// The session.
    pub session_id: SessionId,
    /// The loop.
    #[serde(rename = "loop")]
    pub loop_info: LoopInfo,
}

/// Fields of `loop.stop`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoopStopParams {
    /// The session whose loop ends (a turn under way goes on).
    pub session_id: SessionId,
}

/// `loop.stop` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoopStopResult {
    /// The session.
    pub session_id: SessionId,
    /// The loop stopped.
    pub loop_id: String,
    /// Iterations whose turn started.
    pub iterations: u32,
}

/// Where a running loop is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LoopPhase {
    /// An iteration's turn runs (or waits for the session to be free).
    Turn,
    /// The iteration's check runs.
    Check,
    /// Waiting `cooldownSeconds` before the next iteration.
    Cooldown,
}

/// A running loop, on the session (`SessionInfo.loop`) and `loop.start`'s reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoopInfo {
    /// Its id (`loop_…`).
    pub loop_id: String,
    /// Its goal.
    pub goal: String,
    /// The iteration under way, from 1.
    pub iteration: u32,
    /// Its last iteration.
    pub max_iterations: u32,
    /// Where it is.
    pub phase: LoopPhase,
    /// With phase `cooldown`: when the next iteration starts, epoch ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_at: Option<u64>,
}

/// An iteration's check, as `loop_iteration` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoopCheckOutcome {
    /// Whether it passed.
    pub passed: bool,
    /// What it said: the command's output (its last lines), or the judge's reasons.
    pub output: String,
    /// The command's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The judge's session, for a judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_session_id: Option<SessionId>,
}

/// Why a loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LoopEndReason {
    /// The check passed.
    Passed,
    /// `maxIterations` iterations ran and the last check failed.
    MaxIterations,
    /// `loop.stop`.
    Stopped,
    /// A person interrupted an iteration's turn.
    Interrupted,
    /// An iteration's turn failed, or its check could not run.
    Failed,
}
