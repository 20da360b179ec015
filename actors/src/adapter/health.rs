//! Whether a vendor CLI can work here, found without spending tokens (the binary, its
//! version against the range tandem supports, its login where the CLI reports it),
//! and the plain-language explanation of the errors a first turn runs into. Served by
//! `GET /api/v1/vendors` (`version`, `status`, `problem`) and `tandem doctor`.

use super::process::VendorProcess;

/// A CLI version, `major.minor.patch`.
pub type Version = (u64, u64, u64);

/// The versions of a vendor CLI tandem is built and tested against: from `min` (the
/// pinned version the tests run) up to, not including, `below` (the next major, whose
/// wire format may change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedRange {
    /// Oldest supported version.
    pub min: Version,
    /// First unsupported newer version.
    pub below: Version,
}

impl SupportedRange {
    /// True when `v` is in the range.
    pub fn contains(&self, v: Version) -> bool {
        v >= self.min && v < self.below
    }

    /// `>= 0.171.0, < 1.0.0`.
    pub fn describe(&self) -> String {
        let (a, b, c) = self.min;
        let (x, y, z) = self.below;
        format!(">= {a}.{b}.{c}, < {x}.{y}.{z}")
    }
}

/// What tandem knows about one vendor's CLI for checking it and explaining its
/// errors. Each CLI vendor's folder defines its own (`codex::PROFILE`,
/// `claude::PROFILE`); nothing here names a vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliProfile {
    /// The vendor id (used in the `[vendors.ID]` hint).
    pub id: &'static str,
    /// The name people know it by.
    pub name: &'static str,
    /// The versions tandem is built and tested against.
    pub range: SupportedRange,
    /// How to install it or point tandem at it.
    pub install_hint: &'static str,
    /// How to log it in.
    pub login_hint: &'static str,
    /// Where its API's base URL is set, for an unreachable API.
    pub base_url_hint: &'static str,
}

/// What a CLI reports about itself beyond its version, where it can (login state,
/// models); each vendor's check asks its own way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliFacts {
    /// The login state, where the CLI reports one.
    pub logged_in: Option<bool>,
    /// Models it reported.
    pub models: Option<Vec<String>>,
    /// The model it marks as its default.
    pub default_model: Option<String>,
}

/// The first `X.Y.Z` in a `--version` line (`codex-cli 0.171.0`, `2.1.332 (Claude Code)`).
pub fn parse_version(line: &str) -> Option<Version> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|word| {
            let mut parts = word.split('.').map(|p| p.parse::<u64>().ok());
            let v = (parts.next()??, parts.next()??, parts.next()??);
            Some(v)
        })
        .next()
}

/// Where a vendor stands, as `GET /api/v1/vendors` reports it (a wire type).
pub use tandem_protocol::rest::VendorStatus;

/// What a check found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Health {
    /// The CLI's `--version` line, when it ran.
    pub version: Option<String>,
    /// Where it stands.
    pub status: VendorStatus,
    /// What is wrong and how to fix it (absent when `Ok`).
    pub problem: Option<String>,
    /// Models the CLI reported, when it was asked (Codex).
    pub models: Option<Vec<String>>,
    /// The login state, where the CLI reports one.
    pub logged_in: Option<bool>,
    /// The model the CLI uses when none is named, where it says (Codex).
    pub default_model: Option<String>,
    /// Effort levels that replace the built-in ones, where the agent offers a choice
    /// (an ACP agent's `thought_level` option), lowest first.
    pub effort_levels: Option<Vec<String>>,
    /// An ACP agent's own name and version, from `initialize`.
    pub agent: Option<tandem_protocol::rest::AgentIdentity>,
    /// Capability words that replace the built-in ones (ACP: what `initialize` said).
    pub capabilities: Option<Vec<String>>,
    /// Limits worth telling people (replace the built-in ones when `capabilities` is
    /// given).
    pub notes: Vec<String>,
}

/// The problem of a binary whose version line is `line`, if it names a version out of
/// range. A line with no version in it (a wrapper script) is given the benefit of
/// the doubt: nothing says it is unsupported.
pub fn version_problem(profile: &CliProfile, line: &str) -> Option<String> {
    let range = profile.range;
    let name = profile.name;
    match parse_version(line) {
        Some(v) if range.contains(v) => None,
        Some((a, b, c)) => Some(format!(
            "{name} {a}.{b}.{c} is not a supported version ({}): install a supported one",
            range.describe()
        )),
        None => {
            tracing::debug!(
                vendor = profile.id,
                line,
                "no version in the CLI's --version line"
            );
            None
        }
    }
}

/// A built-in vendor whose binary was not found.
pub fn missing(profile: &CliProfile) -> Health {
    Health {
        status: VendorStatus::Missing,
        problem: Some(format!(
            "{} is not installed: {}",
            profile.name, profile.install_hint
        )),
        ..Default::default()
    }
}

