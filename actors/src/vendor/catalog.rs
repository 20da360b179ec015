//! Static facts about vendors: names, models, effort levels, and whether they can run.

use tandem_protocol::rest::VendorInfo;

/// Effort levels in increasing order; vendors support a subset.
const EFFORT_ORDER: [&str; 6] = ["minimal", "low", "medium", "high", "xhigh", "max"];

/// One vendor as the server knows it.
#[derive(Debug, Clone)]
pub struct VendorSpec {
    /// Id used on the wire.
    pub id: &'static str,
    /// Name shown to people (also used in handoff titles).
    pub display_name: &'static str,
    /// Known models; the first is the default.
    pub models: &'static [&'static str],
    /// Supported effort levels, lowest first.
    pub effort_levels: &'static [&'static str],
    /// What the adapter supports.
    pub capabilities: &'static [&'static str],
    /// True when sessions of this vendor can be created in this server.
    pub installed: bool,
}

/// The vendors this server offers.
#[derive(Debug, Clone)]
pub struct VendorCatalog {
    vendors: Vec<VendorSpec>,
}

impl Default for VendorCatalog {
    fn default() -> Self {
        VendorCatalog {
            vendors: vec![
                VendorSpec {
                    id: "scripted",
                    display_name: "Scripted",
                    models: &["scripted-1"],
                    effort_levels: &["low", "medium", "high"],
                    capabilities: &["interrupt", "backgroundTasks", "tools"],
                    installed: true,
                },
                // The Codex and Claude Code adapters are not part of this build yet, so
                // they are listed as not installed whatever is on PATH.
                VendorSpec {
                    id: "codex",
                    display_name: "Codex",
                    models: &["gpt-5-codex", "gpt-5"],
                    effort_levels: &["minimal", "low", "medium", "high", "xhigh"],
                    capabilities: &[],
                    installed: false,
                },
                VendorSpec {
                    id: "claude",
                    display_name: "Claude Code",
                    models: &["sonnet", "opus", "haiku"],
                    effort_levels: &["low", "medium", "high", "xhigh", "max"],
                    capabilities: &[],
                    installed: false,
                },
            ],
        }
    }
}

impl VendorCatalog {
    /// The vendor with this id.
    pub fn get(&self, id: &str) -> Option<&VendorSpec> {
        self.vendors.iter().find(|v| v.id == id)
    }

    /// Ids of the vendors sessions can be created for, in catalog order.
    pub fn installed(&self) -> Vec<&'static str> {
        self.vendors
            .iter()
            .filter(|v| v.installed)
            .map(|v| v.id)
            .collect()
    }

    /// All vendors for `GET /vendors`.
    pub fn infos(&self) -> Vec<VendorInfo> {
        self.vendors
            .iter()
            .map(|v| VendorInfo {
                id: v.id.into(),
                display_name: v.display_name.into(),
                installed: v.installed,
                models: v.models.iter().map(|m| (*m).into()).collect(),
                effort_levels: v.effort_levels.iter().map(|m| (*m).into()).collect(),
                capabilities: v.capabilities.iter().map(|m| (*m).into()).collect(),
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
