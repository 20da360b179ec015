//! [`WorkspaceService`]: what is done to a session's working directory as a whole:
//! `session.merge`, `session.discard`, `session.rebase`, `session.push` and start-up
//! recovery of merges and discards a crash cut short (here); its checks
//! (`checks.rs`), checkpoints (`checkpoints.rs`) and scripts (`scripts.rs`). One such
//! operation runs at a time per session ([`OpClaim`]), and no turn starts meanwhile.
//! Git runs on the blocking pool; session actors only record the outcome.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;

use tandem_protocol::workspace::{
    MergeStrategy, PushedBranch, SessionDiscardResult, SessionMergeResult, SessionPushResult,
    SessionRebaseResult, WorkspaceInfo, WorktreeState,
};
use tandem_protocol::{EventBody, SessionInfo};

use crate::access::Principal;
use crate::clock::now_ms;
use crate::crash::crash_point;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::session::{Services, WorkspaceChanged};
use crate::store::Store;
use crate::terminals::Terminals;
use crate::workspace::journal::{self, Entry, Operation};
use crate::workspace::{merge, push, rebase, worktree, WorkspaceError};

use super::SessionAccess;

/// The workspaces service; cheap to clone (start-up recovery hands a clone to each
/// task it spawns).
#[derive(Clone)]
pub struct WorkspaceService {
    /// Who may see or drive which session.
    pub(super) access: SessionAccess,
    /// The sessions' shared services: the writer, the scripts and checks runners.
    pub(super) services: Arc<Services>,
    /// Read for a merge's outcome at start-up, and for checkpoints.
    pub(super) store: Store,
    /// Where the journal of merges and discards in flight lives.
    pub(super) data_dir: PathBuf,
    /// Paths no repository setting may name (the server's data, secrets).
    pub(super) private: Vec<PathBuf>,
    /// Ended with a worktree as it goes.
    pub(super) terminals: Terminals,
    /// Sessions with a merge, discard, rebase, push or checks run in flight.
    pub(super) ops: Arc<DashMap<SessionId, ()>>,
}

/// Runs blocking workspace work on the blocking pool.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, WorkspaceError> + Send + 'static,
) -> Result<T, RuntimeError> {
    actix_rt::task::spawn_blocking(f)
        .await
        .map_err(|e| RuntimeError::Internal(format!("workspace task failed: {e}")))?
        .map_err(RuntimeError::from)
}

/// The session's active worktree, or `NOT_A_WORKTREE`.
fn active_worktree(info: &SessionInfo) -> Result<WorkspaceInfo, RuntimeError> {
    info.workspace
        .clone()
        .filter(|w| w.state == WorktreeState::Active)
        .ok_or_else(|| WorkspaceError::NotAWorktree(info.id.clone()).into())
}

impl WorkspaceService {
    /// Serves the sessions `access` finds, with the services their actors share.
    pub(super) fn new(
        access: SessionAccess,
        services: Arc<Services>,
        store: Store,
        config: &crate::config::RuntimeConfig,
        terminals: Terminals,
    ) -> Self {
        WorkspaceService {
            access,
            services,
            store,
            data_dir: config.data_dir.clone(),
            private: config.private_paths(),
            terminals,
            ops: Arc::default(),
        }
    }

    /// True while a workspace operation runs on session `id` (its turns wait).
    pub(super) fn busy(&self, id: &str) -> bool {
        self.ops.contains_key(id)
    }

