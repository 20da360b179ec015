//! Workspaces: a session's own git worktree, what it changed (`git_state`), merging
//! or discarding its branch, and reading and saving the files of its working
//! directory. docs/PROTOCOL.md "Workspaces" describes the rules.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

/// Where a session works: in the directory it was given (`shared`, as every session
/// did before workspaces), or in a git worktree of its own on a new branch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WorkspaceMode {
    /// The given `cwd`; other sessions may edit the same files.
    #[default]
    Shared,
    /// A new worktree on branch `tandem/<short id>` under the data directory.
    Worktree,
}

impl WorkspaceMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceMode::Shared => "shared",
            WorkspaceMode::Worktree => "worktree",
        }
    }

    /// The mode with this wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "shared" => Some(WorkspaceMode::Shared),
            "worktree" => Some(WorkspaceMode::Worktree),
            _ => None,
        }
    }
}

/// Where a worktree's life stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WorktreeState {
    /// The worktree and its branch exist; the session works there.
    #[default]
    Active,
    /// `session.discard` removed the worktree and its branch; the history stays.
    Discarded,
}

/// A worktree session's workspace, in `SessionInfo.workspace` (absent for shared
/// sessions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceInfo {
    /// Always `worktree` (shared sessions have no `workspace`).
    pub mode: WorkspaceMode,
    /// The session's own branch, `tandem/<short id>`.
    pub branch: String,
    /// The branch it was made from and merges into.
    pub base: String,
    /// The commit the branch started from.
    pub base_commit: String,
    /// The checkout where `base` is checked out, which `session.merge` merges into
    /// (the repository the `cwd` was in, or the parent's worktree for a spawned
    /// session or a Worker of a worktree Driver).
    pub base_checkout: String,
    /// Active, or discarded.
    pub state: WorktreeState,
    /// Where `session.push` last pushed the branch; a discard keeps a pushed or
    /// merged branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed: Option<PushedBranch>,
    /// True once `session.merge` merged the branch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merged: bool,
    /// `TANDEM_PORT` of the worktree's scripts and agent: a port of its own from the
    /// server's range (`[workspace] ports`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// Where a branch was pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushedBranch {
    /// The remote's name in the base repository.
    pub remote: String,
    /// The branch written there.
    pub branch: String,
    /// The commit pushed.
    pub commit: String,
}

/// Fields of `session.push`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionPushParams {
    /// The worktree session.
    pub session_id: SessionId,
    /// A remote of the base repository (default: the base branch's upstream remote,
    /// else `origin`).
    #[serde(default)]
    pub remote: Option<String>,
    /// The branch to write there (default: the session's own).
    #[serde(default)]
    pub branch: Option<String>,
}

/// Body of `POST /sessions/{id}/push` (as `session.push`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushBody {
    /// A remote of the base repository.
    #[serde(default)]
    pub remote: Option<String>,
    /// The branch to write there.
    #[serde(default)]
    pub branch: Option<String>,
}

/// `session.push` reply and `POST /sessions/{id}/push` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPushResult {
    /// The session.
    pub session_id: SessionId,
    /// The remote pushed to.
    pub remote: String,
    /// The branch written there.
    pub branch: String,
    /// The commit pushed (the branch's tip, its uncommitted changes committed).
    pub commit: String,
}

/// How a changed file changed, against the base (worktree sessions) or HEAD (shared).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileStatus {
    /// New (untracked files count as added).
    Added,
    /// Changed content or mode.
    Modified,
    /// Removed.
    Deleted,
    /// Moved (the path is the new name).
    Renamed,
}

/// One changed file of a `git_state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// Path relative to the working directory's top, `/`-separated.
    pub path: String,
    /// How it changed.
    pub status: FileStatus,
    /// Lines added (0 for a binary file).
    pub added: u64,
    /// Lines removed (0 for a binary file).
    pub removed: u64,
    /// True for a binary file: its diff is reported, never dumped.
    #[serde(default, skip_serializing_if = "crate::workspace::is_false")]
    pub binary: bool,
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// What a session's working directory changed: the `git_state` event's fields and
/// `GET /sessions/{id}/changes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitState {
    /// The branch checked out (absent on a detached HEAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// What the changes are counted against: the base branch for a worktree session;
    /// for a shared one, the upstream branch when there is one (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Commits on `branch` that `base` lacks (0 without a base).
    pub ahead: u64,
    /// Commits on `base` that `branch` lacks (0 without a base).
    pub behind: u64,
    /// True when the working directory has uncommitted changes (untracked files
    /// included).
    pub dirty: bool,
    /// Changed files, sorted by path: for a worktree session everything that differs
    /// from where the branch left the base (commits and uncommitted changes); for a
    /// shared session the uncommitted changes against HEAD.
    pub files: Vec<ChangedFile>,
}

