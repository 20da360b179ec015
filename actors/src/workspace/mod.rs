//! Workspaces: git worktrees of their own for sessions, what a working directory
//! changed, merging and discarding a worktree's branch, and the files of a working
//! directory. Git is run as the `git` binary (never a library), always off the
//! session actors' mailboxes: every function here blocks, and callers run it on the
//! blocking pool.

pub mod checkpoint;
pub mod diff;
pub mod error;
pub mod files;
pub mod git;
pub mod journal;
pub mod merge;
pub mod overlap;
pub mod project;
pub mod push;
pub mod rebase;
pub mod state;
pub mod worktree;

pub use error::WorkspaceError;
