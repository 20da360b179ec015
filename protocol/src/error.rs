//! Error codes shared by `protocol_error` frames and REST `{error: {code, message}}` bodies.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A machine-readable error code. Clients branch on these; the message is for humans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The frame or body is not valid JSON, or not a JSON object.
    InvalidJson,
    /// The frame's `type` is missing or not one we know.
    UnknownMessageType,
    /// The request needs a `sessionId` and has none.
    SessionIdRequired,
    /// No session with that id exists.
    SessionNotFound,
    /// The session already runs a turn.
    RunInProgress,
    /// An interrupt was asked for but no turn runs.
    NoActiveRun,
    /// `chat.stop-task` without a `taskId`.
    TaskIdRequired,
    /// `chat.stop-task` for a task the session does not have.
    NoSuchTask,
    /// `chat.permission-response` for a request that is not pending (never raised,
    /// already answered, or withdrawn when its turn ended).
    NoSuchPermission,
    /// The caller may not see or act on that resource.
    AccessDenied,
    /// A field is missing, has the wrong type, or a value out of range.
    InvalidArgument,
    /// No vendor of that id is configured, or its CLI is not installed (or has no
    /// adapter in this build).
    VendorNotInstalled,
    /// The frame is larger than the server accepts.
    FrameTooLarge,
    /// The client sent too many bad frames or requests too fast.
    RateLimited,
    /// No valid token was presented.
    Unauthorized,
    /// Unknown REST path.
    NotFound,
    /// Something failed inside the server; the message says what.
    Internal,
    /// The request came from a web page of another origin (`Origin` header not the
    /// server's own and not allow-listed): what a hostile page's browser sends.
    OriginNotAllowed,
    /// The `Host` header names neither the bound address, `localhost`, nor an
    /// allow-listed name: a DNS-rebinding attempt or a misconfigured proxy.
    HostNotAllowed,
    /// A POST whose body is not declared `application/json` (a cross-site form or
    /// `text/plain` request a browser sends without asking).
    UnsupportedMediaType,
    /// The path exists but not with this method.
    MethodNotAllowed,
    /// A per-user, per-session or per-connection count limit is reached (sessions,
    /// connections, spawned sessions).
    LimitExceeded,
    /// The request is well formed but the target's state does not allow it now (a
    /// session already has a Worker, a proposal is already open or resolved, the
    /// Worker holds a delegation, a session in a pair cannot be handed off).
    Conflict,
    /// The session is not the Driver of a running pair (it has no Worker, or its pair
    /// was closed meanwhile).
    NotPaired,
    /// `pair.close` names a pair that does not exist (or the caller may not see).
    NoSuchPair,
    /// `proposal.respond` names a proposal the session does not have.
    NoSuchProposal,
    /// `answer_worker` or `question.answer` names a question the Worker does not have
    /// waiting (never asked, already answered, or timed out).
    NoSuchQuestion,
    /// `session.schedule-cancel` names a schedule the session does not have.
    NoSuchSchedule,
    /// `chat.queue-cancel` or `chat.queue-edit` names a message the session's queue
    /// does not hold (never queued, or already sent or cancelled).
    NoSuchQueuedMessage,
    /// A tool call names a tool that does not exist.
    UnknownTool,
    /// The tool exists but is not offered to this session: its role (Worker, spawned
    /// session, delegated turn) does not allow it, or it continues no other session.
    ToolNotAvailable,
    /// The session lives on another cluster node whose lease has lapsed (stopped, or
    /// unreachable): nothing can reach it until that node returns.
    NodeUnavailable,
    /// `chat.edit-send` to a session whose vendor cannot rewind its conversation (see
    /// the `rewind` capability in `GET /vendors`).
    RewindNotSupported,
    /// `chat.edit-send`'s `anchorSeq` is not the `user_message` of an ended turn of
    /// this session (or an earlier rewind already superseded it).
    InvalidAnchor,
    /// `chat.edit-send` to a Driver whose Worker still holds a delegation: rewinding
    /// now would drop the turn its result belongs to.
    DelegationInFlight,
    /// A message's attachment is malformed: bad base64, a media type the bytes do not
    /// match or that is not an image where an image is asked for, no bytes, both or
    /// neither of `data` and `uploadId`.
    InvalidAttachment,
    /// An upload id that this user never uploaded (or that was removed with its
    /// session).
    NoSuchUpload,
    /// A file or a message's attachments are larger than the server takes.
    AttachmentTooLarge,
    /// The session's vendor cannot take this kind of attachment (images to an ACP
    /// agent that does not advertise them).
    AttachmentNotSupported,
    /// A worktree was asked for (or the session's changes) but its `cwd` is not inside
    /// a git repository.
    NotAGitRepository,
    /// `session.merge` or `session.discard` for a session without a worktree of its own
    /// (a shared session, or one whose worktree was discarded).
    NotAWorktree,
    /// `session.merge`, `session.discard` or `session.restore` while the session runs
    /// a turn.
    SessionBusy,
    /// `session.restore` names a turn the session has no checkpoint of (REST 422: the
    /// session exists, the body names what it does not have).
    NoSuchCheckpoint,
    /// The base checkout has uncommitted changes to files the merge would touch; the
    /// error's `paths` lists them.
    BaseDirty,
    /// The merge conflicts; it was aborted and nothing changed. The error's `paths`
    /// lists the conflicting files.
    MergeConflict,
    /// The repository requires passing checks before a merge
    /// (`merge_requires_checks`) and the session's last ones did not all pass (or none
    /// ran); the message names them. `force: true` merges anyway.
    ChecksFailed,
    /// `session.push` was refused by the remote (or could not reach it); the message
    /// is git's.
    PushRefused,
    /// A file path leads outside the session's working directory (`..`, an absolute
    /// path, or a symlink pointing out).
    PathOutsideWorkspace,
    /// The file or directory asked for does not exist.
    NoSuchFile,
    /// The file is not UTF-8 text; the files routes do not return or take binary files.
    BinaryFile,
    /// The file is larger than the files routes return or take (2 MiB).
    FileTooLarge,
    /// `PUT .../files/content` whose `If-Match` no longer names the file's content (it
    /// changed in between), or without `If-Match` for a file that exists.
    PreconditionFailed,
    /// A request body stopped arriving: no byte for `--request-timeout-secs`. Nothing
    /// of the request was carried out, and the connection is closed.
    RequestTimeout,
}