/// Checks one vendor CLI without spending tokens: the binary, its version against
/// the profile's range, then what `ask` finds out (login, models). `process` is `None`
/// when its binary was not found.
pub async fn check<F, Fut>(profile: &CliProfile, process: Option<&VendorProcess>, ask: F) -> Health
where
    F: FnOnce(VendorProcess) -> Fut,
    Fut: std::future::Future<Output = CliFacts>,
{
    let name = profile.name;
    let Some(process) = process else {
        return missing(profile);
    };
    let Some(version) = process.version().await else {
        return Health {
            status: VendorStatus::Broken,
            problem: Some(format!(
                "{name} does not run: `{} --version` failed; reinstall it or point tandem at a working binary",
                process.bin.display()
            )),
            ..Default::default()
        };
    };
    if let Some(problem) = version_problem(profile, &version) {
        return Health {
            version: Some(version),
            status: VendorStatus::Unsupported,
            problem: Some(problem),
            ..Default::default()
        };
    }
    let facts = ask(process.clone()).await;
    let (status, problem) = if facts.logged_in == Some(false) {
        (
            VendorStatus::NotLoggedIn,
            Some(format!("{name} is not logged in: {}", profile.login_hint)),
        )
    } else {
        (VendorStatus::Ok, None)
    };
    Health {
        version: Some(version),
        status,
        problem,
        models: facts.models,
        logged_in: facts.logged_in,
        default_model: facts.default_model,
        ..Default::default()
    }
}

/// A failed turn's error as the CLI gave it, rewritten to name the vendor, the cause
/// and the fix when the cause is one a user can fix (no login, no key, an unreachable
/// API); anything else is returned as it was.
pub fn explain(profile: &CliProfile, raw: String) -> String {
    let name = profile.name;
    let lower = raw.to_ascii_lowercase();
    let cause = if lower.contains("not logged in") || lower.contains("/login") {
        Some(format!("{name} is not logged in: {}", profile.login_hint))
    } else if lower.contains("invalid api key")
        || lower.contains("invalid x-api-key")
        || lower.contains("authentication_error")
        || lower.contains("401 unauthorized")
    {
        Some(format!(
            "{name}'s credentials were refused: {}",
            profile.login_hint
        ))
    } else if lower.contains("missing environment variable") {
        Some(format!(
            "{name} has no API key: set the variable it names in the environment tandem starts in, or `[vendors.{}] env`",
            profile.id
        ))
    } else if lower.contains("could not be reached") || lower.contains("could not reach") {
        Some(format!(
            "{name} cannot reach its model API: check the network, the proxy (HTTPS_PROXY) and the API base URL ({}) in the environment tandem starts in",
            profile.base_url_hint
        ))
    } else {
        None
    };
    match cause {
        // The CLI's own words stay, after the explanation, for whoever digs deeper.
        Some(cause) if !raw.starts_with(&cause) => format!("{cause} ({name} said: {raw})"),
        _ => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile shaped like the real ones, so these tests name no vendor.
    const CLI: CliProfile = CliProfile {
        id: "cli",
        name: "The CLI",
        range: SupportedRange {
            min: (0, 171, 0),
            below: (1, 0, 0),
        },
        install_hint: "install it",
        login_hint: "run `cli login`",
        base_url_hint: "CLI_BASE_URL",
    };

    #[test]
    fn versions_are_read_and_ranged() {
        assert_eq!(parse_version("codex-cli 0.171.0"), Some((0, 171, 0)));
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some((2, 1, 332)));
        assert_eq!(parse_version("v10.2"), None);
        assert_eq!(version_problem(&CLI, "cli 0.171.0"), None);
        let old = version_problem(&CLI, "cli 0.90.1").unwrap_or_default();
        assert!(
            old.contains("The CLI 0.90.1") && old.contains(">= 0.171.0"),
            "{old}"
        );
        let new = version_problem(&CLI, "1.0.0 (CLI)").unwrap_or_default();
        assert!(new.contains("< 1.0.0"), "{new}");
        assert_eq!(version_problem(&CLI, "a wrapper"), None);
    }

    #[test]
    fn errors_name_vendor_cause_and_fix() {
        let e = explain(&CLI, "Not logged in · Please run /login".into());
        assert!(
            e.starts_with("The CLI is not logged in: run `cli login`"),
            "{e}"
        );
        assert!(e.contains("Please run /login"), "the CLI's words stay: {e}");
        let e = explain(&CLI, "Missing environment variable: `MY_KEY`.".into());
        assert!(
            e.starts_with("The CLI has no API key") && e.contains("`[vendors.cli] env`"),
            "{e}"
        );
        let e = explain(
            &CLI,
            "the model could not be reached for 2.0 s: stream disconnected".into(),
        );
        assert!(
            e.starts_with("The CLI cannot reach its model API") && e.contains("CLI_BASE_URL"),
            "{e}"
        );
        let plain = "the tool crashed".to_string();
        assert_eq!(explain(&CLI, plain.clone()), plain);
        // Already explained: not wrapped twice.
        let once = explain(&CLI, "Not logged in".into());
        assert_eq!(explain(&CLI, once.clone()), once);
    }
}
