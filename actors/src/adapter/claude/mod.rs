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
//! started (so the running view does not mistake them for outside ones) and the
//! shutdown signal that kills every one (its [`ProcessHub`]), and the home directory
//! whose registry is scanned.

pub mod actor;
mod approvals;
mod lines;
pub mod mapping;
pub mod mcp_file;
pub mod registry;
mod rewind;
pub mod running;
pub mod tasks;
pub mod transport;
pub mod wire;

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;

pub use actor::ClaudeAgent;
pub use registry::ExternalRun;

use tandem_protocol::rest::RunningSession;
use tandem_protocol::SessionInfo;

use super::catalog::strings;
use super::health::{self, CliFacts, CliProfile, Health, SupportedRange};
use super::messages::AdapterCommand;
use super::supervisor::ProcessHub;
use super::vendors::LocalFuture;
use super::{
    AdapterContext, AdapterFactory, ConfiguredVendor, VendorId, VendorProcess, VendorSpec,
    CLI_CAPABILITIES,
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
    let mut cmd = process.bare_command(None);
    cmd.args(["auth", "status"])
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
    /// The `claude` processes we started and the signal that kills them at shutdown.
    processes: ProcessHub,
    /// The home directory the CLI runs with: `HOME` from `[vendors.claude] env`, else
    /// the server's. `None` when Claude is not installed (nothing to scan).
    home: Option<PathBuf>,
}

impl ClaudeHub {
    /// The hub for the configured CLI (`None`: Claude is not installed).
    pub fn new(process: Option<&VendorProcess>) -> Self {
        let home = process.and_then(|p| p.environment().get("HOME").map(PathBuf::from));
        ClaudeHub {
            processes: ProcessHub::default(),
            home,
        }
    }

    /// The `claude` processes we started.
    pub fn processes(&self) -> &ProcessHub {
        &self.processes
    }

    /// Busy Claude Code processes started outside tandem (registry files under the
    /// CLI's home directory). Never fails: unreadable entries are skipped.
    pub fn external_runs(&self) -> Vec<ExternalRun> {
        match &self.home {
            Some(home) => registry::scan(home, &|pid| self.processes.is_ours(pid)),
            None => Vec::new(),
        }
    }
}

/// Claude Code's catalog entry before its CLI has been asked.
pub fn spec() -> VendorSpec {
    // Claude Code's default model depends on the account; only the CLI knows.
    let mut spec = VendorSpec {
        models: strings(&["sonnet", "opus", "haiku"]),
        effort_levels: strings(&["low", "medium", "high", "xhigh", "max"]),
        ..VendorSpec::new(VendorId::CLAUDE, "Claude Code", CLI_CAPABILITIES)
    };
    // `--fork-session`.
    spec.capabilities.push(super::FORK_CAPABILITY.into());
    spec
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
        spec().configured(&self.id, self.display_name.as_deref())
    }

    fn start(&self, ctx: AdapterContext) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        let mut process = self.process.clone();
        process.env.extend(ctx.env.clone());
        Ok(ClaudeAgent::new(ctx, process, self.hub.processes().clone())
            .start()
            .recipient())
    }

    fn probe(&self) -> Option<LocalFuture<Health>> {
        let process = self.process.clone();
        Some(Box::pin(async move { check(Some(&process)).await }))
    }

    fn explain(&self, raw: String) -> String {
        health::explain(&PROFILE, raw)
    }

    fn shutdown(&self, limit: Duration) -> LocalFuture<()> {
        let hub = self.hub.processes().clone();
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
