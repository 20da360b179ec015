//! Params and results of the requests that read a session's state or act on its
//! files: what REST had alone until every REST route became a request of the table
//! in [`crate::operations`] (so a cluster forwards each as the typed request, and a
//! WebSocket client may send them too).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::ids::{SessionId, TurnId, UserId};
use crate::operations::{Refusal, Validate};
use crate::session::SessionInfo;
use crate::workspace::{DirListing, FileContent, FileDiff, FileSaved, GitState};

/// Fields of `session.get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionGetParams {
    /// The session.
    pub session_id: SessionId,
}

/// `session.get` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionGetResult {
    /// The session as it is now.
    pub session: SessionInfo,
}

/// Fields of `session.archive`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionArchiveParams {
    /// The session to archive.
    pub session_id: SessionId,
}

/// `session.archive` reply (and `DELETE /sessions/{id}`'s answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionArchiveResult {
    /// The archived session.
    pub session_id: SessionId,
    /// Always true.
    pub archived: bool,
}

/// Fields of `session.events` (and the query of `GET /sessions/{id}/events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventsParams {
    /// The session.
    pub session_id: SessionId,
    /// Events with `seq > after` (0 to 2^63−1).
    #[serde(default)]
    pub after: u64,
    /// Events per page, 1 to 5000 (default 1000).
    #[serde(default = "SessionEventsParams::default_limit")]
    pub limit: usize,
}

impl SessionEventsParams {
    /// The largest page.
    pub const MAX_LIMIT: usize = 5000;

    /// Page size when none is asked for.
    pub fn default_limit() -> usize {
        1000
    }
}

impl Validate for SessionEventsParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.after > crate::MAX_SEQ {
            return Err(Refusal::invalid(format!(
                "`after` must be at most {} (positions are never wrapped)",
                crate::MAX_SEQ
            )));
        }
        if self.limit == 0 || self.limit > Self::MAX_LIMIT {
            return Err(Refusal::invalid(format!(
                "limit must be 1 to {}",
                Self::MAX_LIMIT
            )));
        }
        Ok(())
    }
}

/// One stored event, exactly as it was sent (see [`crate::Event`]); kept as its
/// JSON text so a page is spliced, never re-encoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StoredEvent(pub Box<RawValue>);

impl PartialEq for StoredEvent {
    fn eq(&self, other: &StoredEvent) -> bool {
        self.0.get() == other.0.get()
    }
}

impl JsonSchema for StoredEvent {
    fn schema_name() -> Cow<'static, str> {
        "StoredEvent".into()
    }

    /// Events are an open set of kinds (docs/PROTOCOL.md), each with the fields
    /// every event has.
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "type": "object",
            "required": ["seq", "kind", "sessionId", "ts"],
            "properties": {
                "seq": {"type": "integer", "minimum": 1},
                "kind": {"type": "string"},
                "sessionId": {"type": "string"},
                "ts": {"type": "integer"},
                "turnId": {"type": "string"}
            }
        })
    }
}

/// `session.events` reply (and `GET /sessions/{id}/events`'s answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventsResult {
    /// Events after `after`, oldest first.
    pub events: Vec<StoredEvent>,
    /// The `seq` of the last event returned (or `after` when none).
    pub last_seq: u64,
    /// True when more events follow.
    pub has_more: bool,
}

/// Fields of `session.mcp-token`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMcpTokenParams {
    /// The session.
    pub session_id: SessionId,
}

/// `session.mcp-token` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionMcpTokenResult {
    /// Bearer token for `/mcp`, bound to the session.
    pub token: String,
    /// The `/mcp` endpoint of the node that holds the session, as its own agents reach
    /// it (tokens are known only there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Fields of `session.usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsageParams {
    /// The session.
    pub session_id: SessionId,
    /// Count only turns that ended at or after this time, epoch ms (default 0: all).
    #[serde(default)]
    pub since: u64,
}

/// `session.usage` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionUsageResult {
    /// Tokens and cost of the session and of its delegations.
    pub usage: crate::rest::UsageSummary,
}

/// Fields of `sessions.running`: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionsRunningParams {}

/// Fields of `user.get`: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserGetParams {}

/// `user.get` reply: the caller as the server knows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserGetResult {
    /// The caller's user id (`local` under `--auth none`).
    pub user_id: UserId,
    /// Whether the caller is an admin (may reassign sessions, see every session).
    pub admin: bool,
}