impl ErrorCode {
    /// The HTTP status a REST answer with this code carries.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidJson
            | ErrorCode::UnknownMessageType
            | ErrorCode::SessionIdRequired
            | ErrorCode::TaskIdRequired
            | ErrorCode::InvalidArgument => 400,
            // Well formed, and within every rule the OpenAPI document states, but not
            // something this server can do: a vendor it does not have, an anchor that
            // is not a user message of the history, bytes that are not what they are
            // declared to be, an image to a vendor that takes none. These depend on
            // the server's configuration and state, which a schema cannot know.
            ErrorCode::InvalidAttachment
            | ErrorCode::AttachmentNotSupported
            | ErrorCode::VendorNotInstalled
            | ErrorCode::InvalidAnchor
            | ErrorCode::NoSuchCheckpoint
            | ErrorCode::RewindNotSupported => 422,
            ErrorCode::Unauthorized => 401,
            // A path leading outside the working directory (or into `.git`, or the
            // server's data) is where the files API never serves: forbidden, whatever
            // lies there.
            ErrorCode::AccessDenied
            | ErrorCode::OriginNotAllowed
            | ErrorCode::HostNotAllowed
            | ErrorCode::PathOutsideWorkspace => 403,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::SessionNotFound
            | ErrorCode::NoSuchTask
            | ErrorCode::NoSuchPermission
            | ErrorCode::NotFound => 404,
            ErrorCode::RunInProgress
            | ErrorCode::NoActiveRun
            | ErrorCode::Conflict
            | ErrorCode::NotPaired
            | ErrorCode::DelegationInFlight => 409,
            ErrorCode::NoSuchPair
            | ErrorCode::NoSuchProposal
            | ErrorCode::NoSuchQuestion
            | ErrorCode::NoSuchSchedule
            | ErrorCode::NoSuchQueuedMessage
            | ErrorCode::NoSuchUpload
            | ErrorCode::UnknownTool => 404,
            ErrorCode::ToolNotAvailable => 403,
            ErrorCode::FrameTooLarge | ErrorCode::AttachmentTooLarge => 413,
            ErrorCode::RateLimited | ErrorCode::LimitExceeded => 429,
            ErrorCode::Internal => 500,
            ErrorCode::NodeUnavailable => 503,
            // The directory is not in a repository: its state, not the request's
            // shape.
            ErrorCode::NotAGitRepository
            | ErrorCode::NotAWorktree
            | ErrorCode::SessionBusy
            | ErrorCode::BaseDirty
            | ErrorCode::MergeConflict
            | ErrorCode::ChecksFailed
            | ErrorCode::PushRefused => 409,
            ErrorCode::NoSuchFile => 404,
            ErrorCode::BinaryFile => 415,
            ErrorCode::FileTooLarge => 413,
            ErrorCode::PreconditionFailed => 412,
            ErrorCode::RequestTimeout => 408,
        }
    }
}