/// A Worker's changes in short, for the Driver: on the `delegation` event that ends a
/// delegation of a worktree Worker, and in the pushed-back result's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeSummary {
    /// The Worker's branch.
    pub branch: String,
    /// Files changed against its base.
    pub files: u64,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// The checks run as the delegation ended (`checks_on_delegation` in the
    /// repository's `.tandem/worktree.toml`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<CheckResult>>,
    /// The review by another vendor run as the delegation ended
    /// (`review_on_delegation`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Box<crate::review::ReviewVerdict>>,
}

impl ChangeSummary {
    /// The summary of a state on `branch`.
    pub fn of(branch: &str, state: &GitState) -> Self {
        ChangeSummary {
            branch: branch.to_string(),
            files: state.files.len() as u64,
            added: state.files.iter().map(|f| f.added).sum(),
            removed: state.files.iter().map(|f| f.removed).sum(),
            checks: None,
            review: None,
        }
    }
}

/// How `session.merge` brings the branch into its base.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MergeStrategy {
    /// A merge commit (`git merge --no-ff`).
    #[default]
    Merge,
    /// One commit on the base with all of the branch's changes (`git merge --squash`).
    Squash,
}

impl MergeStrategy {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MergeStrategy::Merge => "merge",
            MergeStrategy::Squash => "squash",
        }
    }
}

/// Fields of `session.merge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionMergeParams {
    /// The worktree session.
    pub session_id: SessionId,
    /// Merge commit or squash.
    #[serde(deserialize_with = "crate::strict::name")]
    pub strategy: MergeStrategy,
    /// The commit message (default: "tandem: merge <branch> (<title>)").
    #[serde(default)]
    pub message: Option<String>,
    /// Merge even when the repository requires passing checks and the last ones did
    /// not all pass.
    #[serde(default)]
    pub force: bool,
}

/// Body of `POST /sessions/{id}/merge` (as `session.merge`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MergeBody {
    /// Merge commit or squash.
    #[serde(deserialize_with = "crate::strict::name")]
    pub strategy: MergeStrategy,
    /// The commit message (no NUL byte: git cannot take one).
    #[serde(default)]
    #[schemars(regex(pattern = crate::content::NO_NUL))]
    pub message: Option<String>,
    /// Merge even when required checks did not pass.
    #[serde(default)]
    pub force: bool,
}

/// `session.merge` reply and `POST /sessions/{id}/merge` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMergeResult {
    /// The session.
    pub session_id: SessionId,
    /// Its branch.
    pub branch: String,
    /// The branch merged into.
    pub base: String,
    /// How.
    pub strategy: MergeStrategy,
    /// The base's new HEAD commit.
    pub commit: String,
}

/// `session.discard` reply and `POST /sessions/{id}/discard` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiscardResult {
    /// The session.
    pub session_id: SessionId,
    /// The branch deleted with its worktree.
    pub branch: String,
}

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CheckStatus {
    /// Exit code 0.
    Passed,
    /// Another exit code, or it could not start.
    Failed,
    /// Killed at its `timeout_secs`.
    TimedOut,
}

/// One check's outcome, as its `check` event says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The check's name in `.tandem/worktree.toml`.
    pub name: String,
    /// How it ended.
    pub status: CheckStatus,
    /// Its exit code (absent when killed or not started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The end of its output (stdout and stderr as they interleaved), at most 8 KiB.
    pub log_tail: String,
}

/// Fields of `session.check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCheckParams {
    /// The session.
    pub session_id: SessionId,
}

/// `session.check` reply and `POST /sessions/{id}/check` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCheckResult {
    /// The session.
    pub session_id: SessionId,
    /// Every check of `.tandem/worktree.toml`, in order (none: it declares none).
    pub checks: Vec<CheckResult>,
}

/// Fields of `session.rebase`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRebaseParams {
    /// The worktree session.
    pub session_id: SessionId,
}

