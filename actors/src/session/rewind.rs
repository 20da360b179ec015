//! `chat.edit-send`: rewind the vendor's conversation to just before an earlier user
//! message, record `history_rewound`, and run the new message as the next turn
//! through the same path `chat.send` takes.
//!
//! The log stays append-only: nothing stored is changed. The branch from the anchor's
//! turn to the last event is marked superseded by the `history_rewound` event and by
//! the range kept in the session record (and so in `SessionInfo.superseded`).

use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::queries::SessionRestoreResult;
use tandem_protocol::{Event, EventBody, SupersededRange};
use tokio::sync::oneshot;

use super::actor::SessionActor;
use super::{Configure, SendMessage};
use crate::adapter::messages::{AdapterCommand, CannotBranch, VendorFork};
use crate::adapter::REWIND_CAPABILITY;
use crate::error::RuntimeError;
use crate::ids::{SessionId, TurnId};

/// How long the history's tail may take to reach the store before the rewind gives up.
const COMMIT_WAIT: Duration = Duration::from_secs(2);

/// How long the adapter may take to make its vendor forget.
const REWIND_WAIT: Duration = Duration::from_secs(60);

/// Rewind to just before the `user_message` at `anchor_seq` and run `content`.
#[derive(Debug, Message)]
#[rtype(result = "Result<EditOutcome, RuntimeError>")]
pub struct EditSend {
    /// The `user_message` replaced.
    pub anchor_seq: u64,
    /// The new message's text (as `chat.send` gives it to the session).
    pub content: String,
    /// Its images and files, already checked and stored (empty for text only).
    pub attachments: crate::adapter::messages::Attachments,
    /// Settings applied before the turn, as on `chat.send`.
    pub options: Option<tandem_protocol::client::TurnOptions>,
    /// Put the files back as they were when the anchor's turn started, first.
    pub restore_files: bool,
}

/// What `chat.edit-send` did.
#[derive(Debug, Clone, PartialEq)]
pub struct EditOutcome {
    /// The turn running the new message.
    pub turn_id: TurnId,
    /// The branch that was superseded.
    pub superseded: SupersededRange,
    /// The restore made first (`restoreFiles`).
    pub restored: Option<SessionRestoreResult>,
}

/// What the stored history says about an anchor: the branch a rewind supersedes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Branch {
    /// First superseded `seq`: the anchor turn's `turn_started`.
    pub from: u64,
    /// Live (not yet superseded) turns from the anchor's on.
    pub turns: u64,
}

/// The `user_message` `anchor` in `events` (oldest first) when a branch may start at
/// it, for a rewind or a fork: a user message of a turn that has ended and that no
/// earlier edit in `superseded` replaced. Its index in `events`, its turn, and the
/// `seq` of that turn's `turn_completed`.
pub(crate) fn anchored_turn<'e>(
    anchor: u64,
    events: &'e [Event],
    superseded: &[SupersededRange],
) -> Result<(usize, &'e TurnId, u64), RuntimeError> {
    let bad = |what: String| RuntimeError::InvalidAnchor(format!("seq {anchor} {what}"));
    let Some(at) = events.iter().position(|e| e.seq == anchor) else {
        return Err(bad("is not in this session's history".into()));
    };
    let event = &events[at];
    let EventBody::UserMessage { .. } = event.body else {
        return Err(bad(format!(
            "is a `{}` event, not a user message",
            event.body.kind()
        )));
    };
    let Some(turn) = event.turn_id.as_ref() else {
        return Err(bad("is a user message outside any turn".into()));
    };
    if superseded.iter().any(|r| r.covers(anchor)) {
        return Err(bad("was already superseded by an earlier edit".into()));
    }
    let ended = events[at..].iter().find(|e| {
        e.turn_id.as_ref() == Some(turn) && matches!(e.body, EventBody::TurnCompleted { .. })
    });
    let Some(ended) = ended else {
        return Err(bad(format!("belongs to turn {turn}, which has not ended")));
    };
    Ok((at, turn, ended.seq))
}

