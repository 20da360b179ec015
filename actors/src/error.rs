//! Errors the runtime returns to callers; each maps onto a wire [`ErrorCode`].

use tandem_protocol::{ErrorCode, PairId, RequestId, SessionId, UserId};

/// Longest id a session lookup accepts (ours are 28 bytes).
pub const MAX_ID_BYTES: usize = 128;

/// Why a runtime operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No session with that id.
    #[error("session {0} not found")]
    SessionNotFound(SessionId),
    /// An id longer than any session's (`SESSION_NOT_FOUND`); not echoed: an error
    /// must not be as large as the garbage it answers.
    #[error("no session has an id of {0} bytes (ids have at most {max})", max = MAX_ID_BYTES)]
    IdTooLong(usize),
    /// The caller may not act on the session.
    #[error("access denied to session {0}")]
    AccessDenied(String),
    /// The session's owner was revoked (`tandem user revoke`): it takes no command
    /// until an admin reassigns (`ownerId`) or archives it (`ACCESS_DENIED`).
    #[error("the owner of session {session}, user `{owner}`, was revoked; an admin may reassign it (ownerId) or archive it")]
    OwnerRevoked {
        /// The session refused.
        session: SessionId,
        /// Its revoked owner.
        owner: UserId,
    },
    /// A turn already runs, so this one cannot start now (`RUN_IN_PROGRESS`).
    #[error("session {0} already runs a turn")]
    RunInProgress(SessionId),
    /// Background work of the session still runs, so it cannot be rewound now
    /// (`RUN_IN_PROGRESS`).
    #[error("session {0} still runs background work; stop it first")]
    BackgroundRuns(SessionId),
    /// An interrupt found no turn running (`NO_ACTIVE_RUN`).
    #[error("session {0} has no turn running")]
    NoActiveRun(SessionId),
    /// The session lists no background task with that id (`NO_SUCH_TASK`).
    #[error("session has no background task {0}")]
    NoSuchTask(String),
    /// The session has no scheduled message with that id.
    #[error("no scheduled message {0}")]
    NoSuchSchedule(String),
    /// The session's queue holds no message with that id.
    #[error("no queued message {0}")]
    NoSuchQueuedMessage(String),
    /// No pending permission request with that id.
    #[error("no pending permission request {0}")]
    NoSuchPermission(RequestId),
    /// No question of that id waits for an answer (`NO_SUCH_QUESTION`): never asked,
    /// or answered (or timed out) already.
    #[error("no question {0} waits for an answer (unknown, or answered already)")]
    NoSuchQuestion(String),
    /// Nothing of that id exists for the caller (`NOT_FOUND`): a push subscription.
    #[error("{0}")]
    Missing(String),
    /// A pairing code that is unknown, used or expired (`UNAUTHORIZED`); says which.
    #[error("{0}")]
    PairingRefused(String),
    /// The vendor cannot be used here.
    #[error("vendor {0} is not installed")]
    VendorNotInstalled(String),
    /// A field or value is not acceptable.
    #[error("{0}")]
    InvalidArgument(String),
    /// A well-formed value this server cannot use, for a reason of its configuration,
    /// disk or clock that the request's shape cannot show: a working directory outside
    /// the caller's roots, a vendor, node or user it does not have, an upload the
    /// caller never made, a time outside the schedulable window. The WebSocket
    /// reports `code` as for any refusal of that kind; REST answers 422 (not the
    /// code's usual status), so that a request the OpenAPI document allows and the
    /// server refuses says it is the server's state, not the request's shape.
    #[error("{message}")]
    Unusable {
        /// The code reported (`INVALID_ARGUMENT`, `NO_SUCH_UPLOAD`).
        code: ErrorCode,
        /// What cannot be used, and why.
        message: String,
    },
    /// The database cannot be written at all (checked at start).
    #[error("the database {} cannot be written: {reason}", path.display())]
    Unwritable {
        /// The database file, named in the message.
        path: std::path::PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// A write was not committed; nothing of it was acknowledged or shown.
    #[error("the store could not commit: {0}")]
    NotCommitted(String),
    /// A SQLite call failed (`INTERNAL`); the message carries SQLite's text.
    #[error("storage error: {0}")]
    Store(#[from] rusqlite::Error),
    /// A file or directory could not be used.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// No secret could be generated (the OS random generator failed).
    #[error(transparent)]
    Random(#[from] crate::clock::RandomError),
    /// The data directory or a file in it could not be used; names the path.
    #[error("{path}: {source}")]
    DataDir {
        /// The directory or file, named in the message.
        path: std::path::PathBuf,
        /// What the OS said (permission denied, not a directory, ...).
        source: std::io::Error,
    },
    /// A per-user limit is reached (`LIMIT_EXCEEDED`).
    #[error("{0}")]
    LimitExceeded(String),
    /// The session's state does not allow the request now (`CONFLICT`): the message
    /// says what stands in the way.
    #[error("{0}")]
    Conflict(String),
    /// A pair operation was refused or failed.
    #[error(transparent)]
    Pair(#[from] PairError),
    /// A proposal could not be made, accepted or declined.
    #[error(transparent)]
    Proposal(#[from] ProposalError),
    /// A workspace operation was refused or failed.
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
    /// An actor that should be alive is gone (the server is shutting down).
    #[error("internal error: {0}")]
    Internal(String),
    /// The session's vendor cannot rewind its conversation, or the rewind itself
    /// failed in the vendor (`REWIND_NOT_SUPPORTED`); the message says which.
    #[error("{0}")]
    RewindNotSupported(String),
    /// `chat.edit-send`'s anchor is not a user message of an ended, live turn of the
    /// session (`INVALID_ANCHOR`); the message says what it is instead.
    #[error("{0}")]
    InvalidAnchor(String),
    /// The session is a Driver whose Worker holds a delegation
    /// (`DELEGATION_IN_FLIGHT`).
    #[error("session {0} has a delegation in flight; wait for its result or interrupt the Worker")]
    DelegationInFlight(String),
    /// An attachment is malformed (`INVALID_ATTACHMENT`).
    #[error("{0}")]
    InvalidAttachment(String),
    /// No upload with that id for this user (`NO_SUCH_UPLOAD`).
    #[error("no upload {0}")]
    NoSuchUpload(String),
    /// A file or a message's attachments weigh too much (`ATTACHMENT_TOO_LARGE`).
    #[error("{0}")]
    AttachmentTooLarge(String),
    /// The session's vendor cannot take this attachment (`ATTACHMENT_NOT_SUPPORTED`).
    #[error("{0}")]
    AttachmentNotSupported(String),
    /// Another cluster node refused a pair message (to a Worker or a pair there);
    /// its code and message, passed on unchanged.
    #[error("{message}")]
    Remote {
        /// The other node's error code.
        code: ErrorCode,
        /// Its message.
        message: String,
    },
    /// A message to another cluster node went out and no answer came back (timed out,
    /// or the connection broke): that node may have acted on it (`NODE_UNAVAILABLE`).
    #[error("node {node} did not answer for session {session}; it may have acted")]
    NoAnswer {
        /// The session asked about.
        session: SessionId,
        /// The node asked.
        node: String,
    },
    /// The session lives on a cluster node whose lease has lapsed (`NODE_UNAVAILABLE`).
    #[error("session {session} is on node {node}, which is unavailable")]
    NodeUnavailable {
        /// The session asked for.
        session: SessionId,
        /// The node it is pinned to.
        node: String,
    },
}

impl RuntimeError {
    /// The wire code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            RuntimeError::SessionNotFound(_) | RuntimeError::IdTooLong(_) => {
                ErrorCode::SessionNotFound
            }
            RuntimeError::Missing(_) => ErrorCode::NotFound,
            RuntimeError::PairingRefused(_) => ErrorCode::Unauthorized,
            RuntimeError::AccessDenied(_) | RuntimeError::OwnerRevoked { .. } => {
                ErrorCode::AccessDenied
            }
            RuntimeError::RunInProgress(_) | RuntimeError::BackgroundRuns(_) => {
                ErrorCode::RunInProgress
            }
            RuntimeError::NoActiveRun(_) => ErrorCode::NoActiveRun,
            RuntimeError::NoSuchTask(_) => ErrorCode::NoSuchTask,
            RuntimeError::NoSuchPermission(_) => ErrorCode::NoSuchPermission,
            RuntimeError::NoSuchQuestion(_) => ErrorCode::NoSuchQuestion,
            RuntimeError::NoSuchSchedule(_) => ErrorCode::NoSuchSchedule,
            RuntimeError::NoSuchQueuedMessage(_) => ErrorCode::NoSuchQueuedMessage,
            RuntimeError::VendorNotInstalled(_) => ErrorCode::VendorNotInstalled,
            RuntimeError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            RuntimeError::Unusable { code, .. } => *code,
            RuntimeError::LimitExceeded(_) => ErrorCode::LimitExceeded,
            RuntimeError::Conflict(_) => ErrorCode::Conflict,
            RuntimeError::NodeUnavailable { .. } | RuntimeError::NoAnswer { .. } => {
                ErrorCode::NodeUnavailable
            }
            RuntimeError::Remote { code, .. } => *code,
            RuntimeError::RewindNotSupported(_) => ErrorCode::RewindNotSupported,
            RuntimeError::InvalidAnchor(_) => ErrorCode::InvalidAnchor,
            RuntimeError::DelegationInFlight(_) => ErrorCode::DelegationInFlight,
            RuntimeError::InvalidAttachment(_) => ErrorCode::InvalidAttachment,
            RuntimeError::NoSuchUpload(_) => ErrorCode::NoSuchUpload,
            RuntimeError::AttachmentTooLarge(_) => ErrorCode::AttachmentTooLarge,
            RuntimeError::AttachmentNotSupported(_) => ErrorCode::AttachmentNotSupported,
            RuntimeError::Pair(e) => e.code(),
            RuntimeError::Proposal(e) => e.code(),
            RuntimeError::Workspace(e) => e.code(),
            RuntimeError::Store(_)
            | RuntimeError::Io(_)
            | RuntimeError::Random(_)
            | RuntimeError::DataDir { .. }
            | RuntimeError::Internal(_)
            | RuntimeError::Unwritable { .. }
            | RuntimeError::NotCommitted(_) => ErrorCode::Internal,
        }
    }
}

impl RuntimeError {
    /// A well-formed value this server cannot use ([`RuntimeError::Unusable`] with
    /// `INVALID_ARGUMENT`).
    pub fn unusable(message: impl Into<String>) -> Self {
        RuntimeError::Unusable {
            code: ErrorCode::InvalidArgument,
            message: message.into(),
        }
    }

    /// The HTTP status of a REST answer with this error: its code's, but 422 for
    /// [`RuntimeError::Unusable`].
    pub fn http_status(&self) -> u16 {
        match self {
            RuntimeError::Unusable { .. } => 422,
            RuntimeError::Workspace(e) => e.http_status(),
            _ => self.code().http_status(),
        }
    }

    /// The files the error is about (`BASE_DIRTY`, `MERGE_CONFLICT`), for the error's
    /// `paths`.
    pub fn paths(&self) -> Option<Vec<String>> {
        match self {
            RuntimeError::Workspace(e) => e.paths(),
            _ => None,
        }
    }
}

impl From<actix::MailboxError> for RuntimeError {
    fn from(e: actix::MailboxError) -> Self {
        RuntimeError::Internal(format!("actor unavailable: {e}"))
    }
}

/// Why a pair could not be created, directed or closed.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    /// No pair with that id runs (`NO_SUCH_PAIR`).
    #[error("no pair {0}")]
    NoSuchPair(PairId),
    /// The session directs no Worker (`NOT_PAIRED`).
    #[error("this session has no Worker; send_to_partner creates one")]
    NoWorker,
    /// The session's pair stopped running meanwhile (`NOT_PAIRED`).
    #[error("the pair is gone; call send_to_partner again for a new Worker")]
    Gone,
    /// The pair was closed before the request reached it (`NOT_PAIRED`).
    #[error("the pair was closed")]
    Closed,
    /// The pair was closed while the caller waited for the Worker (`NOT_PAIRED`).
    #[error("the pair was closed before the Worker answered")]
    ClosedBeforeAnswer,
    /// The Worker session no longer exists (`NOT_PAIRED`).
    #[error("the Worker session is gone")]
    WorkerGone,
    /// The session asks a Driver but is in no pair (never was, or its pair was closed)
    /// (`NOT_PAIRED`).
    #[error("this session has no Driver: it is in no pair, or its pair was closed")]
    NoDriver,
    /// A Worker's Driver (or its pair) no longer exists, so nobody can answer its
    /// question (`NOT_PAIRED`).
    #[error("your Driver is gone; nobody can answer, so decide yourself")]
    DriverGone,
    /// The caller is the Worker, and only the Driver directs (`TOOL_NOT_AVAILABLE`).
    #[error("only the Driver may direct the pair; this session is the Worker")]
    NotDriver,
    /// The session is a Worker, or a Driver asked to be some pair's Worker
    /// (`CONFLICT`).
    #[error("this session already belongs to a pair: a Worker has no Workers of its own, and a Driver is nobody's Worker")]
    AlreadyPaired,
    /// The Driver already has a Worker of that name (`CONFLICT`).
    #[error("this Driver already has a Worker named `{0}`")]
    NameTaken(String),
    /// The Driver has as many Workers as it may (`LIMIT_EXCEEDED`).
    #[error("a Driver may have at most {0} Workers; close one with close_partner first")]
    TooManyWorkers(usize),
    /// A Worker name outside the allowed form (`INVALID_ARGUMENT`).
    #[error("a Worker name is 1 to 32 letters, digits, `-`, `_` or `.`, starting with a letter or digit and not with `ses_`")]
    BadWorkerName,
    /// `worker` names none of the Driver's Workers (`INVALID_ARGUMENT`).
    #[error("no Worker `{name}`; your Workers: {workers}")]
    NoSuchWorker {
        /// What the caller named.
        name: String,
        /// The Driver's Workers, `name (session id)`, comma-separated.
        workers: String,
    },
    /// The Driver has several Workers and the call named none (`INVALID_ARGUMENT`).
    #[error("you have several Workers ({0}): say which with `worker`")]
    WhichWorker(String),
    /// A spawned session may not drive a pair (`CONFLICT`).
    #[error("a spawned session cannot drive a pair")]
    SpawnedDriver,
    /// The pair is being dissolved already (`CONFLICT`).
    #[error("the pair is already closed")]
    AlreadyClosed,
    /// One delegation at a time (`CONFLICT`).
    #[error(
        "the Worker already holds a delegation; wait for its result, check it with \
         read_partner, or stop it with interrupt_partner"
    )]
    DelegationInFlight,
    /// The Worker runs a turn of its own (`RUN_IN_PROGRESS`).
    #[error(
        "the Worker is busy with a turn of its own; wait for it or stop it with interrupt_partner"
    )]
    WorkerBusy,
    /// The Worker refused the delegated turn or the interrupt; the code is the
    /// Worker's.
    #[error("the Worker could not start: {0}")]
    WorkerRefused(Box<RuntimeError>),
    /// The Worker refused an interrupt; the code is the Worker's.
    #[error("{0}")]
    Worker(Box<RuntimeError>),
    /// An actor of the pair is gone (the server is shutting down) (`INTERNAL`).
    #[error("the pair is unavailable: {0}")]
    Unavailable(String),
}

