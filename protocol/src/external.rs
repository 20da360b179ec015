//! The CLI sessions already on the machine (`external.list`): Claude Code's and
//! Codex's own transcripts, found where this server's CLIs keep them, for sessions
//! whose working directory lies under the caller's workspace roots.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

/// Fields of `external.list` (the query of `GET /external-sessions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalListParams {
    /// Only sessions of this vendor (`claude`, `codex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Only sessions whose working directory is this one or lies under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// One CLI session found on the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalSession {
    /// The vendor whose CLI wrote it (`claude`, `codex`).
    pub vendor: String,
    /// The CLI's own session id (what it resumes by).
    pub vendor_session_id: String,
    /// Where the CLI worked.
    pub cwd: String,
    /// Its title, when the CLI gave it one; else its first prompt.
    pub title: String,
    /// Messages of the conversation: prompts, answers and tool calls.
    pub messages: u64,
    /// When it was last written to, epoch ms.
    pub last_activity: u64,
    /// The transcript's size, bytes.
    pub size_bytes: u64,
    /// Lines of the transcript that could not be read (skipped).
    pub skipped_lines: u64,
    /// The caller's tandem session that continues it, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
}

/// `external.list` reply: most recently active first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalListResult {
    /// The sessions.
    pub sessions: Vec<ExternalSession>,
}

/// Fields of `external.import` (the body of `POST /external-sessions/import`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalImportParams {
    /// The configured vendor whose CLI wrote it (`claude`, `codex`).
    pub vendor: String,
    /// The CLI's session id, as `external.list` gives it.
    #[schemars(length(min = 1))]
    pub vendor_session_id: String,
}
