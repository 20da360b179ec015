//! `session.check`: the checks of the repository's `.tandem/worktree.toml`, run one
//! after another in the session's working directory (`crate::workspace::checks`),
//! each appended as a `check` event as it ends, the whole kept on the session for the
//! merge gate (`merge_requires_checks`).

use tandem_protocol::workspace::{CheckStatus, SessionCheckResult};
use tandem_protocol::{EventBody, SessionInfo};

use super::workspaces::{blocking, working_dir, OpClaim};
use super::WorkspaceService;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::session::{ChecksDone, RecordEvent};
use crate::workspace::{project, WorkspaceError};

impl WorkspaceService {
    /// `session.check` (owner only): refused while a turn runs; no turn starts, and no
    /// merge or discard runs, until the checks end.
    pub async fn check(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<SessionCheckResult, RuntimeError> {
        let handle = self.access.drivable(who, session_id)?;
        let info = handle.shared.info();
        if info.status.is_busy() {
            return Err(WorkspaceError::SessionBusy(info.id).into());
        }
        let (dir, _) = working_dir(&info)?;
        let _claim = OpClaim::take(&self.ops, &info.id)?;
        let project = self.project_of(&info).await?;
        let mut results = Vec::new();
        for spec in &project.checks {
            let result = self.services.checks.run_one(spec, &dir).await;
            handle
                .ask(RecordEvent(EventBody::Check {
                    result: result.clone(),
                }))
                .await?;
            results.push(result);
        }
        handle
            .ask(ChecksDone {
                results: results.clone(),
                record_events: false,
            })
            .await?;
        Ok(SessionCheckResult {
            session_id: info.id,
            checks: results,
        })
    }

    /// The settings of the repository `info` works in.
    async fn project_of(&self, info: &SessionInfo) -> Result<project::Project, RuntimeError> {
        let (dir, _) = working_dir(info)?;
        let private = self.private.clone();
        blocking(move || project::read(&dir, &private)).await
    }

    /// Refuses a merge (`CHECKS_FAILED`) when the repository requires passing checks
    /// and the session's last ones did not all pass, or none ran.
    pub(super) async fn checks_gate(&self, info: &SessionInfo) -> Result<(), RuntimeError> {
        if !self.project_of(info).await?.merge_requires_checks {
            return Ok(());
        }
        let Some(last) = &info.last_checks else {
            return Err(WorkspaceError::ChecksFailed(
                "this repository requires passing checks before a merge and none have run; \
                 run session.check, or merge with force"
                    .into(),
            )
            .into());
        };
        let failed: Vec<&str> = last
            .iter()
            .filter(|c| c.status != CheckStatus::Passed)
            .map(|c| c.name.as_str())
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        Err(WorkspaceError::ChecksFailed(format!(
            "this repository requires passing checks before a merge; these did not pass: {}",
            failed.join(", ")
        ))
        .into())
    }
}
