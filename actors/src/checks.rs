//! Running the checks of `.tandem/worktree.toml` in a working directory, each as a
//! bounded shell command ([`crate::scripts::shell`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::adapter::confine::Launcher;
use crate::scripts::shell::{Ending, Shell};
use crate::workspace::project::{self, CheckSpec};
use tandem_protocol::workspace::{ChangeSummary, CheckResult, CheckStatus};
use tandem_protocol::SessionInfo;

/// What running checks needs of the server: the agents' launcher and the paths never
/// read, and who reviews a Worker's change when the repository asks for it. Held by
/// the sessions' services, so a pair runs a Worker's checks.
#[derive(Clone, Default)]
pub struct CheckEnv {
    /// Confines the checks where agents are confined.
    pub launcher: Option<Launcher>,
    /// The server's own paths (data directory, config file).
    pub private: Vec<PathBuf>,
    /// Runs a review by another vendor (`review_on_delegation`); the runtime's.
    pub reviewer: Option<crate::review_by::DelegationReviewer>,
    /// Runs a loop's judge (`check: {judge}`); the runtime's.
    pub judge: Option<crate::judge::LoopJudge>,
}

impl std::fmt::Debug for CheckEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckEnv")
            .field("launcher", &self.launcher)
            .field("private", &self.private)
            .finish_non_exhaustive()
    }
}

impl CheckEnv {
    /// Runs `spec` in `workdir` with the server's environment minus its own variables.
    pub async fn run_one(&self, spec: &CheckSpec, workdir: &Path) -> CheckResult {
        let env = crate::adapter::process::inherited(std::env::vars_os());
        run(spec, workdir, &env, self.launcher.as_ref()).await
    }

    /// Runs `specs` in `workdir`, in order.
    pub async fn run_all(&self, specs: &[CheckSpec], workdir: &Path) -> Vec<CheckResult> {
        let mut out = Vec::new();
        for spec in specs {
            out.push(self.run_one(spec, workdir).await);
        }
        out
    }

    /// A worktree Worker's branch and diff summary as its delegation ends, with the
    /// checks the repository runs then (`checks_on_delegation`) and the review by
    /// another vendor it asks for (`review_on_delegation`); `None` for a Worker without
    /// an active worktree.
    pub async fn delegation_summary(&self, info: &SessionInfo) -> Option<ChangeSummary> {
        let mut summary = crate::workspace::state::delegation_changes(info).await?;
        let (dir, private) = (PathBuf::from(&info.cwd), self.private.clone());
        let read = actix_rt::task::spawn_blocking(move || project::read(&dir, &private)).await;
        let project = match read {
            Ok(Ok(project)) => project,
            Ok(Err(e)) => {
                tracing::warn!(session = %info.id, error = %e, "no checks on delegation");
                return Some(summary);
            }
            Err(e) => {
                tracing::warn!(session = %info.id, error = %e, "no checks on delegation");
                return Some(summary);
            }
        };
        if project.checks_on_delegation && !project.checks.is_empty() {
            summary.checks = Some(self.run_all(&project.checks, Path::new(&info.cwd)).await);
        }
        if let (Some(vendor), Some(reviewer)) = (project.review_on_delegation, &self.reviewer) {
            let request = crate::review_by::ReviewRequest {
                vendor,
                instructions: project.review_instructions,
            };
            summary.review = (reviewer.0)(info.clone(), request).await.map(Box::new);
        }
        Some(summary)
    }
}

/// Runs `spec` in `workdir` with environment `env` (the server's minus its own
/// variables), through `launcher` when agents are confined.
pub async fn run(
    spec: &CheckSpec,
    workdir: &Path,
    env: &BTreeMap<String, String>,
    launcher: Option<&Launcher>,
) -> CheckResult {
    let done = Shell {
        command: &spec.command,
        workdir,
        env,
        launcher,
        limit: Duration::from_secs(spec.timeout_secs),
        progress_every: Duration::MAX,
    }
    .run(|_| {}, |_| {})
    .await;
    let (status, exit_code, log_tail) = match done.ending {
        Ending::Exited(Some(0)) => (CheckStatus::Passed, Some(0), done.tail),
        Ending::Exited(code) => (CheckStatus::Failed, code, done.tail),
        Ending::Broken(why) if done.tail.is_empty() => (CheckStatus::Failed, None, why),
        Ending::Broken(why) => (CheckStatus::Failed, None, format!("{}\n[{why}]", done.tail)),
        Ending::TimedOut => (
            CheckStatus::TimedOut,
            None,
            format!("{}\n[killed after {}s]", done.tail, spec.timeout_secs),
        ),
    };
    CheckResult {
        name: spec.name.clone(),
        status,
        exit_code,
        duration_ms: u64::try_from(done.elapsed.as_millis()).unwrap_or(u64::MAX),
        log_tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str, timeout_secs: u64) -> CheckSpec {
        CheckSpec {
            name: "c".into(),
            command: command.into(),
            timeout_secs,
        }
    }

    #[actix_rt::test]
    async fn passes_fails_and_times_out_with_the_output_kept() {
        let dir = std::env::temp_dir();
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let ok = run(&spec("echo out; echo err >&2", 10), &dir, &env, None).await;
        assert_eq!(ok.status, CheckStatus::Passed);
        assert_eq!(ok.log_tail, "out\nerr\n");
        let failed = run(&spec("echo no; exit 3", 10), &dir, &env, None).await;
        assert_eq!(
            (failed.status, failed.exit_code),
            (CheckStatus::Failed, Some(3))
        );
        let slow = run(
            &spec("echo begun; sleep 30 & sleep 30", 1),
            &dir,
            &env,
            None,
        )
        .await;
        assert_eq!(slow.status, CheckStatus::TimedOut);
        assert!(slow.log_tail.starts_with("begun\n"), "{}", slow.log_tail);
        assert!(slow.duration_ms < 10_000, "{}", slow.duration_ms);
        let long = run(&spec("yes x | head -c 100000", 10), &dir, &env, None).await;
        assert_eq!(long.log_tail.len(), crate::scripts::shell::LOG_TAIL_BYTES);
    }
}