impl PairError {
    /// The wire code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            PairError::NoSuchPair(_) => ErrorCode::NoSuchPair,
            PairError::NoWorker
            | PairError::Gone
            | PairError::Closed
            | PairError::ClosedBeforeAnswer
            | PairError::WorkerGone
            | PairError::DriverGone
            | PairError::NoDriver => ErrorCode::NotPaired,
            PairError::NotDriver => ErrorCode::ToolNotAvailable,
            PairError::BadWorkerName
            | PairError::NoSuchWorker { .. }
            | PairError::WhichWorker(_) => ErrorCode::InvalidArgument,
            PairError::TooManyWorkers(_) => ErrorCode::LimitExceeded,
            PairError::AlreadyPaired
            | PairError::NameTaken(_)
            | PairError::SpawnedDriver
            | PairError::AlreadyClosed
            | PairError::DelegationInFlight => ErrorCode::Conflict,
            PairError::WorkerBusy => ErrorCode::RunInProgress,
            PairError::WorkerRefused(e) | PairError::Worker(e) => e.code(),
            PairError::Unavailable(_) => ErrorCode::Internal,
        }
    }
}

impl From<actix::MailboxError> for PairError {
    fn from(e: actix::MailboxError) -> Self {
        PairError::Unavailable(e.to_string())
    }
}

