//! `DELETE /api/v1/sessions/{id}`: archive a session and forget its actor.

use std::path::Path;

use tandem_protocol::workspace::WorktreeState;
use tandem_protocol::SessionInfo;

use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::session::{Archive, OverlapNotice};
use crate::workspace::worktree;

impl Runtime {
    /// Archives a session `who` may drive: it must be idle, unpaired, with no
    /// background work, children, queue or pending schedule. It then leaves every
    /// list, frees its owner's slot, and is not loaded again after a restart.
    pub async fn archive(
        &self,
        who: &Principal,
        id: &SessionId,
    ) -> Result<SessionInfo, RuntimeError> {
        let handle = self.access().drivable(who, id)?;
        let info = handle.ask(Archive).await??;
        // Out of the registry before anything else awaits: the actor has stopped.
        if self.inner.services.sessions.remove(id) {
            self.inner.sessions.free_slot(&info.owner_id);
        }
        // Sibling worktrees that shared files with it share none now.
        for notice in self.inner.services.overlaps.remove(id) {
            if let Some(addr) = self.sessions().session_addr(&notice.to) {
                addr.do_send(OverlapNotice {
                    with: notice.with,
                    paths: notice.paths,
                });
            }
        }
        // Its run script goes with it (a worktree's scripts go below, with the worktree).
        self.inner.services.scripts.end_session(id);
        // Its terminals too, with everything they started.
        self.inner
            .terminals
            .end_session(id, "the session was archived")
            .await;
        // Its worktree goes with it, and its branch unless that was pushed or merged.
        if let Some(ws) = info
            .workspace
            .clone()
            .filter(|w| w.state == WorktreeState::Active)
        {
            self.inner.workspaces.worktree_leaving(&info, None).await;
            let dir = std::path::PathBuf::from(&info.cwd);
            let keep = ws.pushed.is_some() || ws.merged;
            let removed = actix_rt::task::spawn_blocking(move || {
                worktree::remove(Path::new(&ws.base_checkout), &dir, &ws.branch, keep)
            })
            .await;
            match removed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(session = %id, error = %e, "removing an archived session's worktree failed")
                }
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "removing an archived session's worktree failed")
                }
            }
        }
        // Its checkpoints go with it, from the repository they were made in.
        let repo = match info.workspace.as_ref() {
            Some(ws) => ws.base_checkout.clone(),
            None => info.cwd.clone(),
        };
        self.inner
            .workspaces
            .drop_checkpoints(repo.into(), id)
            .await;
        // Its uploads go with it (those no other session uses).
        let uploads = self.inner.uploads.store.clone();
        let session = id.to_string();
        match actix_rt::task::spawn_blocking(move || uploads.remove_session(&session)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(session = %id, error = %e, "removing an archived session's uploads failed")
            }
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "removing an archived session's uploads failed")
            }
        }
        Ok(info)
    }
}
