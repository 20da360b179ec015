//! Why a workspace operation (worktree, changes, merge, discard, files) was refused.

use tandem_protocol::{ErrorCode, SessionId};

/// A refused or failed workspace operation; each maps onto a wire [`ErrorCode`].
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The directory is not inside a git repository (`NOT_A_GIT_REPOSITORY`).
    #[error("{0} is not inside a git repository")]
    NotAGitRepository(String),
    /// The session has no such checkpoint (`NO_SUCH_CHECKPOINT`); says which.
    #[error("{0}")]
    NoSuchCheckpoint(String),
    /// The session has no worktree of its own (`NOT_A_WORKTREE`).
    #[error("session {0} has no worktree of its own (shared, or discarded)")]
    NotAWorktree(SessionId),
    /// A turn runs (`SESSION_BUSY`).
    #[error("session {0} runs a turn; try again when it ends")]
    SessionBusy(SessionId),
    /// The base checkout has uncommitted changes to files the merge touches.
    #[error("the base checkout has uncommitted changes to {}", paths.join(", "))]
    BaseDirty {
        /// Those files.
        paths: Vec<String>,
    },
    /// The merge conflicts; it was aborted and nothing changed.
    #[error("merging conflicts in {}; nothing was changed", paths.join(", "))]
    MergeConflict {
        /// The conflicting files.
        paths: Vec<String>,
    },
    /// The rebase conflicts (`MERGE_CONFLICT`); it was aborted and the branch is
    /// where it was.
    #[error("rebasing onto the base branch conflicts in {}; nothing was changed", paths.join(", "))]
    RebaseConflict {
        /// The conflicting files.
        paths: Vec<String>,
    },
    /// The repository requires passing checks before a merge and the last ones did
    /// not all pass (`CHECKS_FAILED`); says which.
    #[error("{0}")]
    ChecksFailed(String),
    /// The remote refused the push (`PUSH_REFUSED`); git's message.
    #[error("the push was refused: {0}")]
    PushRefused(String),
    /// The path leads outside the working directory.
    #[error("{0} leads outside the session's working directory")]
    PathOutside(String),
    /// The path leads into a git directory or the server's own data (tokens,
    /// config), which are never served (`PATH_OUTSIDE_WORKSPACE`).
    #[error("{0} leads into a git directory or the server's private data, which are not served")]
    PathPrivate(String),
    /// A write whose path passes through a symbolic link (`PATH_OUTSIDE_WORKSPACE`):
    /// files are written only where their path really is.
    #[error("{0} passes through a symbolic link; files are not written through links")]
    ThroughLink(String),
    /// The OS refused the server access (`ACCESS_DENIED`).
    #[error("{0}")]
    AccessDenied(String),
    /// Nothing exists at the path.
    #[error("no file or directory {0}")]
    NoSuchFile(String),
    /// Not UTF-8 text.
    #[error("{0} is a binary file (not UTF-8 text)")]
    BinaryFile(String),
    /// Over the size cap.
    #[error("{path} is {size} bytes; at most {max} bytes are read or written here")]
    FileTooLarge {
        /// The file.
        path: String,
        /// Its size (or the body's).
        size: u64,
        /// The cap.
        max: u64,
    },
    /// `If-Match` does not match the file's current content.
    #[error("{0}")]
    PreconditionFailed(String),
    /// The request is malformed (`INVALID_ARGUMENT`).
    #[error("{0}")]
    InvalidArgument(String),
    /// A well-formed value the repository cannot use: a `baseRef` that names no
    /// commit there, a detached HEAD with no branch to base on (`INVALID_ARGUMENT`,
    /// REST 422 like [`crate::RuntimeError::Unusable`]).
    #[error("{0}")]
    Unusable(String),
    /// The path names something other than the directory a listing wants or the
    /// regular file a read wants (`NO_SUCH_FILE`: there is none of that kind there).
    #[error("{path} is not {wanted}")]
    NotA {
        /// The path asked for.
        path: String,
        /// "a directory" or "a regular file".
        wanted: &'static str,
    },
    /// The base checkout does not have the base branch checked out (`CONFLICT`).
    #[error("{0}")]
    Conflict(String),
    /// A git command failed unexpectedly (`INTERNAL`): names the command and what git
    /// said.
    #[error("git {command} failed: {stderr}")]
    Git {
        /// The arguments after `git`.
        command: String,
        /// Its standard error (trimmed).
        stderr: String,
    },
    /// A file could not be read or written (`INTERNAL`).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

impl WorkspaceError {
    /// The wire code.
    pub fn code(&self) -> ErrorCode {
        match self {
            WorkspaceError::NotAGitRepository(_) => ErrorCode::NotAGitRepository,
            WorkspaceError::NotAWorktree(_) => ErrorCode::NotAWorktree,
            WorkspaceError::NoSuchCheckpoint(_) => ErrorCode::NoSuchCheckpoint,
            WorkspaceError::SessionBusy(_) => ErrorCode::SessionBusy,
            WorkspaceError::BaseDirty { .. } => ErrorCode::BaseDirty,
            WorkspaceError::MergeConflict { .. } | WorkspaceError::RebaseConflict { .. } => {
                ErrorCode::MergeConflict
            }
            WorkspaceError::ChecksFailed(_) => ErrorCode::ChecksFailed,
            WorkspaceError::PushRefused(_) => ErrorCode::PushRefused,
            WorkspaceError::PathOutside(_)
            | WorkspaceError::PathPrivate(_)
            | WorkspaceError::ThroughLink(_) => ErrorCode::PathOutsideWorkspace,
            WorkspaceError::AccessDenied(_) => ErrorCode::AccessDenied,
            WorkspaceError::NoSuchFile(_) | WorkspaceError::NotA { .. } => ErrorCode::NoSuchFile,
            WorkspaceError::BinaryFile(_) => ErrorCode::BinaryFile,
            WorkspaceError::FileTooLarge { .. } => ErrorCode::FileTooLarge,
            WorkspaceError::PreconditionFailed(_) => ErrorCode::PreconditionFailed,
            WorkspaceError::InvalidArgument(_) | WorkspaceError::Unusable(_) => {
                ErrorCode::InvalidArgument
            }
            WorkspaceError::Conflict(_) => ErrorCode::Conflict,
            WorkspaceError::Git { .. } | WorkspaceError::Io { .. } => ErrorCode::Internal,
        }
    }

    /// The HTTP status of a REST answer with this error: its code's, but 422 for
    /// [`WorkspaceError::Unusable`].
    pub fn http_status(&self) -> u16 {
        match self {
            WorkspaceError::Unusable(_) => 422,
            _ => self.code().http_status(),
        }
    }

    /// The files the error is about, for the error's `paths`.
    pub fn paths(&self) -> Option<Vec<String>> {
        match self {
            WorkspaceError::BaseDirty { paths } | WorkspaceError::MergeConflict { paths } => {
                Some(paths.clone())
            }
            _ => None,
        }
    }
}
