//! The Claude Code adapter: one `claude -p` process per live session, speaking
//! stream-json on stdin/stdout and the control protocol (interrupt, model and
//! permission-mode changes, tool approvals over `--permission-prompt-tool stdio`,
//! stopping background tasks).
//!
//! - [`wire`]: typed serde structs for the lines we read and write;
//! - [`mapping`]: stream-json → history events, turn outcomes, usage;
//! - [`tasks`]: the background tasks a turn left running;
//! - [`transport`]: the command line and the tasks around one process;
//! - [`actor`]: [`ClaudeAgent`], the adapter actor (process lifecycle, turns,
//!   approvals);
//! - [`registry`]: Claude Code processes running outside tandem, for the running view.
//!
//! [`ClaudeHub`] is what all Claude adapters share: the pids of the processes we
//! started (so the running view does not mistake them for outside ones), the home
//! directory whose registry is scanned, and a shutdown signal that kills every process.

pub mod actor;
pub mod mapping;
pub mod registry;
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

use super::messages::AdapterCommand;
use super::{AdapterContext, VendorProcess};
use crate::error::RuntimeError;

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

/// Starts the adapter actor for one Claude session (on the caller's arbiter).
pub fn start(
    ctx: AdapterContext,
    hub: &ClaudeHub,
) -> Result<Recipient<AdapterCommand>, RuntimeError> {
    let Some(process) = ctx.process.clone() else {
        return Err(RuntimeError::VendorNotInstalled("claude".into()));
    };
    Ok(ClaudeAgent::new(ctx, process, hub.clone())
        .start()
        .recipient())
}
