//! `chat.review`: the session's diff read now, each comment anchored in it and
//! quoted, and the whole sent to its agent as one turn with a `review` event.

use tandem_protocol::review::{ChatReviewParams, ChatReviewResult};
use tandem_protocol::workspace::DEFAULT_DIFF_CAP;
use tandem_protocol::EventBody;

use super::workspaces::{blocking, working_dir};
use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::review;
use crate::session::{SendMessage, SendOutcome};
use crate::workspace::diff;

/// The most diff read to anchor a review: comments beyond it are refused as lines
/// the diff does not show.
const REVIEW_DIFF_CAP: usize = 4 * DEFAULT_DIFF_CAP;

impl Runtime {
    /// `chat.review` (owner only): refused while a turn runs, like `chat.send`
    /// without `queue`.
    pub async fn review(
        &self,
        who: &Principal,
        params: ChatReviewParams,
    ) -> Result<ChatReviewResult, RuntimeError> {
        let handle = self.drivable(who, &params.session_id)?;
        self.has_workspace(&params.session_id, &handle)?;
        let (dir, ws) = working_dir(&handle.shared.info())?;
        let diff = blocking(move || diff::diff(&dir, ws.as_ref(), None, REVIEW_DIFF_CAP)).await?;
        let text = review::message(&diff.diff, &params.comments, params.summary.as_deref())?;
        let started = handle
            .ask(SendMessage {
                content: text,
                attachments: Default::default(),
                options: None,
                queue: false,
                review: Some(EventBody::Review {
                    comments: params.comments,
                    summary: params.summary,
                }),
            })
            .await??;
        match started {
            SendOutcome::Started { turn_id } => Ok(ChatReviewResult {
                session_id: params.session_id,
                turn_id,
            }),
            SendOutcome::Queued { .. } => Err(RuntimeError::Internal(
                "the review was queued instead of started".into(),
            )),
        }
    }
}
