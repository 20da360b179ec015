//! The Claude Code adapter: one `claude -p` process per live session, speaking
//! stream-json on stdin/stdout and the control protocol (interrupt, model and
//! permission-mode changes, tool approvals over `--permission-prompt-tool stdio`,
//! stopping background tasks).
//!
//! - [`wire`]: typed serde structs for the lines we read and write;
//! - [`mapping`]: stream-json → history events, turn outcomes, usage;
//! - [`tasks`]: the background tasks a turn left running;
//! - [`transport`]: the command line and the tasks around one process;
//! - [`actor`]: [`ClaudeAgent`], the adapter actor (built on the adapter core: process
//!   lifecycle as an enum, turns, settings); `lines` (what the CLI writes, turn
//!   accounting, exits) and `approvals` (tool and plan approvals) beside it;
//! - [`registry`]: Claude Code processes running outside tandem, for the running view.
//!
//! [`ClaudeHub`] is what all Claude adapters share: the pids of the processes we
//! started (so the running view does not mistake them for outside ones), the home
//! directory whose registry is scanned, and a shutdown signal that kills every process.

pub mod actor;
mod approvals;
mod lines;
pub mod mapping;
pub mod registry;
mod rewind;
pub mod running;
pub mod tasks;
pub mod transport;
pub mod wire;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

pub use actor::ClaudeAgent;
pub use registry::ExternalRun;

use tandem_protocol::rest::RunningSession;
use tandem_protocol::SessionInfo;

use super::catalog::strings;
use super::health::{self, CliFacts, CliProfile, Health, SupportedRange, VendorStatus};
use super::messages::AdapterCommand;
use super::vendors::LocalFuture;
use super::{
    AdapterContext, AdapterFactory, ConfiguredVendor, VendorId, VendorProcess, VendorSpec,
};
use crate::error::RuntimeError;

/// What `GET /vendors`, `tandem doctor` and failed turns say about the Claude Code CLI.
pub const PROFILE: CliProfile = CliProfile {
    id: "claude",
    name: "Claude Code",
    range: SupportedRange {
        min: (2, 1, 0),
        below: (3, 0, 0),
    },
    install_hint: "install it (`npm install -g @anthropic-ai/claude-code`) or set TANDEM_CLAUDE_BIN or `[vendors.claude] bin`",
    login_hint: "run `claude` and /login, or set ANTHROPIC_API_KEY in the environment tandem starts in",
    base_url_hint: "ANTHROPIC_BASE_URL",
};

/// How long `claude auth status` may take.
const AUTH_STATUS_TIMEOUT: Duration = Duration::from_secs(15);

/// Checks the Claude Code CLI without spending tokens: version, then the login state
/// `claude auth status` reports. `None`: no binary found.
pub async fn check(process: Option<&VendorProcess>) -> Health {
    health::check(&PROFILE, process, |process| async move {
        CliFacts {
            logged_in: logged_in(&process).await,
            ..CliFacts::default()
        }
    })
    .await
}

/// `claude auth status` (JSON with `loggedIn`); `None` when it cannot tell.
async fn logged_in(process: &VendorProcess) -> Option<bool> {
    let mut cmd = tokio::process::Command::new(&process.bin);
    cmd.args(["auth", "status"])
        .env_clear()
        .envs(process.environment())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(AUTH_STATUS_TIMEOUT, cmd.output())
        .await
        .ok()?
        .ok()?;
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    status.get("loggedIn")?.as_bool()
}

/// Idle time after which a kept process is closed, unless configured
/// (`[vendors.claude] idle_secs`).
pub const DEFAULT_IDLE_CLOSE: Duration = Duration::from_secs(600);

/// State every Claude adapter shares; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ClaudeHub {
    inner: Arc<HubInner>,
}

#[derive(Debug, Default)]
struct HubInner {
    /// The home directory the CLI runs with: `HOME` from `[vendors.claude] env`, else
    /// the server's. `None` when Claude is not installed (nothing to scan).
    home: Option<PathBuf>,
    /// Pids of the `claude` processes we started and that have not exited.
    pids: Mutex<HashSet<u32>>,
    /// Set once at shutdown; every process supervisor watches it.
    shutdown: Option<tokio::sync::watch::Sender<bool>>,
}

impl ClaudeHub {
    /// The hub for the configured CLI (`None`: Claude is not installed).
    pub fn new(process: Option<&VendorProcess>) -> Self {
        let home = process.and_then(|p| p.environment().get("HOME").map(PathBuf::from));
        ClaudeHub {
            inner: Arc::new(HubInner {
                home,
                pids: Mutex::new(HashSet::new()),
                shutdown: Some(tokio::sync::watch::channel(false).0),
            }),
        }
    }

