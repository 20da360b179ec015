//! Whether a vendor CLI can work here, found without spending tokens (the binary, its
//! version against the range tandem supports, its login where the CLI reports it),
//! and the plain-language explanation of the errors a first turn runs into. Served by
//! `GET /api/v1/vendors` (`version`, `status`, `problem`) and `tandem doctor`.

use std::process::Stdio;
use std::time::Duration;

use super::process::VendorProcess;

/// How long `claude auth status` may take.
const AUTH_STATUS_TIMEOUT: Duration = Duration::from_secs(15);

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

/// The supported range of a vendor's CLI; `None` for vendors without a CLI.
pub fn supported_range(vendor: &str) -> Option<SupportedRange> {
    match vendor {
        "codex" => Some(SupportedRange {
            min: (0, 171, 0),
            below: (1, 0, 0),
        }),
        "claude" => Some(SupportedRange {
            min: (2, 1, 0),
            below: (3, 0, 0),
        }),
        _ => None,
    }
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

/// Where a vendor stands, as `GET /api/v1/vendors` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VendorStatus {
    /// Usable as far as can be told without calling the model.
    Ok,
    /// Not checked yet (the server checks in the background after it starts).
    Unknown,
    /// No binary found.
    Missing,
    /// The binary does not run (`--version` failed).
    Broken,
    /// The binary's version is outside [`SupportedRange`].
    Unsupported,
    /// The CLI says it has no credentials.
    NotLoggedIn,
}

impl VendorStatus {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            VendorStatus::Ok => "ok",
            VendorStatus::Unknown => "unknown",
            VendorStatus::Missing => "missing",
            VendorStatus::Broken => "broken",
            VendorStatus::Unsupported => "unsupportedVersion",
            VendorStatus::NotLoggedIn => "notLoggedIn",
        }
    }

    /// True when sessions of the vendor cannot work.
    pub fn unusable(self) -> bool {
        !matches!(self, VendorStatus::Ok | VendorStatus::Unknown)
    }
}

/// What a check found.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// The name people know a vendor by.
pub fn display_name(vendor: &str) -> &str {
    match vendor {
        "codex" => "Codex",
        "claude" => "Claude Code",
        other => other,
    }
}

/// How to install or point tandem at a vendor's CLI.
fn install_hint(vendor: &str) -> String {
    match vendor {
        "codex" => "install it (`npm install -g @openai/codex`) or set TANDEM_CODEX_BIN or `[vendors.codex] bin`".into(),
        "claude" => "install it (`npm install -g @anthropic-ai/claude-code`) or set TANDEM_CLAUDE_BIN or `[vendors.claude] bin`".into(),
        other => format!("configure `[vendors.{other}]`"),
    }
}

/// How to log a vendor's CLI in.
fn login_hint(vendor: &str) -> &'static str {
    match vendor {
        "codex" => "run `codex login`, or configure a model provider whose key (its `env_key`) is set in the environment tandem starts in",
        "claude" => "run `claude` and /login, or set ANTHROPIC_API_KEY in the environment tandem starts in",
        _ => "log the CLI in",
    }
}

/// The problem of a binary whose version line is `line`, if it names a version out of
/// range. A line with no version in it (a wrapper script) is given the benefit of
/// the doubt: nothing says it is unsupported.
pub fn version_problem(vendor: &str, line: &str) -> Option<String> {
    let range = supported_range(vendor)?;
    let name = display_name(vendor);
    match parse_version(line) {
        Some(v) if range.contains(v) => None,
        Some((a, b, c)) => Some(format!(
            "{name} {a}.{b}.{c} is not a supported version ({}): install a supported one",
            range.describe()
        )),
        None => {
            tracing::debug!(vendor, line, "no version in the CLI's --version line");
            None
        }
    }
}

/// A built-in vendor whose binary was not found.
pub fn missing(vendor: &str) -> Health {
    Health {
        version: None,
        status: VendorStatus::Missing,
        problem: Some(format!(
            "{} is not installed: {}",
            display_name(vendor),
            install_hint(vendor)
        )),
        models: None,
        logged_in: None,
        default_model: None,
    }
}

