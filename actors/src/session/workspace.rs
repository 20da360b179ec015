//! The session's side of workspaces: after each turn it asks for its `git_state` and
//! a checkpoint of the files, both made on the blocking pool (never on this actor's
//! mailbox, so a turn's end never waits for git), and appends what they found;
//! merges and discards record their events and new workspace state here.
//!
//! One spawned task per turn end computes the state and then, only where it found a
//! repository, the checkpoint, so a session outside git runs no more git than before.
//! Its answers are tagged with a generation, so a late one never overwrites a newer
//! state, and `git_state` is appended only when it changed. The task holds the
//! session's checkpoint lock (`GitWork`) while git runs, so checkpoints of turns that end
//! close together are made in order, each the parent of the next. A turn that starts
//! while checkpoints are still being made keeps its `StartTurn` in `deferred_start`
//! and hands it to its adapter when the last one ends, so its agent's writes stay out
//! of them; where the last turn found no repository no turn waits.
//! A restore (`Restore`) is an atomic response under the same lock, so no turn starts
//! in the middle of it.

use actix::prelude::*;
use tandem_protocol::queries::SessionRestoreResult;
use tandem_protocol::workspace::{GitState, WorkspaceInfo, WorktreeState};
use tandem_protocol::EventBody;

use super::SessionActor;
use crate::error::RuntimeError;
use crate::ids::{SessionId, TurnId};
use crate::workspace::checkpoint::{self, Checkpoint};
use crate::workspace::WorkspaceError;
use crate::workspace::{overlap, state};

/// A computed state for the session, tagged with the request it answers so an older
/// computation finishing late never overwrites a newer one.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PublishGitState {
    /// The request it answers.
    pub generation: u64,
    /// The state.
    pub state: GitState,
}

/// A merge or discard finished: its event, and the workspace as it is now.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WorkspaceChanged {
    /// `merged`, `discarded`, or an `info` after recovery.
    pub event: EventBody,
    /// The workspace after the change.
    pub workspace: Option<WorkspaceInfo>,
}

/// A turn's checkpoint ended: recorded, or not.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CheckpointEnded {
    /// The turn whose end it records.
    pub turn_id: TurnId,
    /// What became of it.
    pub outcome: CheckpointOutcome,
}

/// How a checkpoint ended.
pub enum CheckpointOutcome {
    /// Recorded.
    Recorded(Checkpoint),
    /// The working directory is not in a repository.
    NoRepository,
    /// git failed (logged).
    Failed,
}

impl SessionActor {
    /// After a turn, off the mailbox, in one task: the working directory's
    /// `git_state`, then (where that found a repository) the turn's checkpoint
    /// (`crate::workspace::checkpoint`), so a session outside git starts no more git
    /// processes than the state's own probe. They come back as [`PublishGitState`]
    /// and [`CheckpointEnded`]. A session whose worktree was discarded has no
    /// directory to look at.
    pub(super) fn after_turn_git(&mut self, turn_id: TurnId, ctx: &mut Context<Self>) {
        let workspace = self.record.workspace.clone();
        if workspace
            .as_ref()
            .is_some_and(|w| w.state == WorktreeState::Discarded)
        {
            return;
        }
        let Some(generation) = self.git.begin() else {
            return;
        };
        let cwd = std::path::PathBuf::from(&self.record.cwd);
        let (session_id, last) = (self.id.to_string(), self.git.checkpoint_lock());
        let addr = ctx.address();
        actix_rt::spawn(async move {
            let mut previous = last.lock_owned().await;
            let parent = previous.clone();
            let turn = turn_id.clone();
            let done = actix_rt::task::spawn_blocking(move || {
                let state = state::compute(&cwd, workspace.as_ref());
                let checkpoint = match &state {
                    Err(WorkspaceError::NotAGitRepository(dir)) => {
                        Err(WorkspaceError::NotAGitRepository(dir.clone()))
                    }
                    _ => checkpoint::record(&cwd, &session_id, &turn, parent.as_deref()),
                };
                (state, checkpoint)
            })
            .await;
            let outcome = match done {
                Ok((state, checkpoint)) => {
                    match state {
                        Ok(state) => addr.do_send(PublishGitState { generation, state }),
                        // Not a repository: nothing to publish.
                        Err(WorkspaceError::NotAGitRepository(_)) => {}
                        Err(e) => tracing::warn!(error = %e, "git state not computed"),
                    }
                    match checkpoint {
                        Ok(checkpoint) => {
                            *previous = Some(checkpoint.commit.clone());
                            CheckpointOutcome::Recorded(checkpoint)
                        }
                        Err(WorkspaceError::NotAGitRepository(_)) => {
                            CheckpointOutcome::NoRepository
                        }
                        Err(e) => {
                            tracing::warn!(turn = %turn_id, error = %e, "checkpoint not recorded");
                            CheckpointOutcome::Failed
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(turn = %turn_id, error = %e, "git task after the turn failed");
                    CheckpointOutcome::Failed
                }
            };
            drop(previous);
            addr.do_send(CheckpointEnded { turn_id, outcome });
        });
    }

    /// True when a turn starting now must wait for checkpoints still being made.
    pub(super) fn start_waits_for_checkpoints(&self) -> bool {
        self.preparing || self.git.holds_starts()
    }

    /// Starts the agent of a turn that waited, once nothing holds it back.
    pub(super) fn release_deferred_start(&mut self) {
        if self.start_waits_for_checkpoints() || self.slot_wait.is_some() {
            return;
        }
        if let Some((adapter, start)) = self.deferred_start.take() {
            adapter.do_send(start);
        }
    }
}

impl Handler<PublishGitState> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: PublishGitState, _: &mut Context<Self>) {
        if !self.git.take_state(msg.generation, &msg.state) {
            return;
        }
        let notices = self.worktree_repo().map(|repo| {
            let paths = msg.state.files.iter().map(|f| f.path.clone()).collect();
            self.services
                .overlaps
                .update(&self.record.id, &self.record.owner_id, &repo, paths)
        });
        self.emit(None, EventBody::GitState { state: msg.state });
        self.tell_overlaps(notices.unwrap_or_default());
        self.flush();
    }
}

