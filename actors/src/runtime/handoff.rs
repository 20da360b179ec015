//! `session.handoff`: a conversation continues in a new session of another (or the
//! same) vendor, and the new session may page the old history.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tandem_protocol::client::HandoffParams;
use tandem_protocol::{EventBody, SessionInfo};

use super::{NewSession, Runtime};
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::handoff::{latest_request, snapshot, transcript, Entry};
use crate::session::{RecordEvent, Resume};

/// Events read from the end of a history to build a transcript.
const HISTORY_SCAN: usize = 20_000;
/// Earlier handoffs followed when paging a source history.
pub const MAX_HANDOFF_DEPTH: usize = 5;

/// What a handoff created.
#[derive(Debug, Clone)]
pub struct Handoff {
    /// The session continued.
    pub source_session_id: String,
    /// The new session.
    pub target_session_id: String,
    /// Its vendor.
    pub target_vendor: String,
}

/// `git status --short --branch` of `cwd`, or a note saying why there is none. Runs
/// with a minimal environment and gives up after a few seconds.
fn git_status(cwd: &Path) -> String {
    let child = Command::new("git")
        .args(["status", "--short", "--branch"])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return "not a git repository (git is not available)".into();
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => {
                let out = child
                    .wait_with_output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_string())
                    .unwrap_or_default();
                return if out.is_empty() {
                    "(clean)".into()
                } else {
                    out
                };
            }
            Ok(Some(_)) => return "not a git repository".into(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return "git status did not answer in time".into();
            }
        }
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
        params: HandoffParams,
    ) -> Result<Handoff, RuntimeError> {
        let source = self.drivable(who, &params.session_id)?.shared.info();
        let vendor = params
            .target_vendor
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                RuntimeError::InvalidArgument("choose a targetVendor for the handoff".into())
            })?;
        let spec = self
            .vendor(&vendor)
            .ok_or_else(|| RuntimeError::InvalidArgument(format!("unknown vendor `{vendor}`")))?;
        if !spec.installed {
            return Err(RuntimeError::VendorNotInstalled(vendor));
        }
        if source.pair_id.is_some() {
            return Err(RuntimeError::InvalidArgument(
                "a session in a pair cannot be handed off; close the pair first".into(),
            ));
        }
        if source.status.is_busy() {
            return Err(RuntimeError::RunInProgress(source.id));
        }
        let frames = self.history_tail(&source.id, source.last_seq).await?;
        let request = latest_request(&frames).ok_or_else(|| {
            RuntimeError::InvalidArgument("this session has no conversation to continue yet".into())
        })?;
        let entries = transcript(&frames);
        let cwd = source.cwd.clone();
        let git = actix_rt::task::spawn_blocking(move || git_status(Path::new(&cwd)))
            .await
            .unwrap_or_else(|_| "git status failed".into());
        let source_vendor = self
            .vendor(&source.vendor)
            .map(|v| v.display_name.to_string())
            .unwrap_or_else(|| source.vendor.clone());
        let prompt = snapshot(&source.title, &source_vendor, &request, &git, &entries);
        let title: String = format!("{} · {}", source.title, spec.display_name)
            .chars()
            .take(200)
            .collect();
        let target = self
            .new_session(NewSession {
                id: None,
                owner_id: source.owner_id.clone(),
                visibility: source.visibility,
                vendor: vendor.clone(),
                model: params.model.unwrap_or_default(),
                effort: params.effort.unwrap_or_default(),
                title: Some(title.clone()),
                cwd: source.cwd.clone(),
                permission_mode: source.permission_mode,
                parent_id: None,
                pending_prompt: None,
                handoff_from: Some(source.id.clone()),
            })
            .await?;
        let (Some(source_addr), Some(target_addr)) =
            (self.session_addr(&source.id), self.session_addr(&target.id))
        else {
            return Err(RuntimeError::Internal("a handoff session vanished".into()));
        };
        source_addr.do_send(RecordEvent(EventBody::HandoffCreated {
            target_session_id: target.id.clone(),
            target_vendor: vendor.clone(),
            target_title: title,
        }));
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
        Ok(Handoff {
            source_session_id: source.id,
            target_session_id: target.id,
            target_vendor: vendor,
        })
    }

    /// The conversation behind a handoff target: its source's user and assistant
    /// messages, and those of earlier handoffs up to [`MAX_HANDOFF_DEPTH`] levels,
    /// oldest first. Only sessions with the target's owner are followed.
    pub async fn handoff_history(
        &self,
        target: &SessionInfo,
    ) -> Result<Vec<(String, Entry)>, RuntimeError> {
        let mut chain: Vec<SessionInfo> = Vec::new();
        let mut next = target.handoff_from.clone();
        while let Some(id) = next.take() {
            if chain.len() >= MAX_HANDOFF_DEPTH {
                break;
            }
            let Some(info) = self.session_info(&id) else {
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
