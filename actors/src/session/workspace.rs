//! The session's side of workspaces: after each turn it asks for its `git_state`,
//! computed on the blocking pool (never on this actor's mailbox), and appends it when
//! it changed; merges and discards record their events and new workspace state here.

use actix::prelude::*;
use tandem_protocol::workspace::{GitState, WorkspaceInfo, WorktreeState};
use tandem_protocol::EventBody;

use super::SessionActor;

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

impl SessionActor {
    /// Starts computing the working directory's state off the mailbox; the result
    /// comes back as [`PublishGitState`]. A session whose worktree was discarded has
    /// no directory to look at.
    pub(super) fn refresh_git_state(&mut self, ctx: &mut Context<Self>) {
        let workspace = self.record.workspace.clone();
        if workspace
            .as_ref()
            .is_some_and(|w| w.state == WorktreeState::Discarded)
        {
            return;
        }
        self.git_generation += 1;
        let generation = self.git_generation;
        let cwd = std::path::PathBuf::from(&self.record.cwd);
        let addr = ctx.address();
        actix_rt::spawn(async move {
            let computed = actix_rt::task::spawn_blocking(move || {
                crate::workspace::state::compute(&cwd, workspace.as_ref())
            })
            .await;
            match computed {
                Ok(Ok(state)) => addr.do_send(PublishGitState { generation, state }),
                // Not a repository: nothing to publish.
                Ok(Err(crate::workspace::WorkspaceError::NotAGitRepository(_))) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "git state not computed"),
                Err(e) => tracing::warn!(error = %e, "git state task failed"),
            }
        });
    }
}

impl Handler<PublishGitState> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: PublishGitState, _: &mut Context<Self>) {
        if msg.generation != self.git_generation
            || self.last_git_state.as_ref() == Some(&msg.state)
        {
            return;
        }
        self.last_git_state = Some(msg.state.clone());
        self.emit(None, EventBody::GitState { state: msg.state });
        self.flush();
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
        self.flush();
    }
}