/// Finds the branch that starts at the `user_message` `anchor` in `events` (the stored
/// events from just before the anchor to the end, oldest first), skipping turns that
/// an earlier rewind in `superseded` already covers. Pure, so it is unit-tested.
pub(crate) fn branch(
    anchor: u64,
    events: &[Event],
    superseded: &[SupersededRange],
) -> Result<Branch, RuntimeError> {
    let (at, turn, _) = anchored_turn(anchor, events, superseded)?;
    let from = events[..at]
        .iter()
        .rev()
        .find(|e| e.turn_id.as_ref() == Some(turn) && matches!(e.body, EventBody::TurnStarted {}))
        .map_or(anchor, |e| e.seq);
    let turns = events
        .iter()
        .filter(|e| e.seq >= from && matches!(e.body, EventBody::TurnStarted {}))
        .filter(|e| !superseded.iter().any(|r| r.covers(e.seq)))
        .count() as u64;
    Ok(Branch { from, turns })
}

/// The checkpoint the files were at when the turn of the `user_message` `anchor`
/// started, as the id `session.restore` takes: the newest `checkpoint` (of another
/// turn) or `restored` before that turn ended. A turn's checkpoint may be appended
/// after the next turn started, which waits for it before its agent runs. `events`
/// is the whole stored history, oldest first; `None` when no checkpoint precedes it.
pub(crate) fn files_before(anchor: u64, events: &[Event]) -> Option<TurnId> {
    let at = events.iter().position(|e| e.seq == anchor)?;
    let turn = events[at].turn_id.as_ref()?;
    let end = events[at..]
        .iter()
        .position(|e| {
            e.turn_id.as_ref() == Some(turn) && matches!(e.body, EventBody::TurnCompleted { .. })
        })
        .map_or(events.len(), |i| at + i);
    events[..end].iter().rev().find_map(|e| match e.body {
        EventBody::Checkpoint { .. } if e.turn_id.as_ref() != Some(turn) => e.turn_id.clone(),
        EventBody::Restored { .. } => e.turn_id.clone(),
        _ => None,
    })
}

/// `session.fork`'s vendor part: the adapter forks the vendor's conversation without
/// its newest `drop_turns` turns into a new vendor session, leaving this one as is.
#[derive(Debug, Message)]
#[rtype(result = "Result<VendorFork, RuntimeError>")]
pub struct ForkVendor {
    /// Live turns after the fork point.
    pub drop_turns: u64,
}

impl Handler<ForkVendor> for SessionActor {
    type Result = ResponseFuture<Result<VendorFork, RuntimeError>>;

    fn handle(&mut self, msg: ForkVendor, ctx: &mut Context<Self>) -> Self::Result {
        let (done, answer) = oneshot::channel();
        let sent = self.adapter(ctx).and_then(|adapter| {
            adapter
                .try_send(AdapterCommand::Fork {
                    drop_turns: msg.drop_turns,
                    done,
                })
                .map_err(|e| RuntimeError::Internal(format!("adapter unavailable: {e}")))
        });
        Box::pin(async move {
            sent?;
            match tokio::time::timeout(REWIND_WAIT, answer).await {
                Ok(Ok(answer)) => answer.map_err(|e| RuntimeError::RewindNotSupported(e.0)),
                Ok(Err(_)) => Err(RuntimeError::Internal(
                    "the adapter stopped during the fork".into(),
                )),
                Err(_) => Err(RuntimeError::RewindNotSupported(format!(
                    "the vendor did not fork within {}s",
                    REWIND_WAIT.as_secs()
                ))),
            }
        })
    }
}

/// An edit's branch, and the restore it asked for once found.
type Planned = (EditSend, Branch, u64, Option<TurnId>);

impl Handler<EditSend> for SessionActor {
    type Result = AtomicResponse<Self, Result<EditOutcome, RuntimeError>>;

