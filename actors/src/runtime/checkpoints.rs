//! `session.checkpoints`: a session's checkpoints, read from its stored `checkpoint`
//! events, and `session.restore`, which the session runs (the session actor records one after each turn that ends in a git
//! working directory; see `crate::workspace::checkpoint`).

use std::path::PathBuf;

use serde::Deserialize;
use tandem_protocol::queries::{CheckpointInfo, SessionRestoreResult};

use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::{SessionId, TurnId};
use crate::session::Restore;
use crate::store::Store;
use crate::workspace::checkpoint;

use super::WorkspaceService;

/// Events read from the store at a time.
const READ_PAGE: usize = 5000;

/// The fields of a stored `checkpoint` event this needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    kind: String,
    #[serde(default)]
    turn_id: Option<TurnId>,
    seq: u64,
    ts: u64,
    #[serde(default)]
    commit: String,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    files_omitted: u64,
}

impl WorkspaceService {
    /// `session.checkpoints`: oldest first.
    pub async fn checkpoints(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<Vec<CheckpointInfo>, RuntimeError> {
        self.access.visible(who, session_id)?;
        let store = self.store.clone();
        let id = session_id.to_string();
        actix_rt::task::spawn_blocking(move || read(&store, &id))
            .await
            .map_err(|e| RuntimeError::Internal(e.to_string()))?
    }

    /// `session.restore` (owner only): the session puts its files back to the
    /// checkpoint of `turn_id`, refusing while a turn runs.
    pub async fn restore(
        &self,
        who: &Principal,
        session_id: &SessionId,
        turn_id: TurnId,
    ) -> Result<SessionRestoreResult, RuntimeError> {
        let handle = self.access.drivable(who, session_id)?;
        handle.ask(Restore { turn_id }).await?
    }

    /// Deletes the session's checkpoint refs from the repository at `dir` (its
    /// working directory's, or a worktree's base checkout): when it is archived or its
    /// worktree discarded. Best effort: a failure is logged, not returned, since what
    /// it follows has happened.
    pub(super) async fn drop_checkpoints(&self, dir: PathBuf, session_id: &SessionId) {
        let id = session_id.to_string();
        let done = actix_rt::task::spawn_blocking(move || checkpoint::remove_all(&dir, &id)).await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(session = %session_id, error = %e, "removing checkpoints failed")
            }
            Err(e) => {
                tracing::warn!(session = %session_id, error = %e, "removing checkpoints failed")
            }
        }
    }
}

fn read(store: &Store, id: &str) -> Result<Vec<CheckpointInfo>, RuntimeError> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let rows = store.read_events(id, after, READ_PAGE)?;
        let Some(&(last, _)) = rows.last() else {
            break;
        };
        // Most events are something else; only candidates are parsed.
        for (_, frame) in rows.iter().filter(|(_, f)| f.contains("\"checkpoint\"")) {
            let Ok(ev) = serde_json::from_str::<Stored>(frame) else {
                continue;
            };
            if ev.kind != "checkpoint" {
                continue;
            }
            out.push(CheckpointInfo {
                turn_id: ev.turn_id.unwrap_or_default(),
                commit: ev.commit,
                files: ev.files,
                files_omitted: ev.files_omitted,
                created_at: ev.ts,
                seq: ev.seq,
            });
        }
        if rows.len() < READ_PAGE {
            break;
        }
        after = last;
    }
    Ok(out)
}
