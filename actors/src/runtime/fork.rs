//! `session.fork`: a new session whose conversation is another's up to and including
//! the turn of one of its user messages, beside it; the source is unchanged. The
//! fork's agent gets the turns as a bounded transcript with its first message, and
//! with `workspace: "worktree"` its own worktree starts with the files of that turn's
//! checkpoint.
//!
//! A fork is made from stored history: the source is first asked to [`Settle`]
//! (answered once no checkpoint is being made and its events so far are committed),
//! then the whole history is read, the fork point found (`fork_point`, pure) and the
//! session created with a `ForkStart`. For the same vendor with the `fork` capability
//! the source's adapter is asked for the vendor's own fork ([`ForkVendor`]): Codex
//! answers a new thread; Claude Code and an ACP agent answer the source's session
//! with a `ForkOnOpen`, kept in the fork's record and given to its adapter until the
//! vendor names the forked session, so the source's session is never reopened as the
//! fork's own. Otherwise the bounded transcript (`handoff::fork_context`) is kept in
//! the record until the fork's first turn prepends it. A worktree fork is a worktree
//! from the source's base commit with the checkpoint's files as uncommitted changes
//! (`checkpoint::materialize`).

use tandem_protocol::client::SessionForkParams;
use tandem_protocol::results::SessionForkResult;
use tandem_protocol::workspace::{WorkspaceInfo, WorkspaceMode};
use tandem_protocol::{Event, EventBody, ForkConversation, ForkedFrom, SupersededRange};

use super::create::{ForkStart, WorktreeRequest};
use super::{NewSession, Runtime};
use crate::access::Principal;
use crate::adapter::messages::VendorFork;
use crate::adapter::VendorId;
use crate::adapter::FORK_CAPABILITY;
use crate::error::RuntimeError;
use crate::handoff::{fork_context, transcript};
use crate::ids::{SessionId, TurnId};
use crate::session::{ForkVendor, RecordEvent, Settle};
use crate::store::Store;
use crate::workspace::WorkspaceError;

/// Events read from the store at a time.
const READ_PAGE: usize = 5000;

/// What the source's history says about a fork point.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ForkPoint {
    /// The anchor's turn.
    pub turn_id: TurnId,
    /// The `seq` of that turn's `turn_completed`: the fork's conversation ends there.
    pub end: u64,
    /// Live turns up to and including it.
    pub turns: u64,
    /// Live turns after it.
    pub after: u64,
    /// The commit of that turn's checkpoint, if one was recorded.
    pub checkpoint: Option<String>,
}

/// Finds the fork point at the `user_message` `anchor` in `events` (the whole stored
/// history, oldest first): a user message of an ended turn that no rewind in
/// `superseded` replaced. Pure, so it is unit-tested.
pub(crate) fn fork_point(
    anchor: u64,
    events: &[Event],
    superseded: &[SupersededRange],
) -> Result<ForkPoint, RuntimeError> {
    let (at, turn, end) = crate::session::anchored_turn(anchor, events, superseded)?;
    let mine = |e: &&Event| e.turn_id.as_ref() == Some(turn);
    let live = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::TurnStarted {}))
        .filter(|e| !superseded.iter().any(|r| r.covers(e.seq)));
    let (kept, after): (Vec<&Event>, Vec<&Event>) = live.partition(|e| e.seq <= end);
    let checkpoint = events[at..]
        .iter()
        .filter(mine)
        .find_map(|e| match &e.body {
            EventBody::Checkpoint { commit, .. } => Some(commit.clone()),
            _ => None,
        });
    Ok(ForkPoint {
        turn_id: turn.clone(),
        end,
        turns: kept.len() as u64,
        after: after.len() as u64,
        checkpoint,
    })
}