/// Checks ran in this session's working directory: their results, kept for the
/// merge gate.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ChecksDone {
    /// Every check's outcome, in order.
    pub results: Vec<tandem_protocol::workspace::CheckResult>,
    /// Append their `check` events too (a delegation's end ran them; `session.check`
    /// appends each as it ends).
    pub record_events: bool,
}

impl Handler<ChecksDone> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: ChecksDone, _: &mut Context<Self>) {
        if msg.record_events {
            for result in &msg.results {
                self.emit(
                    None,
                    EventBody::Check {
                        result: result.clone(),
                    },
                );
            }
        }
        self.record.last_checks = Some(msg.results);
        self.touch();
        self.flush();
    }
}

/// The session's new worktree is being set up (`true`, sent before anyone can name
/// the session) or is ready (`false`): while it is, a turn is recorded as started but
/// its agent waits.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Preparing(pub bool);

impl Handler<Preparing> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Preparing, _: &mut Context<Self>) {
        self.preparing = msg.0;
        self.release_deferred_start();
    }
}

/// What this session shares with a sibling worktree changed ([`overlap`]).
#[derive(Message)]
#[rtype(result = "()")]
pub struct OverlapNotice {
    /// The sibling.
    pub with: SessionId,
    /// The paths both changed now.
    pub paths: Vec<String>,
}

impl Handler<OverlapNotice> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: OverlapNotice, _: &mut Context<Self>) {
        self.emit(
            None,
            EventBody::Overlap {
                with_session_id: msg.with,
                paths: msg.paths,
            },
        );
        self.flush();
    }
}

impl SessionActor {
    /// The base checkout of this session's active worktree, if it has one.
    fn worktree_repo(&self) -> Option<String> {
        self.record
            .workspace
            .as_ref()
            .filter(|w| w.state == WorktreeState::Active)
            .map(|w| w.base_checkout.clone())
    }

    /// Appends this session's own notices and sends the others to their sessions.
    pub(super) fn tell_overlaps(&mut self, notices: Vec<overlap::Notice>) {
        for notice in notices {
            if notice.to == self.record.id {
                self.emit(
                    None,
                    EventBody::Overlap {
                        with_session_id: notice.with,
                        paths: notice.paths,
                    },
                );
            } else if let Some(other) = self.services.sessions.get(&notice.to) {
                other.do_send(OverlapNotice {
                    with: notice.with,
                    paths: notice.paths,
                });
            }
        }
    }
}

impl Handler<CheckpointEnded> for SessionActor {
    type Result = ();

    /// Appends the `checkpoint` event, and once no checkpoint runs, starts the agent
    /// of a turn that waited for them.
    fn handle(&mut self, msg: CheckpointEnded, _: &mut Context<Self>) {
        let repository = match &msg.outcome {
            CheckpointOutcome::Recorded(_) => Some(true),
            CheckpointOutcome::NoRepository => Some(false),
            CheckpointOutcome::Failed => None,
        };
        let settled = self.git.ended(repository);
        match msg.outcome {
            CheckpointOutcome::Recorded(Checkpoint {
                commit,
                files,
                files_omitted,
            }) => {
                self.emit(
                    Some(msg.turn_id),
                    EventBody::Checkpoint {
                        commit,
                        files,
                        files_omitted,
                    },
                );
                self.flush();
            }
            CheckpointOutcome::NoRepository | CheckpointOutcome::Failed => {}
        }
        self.release_deferred_start();
        for waiter in settled {
            let _ = waiter.send(self.next_seq - 1);
        }
    }
}