/// Why a Worker proposal could not be made, accepted or declined.
#[derive(Debug, thiserror::Error)]
pub enum ProposalError {
    /// The session has a Worker already (`CONFLICT`).
    #[error("this session already has a Worker; use send_to_partner")]
    AlreadyPaired,
    /// Only a session on its own, in a turn of its own, may propose (`CONFLICT`).
    #[error("only a session without a Worker can propose one")]
    NotAlone,
    /// One open proposal at a time (`CONFLICT`).
    #[error("a Worker proposal is already open; wait for it to be resolved")]
    AlreadyOpen,
    /// The session has no proposal with that id (`NO_SUCH_PROPOSAL`).
    #[error("no proposal {0} in this session")]
    NotFound(String),
    /// The proposal was accepted or declined already (`CONFLICT`).
    #[error("this proposal was already resolved")]
    AlreadyResolved,
}

impl ProposalError {
    /// The wire code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ProposalError::NotFound(_) => ErrorCode::NoSuchProposal,
            ProposalError::AlreadyPaired
            | ProposalError::NotAlone
            | ProposalError::AlreadyOpen
            | ProposalError::AlreadyResolved => ErrorCode::Conflict,
        }
    }
}

/// Why `spawn_sessions` refused or stopped.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// Children cannot spawn (`TOOL_NOT_AVAILABLE`).
    #[error("spawned sessions cannot spawn sessions")]
    Nested,
    /// Too few or too many entries in one call (`INVALID_ARGUMENT`).
    #[error("sessions must hold 1 to {max} entries")]
    Count {
        /// The most one call may ask for.
        max: usize,
    },
    /// An entry lacks its title or prompt (`INVALID_ARGUMENT`).
    #[error("sessions[{index}].{field} is required")]
    MissingField {
        /// The entry's 0-based index in `sessions`, named in the message.
        index: usize,
        /// `title` or `prompt`.
        field: &'static str,
    },
    /// The parent would have more children than allowed (`LIMIT_EXCEEDED`).
    #[error("a session may spawn at most {max} sessions; {existing} exist already")]
    TooMany {
        /// Children one session may have.
        max: usize,
        /// Children it has already; with the new ones they would pass `max`.
        existing: usize,
    },
    /// The first child could not be created; nothing was started. The code is the
    /// creation's.
    #[error(transparent)]
    Create(RuntimeError),
    /// A later child could not be created; the ones before it were started. The code
    /// is the creation's.
    #[error(
        "session {number} of {total} could not be created ({source}); the {} created before it \
         were started: {}",
        started.len(),
        started.join(", ")
    )]
    Partial {
        /// Which one failed (1-based).
        number: usize,
        /// How many were asked for.
        total: usize,
        /// Why.
        source: Box<RuntimeError>,
        /// The children created and started before it.
        started: Vec<SessionId>,
    },
}