/// The body of every REST error: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The error itself.
    pub error: ErrorDetail,
}

/// Code and human-readable message of an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// Machine-readable code.
    pub code: ErrorCode,
    /// What went wrong, for a person.
    pub message: String,
    /// The files the error is about (`BASE_DIRTY`, `MERGE_CONFLICT`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    /// The wire names and REST statuses docs/PROTOCOL.md gives the codes added for
    /// typed refusals.
    #[test]
    fn typed_refusal_codes() {
        for (code, name, status) in [
            (ErrorCode::Conflict, "CONFLICT", 409),
            (ErrorCode::InvalidAnchor, "INVALID_ANCHOR", 422),
            (ErrorCode::DelegationInFlight, "DELEGATION_IN_FLIGHT", 409),
            (ErrorCode::RewindNotSupported, "REWIND_NOT_SUPPORTED", 422),
            (ErrorCode::NotPaired, "NOT_PAIRED", 409),
            (ErrorCode::NoSuchPair, "NO_SUCH_PAIR", 404),
            (ErrorCode::NoSuchProposal, "NO_SUCH_PROPOSAL", 404),
            (ErrorCode::NoSuchQuestion, "NO_SUCH_QUESTION", 404),
            (ErrorCode::NoSuchSchedule, "NO_SUCH_SCHEDULE", 404),
            (
                ErrorCode::NoSuchQueuedMessage,
                "NO_SUCH_QUEUED_MESSAGE",
                404,
            ),
            (ErrorCode::UnknownTool, "UNKNOWN_TOOL", 404),
            (ErrorCode::ToolNotAvailable, "TOOL_NOT_AVAILABLE", 403),
            (ErrorCode::NotAGitRepository, "NOT_A_GIT_REPOSITORY", 409),
            (ErrorCode::NotAWorktree, "NOT_A_WORKTREE", 409),
            (ErrorCode::SessionBusy, "SESSION_BUSY", 409),
            (ErrorCode::NoSuchCheckpoint, "NO_SUCH_CHECKPOINT", 422),
            (ErrorCode::BaseDirty, "BASE_DIRTY", 409),
            (ErrorCode::MergeConflict, "MERGE_CONFLICT", 409),
            (ErrorCode::ChecksFailed, "CHECKS_FAILED", 409),
            (ErrorCode::PushRefused, "PUSH_REFUSED", 409),
            (
                ErrorCode::PathOutsideWorkspace,
                "PATH_OUTSIDE_WORKSPACE",
                403,
            ),
            (ErrorCode::NoSuchFile, "NO_SUCH_FILE", 404),
            (ErrorCode::BinaryFile, "BINARY_FILE", 415),
            (ErrorCode::FileTooLarge, "FILE_TOO_LARGE", 413),
            (ErrorCode::PreconditionFailed, "PRECONDITION_FAILED", 412),
            (ErrorCode::RequestTimeout, "REQUEST_TIMEOUT", 408),
        ] {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                serde_json::Value::from(name)
            );
            assert_eq!(code.http_status(), status, "{name}");
        }
    }
}