    /// A session the caller owns, idle, with an active worktree; and a claim on it so
    /// no second merge or discard runs at the same time.
    fn claim_for_workspace_op(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<(SessionInfo, WorkspaceInfo, OpClaim), RuntimeError> {
        let info = self.access.drivable(who, session_id)?.shared.info();
        let ws = active_worktree(&info)?;
        if info.status.is_busy() {
            return Err(WorkspaceError::SessionBusy(info.id.clone()).into());
        }
        let claim = OpClaim::take(&self.ops, &info.id)?;
        Ok((info, ws, claim))
    }

    /// `session.merge`: commits the worktree's changes and merges its branch into the
    /// base branch in the base checkout.
    pub async fn merge(
        &self,
        who: &Principal,
        session_id: &SessionId,
        strategy: MergeStrategy,
        message: Option<String>,
        force: bool,
    ) -> Result<SessionMergeResult, RuntimeError> {
        // git takes no NUL in an argument: refused as the client's mistake, not run.
        if message.as_deref().is_some_and(|m| m.contains('\0')) {
            return Err(RuntimeError::InvalidArgument(
                "`message` contains a NUL byte".into(),
            ));
        }
        let (info, ws, _claim) = self.claim_for_workspace_op(who, session_id)?;
        if !force {
            self.checks_gate(&info).await?;
        }
        let message = message
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("tandem: changes of {}", info.title.replace('\0', "")));
        let worktree = PathBuf::from(&info.cwd);
        let plan = {
            let (wt, ws, msg) = (worktree.clone(), ws.clone(), message.clone());
            blocking(move || merge::prepare(&wt, &ws, &msg)).await?
        };
        let entry = Entry {
            op: Operation::Merge,
            session_id: info.id.clone(),
            branch: ws.branch.clone(),
            worktree: info.cwd.clone(),
            base_checkout: ws.base_checkout.clone(),
            base_head: plan.base_head.clone(),
            branch_tip: plan.branch_tip.clone(),
            strategy: Some(strategy),
            keep_branch: false,
            started_at: now_ms(),
        };
        self.journal(&entry).await?;
        let writer = self.services.writer.clone();
        crash_point(&writer, "workspace.merge.journaled").await;
        let commit = {
            let (wt, ws, msg) = (worktree.clone(), ws.clone(), message.clone());
            blocking(move || merge::apply(&wt, &ws, &plan, strategy, &msg)).await
        };
        let commit = match commit {
            Ok(c) => c,
            Err(e) => {
                let _ = self.clear_journal(&info.id).await;
                return Err(e);
            }
        };
        crash_point(&writer, "workspace.merge.merged").await;
        let mut merged = ws.clone();
        merged.merged = true;
        self.record_workspace_change(
            &info.id,
            EventBody::Merged {
                branch: ws.branch.clone(),
                base: ws.base.clone(),
                strategy,
                commit: commit.clone(),
            },
            Some(merged),
        )
        .await?;
        self.clear_journal(&info.id).await?;
        Ok(SessionMergeResult {
            session_id: info.id,
            branch: ws.branch,
            base: ws.base,
            strategy,
            commit,
        })
    }

