//! [`VendorService`]: the agent CLIs this server knows: which are installed, each
//! one's facts and health (checked in the background at start), and the fleet of
//! their running processes (`fleet.rs`).

use std::sync::Arc;

use tandem_protocol::rest::VendorInfo;

use crate::adapter::model_cache::{CachedModels, ModelCache};
use crate::adapter::{VendorId, VendorSpec};
use crate::config::RuntimeConfig;
use crate::session::Services;

/// The vendors service.
pub struct VendorService {
    /// The catalog, the vendors' processes, the fleet and the turn slots.
    pub(super) services: Arc<Services>,
    /// Where the model cache lives, and how processes are confined.
    config: Arc<RuntimeConfig>,
}

impl VendorService {
    /// Serves the catalog and processes of `services`.
    pub(super) fn new(services: Arc<Services>, config: Arc<RuntimeConfig>) -> Self {
        VendorService { services, config }
    }

    /// Checks each installed vendor CLI in the background (version, supported range,
    /// login, models; no tokens spent); `GET /vendors` shows it once known. Until then
    /// it shows the models the CLIs reported last time (the model cache), and each new
    /// report replaces them there too.
    pub(super) fn probe_versions(&self) {
        let catalog = self.services.catalog.clone();
        let cache = Arc::new(ModelCache::new(&self.config.data_dir));
        let installed = catalog.installed();
        for (id, cached) in cache.load() {
            let id = VendorId::from(id);
            if installed.contains(&id) {
                catalog.set_models(&id, cached);
            }
        }
        for (id, probe) in self.services.vendors.probes() {
            let catalog = catalog.clone();
            let cache = cache.clone();
            actix::spawn(async move {
                let health = probe.await;
                if let Some(problem) = &health.problem {
                    tracing::warn!(vendor = %id, %problem, "vendor check");
                }
                let models = health.models.clone().unwrap_or_default();
                let effort_levels = health.effort_levels.clone().unwrap_or_default();
                if !models.is_empty() || !effort_levels.is_empty() {
                    let default_model = health.default_model.clone();
                    cache.store(
                        &id,
                        CachedModels {
                            models,
                            default_model,
                            effort_levels,
                        },
                    );
                }
                catalog.set_health(&id, health);
            });
        }
    }

    /// Ids of the vendors sessions can be created for, in catalog order.
    pub fn installed(&self) -> Vec<VendorId> {
        self.services.catalog.installed()
    }

    /// One vendor's facts from the catalog; `None` for an unknown id.
    pub fn get(&self, id: &VendorId) -> Option<Arc<VendorSpec>> {
        self.services.catalog.get(id)
    }

    /// Every vendor and whether it can be used here.
    pub fn list(&self) -> Vec<VendorInfo> {
        let mut infos = self.services.catalog.infos();
        infos
            .iter_mut()
            .for_each(|info| self.config.confinement.describe(info));
        infos
    }
}
