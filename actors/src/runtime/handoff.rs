//! `session.handoff`: a conversation continues in a new session of another (or the
//! same) vendor, and the new session may page the old history.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use tandem_protocol::client::SessionHandoffParams;
use tandem_protocol::results::SessionHandoffResult;
use tandem_protocol::{EventBody, SessionInfo};

use super::{NewSession, Runtime, RuntimeRef};
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::error::RuntimeError;
use crate::handoff::{latest_request, snapshot, transcript, Entry};
use crate::ids::SessionId;
use crate::session::{RecordEvent, Resume};

/// Events read from the end of a history to build a transcript.
const HISTORY_SCAN: usize = 20_000;
/// Earlier handoffs followed when paging a source history.
pub const MAX_HANDOFF_DEPTH: usize = 5;

/// How long `git status` may take before the handoff goes on without it.
const GIT_STATUS_LIMIT: Duration = Duration::from_secs(5);

/// Why a bounded command gave no output.
#[derive(Debug, PartialEq)]
enum RunFailure {
    /// It could not be started.
    Spawn,
    /// It exited unsuccessfully.
    Failed,
    /// It did not finish in time (and was killed).
    TimedOut,
}

/// Runs `cmd` to completion and returns its stdout, or why not. The process is killed
/// when `limit` passes: the future owning it is dropped, and `kill_on_drop` ends it.
async fn run_bounded(mut cmd: Command, limit: Duration) -> Result<String, RunFailure> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|_| RunFailure::Spawn)?;
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(Ok(out)) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        }
        Ok(_) => Err(RunFailure::Failed),
        Err(_) => Err(RunFailure::TimedOut),
    }
}

/// `git status --short --branch` of `cwd`, or a note saying why there is none. Runs
/// with a minimal environment and gives up after [`GIT_STATUS_LIMIT`].
async fn git_status(cwd: &Path) -> String {
    // Built off the actors' threads: it reads the repository's configuration to turn
    // its command-running settings off (crate::workspace::git).
    let dir = cwd.to_path_buf();
    let Ok(std_cmd) = actix_rt::task::spawn_blocking(move || {
        crate::workspace::git::command(&dir, &["status", "--short", "--branch"])
    })
    .await
    else {
        return "git status could not be started".into();
    };
    let mut cmd = Command::from(std_cmd);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LC_ALL", "C")
        .env("GIT_OPTIONAL_LOCKS", "0");
    match run_bounded(cmd, GIT_STATUS_LIMIT).await {
        Ok(out) if out.is_empty() => "(clean)".into(),
        Ok(out) => out,
        Err(RunFailure::Spawn) => "not a git repository (git is not available)".into(),
        Err(RunFailure::Failed) => "not a git repository".into(),
        Err(RunFailure::TimedOut) => "git status did not answer in time".into(),
    }
}

impl Runtime {
    /// Reads the last events of a session's history (blocking read on a pool thread).
    async fn history_tail(
        &self,
        id: &str,
        last_seq: u64,
    ) -> Result<Vec<(u64, String)>, RuntimeError> {
        let store = self.inner.store.clone();
        let id = id.to_string();
        let after = last_seq.saturating_sub(HISTORY_SCAN as u64);
        actix_rt::task::spawn_blocking(move || store.read_events(&id, after, HISTORY_SCAN))
            .await
            .map_err(|e| RuntimeError::Internal(e.to_string()))?
    }

