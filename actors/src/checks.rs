//! Running one check of `.tandem/worktree.toml`: `sh -c COMMAND` in the working
//! directory, confined like the session's agent where agents are (a check's command
//! comes from a file agents can write, so it never runs with more than they have),
//! in a process group of its own that is killed whole at the time limit, with its
//! output (stdout and stderr, interleaved) kept to the last 8 KiB.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tandem_protocol::workspace::{ChangeSummary, CheckResult, CheckStatus};
use tandem_protocol::SessionInfo;
use tokio::io::AsyncReadExt;

use crate::adapter::confine::Launcher;
use crate::workspace::project::{self, CheckSpec};

/// What running checks needs of the server: the agents' launcher and the paths never
/// read. Held by the sessions' services, so a pair runs a Worker's checks.
#[derive(Debug, Clone, Default)]
pub struct CheckEnv {
    /// Confines the checks where agents are confined.
    pub launcher: Option<Launcher>,
    /// The server's own paths (data directory, config file).
    pub private: Vec<PathBuf>,
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
    /// checks the repository runs then (`checks_on_delegation`); `None` for a Worker
    /// without an active worktree.
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
        Some(summary)
    }
}

/// Bytes of output kept, from the end.
pub const LOG_TAIL_BYTES: usize = 8 * 1024;

/// Runs `spec` in `workdir` with environment `env` (the server's minus its own
/// variables), through `launcher` when agents are confined.
pub async fn run(
    spec: &CheckSpec,
    workdir: &Path,
    env: &BTreeMap<String, String>,
    launcher: Option<&Launcher>,
) -> CheckResult {
    let started = Instant::now();
    let shell = Path::new("/bin/sh");
    let mut cmd = match launcher {
        Some(l) => l.command(shell, env, Some(workdir)),
        None => tokio::process::Command::new(shell),
    };
    // One stream, in the order the command wrote it.
    cmd.arg("-c")
        .arg(format!("exec 2>&1\n{}", spec.command))
        .current_dir(workdir)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    let result = |status, exit_code, log_tail| CheckResult {
        name: spec.name.clone(),
        status,
        exit_code,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        log_tail,
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return result(CheckStatus::Failed, None, format!("could not start: {e}")),
    };
    let group = child.id();
    let mut out = child.stdout.take();
    let mut tail = Vec::new();
    let work = async {
        if let Some(out) = out.as_mut() {
            let mut buf = [0u8; 8192];
            while let Ok(n) = out.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * LOG_TAIL_BYTES {
                    tail.drain(..tail.len() - LOG_TAIL_BYTES);
                }
            }
        }
        child.wait().await
    };
    let limit = Duration::from_secs(spec.timeout_secs);
    let outcome = tokio::time::timeout(limit, work).await;
    let text = tail_text(&tail);
    match outcome {
        Ok(Ok(status)) if status.success() => result(CheckStatus::Passed, Some(0), text),
        Ok(Ok(status)) => result(CheckStatus::Failed, status.code(), text),
        Ok(Err(e)) => result(
            CheckStatus::Failed,
            None,
            format!("{text}\n[wait failed: {e}]"),
        ),
        Err(_) => {
            kill_group(group);
            result(
                CheckStatus::TimedOut,
                None,
                format!("{text}\n[killed after {}s]", spec.timeout_secs),
            )
        }
    }
}

/// The last [`LOG_TAIL_BYTES`] of `bytes` as text, cut at a character boundary.
fn tail_text(bytes: &[u8]) -> String {
    let from = bytes.len().saturating_sub(LOG_TAIL_BYTES);
    let text = String::from_utf8_lossy(&bytes[from..]).into_owned();
    text.trim_start_matches('\u{FFFD}').to_string()
}

/// Kills the process group a check leads, so what its shell started goes too.
fn kill_group(leader: Option<u32>) {
    let Some(pid) = leader
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
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
        assert_eq!(long.log_tail.len(), LOG_TAIL_BYTES);
    }
}