impl SpawnError {
    /// The wire code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            SpawnError::Nested => ErrorCode::ToolNotAvailable,
            SpawnError::Count { .. } | SpawnError::MissingField { .. } => {
                ErrorCode::InvalidArgument
            }
            SpawnError::TooMany { .. } => ErrorCode::LimitExceeded,
            SpawnError::Create(e) => e.code(),
            SpawnError::Partial { source, .. } => source.code(),
        }
    }
}

/// Why an agent tool call failed. MCP answers it as an `isError` result whose text is
/// the message and whose `structuredContent` carries the code; `tool.call` as
/// `{result: message, isError: true, code}`.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// No tool of that name (`UNKNOWN_TOOL`).
    #[error("unknown tool `{0}`")]
    Unknown(String),
    /// The tool is not offered to the calling session; the message says why
    /// (`TOOL_NOT_AVAILABLE`).
    #[error("{0}")]
    NotOffered(String),
    /// The arguments do not fit the tool's schema (`INVALID_ARGUMENT`).
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments {
        /// The tool's name, named in the message.
        tool: &'static str,
        /// What serde said (names the field).
        reason: String,
    },
    /// A required text argument is empty (`INVALID_ARGUMENT`).
    #[error("{0} is required")]
    Required(&'static str),
    /// The caller's position forbids the call: a Worker, a spawned session, a
    /// delegated turn (`TOOL_NOT_AVAILABLE`).
    #[error("{0}")]
    NotAllowed(&'static str),
    /// The requested Worker vendor is not installed (`VENDOR_NOT_INSTALLED`).
    #[error("Worker vendor `{0}` is not installed")]
    VendorNotInstalled(String),
    /// No vendor is installed at all (`VENDOR_NOT_INSTALLED`).
    #[error("no coding agent is installed for a Worker")]
    NoVendor,
    /// The runtime is gone (`INTERNAL`).
    #[error("the server is shutting down")]
    ShuttingDown,
    /// A pair operation failed; the code is the [`PairError`]'s.
    #[error(transparent)]
    Pair(#[from] PairError),
    /// A proposal could not be made or answered; the code is the [`ProposalError`]'s.
    #[error(transparent)]
    Proposal(#[from] ProposalError),
    /// `spawn_sessions` refused or stopped; the code is the [`SpawnError`]'s.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// Any other refusal of the runtime.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl ToolError {
    /// The wire code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::Unknown(_) => ErrorCode::UnknownTool,
            ToolError::NotOffered(_) | ToolError::NotAllowed(_) => ErrorCode::ToolNotAvailable,
            ToolError::InvalidArguments { .. } | ToolError::Required(_) => {
                ErrorCode::InvalidArgument
            }
            ToolError::VendorNotInstalled(_) | ToolError::NoVendor => ErrorCode::VendorNotInstalled,
            ToolError::ShuttingDown => ErrorCode::Internal,
            ToolError::Pair(e) => e.code(),
            ToolError::Proposal(e) => e.code(),
            ToolError::Spawn(e) => e.code(),
            ToolError::Runtime(e) => e.code(),
        }
    }
}

impl From<actix::MailboxError> for ToolError {
    fn from(e: actix::MailboxError) -> Self {
        ToolError::Runtime(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every typed refusal names its own code; `INVALID_ARGUMENT` is left for malformed
    /// arguments. (The e2e `error_codes` tests show the ones a client can provoke at
    /// will; the `NOT_PAIRED` variants need a pair to vanish mid-call.)
    #[test]
    fn each_variant_has_its_code() {
        let worker = || Box::new(RuntimeError::NoActiveRun("w".into()));
        let cases: Vec<(ErrorCode, ErrorCode)> = vec![
            (
                PairError::NoSuchPair("p".into()).code(),
                ErrorCode::NoSuchPair,
            ),
            (PairError::NoWorker.code(), ErrorCode::NotPaired),
            (PairError::Gone.code(), ErrorCode::NotPaired),
            (PairError::Closed.code(), ErrorCode::NotPaired),
            (PairError::ClosedBeforeAnswer.code(), ErrorCode::NotPaired),
            (PairError::WorkerGone.code(), ErrorCode::NotPaired),
            (PairError::DriverGone.code(), ErrorCode::NotPaired),
            (PairError::NoDriver.code(), ErrorCode::NotPaired),
            (
                RuntimeError::NoSuchQuestion("q".into()).code(),
                ErrorCode::NoSuchQuestion,
            ),
            (PairError::NotDriver.code(), ErrorCode::ToolNotAvailable),
            (PairError::AlreadyPaired.code(), ErrorCode::Conflict),
            (PairError::SpawnedDriver.code(), ErrorCode::Conflict),
            (PairError::AlreadyClosed.code(), ErrorCode::Conflict),
            (PairError::DelegationInFlight.code(), ErrorCode::Conflict),
            (PairError::WorkerBusy.code(), ErrorCode::RunInProgress),
            (
                PairError::WorkerRefused(worker()).code(),
                ErrorCode::NoActiveRun,
            ),
            (PairError::Worker(worker()).code(), ErrorCode::NoActiveRun),
            (
                PairError::Unavailable("x".into()).code(),
                ErrorCode::Internal,
            ),
            (PairError::NameTaken("a".into()).code(), ErrorCode::Conflict),
            (
                PairError::TooManyWorkers(8).code(),
                ErrorCode::LimitExceeded,
            ),
            (PairError::BadWorkerName.code(), ErrorCode::InvalidArgument),
            (
                PairError::NoSuchWorker {
                    name: "a".into(),
                    workers: "b (ses_1)".into(),
                }
                .code(),
                ErrorCode::InvalidArgument,
            ),
            (
                PairError::WhichWorker("a, b".into()).code(),
                ErrorCode::InvalidArgument,
            ),
            (ProposalError::AlreadyPaired.code(), ErrorCode::Conflict),
            (ProposalError::NotAlone.code(), ErrorCode::Conflict),
            (ProposalError::AlreadyOpen.code(), ErrorCode::Conflict),
            (ProposalError::AlreadyResolved.code(), ErrorCode::Conflict),
            (
                ProposalError::NotFound("p".into()).code(),
                ErrorCode::NoSuchProposal,
            ),
            (SpawnError::Nested.code(), ErrorCode::ToolNotAvailable),
            (
                SpawnError::Count { max: 10 }.code(),
                ErrorCode::InvalidArgument,
            ),
            (
                SpawnError::MissingField {
                    index: 0,
                    field: "title",
                }
                .code(),
                ErrorCode::InvalidArgument,
            ),
            (
                SpawnError::TooMany {
                    max: 20,
                    existing: 20,
                }
                .code(),
                ErrorCode::LimitExceeded,
            ),
            (
                SpawnError::Create(RuntimeError::LimitExceeded("x".into())).code(),
                ErrorCode::LimitExceeded,
            ),
            (
                SpawnError::Partial {
                    number: 2,
                    total: 3,
                    source: Box::new(RuntimeError::Internal("x".into())),
                    started: vec!["ses_a".into()],
                }
                .code(),
                ErrorCode::Internal,
            ),
            (
                ToolError::Unknown("t".into()).code(),
                ErrorCode::UnknownTool,
            ),
            (
                ToolError::NotOffered("x".into()).code(),
                ErrorCode::ToolNotAvailable,
            ),
            (
                ToolError::NotAllowed("x").code(),
                ErrorCode::ToolNotAvailable,
            ),
            (
                ToolError::Required("message").code(),
                ErrorCode::InvalidArgument,
            ),
            (
                ToolError::InvalidArguments {
                    tool: "t",
                    reason: "r".into(),
                }
                .code(),
                ErrorCode::InvalidArgument,
            ),
            (
                ToolError::VendorNotInstalled("v".into()).code(),
                ErrorCode::VendorNotInstalled,
            ),
            (ToolError::NoVendor.code(), ErrorCode::VendorNotInstalled),
            (ToolError::ShuttingDown.code(), ErrorCode::Internal),
            (
                ToolError::from(PairError::Gone).code(),
                ErrorCode::NotPaired,
            ),
            (
                RuntimeError::from(PairError::NoSuchPair("p".into())).code(),
                ErrorCode::NoSuchPair,
            ),
            (
                RuntimeError::from(ProposalError::AlreadyOpen).code(),
                ErrorCode::Conflict,
            ),
            (
                RuntimeError::Conflict("x".into()).code(),
                ErrorCode::Conflict,
            ),
            (
                RuntimeError::NoSuchSchedule("s".into()).code(),
                ErrorCode::NoSuchSchedule,
            ),
        ];
        for (i, (got, want)) in cases.into_iter().enumerate() {
            assert_eq!(got, want, "case {i}");
        }
    }

    /// A partial spawn names the children that were started.
    #[test]
    fn partial_spawn_message_names_the_started_children() {
        let e = SpawnError::Partial {
            number: 3,
            total: 4,
            source: Box::new(RuntimeError::Internal("boom".into())),
            started: vec!["ses_a".into(), "ses_b".into()],
        };
        assert_eq!(
            e.to_string(),
            "session 3 of 4 could not be created (internal error: boom); the 2 created \
             before it were started: ses_a, ses_b"
        );
    }
}