    /// Continues `sessionId` in a new session of `targetVendor`.
    pub async fn handoff(
        &self,
        who: &Principal,
        params: SessionHandoffParams,
    ) -> Result<SessionHandoffResult, RuntimeError> {
        let source = self
            .access()
            .drivable(who, &params.session_id)?
            .shared
            .info();
        let (vendor, spec) = self.handoff_vendor(params.target_vendor)?;
        if source.pair_id.is_some() {
            return Err(RuntimeError::Conflict(
                "a session in a pair cannot be handed off; close the pair first".into(),
            ));
        }
        if source.status.is_busy() {
            return Err(RuntimeError::RunInProgress(source.id));
        }
        let frames = self.history_tail(&source.id, source.last_seq).await?;
        let request = latest_request(&frames).ok_or_else(|| {
            RuntimeError::Conflict("this session has no conversation to continue yet".into())
        })?;
        let entries = transcript(&frames);
        let cwd = source.cwd.clone();
        let git = git_status(Path::new(&cwd)).await;
        let source_vendor = self
            .inner
            .vendors
            .get(&VendorId::from(source.vendor.as_str()))
            .map(|v| v.display_name.to_string())
            .unwrap_or_else(|| source.vendor.clone());
        let prompt = snapshot(&source.title, &source_vendor, &request, &git, &entries);
        let title: String = format!("{} · {}", source.title, spec.display_name)
            .chars()
            .take(200)
            .collect();
        let target = self
            .new_session(NewSession {
                mcp_servers: self.chosen_mcp_servers(&source.id),
                resume: None,
                worktree: None,
                id: None,
                owner_id: source.owner_id.clone(),
                visibility: source.visibility,
                vendor: VendorId::from(vendor.as_str()),
                model: params.model.unwrap_or_default(),
                effort: params.effort.unwrap_or_default(),
                title: Some(title.clone()),
                cwd: source.cwd.clone(),
                permission_mode: source.permission_mode,
                parent_id: None,
                pending_prompt: None,
                handoff_from: Some(source.id.clone()),
                fork: None,
            })
            .await?;
        self.tell_handoff(&source, &target, &vendor, title, request, prompt)
            .await?;
        Ok(SessionHandoffResult {
            source_session_id: source.id,
            target_session_id: target.id,
            target_vendor: vendor,
        })
    }

    /// The installed vendor a handoff goes to (`targetVendor`, trimmed), with its
    /// facts.
    fn handoff_vendor(
        &self,
        target: Option<String>,
    ) -> Result<(String, std::sync::Arc<crate::adapter::VendorSpec>), RuntimeError> {
        let vendor = target
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                RuntimeError::InvalidArgument("choose a targetVendor for the handoff".into())
            })?;
        let spec = self
            .inner
            .vendors
            .get(&VendorId::from(vendor.as_str()))
            .ok_or_else(|| RuntimeError::unusable(format!("unknown vendor `{:.64}`", vendor)))?;
        if !spec.installed {
            return Err(RuntimeError::VendorNotInstalled(vendor));
        }
        Ok((vendor, spec))
    }

    /// Records the handoff in both sessions (`handoff_created` in the source,
    /// `handoff_context` in the target) and starts the target's first turn with
    /// `prompt`.
    async fn tell_handoff(
        &self,
        source: &SessionInfo,
        target: &SessionInfo,
        vendor: &str,
        title: String,
        request: String,
        prompt: String,
    ) -> Result<(), RuntimeError> {
        let (Some(source_addr), Some(target_addr)) = (
            self.sessions().session_addr(&source.id),
            self.sessions().session_addr(&target.id),
        ) else {
            return Err(RuntimeError::Internal("a handoff session vanished".into()));
        };
        // Awaited, so the event is queued before the request's writes are waited
        // for: an answered handoff has its `handoff_created` on disk.
        source_addr
            .send(RecordEvent(EventBody::HandoffCreated {
                target_session_id: target.id.clone(),
                target_vendor: vendor.to_string(),
                target_title: title,
            }))
            .await?;
        target_addr
            .send(RecordEvent(EventBody::HandoffContext {
                source_session_id: source.id.clone(),
                source_vendor: source.vendor.clone(),
                source_title: source.title.clone(),
                request,
            }))
            .await?;
        // Server-written, so a scripted target echoes it rather than running it.
        target_addr
            .send(Resume {
                id: format!("handoff:{}", source.id),
                text: prompt,
                proposal: None,
            })
            .await??;
        Ok(())
    }

    /// The conversation behind a handoff target: its source's user and assistant
    /// messages, and those of earlier handoffs up to [`MAX_HANDOFF_DEPTH`] levels,
    /// oldest first. Only sessions with the target's owner are followed.
    pub async fn handoff_history(
        &self,
        target: &SessionInfo,
    ) -> Result<Vec<(SessionId, Entry)>, RuntimeError> {
        let mut chain: Vec<SessionInfo> = Vec::new();
        let mut next = target.handoff_from.clone();
        while let Some(id) = next.take() {
            if chain.len() >= MAX_HANDOFF_DEPTH {
                break;
            }
            let Some(info) = self.sessions().session_info(&id) else {
                break;
            };
            if info.owner_id != target.owner_id {
                break;
            }
            next = info.handoff_from.clone();
            chain.push(info);
        }
        let mut out = Vec::new();
        for info in chain.iter().rev() {
            let frames = self.history_tail(&info.id, info.last_seq).await?;
            out.extend(
                transcript(&frames)
                    .into_iter()
                    .map(|e| (info.id.clone(), e)),
            );
        }
        Ok(out)
    }
}