impl Runtime {
    /// `session.fork` (owner only).
    pub async fn fork(
        &self,
        who: &Principal,
        params: SessionForkParams,
    ) -> Result<SessionForkResult, RuntimeError> {
        let handle = self.access().drivable(who, &params.session_id)?;
        // The checkpoints of turns that ended are made and stored before the history
        // is read: a fork right after a turn starts from that turn's files.
        handle.ask(Settle).await?;
        let source = handle.shared.info();
        let vendor = params
            .vendor
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .unwrap_or(&source.vendor)
            .to_string();
        let (frames, events) = self.read_history(source.id.clone()).await?;
        let point = fork_point(params.anchor_seq, &events, &source.superseded)?;
        let worktree = fork_checkpoint(params.workspace, &source, &point)?;
        let kept: Vec<(u64, String)> = frames
            .into_iter()
            .filter(|(seq, _)| *seq <= point.end)
            .filter(|(seq, _)| !source.superseded.iter().any(|r| r.covers(*seq)))
            .collect();
        let source_vendor = self
            .inner
            .vendors
            .get(&VendorId::from(source.vendor.as_str()))
            .map(|v| v.display_name.to_string())
            .unwrap_or_else(|| source.vendor.clone());
        // The vendor's own fork where it has one, else the turns as a transcript.
        let own = self
            .vendor_fork(&handle, &source, &vendor, point.after)
            .await;
        let conversation = match own {
            Some(_) => ForkConversation::Vendor,
            None => ForkConversation::Transcript,
        };
        let context = own
            .is_none()
            .then(|| fork_context(&source.title, &source_vendor, &transcript(&kept)));
        let title = match params.title {
            Some(title) => title,
            None => format!("{} · fork", source.title)
                .chars()
                .take(200)
                .collect(),
        };
        let place = fork_place(&source, worktree);
        let forked_from = ForkedFrom {
            session_id: source.id.clone(),
            anchor_seq: params.anchor_seq,
        };
        let start = ForkStart {
            forked_from,
            context,
            vendor: own,
        };
        let fork = self
            .new_session(self.fork_session(&source, &vendor, title, place, start))
            .await?;
        let addr = self
            .sessions()
            .session_addr(&fork.id)
            .ok_or_else(|| RuntimeError::Internal("the fork vanished".into()))?;
        addr.send(RecordEvent(EventBody::Forked {
            source_session_id: source.id.clone(),
            source_title: source.title.clone(),
            anchor_seq: params.anchor_seq,
            turns: point.turns,
            conversation,
        }))
        .await?;
        let session = self.sessions().session_info(&fork.id).unwrap_or(fork);
        Ok(SessionForkResult {
            session,
            conversation,
        })
    }
}

/// The checkpoint a fork's worktree starts from and the source's worktree, when the
/// fork gets one (`workspace`, by default a worktree when the source has one); a
/// worktree fork of a turn with no checkpoint is refused.
fn fork_checkpoint(
    workspace: Option<WorkspaceMode>,
    source: &tandem_protocol::SessionInfo,
    point: &ForkPoint,
) -> Result<Option<(String, Option<WorkspaceInfo>)>, RuntimeError> {
    let mode = workspace.unwrap_or(if source.workspace.is_some() {
        WorkspaceMode::Worktree
    } else {
        WorkspaceMode::Shared
    });
    Ok(match mode {
        WorkspaceMode::Shared => None,
        WorkspaceMode::Worktree => {
            let commit = point.checkpoint.clone().ok_or_else(|| {
                WorkspaceError::NoSuchCheckpoint(format!(
                    "turn {} has no checkpoint for the fork's worktree to start from; \
                     fork with workspace \"shared\"",
                    point.turn_id
                ))
            })?;
            Some((commit, source.workspace.clone()))
        }
    })
}

/// Where a fork works: its directory, and the worktree to create when it gets one
/// (from [`fork_checkpoint`]).
fn fork_place(
    source: &tandem_protocol::SessionInfo,
    worktree: Option<(String, Option<WorkspaceInfo>)>,
) -> (String, Option<WorktreeRequest>) {
    // A worktree fork branches where the source's worktree did (or from the
    // shared checkout's HEAD) and starts with the checkpoint's files.
    match worktree {
        None => (source.cwd.clone(), None),
        Some((commit, Some(ws))) => (
            ws.base_checkout.clone(),
            Some(WorktreeRequest {
                base_ref: Some(ws.base_commit),
                files_from: Some(commit),
            }),
        ),
        Some((commit, None)) => (
            source.cwd.clone(),
            Some(WorktreeRequest {
                base_ref: None,
                files_from: Some(commit),
            }),
        ),
    }
}