    /// `session.rebase`: the worktree's branch onto its base's head; a `rebased`
    /// event and the new `baseCommit` when it moved.
    pub async fn rebase(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<SessionRebaseResult, RuntimeError> {
        let (info, ws, _claim) = self.claim_for_workspace_op(who, session_id)?;
        let message = format!("tandem: changes of {}", info.title.replace('\0', ""));
        let done = {
            let (wt, ws) = (PathBuf::from(&info.cwd), ws.clone());
            blocking(move || rebase::rebase(&wt, &ws, &message)).await?
        };
        if done.moved {
            let mut moved = ws.clone();
            moved.base_commit.clone_from(&done.onto);
            self.record_workspace_change(
                &info.id,
                EventBody::Rebased {
                    branch: ws.branch.clone(),
                    base: ws.base.clone(),
                    onto: done.onto.clone(),
                    head: done.head.clone(),
                },
                Some(moved),
            )
            .await?;
        }
        Ok(SessionRebaseResult {
            session_id: info.id,
            branch: ws.branch,
            base: ws.base,
            onto: done.onto,
            head: done.head,
            moved: done.moved,
        })
    }

    /// `session.push`: the worktree's branch, its uncommitted changes committed, to a
    /// remote of its base repository; a `pushed` event, and the branch is kept when
    /// the worktree is discarded.
    pub async fn push(
        &self,
        who: &Principal,
        session_id: &SessionId,
        remote: Option<String>,
        branch: Option<String>,
    ) -> Result<SessionPushResult, RuntimeError> {
        let (info, ws, _claim) = self.claim_for_workspace_op(who, session_id)?;
        let message = format!("tandem: changes of {}", info.title.replace('\0', ""));
        let done = {
            let (wt, ws) = (PathBuf::from(&info.cwd), ws.clone());
            blocking(move || push::push(&wt, &ws, remote.as_deref(), branch.as_deref(), &message))
                .await?
        };
        let to = PushedBranch {
            remote: done.remote,
            branch: done.branch,
            commit: done.commit,
        };
        let mut pushed = ws.clone();
        pushed.pushed = Some(to.clone());
        self.record_workspace_change(&info.id, EventBody::Pushed { to: to.clone() }, Some(pushed))
            .await?;
        Ok(SessionPushResult {
            session_id: info.id,
            remote: to.remote,
            branch: to.branch,
            commit: to.commit,
        })
    }

    /// `session.discard`: removes the worktree and its branch.
    pub async fn discard(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<SessionDiscardResult, RuntimeError> {
        let (info, ws, _claim) = self.claim_for_workspace_op(who, session_id)?;
        let base_head = {
            let base = PathBuf::from(&ws.base_checkout);
            blocking(move || crate::workspace::git::line(&base, &["rev-parse", "HEAD"]))
                .await
                .unwrap_or_default()
        };
        let entry = Entry {
            op: Operation::Discard,
            session_id: info.id.clone(),
            branch: ws.branch.clone(),
            worktree: info.cwd.clone(),
            base_checkout: ws.base_checkout.clone(),
            base_head,
            branch_tip: String::new(),
            strategy: None,
            keep_branch: ws.pushed.is_some() || ws.merged,
            started_at: now_ms(),
        };
        self.journal(&entry).await?;
        crash_point(&self.services.writer, "workspace.discard.journaled").await;
        let live = self.services.sessions.get(&info.id);
        self.worktree_leaving(&info, live.as_ref()).await;
        {
            let entry = entry.clone();
            blocking(move || {
                worktree::remove(
                    Path::new(&entry.base_checkout),
                    Path::new(&entry.worktree),
                    &entry.branch,
                    entry.keep_branch,
                )
            })
            .await?;
        }
        crash_point(&self.services.writer, "workspace.discard.removed").await;
        self.drop_checkpoints(PathBuf::from(&ws.base_checkout), &info.id)
            .await;
        let mut gone = ws.clone();
        gone.state = WorktreeState::Discarded;
        self.record_workspace_change(
            &info.id,
            EventBody::Discarded {
                branch: ws.branch.clone(),
            },
            Some(gone),
        )
        .await?;
        self.clear_journal(&info.id).await?;
        Ok(SessionDiscardResult {
            session_id: info.id,
            branch: ws.branch,
        })
    }

    /// Writes `entry` to the journal of operations in flight (start-up finishes or
    /// undoes what it finds there).
    async fn journal(&self, entry: &Entry) -> Result<(), RuntimeError> {
        let (dir, entry) = (self.data_dir.clone(), entry.clone());
        blocking(move || journal::write(&dir, &entry)).await
    }

    /// Removes session `id`'s entry from the journal: its operation is over.
    async fn clear_journal(&self, id: &SessionId) -> Result<(), RuntimeError> {
        let (dir, id) = (self.data_dir.clone(), id.clone());
        blocking(move || journal::clear(&dir, &id)).await
    }

    /// Has the session record `event` and its new workspace, and waits until both are
    /// on disk.
    async fn record_workspace_change(
        &self,
        session_id: &SessionId,
        event: EventBody,
        workspace: Option<WorkspaceInfo>,
    ) -> Result<(), RuntimeError> {
        let handle = self
            .services
            .sessions
            .get(session_id)
            .ok_or_else(|| RuntimeError::SessionNotFound(session_id.into()))?;
        let writer = self.services.writer.clone();
        let epoch = writer.epoch();
        handle.ask(WorkspaceChanged { event, workspace }).await?;
        if !writer.synced_since(epoch).await {
            return Err(RuntimeError::NotCommitted(format!(
                "the outcome for session {session_id} was not stored"
            )));
        }
        Ok(())
    }

    /// Start-up: finishes or undoes the merges and discards a crash cut short (their
    /// journal entries), then records what was done in each session. Git runs here,
    /// before the server takes requests.
    pub(super) fn recover(&self) {
        for entry in journal::pending(&self.data_dir) {
            let recorded = match entry.op {
                Operation::Merge => self.merged_since(&entry),
                Operation::Discard => false,
            };
            let note = match entry.op {
                Operation::Merge if recorded => None,
                Operation::Merge => {
                    merge::roll_back(&entry);
                    Some(format!(
                        "a merge of {} was cut short by a restart and was rolled back; \
                         the base checkout and the branch are as they were",
                        entry.branch
                    ))
                }
                Operation::Discard => {
                    if let Err(e) = worktree::remove(
                        Path::new(&entry.base_checkout),
                        Path::new(&entry.worktree),
                        &entry.branch,
                        entry.keep_branch,
                    ) {
                        tracing::error!(session = %entry.session_id, error = %e, "discard not completed");
                        continue;
                    }
                    Some(format!(
                        "a discard of {} was cut short by a restart and was completed",
                        entry.branch
                    ))
                }
            };
            tracing::warn!(session = %entry.session_id, op = ?entry.op, "workspace operation recovered");
            let service = self.clone();
            actix::spawn(async move {
                if let Some(text) = note {
                    let workspace = service
                        .services
                        .sessions
                        .get(&entry.session_id)
                        .and_then(|h| h.shared.info().workspace);
                    let workspace = match entry.op {
                        Operation::Discard => workspace.map(|mut w| {
                            w.state = WorktreeState::Discarded;
                            w
                        }),
                        Operation::Merge => workspace,
                    };
                    let mut events = vec![EventBody::Info { text }];
                    if entry.op == Operation::Discard {
                        events.insert(
                            0,
                            EventBody::Discarded {
                                branch: entry.branch.clone(),
                            },
                        );
                    }
                    for event in events {
                        if let Err(e) = service
                            .record_workspace_change(&entry.session_id, event, workspace.clone())
                            .await
                        {
                            tracing::error!(session = %entry.session_id, error = %e, "recovery not recorded");
                            return;
                        }
                    }
                }
                if let Err(e) = journal::clear(&service.data_dir, &entry.session_id) {
                    tracing::error!(session = %entry.session_id, error = %e, "journal not cleared");
                }
            });
        }
    }

    /// True when the session's history has a `merged` event of the entry's branch
    /// written after the entry started: the merge completed before the crash.
    fn merged_since(&self, entry: &Entry) -> bool {
        let Some(info) = self
            .services
            .sessions
            .get(&entry.session_id)
            .map(|h| h.shared.info())
        else {
            return false;
        };
        let after = info.last_seq.saturating_sub(64);
        let Ok(rows) = self.store.read_events(&entry.session_id, after, 64) else {
            return false;
        };
        rows.iter().any(|(_, frame)| {
            serde_json::from_str::<serde_json::Value>(frame).is_ok_and(|v| {
                v["kind"] == "merged"
                    && v["branch"] == entry.branch.as_str()
                    && v["ts"].as_u64().is_some_and(|ts| ts >= entry.started_at)
            })
        })
    }
}

/// The session's working directory and workspace; a discarded worktree has none.
pub(super) fn working_dir(
    info: &SessionInfo,
) -> Result<(PathBuf, Option<WorkspaceInfo>), RuntimeError> {
    match &info.workspace {
        Some(w) if w.state == WorktreeState::Discarded => Err(RuntimeError::Conflict(format!(
            "session {}'s worktree was discarded",
            info.id
        ))),
        ws => Ok((PathBuf::from(&info.cwd), ws.clone())),
    }
}

/// A session with a workspace operation in flight; released when dropped.
pub(super) struct OpClaim {
    ops: Arc<DashMap<SessionId, ()>>,
    session_id: SessionId,
}

impl OpClaim {
    /// Claims session `session_id` in `ops`; refused while another claim holds it.
    pub(super) fn take(
        ops: &Arc<DashMap<SessionId, ()>>,
        session_id: &SessionId,
    ) -> Result<OpClaim, RuntimeError> {
        if ops.insert(session_id.into(), ()).is_some() {
            return Err(WorkspaceError::SessionBusy(session_id.into()).into());
        }
        Ok(OpClaim {
            ops: ops.clone(),
            session_id: session_id.into(),
        })
    }
}

impl Drop for OpClaim {
    fn drop(&mut self) {
        self.ops.remove(&self.session_id);
    }
}