/// The hook sessions hand a limited conversation to another vendor through
/// (`onLimit: {handoff: VENDOR}`), as its owner.
pub(super) fn failover(runtime: RuntimeRef) -> crate::failover::Failover {
    crate::failover::Failover(std::sync::Arc::new(move |request| {
        let runtime = runtime.upgrade();
        Box::pin(async move {
            let rt = runtime
                .ok_or_else(|| crate::failover::HandoffFailed("the server is stopping".into()))?;
            let owner = Principal {
                user_id: request.owner_id,
                admin: false,
            };
            rt.handoff(
                &owner,
                SessionHandoffParams {
                    session_id: request.session_id,
                    target_vendor: Some(request.vendor),
                    model: None,
                    effort: None,
                },
            )
            .await
            .map(|r| r.target_session_id)
            .map_err(|e| crate::failover::HandoffFailed(e.to_string()))
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory removed on drop.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(label: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "tandem-{label}-{}-{}",
                std::process::id(),
                crate::clock::random_id("", 4)
            ));
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// True while `pid` runs (a zombie or a reaped process does not).
    fn running(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let state = stat.rsplit_once(')')?.1.split_whitespace().next()?;
                Some(state != "Z" && state != "X")
            })
            .unwrap_or(false)
    }

    #[actix_rt::test]
    async fn a_command_that_hangs_is_killed_at_the_limit() {
        let dir = Scratch::new("hang");
        let pidfile = dir.0.join("pid");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("echo $$ > {}; exec sleep 30", pidfile.display()));
        assert_eq!(
            run_bounded(cmd, Duration::from_secs(2)).await,
            Err(RunFailure::TimedOut)
        );
        let pid = std::fs::read_to_string(&pidfile).unwrap_or_else(|e| panic!("{e}"));
        let pid = pid.trim();
        // Killed, not left running: wait (bounded) for the kill to land.
        let mut alive = true;
        for _ in 0..500 {
            alive = running(pid);
            if !alive {
                break;
            }
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!alive, "process {pid} still runs after the limit");
    }

    #[actix_rt::test]
    async fn output_failure_and_missing_programs_are_told_apart() {
        let mut echo = Command::new("sh");
        echo.args(["-c", "echo hello; echo"]);
        assert_eq!(
            run_bounded(echo, Duration::from_secs(20)).await,
            Ok("hello".into())
        );
        let mut fail = Command::new("sh");
        fail.args(["-c", "exit 3"]);
        assert_eq!(
            run_bounded(fail, Duration::from_secs(20)).await,
            Err(RunFailure::Failed)
        );
        let missing = Command::new("/nonexistent/tandem-no-such-program");
        assert_eq!(
            run_bounded(missing, Duration::from_secs(20)).await,
            Err(RunFailure::Spawn)
        );
    }

    #[actix_rt::test]
    async fn git_status_outside_a_repository() {
        let dir = Scratch::new("git-status");
        let status = git_status(&dir.0).await;
        assert!(status.starts_with("not a git repository"), "{status}");
    }
}