    /// Atomic: no other message reaches the session between the checks, the read of
    /// the branch, the vendor's rewind and the new turn's start, so no turn can slip
    /// in between.
    fn handle(&mut self, msg: EditSend, ctx: &mut Context<Self>) -> Self::Result {
        let checked = self.edit_checks(&msg).and_then(|()| self.adapter(ctx));
        let adapter = match checked {
            Ok(adapter) => adapter,
            Err(e) => return AtomicResponse::new(Box::pin(fut::err(e))),
        };
        let last = self.next_seq - 1;
        let store = self.services.store.clone();
        let gate = self.gate.clone();
        let id = self.record.id.clone();
        // The branch's events are read from the store once they are committed: the
        // turn before the anchor at the latest, since the anchor's turn has ended. A
        // restore looks further back, for the checkpoint before the anchor's turn.
        let after = if msg.restore_files {
            0
        } else {
            msg.anchor_seq.saturating_sub(2)
        };
        let read = async move {
            gate.wait_for(last, COMMIT_WAIT).await;
            read_tail(store, id, after, last).await
        };
        let fut = fut::wrap_future::<_, Self>(read)
            .map(move |events, act: &mut Self, _ctx| act.plan_edit(msg, last, events))
            .then(
                |planned: Result<Planned, RuntimeError>, act: &mut Self, _ctx| {
                    // The files first: a restore git refuses leaves the conversation as it was.
                    let work = match planned {
                        Ok((msg, branch, last, Some(turn))) => {
                            let (undo, work) = act.restore_files(turn.clone());
                            Box::pin(async move {
                                let restored = work.await?;
                                Ok((msg, branch, last, Some((turn, undo, restored))))
                            })
                                as std::pin::Pin<Box<dyn std::future::Future<Output = _>>>
                        }
                        Ok((msg, branch, last, None)) => {
                            Box::pin(async move { Ok((msg, branch, last, None)) })
                        }
                        Err(e) => Box::pin(async move { Err(e) }),
                    };
                    fut::wrap_future(work)
                },
            )
            .map(
                move |done: Result<Restoring, RuntimeError>, act: &mut Self, _ctx| {
                    let (msg, branch, last, restore) = done?;
                    let restored = restore
                        .map(|(turn, undo, restored)| act.record_restore(turn, undo, restored));
                    let gone: u64 = act.record.superseded.iter().map(|r| r.turns).sum();
                    let live = act.record.turn_count.saturating_sub(gone);
                    let (done, answer) = oneshot::channel();
                    adapter
                        .try_send(AdapterCommand::Rewind {
                            drop_turns: branch.turns,
                            keep_turns: live.saturating_sub(branch.turns),
                            done,
                        })
                        .map_err(|e| RuntimeError::Internal(format!("adapter unavailable: {e}")))?;
                    Ok((msg, branch, last, restored, answer))
                },
            )
            .then(|prepared: Result<Prepared, RuntimeError>, _act, _ctx| {
                fut::wrap_future(rewound(prepared))
            })
            .map(|rewound, act: &mut Self, ctx| {
                let (msg, branch, last, restored) = rewound?;
                let outcome = act.after_rewind(msg, branch, last, restored, ctx);
                act.flush();
                outcome
            });
        AtomicResponse::new(Box::pin(fut))
    }
}

/// Waits for the adapter's answer to a prepared edit's rewind: the edit once its
/// vendor forgot the branch, else why not.
async fn rewound(
    prepared: Result<Prepared, RuntimeError>,
) -> Result<(EditSend, Branch, u64, Option<SessionRestoreResult>), RuntimeError> {
    let (msg, branch, last, restored, answer) = prepared?;
    match tokio::time::timeout(REWIND_WAIT, answer).await {
        Ok(Ok(Ok(()))) => Ok((msg, branch, last, restored)),
        Ok(Ok(Err(why))) => Err(RuntimeError::RewindNotSupported(format!(
            "the vendor could not rewind: {why}"
        ))),
        Ok(Err(_)) => Err(RuntimeError::Internal(
            "the adapter stopped during the rewind".into(),
        )),
        Err(_) => Err(RuntimeError::RewindNotSupported(format!(
            "the vendor did not rewind within {}s",
            REWIND_WAIT.as_secs()
        ))),
    }
}

/// An edit whose files were put back (when it asked), before the vendor's rewind.
type Restoring = (
    EditSend,
    Branch,
    u64,
    Option<(TurnId, TurnId, crate::workspace::checkpoint::Restored)>,
);

/// An edit checked against the history, waiting for the adapter's answer.
type Prepared = (
    EditSend,
    Branch,
    u64,
    Option<SessionRestoreResult>,
    oneshot::Receiver<Result<(), CannotBranch>>,
);

/// The stored events after `after`, which must reach `last`: the caller waited on the
/// flow gate, which passes `last` only once it is committed and fanned out, so a
/// shorter tail means the store is failing.
async fn read_tail(
    store: crate::store::Store,
    id: SessionId,
    after: u64,
    last: u64,
) -> Result<Vec<Event>, RuntimeError> {
    let rows = actix_rt::task::spawn_blocking(move || store.read_events(&id, after, usize::MAX))
        .await
        .map_err(|e| RuntimeError::Internal(format!("history read failed: {e}")))??;
    if rows.last().is_none_or(|(seq, _)| *seq < last) {
        return Err(RuntimeError::Internal(format!(
            "the history up to seq {last} is not committed yet; try again"
        )));
    }
    rows.iter()
        .map(|(_, frame)| {
            serde_json::from_str::<Event>(frame)
                .map_err(|e| RuntimeError::Internal(format!("stored event unreadable: {e}")))
        })
        .collect()
}

