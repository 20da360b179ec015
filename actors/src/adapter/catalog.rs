//! Static facts about vendors: names, models, effort levels, and whether they can run.

use std::sync::RwLock;

use tandem_protocol::rest::VendorInfo;

use super::process::VendorsConfig;

/// Effort levels in increasing order; vendors support a subset.
const EFFORT_ORDER: [&str; 6] = ["minimal", "low", "medium", "high", "xhigh", "max"];

/// One vendor as the server knows it.
#[derive(Debug, Clone)]
pub struct VendorSpec {
    /// Id used on the wire (built-in names, or the `[vendors.ID]` key of an ACP agent).
    pub id: String,
    /// Name shown to people (also used in handoff titles).
    pub display_name: String,
    /// Known models; the first is the default. Adapters that can ask their CLI replace
    /// the built-in list with what it reports.
    pub models: Vec<String>,
    /// Supported effort levels, lowest first.
    pub effort_levels: &'static [&'static str],
    /// Feature words served on `GET /api/v1/vendors` (`interrupt`, `approvals`, ...).
    pub capabilities: Vec<String>,
    /// True when sessions of this vendor can be created in this server.
    pub installed: bool,
    /// The CLI's own version line, once known.
    pub version: Option<String>,
    /// An ACP agent's own name and version, from `initialize`, once probed.
    pub agent: Option<tandem_protocol::rest::AgentIdentity>,
    /// Limits worth telling people (an ACP agent that cannot reach the agent tools).
    pub notes: Vec<String>,
}

impl VendorSpec {
    /// True when `model` is one this vendor is known to offer.
    pub fn knows_model(&self, model: &str) -> bool {
        self.models.iter().any(|m| m == model)
    }
}

/// The vendors this server offers. Shared by every session; the model lists and
/// versions are filled in once the CLIs have been asked, hence the lock.
#[derive(Debug)]
pub struct VendorCatalog {
    vendors: RwLock<Vec<VendorSpec>>,
}

