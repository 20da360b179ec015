//! How vendor CLIs are started: the binary, its extra arguments and environment, and
//! the environment every vendor process inherits from the server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::confine::Launcher;
use super::VendorId;

/// Prefix of tandem's own settings and secrets (`TANDEM_TOKEN`, `TANDEM_URL`,
/// `TANDEM_CODEX_BIN`, ...). None of them reaches a vendor process: agents run
/// arbitrary commands, and a tandem token would let one act as the user.
const OWN_PREFIX: &str = "TANDEM_";

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
    /// Start it confined by Landlock through this launcher (`tandem serve` sets it
    /// where the kernel enforces Landlock, unless `--confine-agents off`); `None`:
    /// unconfined.
    pub confine: Option<Launcher>,
}

impl VendorProcess {
    /// The environment the process gets: the server's own (see [`inherited`]), then
    /// `env` on top.
    pub fn environment(&self) -> BTreeMap<String, String> {
        self.environment_from(std::env::vars_os())
    }

    /// [`VendorProcess::environment`] for a given server environment.
    fn environment_from(
        &self,
        server: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> BTreeMap<String, String> {
        let mut vars = inherited(server);
        vars.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars
    }

    /// `bin args…` with [`VendorProcess::environment`] only, stdin/stdout/stderr piped,
    /// killed when the handle is dropped (so a stopped adapter leaves no process behind).
    /// For work outside a session (version and login checks, probes): confined, it runs
    /// in its private temporary directory; see [`VendorProcess::command_in`].
    pub fn command(&self) -> tokio::process::Command {
        self.command_at(None)
    }

    /// [`VendorProcess::command`] for a session working in `workdir`: started there,
    /// and, confined, allowed to use it.
    pub fn command_in(&self, workdir: &Path) -> tokio::process::Command {
        self.command_at(Some(workdir))
    }

    fn command_at(&self, workdir: Option<&Path>) -> tokio::process::Command {
        let mut cmd = self.bare_command(workdir);
        cmd.args(&self.args);
        cmd
    }

    /// `bin` (confined: `tandem confine … -- bin`, to which later arguments are the
    /// program's) without the configured arguments, with
    /// [`VendorProcess::environment`] only, stdin/stdout/stderr piped, killed when the
    /// handle is dropped.
    pub fn bare_command(&self, workdir: Option<&Path>) -> tokio::process::Command {
        let env = self.environment();
        let mut cmd = match &self.confine {
            Some(launcher) => launcher.command(&self.bin, &env, workdir),
            None => tokio::process::Command::new(&self.bin),
        };
        if let Some(dir) = workdir {
            cmd.current_dir(dir);
        }
        cmd.env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// The first line `bin --version` prints; `None` when it cannot run in time.
    pub async fn version(&self) -> Option<String> {
        let mut cmd = self.bare_command(None);
        cmd.arg("--version")
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

/// What a vendor process inherits of the server's environment `server`: everything
/// (API keys, base URLs, proxies, CA bundles, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`, cloud
/// credentials: whatever the user's shell gave the CLI) except tandem's own variables
/// (`TANDEM_*`, which hold its tokens) and variables that are not valid UTF-8.
pub fn inherited(
    server: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> BTreeMap<String, String> {
    server
        .into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !k.starts_with(OWN_PREFIX))
        .collect()
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
    use std::ffi::OsString;

    fn server_env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn environment_is_the_servers_without_tandem_secrets_plus_configured() {
        let process = VendorProcess {
            bin: PathBuf::from("/bin/true"),
            args: vec![],
            env: BTreeMap::from([
                ("CODEX_HOME".to_string(), "/tmp/x".to_string()),
                ("HOME".to_string(), "/tmp/home".to_string()),
            ]),
            idle_close: None,
            confine: None,
        };
        let env = process.environment_from(server_env(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("ANTHROPIC_API_KEY", "sk-user"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("NODE_EXTRA_CA_CERTS", "/etc/ca.pem"),
            ("TANDEM_TOKEN", "secret"),
            ("TANDEM_URL", "http://127.0.0.1:7420"),
            ("TANDEM_CLAUDE_BIN", "/opt/claude"),
        ]));
        // Configured values win over inherited ones of the same name.
        assert_eq!(env.get("HOME").map(String::as_str), Some("/tmp/home"));
        assert_eq!(env.get("CODEX_HOME").map(String::as_str), Some("/tmp/x"));
        for key in [
            "PATH",
            "ANTHROPIC_API_KEY",
            "HTTPS_PROXY",
            "NODE_EXTRA_CA_CERTS",
        ] {
            assert!(env.contains_key(key), "{key} was not inherited: {env:?}");
        }
        let leaked: Vec<&String> = env.keys().filter(|k| k.starts_with("TANDEM_")).collect();
        assert!(
            leaked.is_empty(),
            "tandem's own variables leaked: {leaked:?}"
        );
    }

    #[test]
    fn configured_env_may_set_a_tandem_variable_on_purpose() {
        let process = VendorProcess {
            bin: PathBuf::from("/bin/true"),
            args: vec![],
            env: BTreeMap::from([("TANDEM_MODE".to_string(), "agent".to_string())]),
            idle_close: None,
            confine: None,
        };
        let env = process.environment_from(server_env(&[("TANDEM_TOKEN", "secret")]));
        assert_eq!(
            env.into_iter().collect::<Vec<_>>(),
            vec![("TANDEM_MODE".to_string(), "agent".to_string())]
        );
    }

    #[test]
    fn non_utf8_variables_are_left_out() {
        use std::os::unix::ffi::OsStringExt;
        let env = inherited(vec![
            (OsString::from("GOOD"), OsString::from("1")),
            (OsString::from("BAD"), OsString::from_vec(vec![0xff, 0xfe])),
        ]);
        assert_eq!(env.keys().collect::<Vec<_>>(), vec!["GOOD"]);
    }
}
