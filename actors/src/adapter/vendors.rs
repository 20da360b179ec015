//! The vendor registry: which adapter serves which vendor id.
//!
//! Each vendor's folder provides an [`AdapterFactory`]; [`Vendors::from_config`] builds
//! one per installed vendor from the configuration. A session starts its adapter
//! through the registry by its [`VendorId`], so adding a vendor touches this file (one
//! arm in [`Vendors::from_config`]) and the vendor's own folder, nothing else.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use tandem_protocol::rest::RunningSession;
use tandem_protocol::SessionInfo;

use super::health::{self, CliProfile, Health};
use super::messages::AdapterCommand;
use super::process::{ConfiguredVendor, VendorProtocol, VendorsConfig};
use super::{AdapterContext, VendorId, VendorSpec};
use crate::error::RuntimeError;

/// A future run on the caller's arbiter (adapters are actix actors, not `Send`).
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// One vendor's adapter: how to start it for a session, and what the server asks of the
/// vendor as a whole.
pub trait AdapterFactory: Send + Sync {
    /// The vendor's catalog entry before its CLI has been asked anything.
    fn spec(&self) -> VendorSpec;

    /// Starts the adapter actor for one session, on the caller's arbiter.
    fn start(&self, ctx: AdapterContext) -> Result<Recipient<AdapterCommand>, RuntimeError>;

    /// Checks the CLI without spending tokens (version and supported range, login,
    /// models); `None` when there is nothing to check.
    fn probe(&self) -> Option<LocalFuture<Health>> {
        None
    }

    /// A failed turn's error rewritten to name the vendor, the cause and the fix where
    /// the vendor knows its CLI's errors (see [`super::health::explain`]); as it was
    /// otherwise.
    fn explain(&self, raw: String) -> String {
        raw
    }

    /// Kills every process this vendor's adapters started and waits at most `limit`
    /// for them to exit (the server is stopping).
    fn shutdown(&self, limit: Duration) -> LocalFuture<()> {
        let _ = limit;
        Box::pin(async {})
    }

    /// Sessions in `visible` that this vendor's CLI works on outside tandem right now
    /// (the running view), unless `listed` already has them.
    fn external_runs(
        &self,
        visible: &[SessionInfo],
        listed: &[RunningSession],
    ) -> Vec<RunningSession> {
        let _ = (visible, listed);
        Vec::new()
    }
}

/// Every vendor this server knows, installed or not, in catalog order.
#[derive(Clone)]
pub struct Vendors {
    entries: Arc<Vec<Entry>>,
}

/// One vendor: its id, its catalog entry as first known, and its adapter when it is
/// installed.
struct Entry {
    id: VendorId,
    spec: VendorSpec,
    factory: Option<Arc<dyn AdapterFactory>>,
}

impl Default for Vendors {
    /// Only the scripted vendor installed.
    fn default() -> Self {
        Vendors::from_config(&VendorsConfig::default())
    }
}

impl Vendors {
    /// The scripted vendor, Codex and Claude Code (installed when configured), then
    /// every other configured vendor in the config's order.
    pub fn from_config(config: &VendorsConfig) -> Self {
        let mut entries = vec![installed(Arc::new(super::scripted::Factory))];
        let builtins: [Builtin; 2] = [
            (VendorId::CODEX, super::codex::spec, &super::codex::PROFILE),
            (
                VendorId::CLAUDE,
                super::claude::spec,
                &super::claude::PROFILE,
            ),
        ];
        for (id, spec, profile) in &builtins {
            entries.push(match config.get(id) {
                Some(vendor) => installed(factory(vendor)),
                None => {
                    let missing = health::missing(profile);
                    Entry {
                        id: id.clone(),
                        spec: VendorSpec {
                            installed: false,
                            status: missing.status,
                            problem: missing.problem,
                            ..spec()
                        },
                        factory: None,
                    }
                }
            });
        }
        for vendor in &config.vendors {
            if !builtins.iter().any(|(id, _, _)| *id == vendor.id) {
                entries.push(installed(factory(vendor)));
            }
        }
        Vendors {
            entries: Arc::new(entries),
        }
    }

    /// Catalog entries of every vendor, installed or not, as first known.
    pub fn specs(&self) -> Vec<VendorSpec> {
        self.entries.iter().map(|e| e.spec.clone()).collect()
    }

    /// Starts `id`'s adapter for a session.
    pub fn start(
        &self,
        id: &VendorId,
        ctx: AdapterContext,
    ) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        self.factory(id)
            .ok_or_else(|| RuntimeError::VendorNotInstalled(id.to_string()))?
            .start(ctx)
    }

    /// Every installed vendor's probe, to run in the background.
    pub fn probes(&self) -> Vec<(VendorId, LocalFuture<Health>)> {
        self.installed()
            .filter_map(|(id, f)| f.probe().map(|p| (id.clone(), p)))
            .collect()
    }

    /// A failed turn's error as `id`'s factory explains it (see
    /// [`AdapterFactory::explain`]).
    pub fn explain(&self, id: &VendorId, raw: String) -> String {
        match self.factory(id) {
            Some(factory) => factory.explain(raw),
            None => raw,
        }
    }

    /// Stops every vendor's processes, each waiting at most `limit`.
    pub async fn shutdown(&self, limit: Duration) {
        for (_, factory) in self.installed() {
            factory.shutdown(limit).await;
        }
    }

    /// Sessions vendor CLIs work on outside tandem (see
    /// [`AdapterFactory::external_runs`]).
    pub fn external_runs(
        &self,
        visible: &[SessionInfo],
        listed: &[RunningSession],
    ) -> Vec<RunningSession> {
        self.installed()
            .flat_map(|(_, f)| f.external_runs(visible, listed))
            .collect()
    }

    fn factory(&self, id: &VendorId) -> Option<&Arc<dyn AdapterFactory>> {
        self.entries
            .iter()
            .find(|e| e.id == *id)
            .and_then(|e| e.factory.as_ref())
    }

    fn installed(&self) -> impl Iterator<Item = (&VendorId, &Arc<dyn AdapterFactory>)> {
        self.entries
            .iter()
            .filter_map(|e| e.factory.as_ref().map(|f| (&e.id, f)))
    }
}

/// A vendor listed even when not installed: its id, its catalog entry and what its
/// folder says about its CLI (for the "not installed" problem).
type Builtin = (VendorId, fn() -> VendorSpec, &'static CliProfile);

/// The adapter that speaks `vendor`'s protocol.
fn factory(vendor: &ConfiguredVendor) -> Arc<dyn AdapterFactory> {
    match vendor.protocol {
        VendorProtocol::Codex => Arc::new(super::codex::Factory::new(vendor)),
        VendorProtocol::Claude => Arc::new(super::claude::Factory::new(vendor)),
        VendorProtocol::Acp { startup_timeout } => {
            Arc::new(super::acp::Factory::new(vendor, startup_timeout))
        }
    }
}

fn installed(factory: Arc<dyn AdapterFactory>) -> Entry {
    let spec = factory.spec();
    Entry {
        id: spec.id.clone(),
        spec,
        factory: Some(factory),
    }
}