impl SessionActor {
    /// What refuses an edit before anything is read: bad content, a running turn or
    /// background work, a vendor that cannot rewind, an anchor outside the history.
    fn edit_checks(&self, msg: &EditSend) -> Result<(), RuntimeError> {
        if msg.content.trim().is_empty() && msg.attachments.is_empty() {
            return Err(RuntimeError::InvalidArgument("content is empty".into()));
        }
        if msg.restore_files {
            self.restore_checks()?;
        }
        // Before the rewind, which would otherwise happen with no turn after it.
        self.owner_allowed()?;
        if self.turn.is_some() {
            return Err(RuntimeError::RunInProgress(self.record.id.clone()));
        }
        if !self.background.is_empty() {
            return Err(RuntimeError::BackgroundRuns(self.record.id.clone()));
        }
        let can_rewind = self
            .services
            .catalog
            .get(&self.record.vendor)
            .is_some_and(|spec| spec.capabilities.iter().any(|c| c == REWIND_CAPABILITY));
        if !can_rewind {
            return Err(RuntimeError::RewindNotSupported(format!(
                "vendor {} cannot rewind a conversation",
                self.record.vendor
            )));
        }
        if msg.anchor_seq >= self.next_seq {
            return Err(RuntimeError::InvalidAnchor(format!(
                "seq {} is past the end of this session's history ({})",
                msg.anchor_seq,
                self.next_seq - 1
            )));
        }
        if self
            .record
            .superseded
            .iter()
            .any(|r| r.covers(msg.anchor_seq))
        {
            return Err(RuntimeError::InvalidAnchor(format!(
                "seq {} was already superseded by an earlier edit",
                msg.anchor_seq
            )));
        }
        Ok(())
    }

    /// An edit's branch in the history's tail `events` (read up to `last`), and the
    /// turn whose checkpoint a restore puts back.
    fn plan_edit(
        &self,
        msg: EditSend,
        last: u64,
        events: Result<Vec<Event>, RuntimeError>,
    ) -> Result<Planned, RuntimeError> {
        let events = events?;
        let branch = branch(msg.anchor_seq, &events, &self.record.superseded)?;
        let restore = if msg.restore_files {
            let turn = files_before(msg.anchor_seq, &events).ok_or_else(|| {
                crate::workspace::WorkspaceError::NoSuchCheckpoint(format!(
                    "no checkpoint was recorded before the turn of seq {}: \
                     its files cannot be restored",
                    msg.anchor_seq
                ))
            })?;
            Some(turn)
        } else {
            None
        };
        Ok((msg, branch, last, restore))
    }

