//! Static facts about vendors: names, models, effort levels, and whether they can run.

use std::sync::{Arc, RwLock};

use tandem_protocol::rest::VendorInfo;

use super::health::{Health, VendorStatus};
use super::model_cache::CachedModels;
use super::vendors::Vendors;
use super::VendorId;

/// Effort levels in increasing order; vendors support a subset.
const EFFORT_ORDER: [&str; 6] = ["minimal", "low", "medium", "high", "xhigh", "max"];

/// One vendor as the server knows it.
#[derive(Debug, Clone)]
pub struct VendorSpec {
    /// Id used on the wire.
    pub id: VendorId,
    /// Name shown to people (also used in handoff titles).
    pub display_name: String,
    /// Known models; the first is the default. Adapters that can ask their CLI replace
    /// the built-in list with what it reports.
    pub models: Vec<String>,
    /// Supported effort levels, lowest first: built in for the CLIs tandem knows, an
    /// ACP agent's from its `thought_level` option once probed.
    pub effort_levels: Vec<String>,
    /// Feature words served on `GET /api/v1/vendors` (`interrupt`, `approvals`, ...).
    pub capabilities: Vec<String>,
    /// True when sessions of this vendor can be created in this server.
    pub installed: bool,
    /// The CLI's own version line, once known.
    pub version: Option<String>,
    /// Whether it can work here (see [`super::health`]).
    pub status: VendorStatus,
    /// What is wrong and how to fix it.
    pub problem: Option<String>,
    /// The model a session gets when it names none, where known.
    pub default_model: Option<String>,
    /// Models the config file names; kept when the CLI's list replaces the rest.
    pub configured_models: Vec<String>,
    /// An ACP agent's own name and version, from `initialize`, once probed.
    pub agent: Option<tandem_protocol::rest::AgentIdentity>,
    /// Limits worth telling people (an ACP agent that cannot reach the agent tools).
    pub notes: Vec<String>,
}

