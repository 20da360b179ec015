//! `chat.review`: the session's diff read now, each comment anchored in it and
//! quoted, and the whole sent to its agent as one turn with a `review` event.

use tandem_protocol::review::{ChatReviewParams, ChatReviewResult, ReviewTarget};
use tandem_protocol::workspace::DEFAULT_DIFF_CAP;
use tandem_protocol::EventBody;
use tandem_protocol::{Role, SessionInfo};

use super::workspaces::{blocking, working_dir};
use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::review;
use crate::session::{SendMessage, SendOutcome};
use crate::workspace::diff;

/// The most diff read to anchor a review: comments beyond it are refused as lines
/// the diff does not show.
const REVIEW_DIFF_CAP: usize = 4 * DEFAULT_DIFF_CAP;

impl Runtime {
    /// The Driver of the Worker `info`: `INVALID_ARGUMENT` (REST 422) for a session
    /// that is no Worker, `CONFLICT` when its pair is gone (or on another node).
    fn driver_of(&self, info: &SessionInfo) -> Result<SessionId, RuntimeError> {
        let pair = match (&info.pair_id, info.role) {
            (Some(pair), Some(Role::Worker)) => pair,
            _ => {
                return Err(RuntimeError::unusable(format!(
                "session {} is no Worker: a review goes to a Driver only from its Worker's diff",
                info.id
            )))
            }
        };
        self.inner
            .pairs
            .driver(pair)
            .map(|(_, driver)| driver)
            .ok_or_else(|| RuntimeError::Conflict(format!("session {}'s pair is closed", info.id)))
    }

    /// `chat.review` (owner only): refused while a turn runs, like `chat.send`
    /// without `queue`. With `to: "driver"` the reviewed session must be a Worker, and
    /// its Driver (on this node) gets the review as a message about the Worker's change.
    pub async fn review(
        &self,
        who: &Principal,
        params: ChatReviewParams,
    ) -> Result<ChatReviewResult, RuntimeError> {
        let handle = self.access().drivable(who, &params.session_id)?;
        self.has_workspace(&params.session_id, &handle)?;
        let info = handle.shared.info();
        let (dir, ws) = working_dir(&info)?;
        let (target, heading) = match params.to.unwrap_or_default() {
            ReviewTarget::Session => (handle, "Review of your changes".to_string()),
            ReviewTarget::Driver => {
                let driver = self.driver_of(&info)?;
                let branch = info
                    .workspace
                    .as_ref()
                    .map(|w| format!(" on branch {}", w.branch))
                    .unwrap_or_default();
                let heading = format!(
                    "Review of your Worker's changes (session {}{branch}); have it fix them \
                     with send_to_partner",
                    info.id
                );
                (self.access().drivable(who, &driver)?, heading)
            }
        };
        let diff = blocking(move || diff::diff(&dir, ws.as_ref(), None, REVIEW_DIFF_CAP)).await?;
        let text = review::message(
            &diff.diff,
            &params.comments,
            params.summary.as_deref(),
            &heading,
        )?;
        let session_id = target.shared.info().id;
        let started = target
            .ask(SendMessage {
                content: text,
                attachments: Default::default(),
                options: None,
                queue: false,
                review: Some(EventBody::Review {
                    comments: params.comments,
                    summary: params.summary,
                    reviewer: None,
                    failed: None,
                }),
            })
            .await??;
        match started {
            SendOutcome::Started { turn_id } => Ok(ChatReviewResult {
                session_id,
                turn_id,
            }),
            SendOutcome::Queued { .. } => Err(RuntimeError::Internal(
                "the review was queued instead of started".into(),
            )),
        }
    }
}
