//! Workspaces: git worktrees of their own for sessions, what a working directory
//! changed, merging and discarding a worktree's branch, and the files of a working
//! directory. Git is run as the `git` binary (never a library), always off the
//! session actors' mailboxes.

pub mod error;

pub use error::WorkspaceError;