    pub(crate) fn process_started(&self, pid: u32) {
        if let Ok(mut pids) = self.inner.pids.lock() {
            pids.insert(pid);
        }
    }

    pub(crate) fn process_ended(&self, pid: u32) {
        if let Ok(mut pids) = self.inner.pids.lock() {
            pids.remove(&pid);
        }
    }

    /// A receiver that turns true when the server shuts down.
    pub(crate) fn shutdown_signal(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        self.inner.shutdown.as_ref().map(|s| s.subscribe())
    }

    /// True when `pid` is a process one of our adapters started.
    pub fn is_ours(&self, pid: u32) -> bool {
        self.inner.pids.lock().is_ok_and(|p| p.contains(&pid))
    }

    /// How many of our `claude` processes are alive.
    pub fn live_processes(&self) -> usize {
        self.inner.pids.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// Busy Claude Code processes started outside tandem (registry files under the
    /// CLI's home directory). Never fails: unreadable entries are skipped.
    pub fn external_runs(&self) -> Vec<ExternalRun> {
        match &self.inner.home {
            Some(home) => registry::scan(home, &|pid| self.is_ours(pid)),
            None => Vec::new(),
        }
    }

    /// Kills every `claude` process we started and waits (at most `limit`) until they
    /// have exited: stopping the server leaves no process behind.
    pub async fn shutdown(&self, limit: Duration) {
        if let Some(tx) = &self.inner.shutdown {
            tx.send_replace(true);
        }
        let deadline = tokio::time::Instant::now() + limit;
        while self.live_processes() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Claude Code's catalog entry before its CLI has been asked.
pub fn spec() -> VendorSpec {
    VendorSpec {
        id: VendorId::CLAUDE,
        display_name: "Claude Code".into(),
        models: strings(&["sonnet", "opus", "haiku"]),
        effort_levels: &["low", "medium", "high", "xhigh", "max"],
        capabilities: strings(&[
            "interrupt",
            "backgroundTasks",
            "tools",
            "approvals",
            crate::adapter::REWIND_CAPABILITY,
            "images",
        ]),
        installed: true,
        version: None,
        status: VendorStatus::Unknown,
        problem: None,
        // Claude Code's default depends on the account; only the CLI knows.
        default_model: None,
        configured_models: Vec::new(),
        agent: None,
        notes: Vec::new(),
    }
}

/// Claude Code in the vendor registry: one [`ClaudeAgent`] (and, while live, one
/// process) per session.
pub struct Factory {
    /// The vendor id (`claude` unless configured otherwise).
    id: VendorId,
    /// Name from the config, if any.
    display_name: Option<String>,
    /// How to start `claude`.
    process: VendorProcess,
    /// What every Claude adapter of this server shares.
    hub: ClaudeHub,
}

impl Factory {
    /// The adapter for `vendor` (whose protocol is Claude Code's).
    pub fn new(vendor: &ConfiguredVendor) -> Self {
        Factory {
            id: vendor.id.clone(),
            display_name: vendor.display_name.clone(),
            hub: ClaudeHub::new(Some(&vendor.process)),
            process: vendor.process.clone(),
        }
    }
}

impl AdapterFactory for Factory {
    fn spec(&self) -> VendorSpec {
        let base = spec();
        VendorSpec {
            id: self.id.clone(),
            display_name: self.display_name.clone().unwrap_or(base.display_name),
            ..base
        }
    }

    fn start(&self, ctx: AdapterContext) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        Ok(
            ClaudeAgent::new(ctx, self.process.clone(), self.hub.clone())
                .start()
                .recipient(),
        )
    }

    fn probe(&self) -> Option<LocalFuture<Health>> {
        let process = self.process.clone();
        Some(Box::pin(async move { check(Some(&process)).await }))
    }

    fn explain(&self, raw: String) -> String {
        health::explain(&PROFILE, raw)
    }

    fn shutdown(&self, limit: Duration) -> LocalFuture<()> {
        let hub = self.hub.clone();
        Box::pin(async move { hub.shutdown(limit).await })
    }

    fn external_runs(
        &self,
        visible: &[SessionInfo],
        listed: &[RunningSession],
    ) -> Vec<RunningSession> {
        running::external(&self.hub, &self.id, visible, listed)
    }
}
