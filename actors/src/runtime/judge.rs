//! Running a loop's judge: a read-only (`plan`) session on the judged session's
//! working directory, made at the first iteration and asked again at each later one,
//! answers PASS or FAIL ([`crate::judge`]).

use tandem_protocol::{PermissionMode, TurnStatus};

use super::create::NewSession;
use super::{Runtime, RuntimeRef};
use crate::adapter::VendorId;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::judge::{self, JudgeRequest, Judged, LoopJudge};
use crate::session::{SendMessage, WhenTurnEnds};

/// Characters of the judged session's title kept in the judge's.
const TITLE_CHARS: usize = 60;

impl Runtime {
    /// The judge's session for `request`: the earlier one while it lives, else a new
    /// one.
    async fn judge_session(&self, request: &JudgeRequest) -> Result<SessionId, RuntimeError> {
        if let Some(id) = &request.judge_session_id {
            if self.inner.services.sessions.get(id).is_some() {
                return Ok(id.clone());
            }
        }
        let info = &request.session;
        let title: String = info.title.chars().take(TITLE_CHARS).collect();
        let vendor = request
            .vendor
            .clone()
            .unwrap_or_else(|| info.vendor.clone());
        let created = self
            .new_session(NewSession {
                mcp_servers: None,
                resume: None,
                id: None,
                owner_id: info.owner_id.clone(),
                visibility: info.visibility,
                vendor: VendorId::from(vendor.trim()),
                model: String::new(),
                effort: String::new(),
                title: Some(format!("Judge of {}", title.trim())),
                cwd: info.cwd.clone(),
                permission_mode: PermissionMode::Plan,
                parent_id: None,
                pending_prompt: None,
                handoff_from: None,
                fork: None,
                worktree: None,
            })
            .await?;
        Ok(created.id)
    }

    /// Runs one judge's turn to its verdict.
    async fn judge(&self, request: JudgeRequest) -> Judged {
        let id = match self.judge_session(&request).await {
            Ok(id) => id,
            Err(e) => return (None, Err(format!("the judge could not start: {e}").into())),
        };
        let Some(handle) = self.inner.services.sessions.get(&id) else {
            return (Some(id), Err("the judge's session is gone".into()));
        };
        // Asked before the message that starts the turn, so its end cannot be missed.
        let (tx, ended) = tokio::sync::oneshot::channel();
        handle.do_send(WhenTurnEnds(tx));
        let sent = handle
            .ask(SendMessage {
                content: judge::prompt(&request),
                attachments: Default::default(),
                options: None,
                queue: false,
                review: None,
            })
            .await;
        if let Err(e) = sent.and_then(|r| r) {
            return (
                Some(id),
                Err(format!("the judge could not be asked: {e}").into()),
            );
        }
        let verdict = match ended.await {
            Err(_) => Err("the judge's session ended before it answered".into()),
            Ok(end) if end.status != TurnStatus::Completed => Err(format!(
                "the judge's turn did not complete: {}",
                end.error.unwrap_or_else(|| "interrupted".into())
            )
            .into()),
            Ok(end) => judge::read(&end.text),
        };
        (Some(id), verdict)
    }
}

/// The hook sessions run their loops' judges through.
pub(super) fn loop_judge(runtime: RuntimeRef) -> LoopJudge {
    LoopJudge(std::sync::Arc::new(move |request| {
        let runtime = runtime.upgrade();
        Box::pin(async move {
            match runtime {
                Some(rt) => rt.judge(request).await,
                None => (None, Err("the server is stopping".into())),
            }
        })
    }))
}
