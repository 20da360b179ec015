//! How vendor CLIs are started: the binary, its extra arguments and environment, and
//! the minimal environment every vendor process gets.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// Variables of the server's own environment a vendor process inherits. Everything
/// else (tokens, the server's settings) stays out: agents run arbitrary commands.
const INHERITED_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TERM"];

/// How long `--version` may take before the CLI counts as broken.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// One vendor CLI as configured (`[vendors.NAME]` in the config file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VendorProcess {
    /// The executable, resolved to a path that exists.
    pub bin: PathBuf,
    /// Extra arguments put before the adapter's own.
    pub args: Vec<String>,
    /// Extra environment; a key here overrides the inherited one of the same name.
    pub env: BTreeMap<String, String>,
    /// Close a process kept between turns after it has been idle this long
    /// (`None`: the adapter's default).
    pub idle_close: Option<Duration>,
}

impl VendorProcess {
    /// The environment the process gets: [`INHERITED_ENV`] from the server's own, then
    /// `env` on top.
    pub fn environment(&self) -> BTreeMap<String, String> {
        let mut vars: BTreeMap<String, String> = INHERITED_ENV
            .iter()
            .filter_map(|key| std::env::var(key).ok().map(|v| ((*key).to_string(), v)))
            .collect();
        vars.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars
    }

    /// `bin args…` with the minimal environment, stdin/stdout/stderr piped, killed when
    /// the handle is dropped (so a stopped adapter leaves no process behind).
    pub fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.args(&self.args)
            .env_clear()
            .envs(self.environment())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// The first line `bin --version` prints; `None` when it cannot run in time.
    pub async fn version(&self) -> Option<String> {
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.arg("--version")
            .env_clear()
            .envs(self.environment())
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(VERSION_TIMEOUT, cmd.output())
            .await
            .ok()?
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
    }
}

/// The vendor CLIs this server can run; `None` means not installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VendorsConfig {
    /// `codex` (app-server).
    pub codex: Option<VendorProcess>,
    /// `claude` (Claude Code).
    pub claude: Option<VendorProcess>,
    /// ACP agents (`protocol = "acp"`), in the config file's order.
    pub acp: Vec<super::acp::AcpVendor>,
}

impl VendorsConfig {
    /// The configured process for `vendor`, if it is installed.
    pub fn get(&self, vendor: &str) -> Option<&VendorProcess> {
        match vendor {
            "codex" => self.codex.as_ref(),
            "claude" => self.claude.as_ref(),
            other => self.acp(other).map(|a| &a.process),
        }
    }

    /// The ACP agent configured as `vendor`.
    pub fn acp(&self, vendor: &str) -> Option<&super::acp::AcpVendor> {
        self.acp.iter().find(|a| a.id == vendor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_is_minimal_plus_configured() {
        let process = VendorProcess {
            bin: PathBuf::from("/bin/true"),
            args: vec![],
            env: BTreeMap::from([
                ("CODEX_HOME".to_string(), "/tmp/x".to_string()),
                ("HOME".to_string(), "/tmp/home".to_string()),
            ]),
            idle_close: None,
        };
        let env = process.environment();
        assert_eq!(env.get("CODEX_HOME").map(String::as_str), Some("/tmp/x"));
        assert_eq!(env.get("HOME").map(String::as_str), Some("/tmp/home"));
        let unexpected: Vec<&String> = env
            .keys()
            .filter(|k| !INHERITED_ENV.contains(&k.as_str()) && k.as_str() != "CODEX_HOME")
            .collect();
        assert!(unexpected.is_empty(), "leaked variables: {unexpected:?}");
    }
}
