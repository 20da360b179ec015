//! A session's run script: one long-running process (a dev server) started by
//! `session.run` and stopped by `session.run-stop`, with its session, or with the
//! server. Its output is kept, the last [`LOG_BYTES`] of it, for `session.run-log`;
//! its start and end are `script` events.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tandem_protocol::scripts::{ScriptName, ScriptReport, ScriptStatus};
use tokio::io::AsyncReadExt;

use super::shell::{self, tail_text};
use crate::adapter::confine::Launcher;

/// Bytes of a run's output kept, from the end.
pub const LOG_BYTES: usize = 1 << 20;

/// What is known of a session's run script.
#[derive(Debug, Default)]
pub struct RunState {
    /// The process group's leader while it runs.
    pub leader: Option<u32>,
    /// Whether it runs.
    pub running: bool,
    /// Set by a stop, so its end reads `stopped`.
    pub stopping: bool,
    /// How the last run ended.
    pub status: Option<ScriptStatus>,
    /// Its exit code, when it exited by itself.
    pub exit_code: Option<i32>,
    /// The latest run's output, its last [`LOG_BYTES`] (kept to at most twice that
    /// between trims).
    pub log: Vec<u8>,
    /// Bytes dropped from the front of `log`.
    pub dropped: u64,
}

impl RunState {
    /// The log as text, its last [`LOG_BYTES`].
    pub fn log_text(&self) -> (String, u64) {
        let from = self.log.len().saturating_sub(LOG_BYTES);
        let text = String::from_utf8_lossy(&self.log[from..]).into_owned();
        (
            text.trim_start_matches('\u{FFFD}').to_string(),
            self.dropped + from as u64,
        )
    }
}

/// A session's run slot, shared by the reading task and the requests.
#[derive(Debug, Default)]
pub struct Run {
    state: Mutex<RunState>,
}

impl Run {
    /// Its state, locked. Every change is a few field writes, so a poisoned lock is
    /// used as is.
    pub fn state(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills the running process group, if any; its end is reported `stopped`.
    pub fn stop(&self) {
        let mut state = self.state();
        if state.running {
            state.stopping = true;
            shell::kill_group(state.leader);
        }
    }
}

/// Keeps what the run writes to `out` in its log, its last [`LOG_BYTES`] (up to
/// twice that before it is cut), until the pipe closes.
async fn keep_output(run: &Run, out: &mut (impl tokio::io::AsyncRead + Unpin)) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = out.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut state = run.state();
        state.log.extend_from_slice(&buf[..n]);
        if state.log.len() > 2 * LOG_BYTES {
            let cut = state.log.len() - LOG_BYTES;
            state.log.drain(..cut);
            state.dropped += cut as u64;
        }
    }
}

/// Starts `command` in `workdir` for `run` (which must not be running), reporting its
/// start and end to `report`. The process is killed if its task is dropped.
pub fn start(
    run: Arc<Run>,
    command: &str,
    workdir: &Path,
    env: &BTreeMap<String, String>,
    launcher: Option<&Launcher>,
    ledger: Arc<super::ledger::Ledger>,
    report: impl Fn(ScriptReport) + Send + 'static,
) {
    let mut child = match shell::command(command, workdir, env, launcher).spawn() {
        Ok(child) => child,
        Err(e) => {
            let mut state = run.state();
            *state = RunState {
                status: Some(ScriptStatus::Failed),
                log: format!("could not start: {e}").into_bytes(),
                ..RunState::default()
            };
            report(ScriptReport {
                name: ScriptName::Run,
                status: ScriptStatus::Failed,
                exit_code: None,
                log_tail: format!("could not start: {e}"),
            });
            return;
        }
    };
    let leader = child.id();
    if let Some(leader) = leader {
        ledger.started(leader);
    }
    {
        let mut state = run.state();
        *state = RunState {
            leader,
            running: true,
            ..RunState::default()
        };
    }
    report(ScriptReport {
        name: ScriptName::Run,
        status: ScriptStatus::Running,
        exit_code: None,
        log_tail: String::new(),
    });
    let mut out = child.stdout.take();
    actix_rt::spawn(async move {
        if let Some(out) = out.as_mut() {
            keep_output(&run, out).await;
        }
        let waited = child.wait().await;
        // What the shell started may still hold the pipe's other end: it goes too.
        let report_now = {
            let mut state = run.state();
            shell::kill_group(state.leader.take());
            let (status, exit_code) = match waited {
                _ if state.stopping => (ScriptStatus::Stopped, None),
                Ok(s) if s.success() => (ScriptStatus::Passed, Some(0)),
                Ok(s) => (ScriptStatus::Failed, s.code()),
                Err(_) => (ScriptStatus::Failed, None),
            };
            state.running = false;
            state.stopping = false;
            state.status = Some(status);
            state.exit_code = exit_code;
            let from = state.log.len().saturating_sub(shell::LOG_TAIL_BYTES);
            ScriptReport {
                name: ScriptName::Run,
                status,
                exit_code,
                log_tail: tail_text(&state.log[from..]),
            }
        };
        if let Some(leader) = leader {
            ledger.ended(leader);
        }
        report(report_now);
    });
}
