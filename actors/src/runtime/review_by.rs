//! `session.review-by`, and `review_on_delegation`: a read-only session of another
//! vendor on the same working directory gets the session's diff and answers with line
//! comments ([`crate::review_by`]); they come back to the reviewed session as a
//! `review` (a turn when there are comments, queued if it is busy), or travel with a
//! Worker's changes to its Driver.

use tandem_protocol::review::{
    ReviewComment, ReviewVerdict, Reviewer, SessionReviewByParams, SessionReviewByResult,
};
use tandem_protocol::{EventBody, PermissionMode, SessionInfo, TurnStatus};

use super::create::NewSession;
use super::workspaces::{blocking, working_dir};
use super::{Runtime, RuntimeRef};
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::error::RuntimeError;
use crate::review_by::{self, DelegationReviewer, ReviewRequest};
use crate::session::{RecordEvent, SendMessage, WhenTurnEnds};
use crate::workspace::diff;

/// The most diff a reviewer is given (as much as `chat.review` anchors in).
const REVIEW_DIFF_CAP: usize = 4 * tandem_protocol::workspace::DEFAULT_DIFF_CAP;

/// Characters of the reviewed session's title kept in the reviewer's.
const TITLE_CHARS: usize = 60;

/// A review under way: its session, the diff it was given, and its turn's end.
struct Started {
    reviewer: Reviewer,
    diff: String,
    ended: tokio::sync::oneshot::Receiver<crate::session::TurnEnd>,
}

impl Runtime {
    /// `session.review-by` (owner only): starts the review and answers with its
    /// session; the review comes back to the session when the reviewer answers.
    pub async fn review_by(
        &self,
        who: &Principal,
        params: SessionReviewByParams,
    ) -> Result<SessionReviewByResult, RuntimeError> {
        let handle = self.access().drivable(who, &params.session_id)?;
        self.has_workspace(&params.session_id, &handle)?;
        let info = handle.shared.info();
        let started = self
            .start_review(
                &info,
                &params.vendor,
                params.model.unwrap_or_default(),
                params.instructions.as_deref(),
            )
            .await?;
        let review_session_id = started.reviewer.session_id.clone();
        let runtime = self.clone();
        let author = info.id.clone();
        actix_rt::spawn(async move {
            let verdict = finish(started).await;
            runtime.deliver_review(&author, verdict).await;
        });
        Ok(SessionReviewByResult {
            session_id: info.id,
            review_session_id,
        })
    }

    /// Creates the reviewer's session on `info`'s working directory, read-only
    /// (`plan`), and sends it the prompt with `info`'s diff.
    async fn start_review(
        &self,
        info: &SessionInfo,
        vendor: &str,
        model: String,
        instructions: Option<&str>,
    ) -> Result<Started, RuntimeError> {
        let (dir, ws) = working_dir(info)?;
        let diff = blocking(move || diff::diff(&dir, ws.as_ref(), None, REVIEW_DIFF_CAP)).await?;
        if diff.diff.trim().is_empty() {
            return Err(RuntimeError::Conflict(format!(
                "session {} has no changes to review",
                info.id
            )));
        }
        let title: String = info.title.chars().take(TITLE_CHARS).collect();
        let created = self
            .new_session(NewSession {
                mcp_servers: None,
                resume: None,
                id: None,
                owner_id: info.owner_id.clone(),
                visibility: info.visibility,
                vendor: VendorId::from(vendor.trim()),
                model,
                effort: String::new(),
                title: Some(format!("Review of {}", title.trim())),
                cwd: info.cwd.clone(),
                permission_mode: PermissionMode::Plan,
                parent_id: None,
                pending_prompt: None,
                handoff_from: None,
                fork: None,
                worktree: None,
            })
            .await?;
        let handle = self
            .inner
            .services
            .sessions
            .get(&created.id)
            .ok_or_else(|| RuntimeError::SessionNotFound(created.id.clone()))?;
        // Asked before the message that starts the turn, so its end cannot be missed.
        let (tx, ended) = tokio::sync::oneshot::channel();
        handle.do_send(WhenTurnEnds(tx));
        handle
            .ask(SendMessage {
                content: review_by::prompt(instructions, &diff.diff),
                attachments: Default::default(),
                options: None,
                queue: false,
                review: None,
            })
            .await??;
        Ok(Started {
            reviewer: Reviewer {
                session_id: created.id,
                vendor: created.vendor.to_string(),
            },
            diff: diff.diff,
            ended,
        })
    }

