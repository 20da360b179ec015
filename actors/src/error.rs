//! Errors the runtime returns to callers; each maps onto a wire [`ErrorCode`].

use tandem_protocol::ErrorCode;

/// Why a runtime operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No session with that id.
    #[error("session {0} not found")]
    SessionNotFound(String),
    /// The caller may not act on the session.
    #[error("access denied to session {0}")]
    AccessDenied(String),
    /// A turn already runs.
    #[error("session {0} already runs a turn")]
    RunInProgress(String),
    /// Nothing to interrupt.
    #[error("session {0} has no turn running")]
    NoActiveRun(String),
    /// Unknown background task.
    #[error("session has no background task {0}")]
    NoSuchTask(String),
    /// No pending permission request with that id.
    #[error("no pending permission request {0}")]
    NoSuchPermission(String),
    /// The vendor cannot be used here.
    #[error("vendor {0} is not installed")]
    VendorNotInstalled(String),
    /// A field or value is not acceptable.
    #[error("{0}")]
    InvalidArgument(String),
    /// The database cannot be written at all (checked at start).
    #[error("the database {} cannot be written: {reason}", path.display())]
    Unwritable {
        /// The database file.
        path: std::path::PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// A write was not committed; nothing of it was acknowledged or shown.
    #[error("the store could not commit: {0}")]
    NotCommitted(String),
    /// The database failed.
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
        /// The directory or file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A per-user limit is reached (`LIMIT_EXCEEDED`).
    #[error("{0}")]
    LimitExceeded(String),
    /// An actor that should be alive is gone (the server is shutting down).
    #[error("internal error: {0}")]
    Internal(String),
}

impl RuntimeError {
    /// The wire code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            RuntimeError::SessionNotFound(_) => ErrorCode::SessionNotFound,
            RuntimeError::AccessDenied(_) => ErrorCode::AccessDenied,
            RuntimeError::RunInProgress(_) => ErrorCode::RunInProgress,
            RuntimeError::NoActiveRun(_) => ErrorCode::NoActiveRun,
            RuntimeError::NoSuchTask(_) => ErrorCode::NoSuchTask,
            RuntimeError::NoSuchPermission(_) => ErrorCode::NoSuchPermission,
            RuntimeError::VendorNotInstalled(_) => ErrorCode::VendorNotInstalled,
            RuntimeError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            RuntimeError::LimitExceeded(_) => ErrorCode::LimitExceeded,
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

impl From<actix::MailboxError> for RuntimeError {
    fn from(e: actix::MailboxError) -> Self {
        RuntimeError::Internal(format!("actor unavailable: {e}"))
    }
}