/// Answers once no checkpoint is being made and every event so far is committed, so
/// a reader of the stored history sees the checkpoints of every turn that ended
/// (`session.fork`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Settle;

/// How long [`Settle`] waits for the store once the checkpoints are made.
const SETTLE_COMMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Handler<Settle> for SessionActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Settle, _: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Some(now) = self.git.settle(tx) {
            let _ = now.send(self.next_seq - 1);
        }
        let gate = self.gate.clone();
        Box::pin(async move {
            if let Ok(last) = rx.await {
                gate.wait_for(last, SETTLE_COMMIT_WAIT).await;
            }
        })
    }
}

/// `session.restore`: put the working directory's files back to a checkpoint.
#[derive(Message)]
#[rtype(result = "Result<SessionRestoreResult, RuntimeError>")]
pub struct Restore {
    /// The checkpoint's turn id.
    pub turn_id: TurnId,
}

impl Handler<Restore> for SessionActor {
    type Result = AtomicResponse<Self, Result<SessionRestoreResult, RuntimeError>>;

    /// Atomic: no turn can start while git rewrites the files.
    fn handle(&mut self, msg: Restore, _: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.restore_checks() {
            return AtomicResponse::new(Box::pin(fut::err(e)));
        }
        let (undo, work) = self.restore_files(msg.turn_id.clone());
        let fut = fut::wrap_future::<_, Self>(work)
            .map(move |restored, act, _| Ok(act.record_restore(msg.turn_id, undo, restored?)));
        AtomicResponse::new(Box::pin(fut))
    }
}

impl SessionActor {
    /// Puts the files back to the checkpoint of `turn_id`, off the mailbox; the id of
    /// the undo checkpoint it records first, and the work. The checkpoint lock is
    /// taken first, so checkpoints of turns that already ended are made before.
    pub(super) fn restore_files(
        &self,
        turn_id: TurnId,
    ) -> (
        TurnId,
        impl std::future::Future<Output = Result<checkpoint::Restored, RuntimeError>> + 'static,
    ) {
        let cwd = std::path::PathBuf::from(&self.record.cwd);
        let (session_id, last) = (self.id.to_string(), self.git.checkpoint_lock());
        let undo = TurnId::new(format!("restore_{}", self.next_seq));
        let undo_id = undo.clone();
        let work = async move {
            let mut previous = last.lock_owned().await;
            let parent = previous.clone();
            let restored = actix_rt::task::spawn_blocking(move || {
                checkpoint::restore(&cwd, &session_id, &turn_id, &undo_id, parent.as_deref())
            })
            .await
            .map_err(|e| RuntimeError::Internal(format!("restore task failed: {e}")))??;
            // The files are the checkpoint's now: the next turn's lists what it changes.
            *previous = Some(restored.commit.clone());
            Ok::<_, RuntimeError>(restored)
        };
        (undo, work)
    }

    /// Appends what a restore did: the undo checkpoint, then `restored`.
    pub(super) fn record_restore(
        &mut self,
        turn_id: TurnId,
        undo: TurnId,
        restored: checkpoint::Restored,
    ) -> SessionRestoreResult {
        let before = restored.before;
        self.emit(
            Some(undo.clone()),
            EventBody::Checkpoint {
                commit: before.commit,
                files: before.files,
                files_omitted: before.files_omitted,
            },
        );
        self.emit(
            Some(turn_id.clone()),
            EventBody::Restored {
                commit: restored.commit.clone(),
                files: restored.files.clone(),
                files_omitted: restored.files_omitted,
                undo: undo.clone(),
            },
        );
        self.flush();
        SessionRestoreResult {
            session_id: self.record.id.clone(),
            turn_id,
            commit: restored.commit,
            files: restored.files,
            files_omitted: restored.files_omitted,
            undo,
        }
    }
}

impl SessionActor {
    /// What refuses a restore before git runs: a turn or background work (either
    /// could be writing the files), or a worktree that is gone.
    pub(super) fn restore_checks(&self) -> Result<(), RuntimeError> {
        if self.turn.is_some() || !self.background.is_empty() {
            return Err(WorkspaceError::SessionBusy(self.record.id.clone()).into());
        }
        if self
            .record
            .workspace
            .as_ref()
            .is_some_and(|w| w.state == WorktreeState::Discarded)
        {
            return Err(WorkspaceError::NotAWorktree(self.record.id.clone()).into());
        }
        Ok(())
    }
}

impl Handler<WorkspaceChanged> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: WorkspaceChanged, _: &mut Context<Self>) {
        if self.record.workspace != msg.workspace {
            self.record.workspace = msg.workspace;
            self.touch();
        }
        self.emit(None, msg.event);
        if self.worktree_repo().is_none() {
            // Discarded: its siblings share nothing with it any more.
            let notices = self.services.overlaps.remove(&self.record.id);
            self.tell_overlaps(notices);
        }
        self.flush();
    }
}
