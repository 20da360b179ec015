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
//! The factory's [`ProcessHub`] is what all adapters of one agent share: the pids of
//! the processes we started and a shutdown signal that kills them all when the server
//! stops.

pub mod agent;
pub mod mapping;
pub mod models;
pub mod probe;
pub mod transport;
pub mod wire;

use std::time::Duration;

use actix::prelude::*;

pub use agent::AcpAgent;

use super::messages::AdapterCommand;
use super::supervisor::ProcessHub;
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

/// An ACP agent in the vendor registry: one [`AcpAgent`] (and, while live, one agent
/// process) per session.
pub struct Factory {
    /// The agent as configured.
    vendor: AcpVendor,
    /// What every adapter of this agent shares.
    hub: ProcessHub,
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
            hub: ProcessHub::default(),
        }
    }
}

impl AdapterFactory for Factory {
    /// What is known before the agent answered `initialize`: no models and no effort
    /// levels (the probe's `session/new` lists them, where the agent offers a choice),
    /// the capabilities every ACP agent has.
    fn spec(&self) -> VendorSpec {
        VendorSpec::new(
            self.vendor.id.clone(),
            self.vendor.display_name.clone(),
            &["acp", "interrupt", "approvals"],
        )
    }

    fn start(&self, ctx: AdapterContext) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        let mut vendor = self.vendor.clone();
        vendor.process.env.extend(ctx.env.clone());
        Ok(AcpAgent::new(ctx, vendor, self.hub.clone())
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
                    effort_levels: facts.efforts.map(|e| e.levels),
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