impl Runtime {
    /// Session `id`'s whole stored history, oldest first: the stored frames (`seq`
    /// and text) and the events they hold. Read off the actor's thread.
    async fn read_history(
        &self,
        id: SessionId,
    ) -> Result<(Vec<(u64, String)>, Vec<Event>), RuntimeError> {
        let store = self.inner.store.clone();
        let frames = actix_rt::task::spawn_blocking(move || read_all(&store, &id))
            .await
            .map_err(|e| RuntimeError::Internal(format!("history read failed: {e}")))??;
        let events = frames
            .iter()
            .map(|(_, frame)| {
                serde_json::from_str::<Event>(frame)
                    .map_err(|e| RuntimeError::Internal(format!("stored event unreadable: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((frames, events))
    }

    /// The new session a fork of `source` is: the source's owner, visibility and
    /// permission mode, its model and effort when `vendor` is the source's own (another
    /// vendor's defaults otherwise), at `place` (its directory and worktree).
    fn fork_session(
        &self,
        source: &tandem_protocol::SessionInfo,
        vendor: &str,
        title: String,
        place: (String, Option<WorktreeRequest>),
        start: ForkStart,
    ) -> NewSession {
        let (cwd, worktree) = place;
        NewSession {
            mcp_servers: self.chosen_mcp_servers(&source.id),
            resume: None,
            id: None,
            owner_id: source.owner_id.clone(),
            visibility: source.visibility,
            vendor: VendorId::from(vendor),
            model: if vendor == source.vendor {
                source.model.clone()
            } else {
                String::new()
            },
            effort: if vendor == source.vendor {
                source.effort.clone()
            } else {
                String::new()
            },
            title: Some(title),
            cwd,
            permission_mode: source.permission_mode,
            parent_id: None,
            pending_prompt: None,
            handoff_from: None,
            fork: Some(start),
            worktree,
        }
    }

    /// Asks the source's adapter for the vendor's own fork without the newest `drop`
    /// turns: for a fork of the same vendor that lists the `fork` capability (Codex,
    /// Claude Code, an ACP agent offering `session/fork`), so no other agent is
    /// started just to say no. `None` (logged) when it cannot.
    async fn vendor_fork(
        &self,
        handle: &crate::session::SessionHandle,
        source: &tandem_protocol::SessionInfo,
        vendor: &str,
        drop: u64,
    ) -> Option<VendorFork> {
        let spec = self.inner.vendors.get(&VendorId::from(vendor))?;
        let forks = spec.capabilities.iter().any(|c| c == FORK_CAPABILITY);
        if vendor != source.vendor || !forks {
            return None;
        }
        match handle.ask(ForkVendor { drop_turns: drop }).await {
            Ok(Ok(fork)) => Some(fork),
            Ok(Err(e)) | Err(e) => {
                tracing::debug!(session = %source.id, error = %e, "no vendor fork; a transcript instead");
                None
            }
        }
    }
}

/// Every stored event of session `id`, oldest first. Blocking.
fn read_all(store: &Store, id: &str) -> Result<Vec<(u64, String)>, RuntimeError> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let rows = store.read_events(id, after, READ_PAGE)?;
        let Some(&(last, _)) = rows.last() else {
            break;
        };
        let full = rows.len() == READ_PAGE;
        out.extend(rows);
        if !full {
            break;
        }
        after = last;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::events::{done, ev, user};

    fn checkpoint(commit: &str) -> EventBody {
        EventBody::Checkpoint {
            commit: commit.into(),
            files: Vec::new(),
            files_omitted: 0,
        }
    }

    /// Three turns (1-3, 5-7, 9-11), each followed by its checkpoint (4, 8, 12);
    /// the third turn running when `running`.
    fn history(running: bool) -> Vec<Event> {
        let mut out = Vec::new();
        for n in 0..3u64 {
            let t = format!("turn_{}", n + 1);
            out.push(ev(n * 4 + 1, Some(&t), EventBody::TurnStarted {}));
            out.push(ev(n * 4 + 2, Some(&t), user("hi")));
            if running && n == 2 {
                break;
            }
            out.push(ev(n * 4 + 3, Some(&t), done()));
            out.push(ev(n * 4 + 4, Some(&t), checkpoint(&format!("c{}", n + 1))));
        }
        out
    }

    #[test]
    fn a_fork_point_keeps_the_turns_up_to_the_anchor_and_its_checkpoint() {
        let point = fork_point(6, &history(false), &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            point,
            ForkPoint {
                turn_id: "turn_2".into(),
                end: 7,
                turns: 2,
                after: 1,
                checkpoint: Some("c2".into()),
            }
        );
    }

    #[test]
    fn superseded_turns_do_not_count_and_cannot_be_forked() {
        // An edit replaced turn 1 (seq 1-4) after it; the later turns stay.
        let range = SupersededRange {
            anchor_seq: 2,
            superseded_from: 1,
            superseded_to: 4,
            turns: 1,
            rewound_at: 5,
        };
        let point = fork_point(10, &history(false), std::slice::from_ref(&range))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(point.turns, 2);
        assert!(matches!(
            fork_point(2, &history(false), &[range]),
            Err(RuntimeError::InvalidAnchor(_))
        ));
    }

    #[test]
    fn an_anchor_that_is_not_an_ended_user_message_is_refused() {
        for (anchor, events) in [
            (3, history(false)),  // turn_completed
            (10, history(true)),  // a running turn
            (99, history(false)), // past the end
        ] {
            assert!(
                matches!(
                    fork_point(anchor, &events, &[]),
                    Err(RuntimeError::InvalidAnchor(_))
                ),
                "anchor {anchor}"
            );
        }
    }
}