impl Default for VendorCatalog {
    /// Only the scripted vendor installed.
    fn default() -> Self {
        VendorCatalog::new(&VendorsConfig::default())
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

impl VendorCatalog {
    /// The catalog for a server whose vendor CLIs are `vendors` (absent = not
    /// installed).
    pub fn new(vendors: &VendorsConfig) -> Self {
        VendorCatalog {
            vendors: RwLock::new(
                [
                    VendorSpec {
                        id: "scripted".into(),
                        display_name: "Scripted".into(),
                        models: strings(&["scripted-1"]),
                        effort_levels: &["low", "medium", "high"],
                        capabilities: strings(&["interrupt", "backgroundTasks", "tools"]),
                        installed: true,
                        version: Some(env!("CARGO_PKG_VERSION").to_string()),
                        agent: None,
                        notes: Vec::new(),
                    },
                    VendorSpec {
                        id: "codex".into(),
                        display_name: "Codex".into(),
                        models: strings(&["gpt-5-codex", "gpt-5"]),
                        effort_levels: &["minimal", "low", "medium", "high", "xhigh"],
                        capabilities: strings(&[
                            "interrupt",
                            "backgroundTasks",
                            "tools",
                            "approvals",
                        ]),
                        installed: vendors.codex.is_some(),
                        version: None,
                        agent: None,
                        notes: Vec::new(),
                    },
                    VendorSpec {
                        id: "claude".into(),
                        display_name: "Claude Code".into(),
                        models: strings(&["sonnet", "opus", "haiku"]),
                        effort_levels: &["low", "medium", "high", "xhigh", "max"],
                        capabilities: strings(&[
                            "interrupt",
                            "backgroundTasks",
                            "tools",
                            "approvals",
                        ]),
                        installed: vendors.claude.is_some(),
                        version: None,
                        agent: None,
                        notes: Vec::new(),
                    },
                ]
                .into_iter()
                // ACP agents: what they can do is known once `initialize` was asked.
                .chain(vendors.acp.iter().map(|acp| VendorSpec {
                    id: acp.id.clone(),
                    display_name: acp.display_name.clone(),
                    models: Vec::new(),
                    effort_levels: &[],
                    capabilities: strings(&["acp", "interrupt", "approvals"]),
                    installed: true,
                    version: None,
                    agent: None,
                    notes: Vec::new(),
                }))
                .collect(),
            ),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<VendorSpec>> {
        self.vendors.read().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, id: &str, change: impl FnOnce(&mut VendorSpec)) {
        let mut vendors = self.vendors.write().unwrap_or_else(|p| p.into_inner());
        if let Some(spec) = vendors.iter_mut().find(|v| v.id == id) {
            change(spec);
        }
    }

    /// The vendor with this id.
    pub fn get(&self, id: &str) -> Option<VendorSpec> {
        self.read().iter().find(|v| v.id == id).cloned()
    }

    /// Ids of the vendors sessions can be created for, in catalog order.
    pub fn installed(&self) -> Vec<String> {
        self.read()
            .iter()
            .filter(|v| v.installed)
            .map(|v| v.id.clone())
            .collect()
    }

    /// Records what an ACP agent said about itself in `initialize`.
    pub fn set_agent_facts(&self, id: &str, facts: super::acp::probe::AgentFacts) {
        self.update(id, |spec| {
            spec.version = facts.info.as_ref().and_then(|i| i.version.clone());
            spec.agent = facts.info.map(|i| tandem_protocol::rest::AgentIdentity {
                name: i.name,
                title: i.title,
                version: i.version,
            });
            spec.capabilities = facts.capabilities;
            spec.notes = facts.notes;
        });
    }

    /// Records the CLI's version line.
    pub fn set_version(&self, id: &str, version: String) {
        self.update(id, |spec| spec.version = Some(version));
    }

    /// Replaces the model list with what the CLI reported (ignored when empty).
    pub fn set_models(&self, id: &str, models: Vec<String>) {
        if !models.is_empty() {
            self.update(id, |spec| spec.models = models);
        }
    }

    /// All vendors for `GET /vendors`.
    pub fn infos(&self) -> Vec<VendorInfo> {
        self.read()
            .iter()
            .map(|v| VendorInfo {
                id: v.id.clone(),
                display_name: v.display_name.clone(),
                installed: v.installed,
                version: v.version.clone(),
                models: v.models.clone(),
                effort_levels: v.effort_levels.iter().map(|m| (*m).into()).collect(),
                capabilities: v.capabilities.clone(),
                agent: v.agent.clone(),
                notes: v.notes.clone(),
            })
            .collect()
    }
}

/// Maps a requested effort onto the nearest level `supported` has; ties go to the lower
/// level. Empty means "vendor default" and stays empty. An unknown word is an error.
pub fn clamp_effort(requested: &str, supported: &[&str]) -> Result<String, String> {
    if requested.is_empty() {
        return Ok(String::new());
    }
    let rank = |level: &str| EFFORT_ORDER.iter().position(|l| *l == level);
    let Some(want) = rank(requested) else {
        return Err(format!(
            "unknown effort `{requested}`; levels are {}",
            EFFORT_ORDER.join(", ")
        ));
    };
    supported
        .iter()
        .filter_map(|level| rank(level).map(|r| (r, *level)))
        // Lower distance wins; on equal distance the lower rank wins.
        .min_by_key(|(r, _)| (r.abs_diff(want), *r))
        .map(|(_, level)| level.to_string())
        .ok_or_else(|| "this vendor has no effort levels".to_string())
}

#[cfg(test)]
mod tests {
    use super::clamp_effort;

    const CLAUDE: &[&str] = &["low", "medium", "high", "xhigh", "max"];
    const CODEX: &[&str] = &["minimal", "low", "medium", "high", "xhigh"];
    const GAPPY: &[&str] = &["low", "high"];

    #[test]
    fn clamps_to_nearest_with_ties_low() {
        assert_eq!(clamp_effort("minimal", CLAUDE).as_deref(), Ok("low"));
        assert_eq!(clamp_effort("max", CODEX).as_deref(), Ok("xhigh"));
        assert_eq!(clamp_effort("high", CODEX).as_deref(), Ok("high"));
        assert_eq!(clamp_effort("medium", GAPPY).as_deref(), Ok("low"));
        assert_eq!(clamp_effort("", CODEX).as_deref(), Ok(""));
        assert!(clamp_effort("turbo", CODEX).is_err());
    }
}