/// Fields of `vendors.list`: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VendorsListParams {}

/// Fields of `pairs.list`: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairsListParams {}

/// Fields of `chat.queue`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatQueueParams {
    /// The session.
    pub session_id: SessionId,
}

/// Fields of `session.schedules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSchedulesParams {
    /// The session.
    pub session_id: SessionId,
}

/// Fields of `session.changes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionChangesParams {
    /// The session.
    pub session_id: SessionId,
}

/// `session.changes` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionChangesResult {
    /// The working directory's changes, as its latest `git_state`.
    pub changes: GitState,
}

/// Fields of `session.diff`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiffParams {
    /// The session.
    pub session_id: SessionId,
    /// One changed file (relative to the working directory's top); absent: all.
    #[serde(default)]
    pub path: Option<String>,
}

/// `session.diff` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionDiffResult {
    /// The unified diff, capped.
    pub diff: FileDiff,
}

/// Fields of `session.files`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionFilesParams {
    /// The session.
    pub session_id: SessionId,
    /// `/`-separated, relative; empty or absent: the working directory itself.
    #[serde(default)]
    pub path: Option<String>,
}

/// `session.files` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionFilesResult {
    /// The directory's entries.
    pub listing: DirListing,
}

/// Fields of `session.file-read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionFileReadParams {
    /// The session.
    pub session_id: SessionId,
    /// The file, relative to the working directory.
    pub path: String,
}

impl Validate for SessionFileReadParams {
    fn validate(&self) -> Result<(), Refusal> {
        named_file(&self.path)
    }
}

/// `session.file-read` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionFileReadResult {
    /// The file's text and ETag.
    pub file: FileContent,
}

/// Fields of `session.file-write`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionFileWriteParams {
    /// The session.
    pub session_id: SessionId,
    /// The file, relative to the working directory.
    pub path: String,
    /// The file's new text (at most 2 MiB).
    pub content: String,
    /// The ETag the file was read with; the save is refused
    /// (`PRECONDITION_FAILED`) when the file changed since. Absent: a new file.
    #[serde(default)]
    pub if_match: Option<String>,
}

impl Validate for SessionFileWriteParams {
    fn validate(&self) -> Result<(), Refusal> {
        named_file(&self.path)
    }
}

/// `session.file-write` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionFileWriteResult {
    /// The saved file and its new ETag.
    pub saved: FileSaved,
}

/// A files request names a file, not the top directory.
fn named_file(path: &str) -> Result<(), Refusal> {
    if path.trim().is_empty() {
        return Err(Refusal::invalid("`path` names no file"));
    }
    Ok(())
}

/// Fields of `session.checkpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCheckpointsParams {
    /// The session.
    pub session_id: SessionId,
}

/// One turn's checkpoint, as its `checkpoint` event recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointInfo {
    /// The turn whose end it records.
    pub turn_id: TurnId,
    /// The checkpoint commit (`refs/tandem/checkpoints/<sessionId>/<turnId>`).
    pub commit: String,
    /// Paths that differ from the previous checkpoint, at most 500.
    pub files: Vec<String>,
    /// How many more paths differ than `files` lists.
    #[serde(default)]
    pub files_omitted: u64,
    /// When it was recorded (ms since the epoch).
    pub created_at: u64,
    /// The `seq` of its `checkpoint` event.
    pub seq: u64,
}

/// `session.checkpoints` reply (`GET /sessions/{id}/checkpoints`): oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCheckpointsResult {
    /// The session.
    pub session_id: SessionId,
    /// Its checkpoints, oldest first.
    pub checkpoints: Vec<CheckpointInfo>,
}

/// Fields of `session.restore`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRestoreParams {
    /// The session.
    pub session_id: SessionId,
    /// The checkpoint to put the files back to: a `turnId` that
    /// `session.checkpoints` lists.
    pub turn_id: TurnId,
}

/// `session.restore` reply (`POST /sessions/{id}/restore`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRestoreResult {
    /// The session.
    pub session_id: SessionId,
    /// The checkpoint restored.
    pub turn_id: TurnId,
    /// Its commit.
    pub commit: String,
    /// Paths the restore changed, at most 500.
    pub files: Vec<String>,
    /// How many more it changed than `files` lists.
    pub files_omitted: u64,
    /// The checkpoint of the files as they were just before (a `turnId` of the form
    /// `restore_<seq>`): restoring it undoes this restore.
    pub undo: TurnId,
}
