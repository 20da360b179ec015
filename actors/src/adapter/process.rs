//! How vendor CLIs are started: the binary, its extra arguments and environment, and
//! the minimal environment every vendor process gets.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use super::VendorId;

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

/// Which adapter speaks to a configured vendor's CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VendorProtocol {
    /// `codex app-server`: JSON-RPC on stdio, one process per owner.
    Codex,
    /// `claude -p` with stream-json and the control protocol.
    Claude,
    /// The Agent Client Protocol (JSON-RPC 2.0 on stdio), one process per session.
    Acp {
        /// Bound on `initialize`, and again on opening the agent's session: past it the
        /// turn fails with a clear error and the process is killed.
        startup_timeout: Duration,
    },
}

/// One vendor CLI the server can run (`[vendors.<id>]` in the config file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredVendor {
    /// The id sessions name it by.
    pub id: VendorId,
    /// How its CLI speaks.
    pub protocol: VendorProtocol,
    /// Name shown to people; `None` for the adapter's own (or the id).
    pub display_name: Option<String>,
    /// How to start it.
    pub process: VendorProcess,
}

/// The vendor CLIs this server can run, in the order they are listed; a vendor
/// missing here is not installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VendorsConfig {
    /// Every vendor whose CLI was found.
    pub vendors: Vec<ConfiguredVendor>,
}

impl VendorsConfig {
    /// The configured vendor `id`, if it is installed.
    pub fn get(&self, id: &VendorId) -> Option<&ConfiguredVendor> {
        self.vendors.iter().find(|v| v.id == *id)
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