/// Checks one vendor without spending tokens. `process` is `None` when its binary was
/// not found.
pub async fn check(vendor: &str, process: Option<&VendorProcess>) -> Health {
    let name = display_name(vendor);
    let Some(process) = process else {
        return missing(vendor);
    };
    let Some(version) = process.version().await else {
        return Health {
            version: None,
            status: VendorStatus::Broken,
            problem: Some(format!(
                "{name} does not run: `{} --version` failed; reinstall it or point tandem at a working binary",
                process.bin.display()
            )),
            models: None,
            logged_in: None,
            default_model: None,
        };
    };
    if let Some(problem) = version_problem(vendor, &version) {
        return Health {
            version: Some(version),
            status: VendorStatus::Unsupported,
            problem: Some(problem),
            models: None,
            logged_in: None,
            default_model: None,
        };
    }
    let (logged_in, models, default_model) = match vendor {
        "claude" => (claude_logged_in(process).await, None, None),
        "codex" => match super::codex::probe(process).await {
            Some(facts) => (facts.logged_in, facts.models, facts.default_model),
            None => (None, None, None),
        },
        _ => (None, None, None),
    };
    if logged_in == Some(false) {
        return Health {
            version: Some(version),
            status: VendorStatus::NotLoggedIn,
            problem: Some(format!("{name} is not logged in: {}", login_hint(vendor))),
            models,
            logged_in,
            default_model,
        };
    }
    Health {
        version: Some(version),
        status: VendorStatus::Ok,
        problem: None,
        models,
        logged_in,
        default_model,
    }
}

/// `claude auth status` (JSON with `loggedIn`); `None` when it cannot tell.
async fn claude_logged_in(process: &VendorProcess) -> Option<bool> {
    let mut cmd = tokio::process::Command::new(&process.bin);
    cmd.args(["auth", "status"])
        .env_clear()
        .envs(process.environment())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(AUTH_STATUS_TIMEOUT, cmd.output())
        .await
        .ok()?
        .ok()?;
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    status.get("loggedIn")?.as_bool()
}

/// A failed turn's error as the CLI gave it, rewritten to name the vendor, the cause
/// and the fix when the cause is one a user can fix (no login, no key, an unreachable
/// API); anything else is returned as it was.
pub fn explain(vendor: &str, raw: String) -> String {
    if supported_range(vendor).is_none() {
        // No CLI behind it (the scripted vendor): its errors are its script's words.
        return raw;
    }
    let name = display_name(vendor);
    let lower = raw.to_ascii_lowercase();
    let cause = if lower.contains("not logged in") || lower.contains("/login") {
        Some(format!("{name} is not logged in: {}", login_hint(vendor)))
    } else if lower.contains("invalid api key")
        || lower.contains("invalid x-api-key")
        || lower.contains("authentication_error")
        || lower.contains("401 unauthorized")
    {
        Some(format!(
            "{name}'s credentials were refused: {}",
            login_hint(vendor)
        ))
    } else if lower.contains("missing environment variable") {
        Some(format!(
            "{name} has no API key: set the variable it names in the environment tandem starts in, or `[vendors.{vendor}] env`"
        ))
    } else if lower.contains("could not be reached") || lower.contains("could not reach") {
        Some(format!(
            "{name} cannot reach its model API: check the network, the proxy (HTTPS_PROXY) and the API base URL ({}) in the environment tandem starts in",
            match vendor {
                "claude" => "ANTHROPIC_BASE_URL",
                "codex" => "the model provider's base_url",
                _ => "its base URL",
            }
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

    #[test]
    fn versions_are_read_and_ranged() {
        assert_eq!(parse_version("codex-cli 0.171.0"), Some((0, 171, 0)));
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some((2, 1, 332)));
        assert_eq!(parse_version("v10.2"), None);
        assert_eq!(version_problem("codex", "codex-cli 0.171.0"), None);
        assert_eq!(version_problem("claude", "2.1.332 (Claude Code)"), None);
        let old = version_problem("codex", "codex-cli 0.90.1").unwrap_or_default();
        assert!(
            old.contains("Codex 0.90.1") && old.contains(">= 0.171.0"),
            "{old}"
        );
        let new = version_problem("claude", "3.0.0 (Claude Code)").unwrap_or_default();
        assert!(new.contains("< 3.0.0"), "{new}");
        assert_eq!(version_problem("claude", "a wrapper"), None);
    }

    #[test]
    fn errors_name_vendor_cause_and_fix() {
        let e = explain("claude", "Not logged in · Please run /login".into());
        assert!(
            e.starts_with(
                "Claude Code is not logged in: run `claude` and /login, or set ANTHROPIC_API_KEY"
            ),
            "{e}"
        );
        assert!(e.contains("Please run /login"), "the CLI's words stay: {e}");
        let e = explain("codex", "Missing environment variable: `MY_KEY`.".into());
        assert!(e.starts_with("Codex has no API key"), "{e}");
        let e = explain(
            "codex",
            "the model could not be reached for 2.0 s: stream disconnected".into(),
        );
        assert!(e.starts_with("Codex cannot reach its model API"), "{e}");
        let scripted = "please run /login".to_string();
        assert_eq!(explain("scripted", scripted.clone()), scripted);
        let plain = "the tool crashed".to_string();
        assert_eq!(explain("claude", plain.clone()), plain);
        // Already explained: not wrapped twice.
        let once = explain("claude", "Not logged in".into());
        assert_eq!(explain("claude", once.clone()), once);
    }
}
