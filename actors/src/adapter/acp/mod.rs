//! The ACP adapter: any agent that speaks the Agent Client Protocol (version 1,
//! JSON-RPC 2.0 over stdio) is a vendor, configured as `[vendors.ID] protocol = "acp"`.
//!
//! - [`wire`]: typed serde shapes of the messages used, and frame classification;
//! - [`mapping`]: updates → history events, permission options ↔ answers, stop
//!   reasons → turn outcomes, permission mode → agent mode (pure, unit-tested);
//! - [`transport`]: one agent process and the tasks around it;
//! - [`agent`]: [`AcpAgent`], the adapter actor (process life, session, turns,
//!   interrupts, approvals);
//! - [`models`]: the models a session is offered (`session/new`'s `models` or its
//!   model configuration option) and how to switch them (pure, unit-tested);
//! - [`probe`]: `initialize` and `session/new` without a prompt, for what
//!   `GET /vendors` shows (name, version, capabilities, models).
//!
//! [`AcpHub`] is what all ACP adapters share: the pids of the agents we started and a
//! shutdown signal that kills them all when the server stops.

pub mod agent;
pub mod mapping;
pub mod models;
pub mod probe;
pub mod transport;
pub mod wire;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

pub use agent::AcpAgent;

use super::catalog::strings;
use super::messages::AdapterCommand;
use super::vendors::LocalFuture;
use super::{
    AdapterContext, AdapterFactory, ConfiguredVendor, VendorId, VendorProcess, VendorSpec,
};
use crate::adapter::health::{Health, VendorStatus};
use crate::error::RuntimeError;

/// Idle time after which a kept agent process is closed, unless configured
/// (`idle_secs`).
pub const DEFAULT_IDLE_CLOSE: Duration = Duration::from_secs(600);
/// How long an agent may take to answer `initialize`, and then to open its session,
/// unless configured (`startup_secs`).
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(30);

/// One ACP agent as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpVendor {
    /// The vendor id (the `[vendors.ID]` key): what sessions name.
    pub id: VendorId,
    /// Name shown to people (`display_name`, else the id).
    pub display_name: String,
    /// How to start it.
    pub process: VendorProcess,
    /// Bound on `initialize` and on opening the session; past it the turn fails with a
    /// clear error and the process is killed.
    pub startup_timeout: Duration,
    /// Close the process after it has been idle this long.
    pub idle_close: Duration,
}

/// State every ACP adapter shares; cheap to clone.
#[derive(Debug, Clone)]
pub struct AcpHub {
    inner: Arc<HubInner>,
}

#[derive(Debug)]
struct HubInner {
    /// Pids of the agent processes we started and that have not exited.
    pids: Mutex<HashSet<u32>>,
    /// Set once at shutdown; every process supervisor watches it.
    shutdown: tokio::sync::watch::Sender<bool>,
}

impl Default for AcpHub {
    fn default() -> Self {
        AcpHub {
            inner: Arc::new(HubInner {
                pids: Mutex::new(HashSet::new()),
                shutdown: tokio::sync::watch::channel(false).0,
            }),
        }
    }
}

impl AcpHub {
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
        Some(self.inner.shutdown.subscribe())
    }

    /// How many of our agent processes are alive.
    pub fn live_processes(&self) -> usize {
        self.inner.pids.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// Kills every agent process we started and waits (at most `limit`) until they
    /// have exited: stopping the server leaves no process behind.
    pub async fn shutdown(&self, limit: Duration) {
        self.inner.shutdown.send_replace(true);
        let deadline = tokio::time::Instant::now() + limit;
        while self.live_processes() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// An ACP agent in the vendor registry: one [`AcpAgent`] (and, while live, one agent
/// process) per session.
pub struct Factory {
    /// The agent as configured.
    vendor: AcpVendor,
    /// What every adapter of this agent shares.
    hub: AcpHub,
}

impl Factory {
    /// The adapter for `vendor`, whose protocol is ACP with this start bound.
    pub fn new(vendor: &ConfiguredVendor, startup_timeout: Duration) -> Self {
        Factory {
            vendor: AcpVendor {
                id: vendor.id.clone(),
                display_name: vendor
                    .display_name
                    .clone()
                    .unwrap_or_else(|| vendor.id.to_string()),
                process: vendor.process.clone(),
                startup_timeout,
                idle_close: vendor.process.idle_close.unwrap_or(DEFAULT_IDLE_CLOSE),
            },
            hub: AcpHub::default(),
        }
    }
}

impl AdapterFactory for Factory {
    /// What is known before the agent answered `initialize`: no models (the probe's
    /// `session/new` lists them, where the agent offers a choice), no effort levels
    /// (ACP has none), the capabilities every ACP agent has.
    fn spec(&self) -> VendorSpec {
        VendorSpec {
            id: self.vendor.id.clone(),
            display_name: self.vendor.display_name.clone(),
            models: Vec::new(),
            effort_levels: &[],
            capabilities: strings(&["acp", "interrupt", "approvals"]),
            installed: true,
            version: None,
            status: VendorStatus::Unknown,
            problem: None,
            default_model: None,
            configured_models: Vec::new(),
            agent: None,
            notes: Vec::new(),
        }
    }

    fn start(&self, ctx: AdapterContext) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        Ok(AcpAgent::new(ctx, self.vendor.clone(), self.hub.clone())
            .start()
            .recipient())
    }

    /// `initialize` in a short-lived process: the agent's name, version and
    /// capabilities.
    fn probe(&self) -> Option<LocalFuture<Health>> {
        let vendor = self.vendor.clone();
        Some(Box::pin(async move {
            match probe::probe(&vendor).await {
                Ok(facts) => Health {
                    version: facts.info.as_ref().and_then(|i| i.version.clone()),
                    status: VendorStatus::Ok,
                    default_model: facts.models.as_ref().and_then(|m| m.current.clone()),
                    models: facts.models.map(|m| m.models),
                    agent: facts.info.map(|i| tandem_protocol::rest::AgentIdentity {
                        name: i.name,
                        title: i.title,
                        version: i.version,
                    }),
                    capabilities: Some(facts.capabilities),
                    notes: facts.notes,
                    ..Health::default()
                },
                Err(e) => Health {
                    status: VendorStatus::Broken,
                    problem: Some(format!(
                        "{} did not answer `initialize` ({e}): check `[vendors.{}]` bin, args and env",
                        vendor.display_name, vendor.id
                    )),
                    ..Health::default()
                },
            }
        }))
    }

    fn shutdown(&self, limit: Duration) -> LocalFuture<()> {
        let hub = self.hub.clone();
        Box::pin(async move { hub.shutdown(limit).await })
    }
}