    /// Gives the reviewed session `verdict`: a turn with the comments that are still
    /// on lines of its diff (queued while it is busy), else the `review` event alone.
    async fn deliver_review(&self, author: &str, verdict: ReviewVerdict) {
        let Some(handle) = self.inner.services.sessions.get(author) else {
            return;
        };
        let info = handle.shared.info();
        let mut event = EventBody::Review {
            comments: verdict.comments.clone(),
            summary: verdict.summary.clone(),
            reviewer: Some(verdict.reviewer.clone()),
            failed: verdict.failed.clone(),
        };
        if verdict.comments.is_empty() {
            handle.do_send(RecordEvent(event));
            return;
        }
        // The session may have changed since the review began: comments are anchored
        // in its diff as it is now.
        let current = match working_dir(&info) {
            Ok((dir, ws)) => {
                blocking(move || diff::diff(&dir, ws.as_ref(), None, REVIEW_DIFF_CAP)).await
            }
            Err(e) => Err(e),
        };
        let (kept, dropped) = match &current {
            Ok(d) => crate::review::split_anchored(&d.diff, verdict.comments),
            Err(e) => (Vec::new(), vec![e.to_string()]),
        };
        let summary = with_dropped(verdict.summary, &dropped);
        event = EventBody::Review {
            comments: kept.clone(),
            summary: summary.clone(),
            reviewer: Some(verdict.reviewer.clone()),
            failed: None,
        };
        let (Ok(current), false) = (current, kept.is_empty()) else {
            handle.do_send(RecordEvent(event));
            return;
        };
        let heading = format!(
            "Review of your changes by {} (session {})",
            verdict.reviewer.vendor, verdict.reviewer.session_id
        );
        let text = match crate::review::message(&current.diff, &kept, summary.as_deref(), &heading)
        {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(session = %author, error = %e, "a review's comments did not anchor");
                handle.do_send(RecordEvent(event));
                return;
            }
        };
        let sent = handle
            .ask(SendMessage {
                content: text,
                attachments: Default::default(),
                options: None,
                queue: true,
                review: Some(event.clone()),
            })
            .await;
        if !matches!(sent, Ok(Ok(_))) {
            tracing::warn!(session = %author, "a review could not be sent; recorded only");
            handle.do_send(RecordEvent(event));
        }
    }

    /// `review_on_delegation`: the review of the Worker `info`'s change as `request`
    /// says, to its verdict, which is also recorded in the Worker's history.
    async fn review_for_delegation(
        &self,
        info: SessionInfo,
        request: ReviewRequest,
    ) -> Option<ReviewVerdict> {
        let vendor = request.vendor;
        let instructions = request.instructions.as_deref();
        let started = match self
            .start_review(&info, &vendor, String::new(), instructions)
            .await
        {
            Ok(started) => started,
            Err(e) => {
                tracing::warn!(session = %info.id, %vendor, error = %e, "no review on delegation");
                return None;
            }
        };
        let verdict = finish(started).await;
        if let Some(worker) = self.inner.services.sessions.get(&info.id) {
            worker.do_send(RecordEvent(EventBody::Review {
                comments: verdict.comments.clone(),
                summary: verdict.summary.clone(),
                reviewer: Some(verdict.reviewer.clone()),
                failed: verdict.failed.clone(),
            }));
        }
        Some(verdict)
    }
}

/// The hook the pairs run a delegation's review through.
pub(super) fn delegation_reviewer(runtime: RuntimeRef) -> DelegationReviewer {
    DelegationReviewer(std::sync::Arc::new(move |info, request| {
        let runtime = runtime.upgrade();
        Box::pin(async move { runtime?.review_for_delegation(info, request).await })
    }))
}

/// Waits for the reviewer's answer and reads it into a verdict.
async fn finish(started: Started) -> ReviewVerdict {
    let failed = |why: String| ReviewVerdict {
        reviewer: started.reviewer.clone(),
        summary: None,
        comments: Vec::new(),
        failed: Some(why),
    };
    let end = match started.ended.await {
        Ok(end) => end,
        Err(_) => return failed("the review session ended before it answered".into()),
    };
    if end.status != TurnStatus::Completed {
        return failed(
            end.error
                .unwrap_or_else(|| "its turn was interrupted".into()),
        );
    }
    let answer = match review_by::parse_answer(&end.text) {
        Ok(answer) => answer,
        Err(why) => return failed(why.to_string()),
    };
    let (comments, dropped): (Vec<ReviewComment>, Vec<String>) =
        crate::review::split_anchored(&started.diff, answer.comments);
    ReviewVerdict {
        reviewer: started.reviewer.clone(),
        summary: with_dropped(answer.summary, &dropped),
        comments,
        failed: None,
    }
}

/// `summary` with a note on the comments left out because the diff lacks their lines.
fn with_dropped(summary: Option<String>, dropped: &[String]) -> Option<String> {
    if dropped.is_empty() {
        return summary;
    }
    let note = format!(
        "({} comment{} left out: {})",
        dropped.len(),
        if dropped.len() == 1 { "" } else { "s" },
        dropped.join("; ")
    );
    Some(match summary {
        Some(s) => format!("{s}\n\n{note}"),
        None => note,
    })
}