    /// The vendor forgot the branch: record `history_rewound` and the range, then
    /// start the new turn the way `chat.send` does.
    fn after_rewind(
        &mut self,
        msg: EditSend,
        branch: Branch,
        last: u64,
        restored: Option<SessionRestoreResult>,
        ctx: &mut Context<Self>,
    ) -> Result<EditOutcome, RuntimeError> {
        let range = SupersededRange {
            anchor_seq: msg.anchor_seq,
            superseded_from: branch.from,
            superseded_to: last,
            turns: branch.turns,
            rewound_at: self.next_seq,
        };
        self.emit(
            None,
            EventBody::HistoryRewound {
                anchor_seq: range.anchor_seq,
                superseded_from: range.superseded_from,
                superseded_to: range.superseded_to,
                turns: range.turns,
            },
        );
        self.record.superseded.push(range.clone());
        self.recent.clear();
        self.touch();
        if let Some(options) = &msg.options {
            // Applied only after the rewind, as chat.send applies them before its turn.
            self.apply_config(Configure {
                model: options.model.clone(),
                effort: options.effort.clone(),
                permission_mode: options.permission_mode,
                ..Configure::default()
            })?;
        }
        let send = SendMessage {
            content: msg.content,
            attachments: msg.attachments,
            options: None,
            queue: false,
            review: None,
        };
        match self.on_send(send, ctx)? {
            super::SendOutcome::Started { turn_id } => Ok(EditOutcome {
                turn_id,
                superseded: range,
                restored,
            }),
            super::SendOutcome::Queued { .. } => Err(RuntimeError::Internal(
                "the edited message was queued instead of started".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::events::{done, ev, user};

    /// Three turns: 1-3, 4-6, 7-9.
    fn three() -> Vec<Event> {
        let mut out = Vec::new();
        for n in 0..3u64 {
            let t = format!("turn_{}", n + 1);
            out.push(ev(n * 3 + 1, Some(&t), EventBody::TurnStarted {}));
            out.push(ev(n * 3 + 2, Some(&t), user("hi")));
            out.push(ev(n * 3 + 3, Some(&t), done()));
        }
        out
    }

    #[test]
    fn the_branch_runs_from_the_anchor_turns_start_and_counts_live_turns() {
        let b = branch(5, &three(), &[]).unwrap();
        assert_eq!(b, Branch { from: 4, turns: 2 });
        let b = branch(8, &three(), &[]).unwrap();
        assert_eq!(b, Branch { from: 7, turns: 1 });
    }

    #[test]
    fn turns_an_earlier_rewind_superseded_are_not_counted_again() {
        let earlier = SupersededRange {
            anchor_seq: 8,
            superseded_from: 7,
            superseded_to: 9,
            turns: 1,
            rewound_at: 10,
        };
        let mut events = three();
        events.push(ev(11, Some("turn_4"), EventBody::TurnStarted {}));
        events.push(ev(12, Some("turn_4"), user("again")));
        events.push(ev(13, Some("turn_4"), done()));
        let b = branch(5, &events, std::slice::from_ref(&earlier)).unwrap();
        assert_eq!(b, Branch { from: 4, turns: 2 });
        let refused = branch(8, &events, &[earlier]).unwrap_err();
        assert!(
            matches!(refused, RuntimeError::InvalidAnchor(_)),
            "{refused}"
        );
    }

    #[test]
    fn an_anchor_that_is_no_user_message_of_an_ended_turn_is_refused() {
        let mut events = three();
        events.push(ev(10, Some("turn_4"), EventBody::TurnStarted {}));
        events.push(ev(11, Some("turn_4"), user("running")));
        for anchor in [4, 6, 11, 99] {
            let refused = branch(anchor, &events, &[]).unwrap_err();
            assert!(
                matches!(refused, RuntimeError::InvalidAnchor(_)),
                "{anchor}: {refused}"
            );
        }
    }

    fn checkpoint(commit: &str) -> EventBody {
        EventBody::Checkpoint {
            commit: commit.into(),
            files: Vec::new(),
            files_omitted: 0,
        }
    }

    #[test]
    fn the_files_before_a_turn_are_the_newest_checkpoint_or_restore_before_it() {
        // turn_1 1-3, its checkpoint 5 lands after turn_2 started (4), turn_2 ends 7
        // with its own checkpoint 8; then a restore of turn_1 (undo 9, restored 10)
        // and turn_3 11-13.
        let events = vec![
            ev(1, Some("turn_1"), EventBody::TurnStarted {}),
            ev(2, Some("turn_1"), user("a")),
            ev(3, Some("turn_1"), done()),
            ev(4, Some("turn_2"), EventBody::TurnStarted {}),
            ev(5, Some("turn_1"), checkpoint("c1")),
            ev(6, Some("turn_2"), user("b")),
            ev(7, Some("turn_2"), done()),
            ev(8, Some("turn_2"), checkpoint("c2")),
            ev(9, Some("restore_9"), checkpoint("u")),
            ev(
                10,
                Some("turn_1"),
                EventBody::Restored {
                    commit: "c1".into(),
                    files: Vec::new(),
                    files_omitted: 0,
                    undo: "restore_9".into(),
                },
            ),
            ev(11, Some("turn_3"), EventBody::TurnStarted {}),
            ev(12, Some("turn_3"), user("c")),
            ev(13, Some("turn_3"), done()),
        ];
        assert_eq!(
            files_before(2, &events),
            None,
            "nothing before the first turn"
        );
        assert_eq!(files_before(6, &events).as_deref(), Some("turn_1"));
        // The restore put turn_1's files back before turn_3.
        assert_eq!(files_before(12, &events).as_deref(), Some("turn_1"));
        assert_eq!(files_before(99, &events), None);
    }
}