impl VendorSpec {
    /// An installed vendor before anything was asked of it: no models, no effort
    /// levels, status unknown. Each adapter fills in what it knows.
    pub fn new(id: VendorId, display_name: impl Into<String>, capabilities: &[&str]) -> Self {
        VendorSpec {
            id,
            display_name: display_name.into(),
            models: Vec::new(),
            effort_levels: Vec::new(),
            capabilities: strings(capabilities),
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

    /// A built-in vendor's entry as configured: under the configured id, with the
    /// configured display name if there is one.
    pub fn configured(self, id: &VendorId, display_name: Option<&str>) -> Self {
        VendorSpec {
            id: id.clone(),
            display_name: display_name.map_or(self.display_name, str::to_string),
            ..self
        }
    }

    /// True when `model` is one this vendor is known to offer.
    pub fn knows_model(&self, model: &str) -> bool {
        self.models.iter().any(|m| m == model)
    }

    /// Replaces the model list with what the CLI reported (an empty report changes
    /// nothing); the configured models stay, after the CLI's.
    fn replace_models(&mut self, mut models: Vec<String>, default_model: Option<String>) {
        if models.is_empty() {
            return;
        }
        for extra in &self.configured_models {
            if !models.contains(extra) {
                models.push(extra.clone());
            }
        }
        self.models = models;
        if default_model.is_some() {
            self.default_model = default_model;
        }
    }
}

/// Owned strings from a static list.
pub fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// The vendors this server offers. Shared by every session; the model lists and
/// versions are filled in once the CLIs have been asked, hence the lock. Each entry
/// is shared, so a lookup (one per session creation) is a reference count, not a copy
/// of its model lists.
#[derive(Debug)]
pub struct VendorCatalog {
    vendors: RwLock<Vec<Arc<VendorSpec>>>,
}

impl Default for VendorCatalog {
    /// Only the scripted vendor installed.
    fn default() -> Self {
        VendorCatalog::new(Vendors::default().specs())
    }
}

impl VendorCatalog {
    /// The catalog of these vendors, in this order (see [`Vendors::specs`]).
    pub fn new(vendors: Vec<VendorSpec>) -> Self {
        VendorCatalog {
            vendors: RwLock::new(vendors.into_iter().map(Arc::new).collect()),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<VendorSpec>>> {
        self.vendors.read().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, id: &VendorId, change: impl FnOnce(&mut VendorSpec)) {
        let mut vendors = self.vendors.write().unwrap_or_else(|p| p.into_inner());
        if let Some(spec) = vendors.iter_mut().find(|v| v.id == *id) {
            change(Arc::make_mut(spec));
        }
    }

    /// The vendor with this id.
    pub fn get(&self, id: &VendorId) -> Option<Arc<VendorSpec>> {
        self.read().iter().find(|v| v.id == *id).cloned()
    }

    /// Ids of the vendors sessions can be created for, in catalog order.
    pub fn installed(&self) -> Vec<VendorId> {
        self.read()
            .iter()
            .filter(|v| v.installed)
            .map(|v| v.id.clone())
            .collect()
    }

    /// Records what a [`super::health::check`] found (a missing vendor's problem too).
    pub fn set_health(&self, id: &VendorId, health: Health) {
        self.update(id, |spec| {
            if health.version.is_some() {
                spec.version = health.version;
            }
            spec.status = health.status;
            spec.problem = health.problem;
            if let Some(models) = health.models {
                spec.replace_models(models, health.default_model);
            } else if health.default_model.is_some() {
                spec.default_model = health.default_model;
            }
            if let Some(levels) = health.effort_levels {
                spec.effort_levels = levels;
            }
            if health.agent.is_some() {
                spec.agent = health.agent;
            }
            if let Some(capabilities) = health.capabilities {
                spec.capabilities = capabilities;
                spec.notes = health.notes;
            }
        });
    }

    /// Sets `id`'s models (and an ACP agent's effort levels) to what its CLI reported
    /// earlier (the model cache), until the CLI is asked again.
    pub fn set_models(&self, id: &VendorId, cached: CachedModels) {
        self.update(id, |spec| {
            spec.replace_models(cached.models, cached.default_model);
            if !cached.effort_levels.is_empty() {
                spec.effort_levels = cached.effort_levels;
            }
        });
    }

    /// Adds model names the config file gives for `id` (kept across CLI refreshes).
    pub fn add_configured_models(&self, id: &VendorId, models: &[String]) {
        self.update(id, |spec| {
            for model in models {
                if !spec.models.contains(model) {
                    spec.models.push(model.clone());
                }
                if !spec.configured_models.contains(model) {
                    spec.configured_models.push(model.clone());
                }
            }
        });
    }

    /// All vendors for `GET /vendors`.
    pub fn infos(&self) -> Vec<VendorInfo> {
        self.read()
            .iter()
            .map(|v| VendorInfo {
                id: v.id.to_string(),
                display_name: v.display_name.clone(),
                installed: v.installed,
                version: v.version.clone(),
                status: v.status,
                problem: v.problem.clone(),
                default_model: v.default_model.clone(),
                models: v.models.clone(),
                effort_levels: v.effort_levels.clone(),
                capabilities: v.capabilities.clone(),
                agent: v.agent.clone(),
                notes: v.notes.clone(),
                // Filled in by the runtime, which knows how processes are confined.
                confinement: None,
                confinement_problem: None,
            })
            .collect()
    }
}

/// Why an effort was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EffortError {
    /// A word neither tandem nor the vendor knows.
    #[error("unknown effort `{requested}`; levels are {known}")]
    Unknown {
        /// What was asked for.
        requested: String,
        /// The vendor's levels (tandem's when it has none), comma-separated.
        known: String,
    },
    /// The vendor has no effort levels at all.
    #[error("this vendor has no effort levels")]
    NoLevels,
}

impl From<EffortError> for crate::error::RuntimeError {
    fn from(e: EffortError) -> Self {
        crate::error::RuntimeError::InvalidArgument(e.to_string())
    }
}

/// Maps a requested effort onto the nearest level `supported` has; ties go to the lower
/// level. A level the vendor names itself is taken as it is, even outside tandem's
/// words (an ACP agent's `none`). Empty means "vendor default" and stays empty. An
/// unknown word is an error.
pub fn clamp_effort(requested: &str, supported: &[String]) -> Result<String, EffortError> {
    if requested.is_empty() {
        return Ok(String::new());
    }
    if supported.iter().any(|level| level == requested) {
        return Ok(requested.to_string());
    }
    let rank = |level: &str| EFFORT_ORDER.iter().position(|l| *l == level);
    let Some(want) = rank(requested) else {
        let known = match supported.is_empty() {
            true => EFFORT_ORDER.join(", "),
            false => supported.join(", "),
        };
        return Err(EffortError::Unknown {
            requested: requested.to_string(),
            known,
        });
    };
    supported
        .iter()
        .filter_map(|level| rank(level).map(|r| (r, level.as_str())))
        // Lower distance wins; on equal distance the lower rank wins.
        .min_by_key(|(r, _)| (r.abs_diff(want), *r))
        .map(|(_, level)| level.to_string())
        .ok_or(EffortError::NoLevels)
}

#[cfg(test)]
mod tests {
    use super::{clamp_effort, strings};

    #[test]
    fn clamps_to_nearest_with_ties_low() {
        let claude = strings(&["low", "medium", "high", "xhigh", "max"]);
        let codex = strings(&["minimal", "low", "medium", "high", "xhigh"]);
        let gappy = strings(&["low", "high"]);
        assert_eq!(clamp_effort("minimal", &claude).as_deref(), Ok("low"));
        assert_eq!(clamp_effort("max", &codex).as_deref(), Ok("xhigh"));
        assert_eq!(clamp_effort("high", &codex).as_deref(), Ok("high"));
        assert_eq!(clamp_effort("medium", &gappy).as_deref(), Ok("low"));
        assert_eq!(clamp_effort("", &codex).as_deref(), Ok(""));
        assert!(clamp_effort("turbo", &codex).is_err());
    }

    #[test]
    fn an_agents_own_levels_are_taken_as_they_are() {
        // codex-acp's `reasoning_effort` option, which may hold words tandem lacks.
        let agent = strings(&["none", "low", "medium", "high"]);
        assert_eq!(clamp_effort("none", &agent).as_deref(), Ok("none"));
        assert_eq!(clamp_effort("max", &agent).as_deref(), Ok("high"));
        assert_eq!(clamp_effort("minimal", &agent).as_deref(), Ok("low"));
        let e = clamp_effort("turbo", &agent).unwrap_err().to_string();
        assert!(e.contains("none, low, medium, high"), "{e}");
        assert!(clamp_effort("none", &strings(&["low"])).is_err());
    }
}