/// `session.rebase` reply and `POST /sessions/{id}/rebase` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRebaseResult {
    /// The session.
    pub session_id: SessionId,
    /// Its branch.
    pub branch: String,
    /// The base branch it is on now.
    pub base: String,
    /// The base's head it was rebased onto (its new `baseCommit`).
    pub onto: String,
    /// The branch's tip now.
    pub head: String,
    /// False when the branch already had the base's head: nothing moved.
    pub moved: bool,
}

/// Query of `GET /sessions/{id}/changes/diff`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiffQuery {
    /// One file's path (relative to the working directory's top); absent: every
    /// changed file.
    #[serde(default)]
    pub path: Option<String>,
}

/// `GET /sessions/{id}/changes/diff`: a unified diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    /// The path asked for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What it is against: the base branch, or `HEAD` for a shared session.
    pub against: String,
    /// Unified diff text (git's `diff --git` format; a binary file appears as one
    /// "Binary files ... differ" line). Cut at the cap, then ends with
    /// [`FileDiff::TRUNCATION_MARKER`].
    pub diff: String,
    /// True when the diff was cut at the cap.
    pub truncated: bool,
    /// Paths of the binary files in the diff, whose content is not shown.
    pub binary_files: Vec<String>,
}

impl FileDiff {
    /// The line a truncated diff ends with.
    pub const TRUNCATION_MARKER: &'static str = "\n[tandem: diff truncated at the size cap]\n";
}

/// Query of the files routes: a path relative to the session's working directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathQuery {
    /// `/`-separated, relative; empty or absent: the working directory itself.
    #[serde(default)]
    pub path: Option<String>,
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed in listings).
    Symlink,
    /// Anything else (socket, fifo, device).
    Other,
}

/// One entry of `GET /sessions/{id}/files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DirEntry {
    /// The entry's name.
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes (of the link itself for a symlink).
    pub size: u64,
    /// Last modification, epoch ms.
    pub mtime: u64,
}

/// `GET /sessions/{id}/files?path=`: one directory, `.git` left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DirListing {
    /// The directory, relative (empty: the working directory).
    pub path: String,
    /// Its entries, directories first, then by name.
    pub entries: Vec<DirEntry>,
}

/// `GET /sessions/{id}/files/content?path=`: a UTF-8 text file of at most 2 MiB. The
/// `ETag` header carries `etag` too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// The file, relative.
    pub path: String,
    /// Its text.
    pub content: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification, epoch ms.
    pub mtime: u64,
    /// A strong entity tag of the content (quoted, as in the header); give it as
    /// `If-Match` to save.
    pub etag: String,
}

/// Body of `PUT /sessions/{id}/files/content?path=`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileSave {
    /// The file's new text (at most 2 MiB).
    pub content: String,
}

/// Answer of `PUT /sessions/{id}/files/content`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileSaved {
    /// The file, relative.
    pub path: String,
    /// Its size now.
    pub size: u64,
    /// Its new entity tag (also in the `ETag` header).
    pub etag: String,
}

/// The largest file `GET .../files/content` returns and `PUT` takes: 2 MiB.
pub const MAX_FILE_BYTES: u64 = 2 << 20;

/// The default cap of a diff: 1 MiB.
pub const DEFAULT_DIFF_CAP: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let state = GitState {
            branch: Some("tandem/abc".into()),
            base: Some("main".into()),
            ahead: 1,
            behind: 0,
            dirty: true,
            files: vec![ChangedFile {
                path: "a.txt".into(),
                status: FileStatus::Modified,
                added: 2,
                removed: 1,
                binary: false,
            }],
        };
        assert_eq!(
            serde_json::to_value(&state).unwrap(),
            json!({"branch": "tandem/abc", "base": "main", "ahead": 1, "behind": 0,
                "dirty": true, "files": [{"path": "a.txt", "status": "modified",
                "added": 2, "removed": 1}]})
        );
        assert_eq!(
            ChangeSummary::of("tandem/abc", &state),
            ChangeSummary {
                branch: "tandem/abc".into(),
                files: 1,
                added: 2,
                removed: 1,
                checks: None,
                review: None,
            }
        );
        let merge: SessionMergeParams =
            serde_json::from_value(json!({"sessionId": "s", "strategy": "squash"})).unwrap();
        assert_eq!(merge.strategy, MergeStrategy::Squash);
        assert!(serde_json::from_value::<SessionMergeParams>(
            json!({"sessionId": "s", "strategy": "rebase"})
        )
        .is_err());
    }
}
