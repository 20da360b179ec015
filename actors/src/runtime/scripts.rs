//! A worktree's scripts at the runtime: `copy` and `setup` as a worktree session is
//! created (its first turn's agent waits for them), `session.run` / `session.run-stop`
//! / `session.run-log`, and `archive` as the worktree goes. The processes are the
//! scripts service's ([`crate::scripts`]); each start, progress and end is a `script`
//! event of the session.

use std::path::PathBuf;

use tandem_protocol::scripts::{
    ScriptName, ScriptReport, ScriptStatus, SessionRunLogResult, SessionRunResult,
};
use tandem_protocol::{EventBody, SessionInfo};

use super::workspaces::{blocking, working_dir};
use super::WorkspaceService;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;
use crate::scripts::{self, Place};
use crate::session::{Preparing, RecordEvent, SessionHandle};
use crate::workspace::project::{self, Project};
use crate::workspace::WorkspaceError;

/// How long `session.run-stop` waits for the run to end before answering.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl WorkspaceService {
    /// Where `info`'s scripts run, and the settings they come from: read in the
    /// checkout a worktree was made from (the user's own, so an agent's edits in the
    /// worktree never change what the server runs), else in the working directory's.
    async fn scripts_of(&self, info: &SessionInfo) -> Result<(Place, Project), RuntimeError> {
        let (workdir, ws) = working_dir(info)?;
        let root = match &ws {
            Some(ws) => PathBuf::from(&ws.base_checkout),
            None => workdir.clone(),
        };
        let (at, private) = (root.clone(), self.private.clone());
        let (project, root) = blocking(move || {
            let project = project::read(&at, &private)?;
            Ok((project, scripts::top_of(&at)))
        })
        .await?;
        let place = Place {
            session_id: info.id.clone(),
            workdir,
            root,
            port: ws.and_then(|w| w.port),
        };
        Ok((place, project))
    }

    /// Sets up a new worktree session: its `copy` and `setup`, if the repository has
    /// any. The session hears [`Preparing`] before this returns (so no turn's agent
    /// starts before the setup ends); the work itself goes on in the background.
    pub(super) async fn prepare_worktree(&self, handle: &SessionHandle) {
        let info = handle.shared.info();
        let (place, project) = match self.scripts_of(&info).await {
            Ok(found) => found,
            Err(e) => {
                // An unusable settings file: said once, the session works unprepared.
                record(handle, failed(ScriptName::Setup, e.to_string()));
                return;
            }
        };
        if !scripts::prepares(&project) {
            return;
        }
        handle.do_send(Preparing(true));
        let (runner, handle) = (self.services.scripts.clone(), handle.clone());
        actix_rt::spawn(async move {
            let (from, to, paths) = (
                place.root.clone(),
                place.workdir.clone(),
                project.copy.clone(),
            );
            let problems =
                actix_rt::task::spawn_blocking(move || scripts::copy::copy_all(&from, &to, &paths))
                    .await
                    .unwrap_or_else(|e| vec![format!("copy failed: {e}")]);
            if !problems.is_empty() {
                record(&handle, failed(ScriptName::Setup, problems.join("\n")));
            } else if !project.setup.is_empty() {
                let to = handle.clone();
                runner
                    .run_bounded(
                        ScriptName::Setup,
                        &project.setup,
                        &place,
                        project.scripts_from,
                        move |report| record(&to, report),
                    )
                    .await;
            }
            handle.do_send(Preparing(false));
        });
    }

    /// `session.run` (owner only): starts the repository's run script in the
    /// session's working directory, unless it runs already.
    pub async fn start_run(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<SessionRunResult, RuntimeError> {
        let handle = self.access.drivable(who, session_id)?;
        let info = handle.shared.info();
        let (place, project) = self.scripts_of(&info).await?;
        let Some(command) = project.run.as_deref() else {
            return Err(WorkspaceError::Unusable(format!(
                "the repository of session {} declares no run script (`run` in {}, or \
                 `scripts.run` in {})",
                info.id,
                project::PATH,
                project::CONDUCTOR_PATH
            ))
            .into());
        };
        let to = handle.clone();
        self.services
            .scripts
            .start_run(command, &place, project.scripts_from, move |report| {
                record(&to, report)
            });
        let running = self.services.scripts.run_of(&info.id).state().running;
        Ok(SessionRunResult {
            session_id: info.id,
            running,
            port: place.port,
        })
    }

    /// `session.run-stop` (owner only): stops the run script and what it started;
    /// answers once it ended (or after five seconds).
    pub async fn stop_run(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<SessionRunResult, RuntimeError> {
        let info = self.access.drivable(who, session_id)?.shared.info();
        let Some(slot) = self.services.scripts.run_if(&info.id) else {
            return Ok(SessionRunResult {
                session_id: info.id,
                running: false,
                port: info.workspace.and_then(|w| w.port),
            });
        };
        slot.stop();
        let deadline = std::time::Instant::now() + STOP_WAIT;
        while slot.state().running && std::time::Instant::now() < deadline {
            actix_rt::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let running = slot.state().running;
        Ok(SessionRunResult {
            session_id: info.id,
            running,
            port: info.workspace.and_then(|w| w.port),
        })
    }

    /// `session.run-log`: the run script's output, its last 1 MiB.
    pub fn run_log(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<SessionRunLogResult, RuntimeError> {
        let info = self.access.visible(who, session_id)?.shared.info();
        let slot = self.services.scripts.run_if(&info.id).unwrap_or_default();
        let state = slot.state();
        let (log, dropped_bytes) = state.log_text();
        Ok(SessionRunLogResult {
            session_id: info.id,
            running: state.running,
            status: state.status.filter(|_| !state.running),
            exit_code: state.exit_code,
            log,
            dropped_bytes,
        })
    }

    /// A worktree goes (discard, archive): its run and any setup are killed, its
    /// archive script runs in it, and its port is free again. `handle` is the live
    /// session that records the `script` events (an archived session has none: the
    /// outcome is logged).
    pub(super) async fn worktree_leaving(
        &self,
        info: &SessionInfo,
        handle: Option<&SessionHandle>,
    ) {
        let scripts = &self.services.scripts;
        scripts.end_session(&info.id);
        self.terminals
            .end_session(&info.id, "the session's worktree went")
            .await;
        match self.scripts_of(info).await {
            Ok((place, project)) if !project.archive.is_empty() => {
                let to = handle.cloned();
                let end = scripts
                    .run_bounded(
                        ScriptName::Archive,
                        &project.archive,
                        &place,
                        project.scripts_from,
                        move |report| {
                            if let Some(to) = &to {
                                record(to, report);
                            }
                        },
                    )
                    .await;
                if end.status != ScriptStatus::Passed {
                    tracing::warn!(session = %info.id, status = ?end.status, "the archive script did not pass");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(session = %info.id, error = %e, "no archive script"),
        }
        if let Some(port) = info.workspace.as_ref().and_then(|w| w.port) {
            scripts.free_port(port);
        }
    }
}

/// A setup that failed before a command ran.
fn failed(name: ScriptName, why: String) -> ScriptReport {
    ScriptReport {
        name,
        status: ScriptStatus::Failed,
        exit_code: None,
        log_tail: why,
    }
}

/// Appends `report` to `handle`'s history.
fn record(handle: &SessionHandle, report: ScriptReport) {
    handle.do_send(RecordEvent(EventBody::Script { report }));
}
