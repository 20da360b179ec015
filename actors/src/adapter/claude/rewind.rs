//! A rewind (`chat.edit-send`) on Claude Code: the next process resumes the Claude
//! session at the newest message of the last turn kept (`--resume-session-at`) and
//! forks it (`--fork-session`), so the superseded branch stays resumable under the old
//! session id and the session records the new one when the CLI announces it.
//!
//! The message ids come from the stream-json lines of the turns this adapter ran
//! ([`Mark`]); a rewind that needs a turn from before (the server restarted since) is
//! refused rather than guessed.

use actix::prelude::*;

use super::actor::ClaudeAgent;
use super::wire::CliMessage;
use crate::adapter::messages::{CannotBranch, ForkOnOpen, VendorFork};
use crate::ids::TurnId;

/// One turn this adapter ran and the newest top-level message it produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mark {
    /// Our turn id.
    pub turn_id: TurnId,
    /// The CLI's id of that message (`uuid` of an `assistant` or `user` line).
    pub uuid: String,
}

/// What the next process adds to resume at `uuid` in a new Claude session.
pub(super) fn fork_args(uuid: &str) -> [String; 3] {
    [
        "--resume-session-at".into(),
        uuid.to_string(),
        "--fork-session".into(),
    ]
}

impl ClaudeAgent {
    /// Notes the newest message of turn `turn_id` from one stdout line.
    pub(super) fn mark(&mut self, turn_id: &str, msg: &CliMessage) {
        let uuid = match msg {
            CliMessage::Assistant(a) if a.parent_tool_use_id.is_none() => a.uuid.as_deref(),
            CliMessage::User(u) if u.parent_tool_use_id.is_none() => u.uuid.as_deref(),
            _ => None,
        };
        let Some(uuid) = uuid else {
            return;
        };
        match self.marks.last_mut().filter(|m| m.turn_id == turn_id) {
            Some(mark) => mark.uuid = uuid.to_string(),
            None => self.marks.push(Mark {
                turn_id: turn_id.into(),
                uuid: uuid.to_string(),
            }),
        }
    }

    /// Forgets the newest `drop_turns` turns: the process closes, and the next one
    /// resumes (forked) after the last turn kept, or starts a new Claude session when
    /// no turn is kept.
    pub(super) fn rewind(
        &mut self,
        drop_turns: u64,
        keep_turns: u64,
        ctx: &mut Context<Self>,
    ) -> Result<(), CannotBranch> {
        let drop = usize::try_from(drop_turns).unwrap_or(usize::MAX);
        if keep_turns == 0 {
            // Nothing before the anchor: a new Claude session; the old one stays.
            self.close_live(ctx);
            self.marks.clear();
            self.resume_at = None;
            self.vendor_session_id = None;
            return Ok(());
        }
        let Some(keep) = self.marks.len().checked_sub(drop).filter(|k| *k > 0) else {
            return Err(
                "the turn before the edited message ran before the server last started; \
                 Claude Code's message ids for it are not known here"
                    .into(),
            );
        };
        let at = self.marks[keep - 1].uuid.clone();
        self.close_live(ctx);
        self.marks.truncate(keep);
        self.resume_at = Some(at);
        Ok(())
    }
}

impl ClaudeAgent {
    /// Where a fork without the newest `drop_turns` turns resumes: this Claude
    /// session at the newest message of the last turn kept, forked on resume.
    pub(super) fn fork_point(&self, drop_turns: u64) -> Result<VendorFork, CannotBranch> {
        let Some(session) = self.vendor_session_id.clone() else {
            return Err("the session has no Claude session yet".into());
        };
        let drop = usize::try_from(drop_turns).unwrap_or(usize::MAX);
        let Some(keep) = self.marks.len().checked_sub(drop).filter(|k| *k > 0) else {
            return Err(
                "the fork's last turn ran before the server last started; Claude Code's \
                 message ids for it are not known here"
                    .into(),
            );
        };
        Ok(VendorFork {
            vendor_session_id: session,
            fork_on_open: Some(ForkOnOpen::At(self.marks[keep - 1].uuid.clone())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fork_args;

    #[test]
    fn the_fork_resumes_at_the_message_in_a_new_session() {
        assert_eq!(
            fork_args("m-1"),
            ["--resume-session-at", "m-1", "--fork-session"].map(String::from)
        );
    }
}
