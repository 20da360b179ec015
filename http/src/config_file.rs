//! `tandem serve --config FILE`: the TOML file that says how to start each vendor's CLI
//! and where sessions may work. Every key has a default, so no file is needed.
//!
//! ```toml
//! [vendors.codex]
//! bin = "/path/to/codex"   # default: `codex` on PATH; TANDEM_CODEX_BIN overrides
//! args = ["-c", "model_provider=mock"]
//! env = { CODEX_HOME = "/tmp/x" }
//! idle_secs = 600          # close an idle process after this long (adapters that keep one)
//!
//! [vendors.claude]
//! bin = "/path/to/claude"  # default: `claude` on PATH; TANDEM_CLAUDE_BIN overrides
//! models = ["claude-sonnet-4-5"]  # offered besides the CLI's aliases
//!
//! [vendors.gemini]         # any other id: an agent speaking ACP
//! protocol = "acp"         # required for ids other than codex and claude
//! bin = "gemini"           # required: a path, or a name looked up on PATH
//! args = ["--experimental-acp"]
//! env = { GEMINI_API_KEY = "..." }
//! display_name = "Gemini CLI"  # default: the id
//! startup_secs = 30        # bound on `initialize` and on opening the agent's session
//!
//! [workspace]
//! roots = ["/home/me/src"]  # the admin's, and every user's without a grant
//!
//! [users.carol]
//! workspace_roots = ["/home/carol/src"]  # carol opens sessions under these only
//!
//! [mcp_servers.files]                    # an MCP server every session's agent gets
//! command = "npx"                        # stdio: command, args, env ...
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/src"]
//!
//! [mcp_servers.tracker]                  # ... or streamable HTTP: url, headers
//! url = "https://tracker.example/mcp"
//! headers = { Authorization = "Bearer ..." }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tandem_actors::adapter::acp::DEFAULT_STARTUP;
use tandem_actors::adapter::{
    ConfiguredVendor, VendorId, VendorProcess, VendorProtocol, VendorsConfig,
};

/// Longest vendor id: it shows in lists and titles.
const MAX_VENDOR_ID: usize = 40;

/// The file as written; unknown keys are refused so a typo is not silently ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `[vendors.*]`.
    #[serde(default)]
    pub vendors: VendorsSection,
    /// `[workspace]`.
    #[serde(default)]
    pub workspace: WorkspaceSection,
    /// `[users.NAME]`: what one user is granted.
    #[serde(default)]
    pub users: BTreeMap<String, UserSection>,
    /// `[mcp_servers.NAME]`: MCP servers every session's agent gets.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerSection>,
}

/// `[mcp_servers.NAME]`: exactly one of `command` (stdio) and `url` (streamable HTTP).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment, on top of the server's own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The endpoint of an HTTP server.
    pub url: Option<String>,
    /// Headers sent with every request to it.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

impl ConfigFile {
    /// The declared MCP servers, or why one cannot be used: each entry is held to
    /// the rules of an added one (`mcp-servers.add`), and none may be called `tandem`.
    pub fn mcp_servers(
        &self,
    ) -> Result<Vec<tandem_actors::adapter::mcp_servers::NamedServer>, String> {
        use tandem_protocol::mcp_servers::McpServerEntry;
        self.mcp_servers
            .iter()
            .map(|(name, s)| {
                if name == "tandem" {
                    return Err("[mcp_servers.tandem]: that name is tandem's own tools".into());
                }
                let mut entry = serde_json::Map::new();
                entry.insert("name".into(), name.clone().into());
                if let Some(command) = &s.command {
                    entry.insert("command".into(), command.clone().into());
                }
                if !s.args.is_empty() {
                    entry.insert("args".into(), serde_json::json!(s.args));
                }
                if !s.env.is_empty() {
                    entry.insert("env".into(), serde_json::json!(s.env));
                }
                if let Some(url) = &s.url {
                    entry.insert("url".into(), url.clone().into());
                }
                if !s.headers.is_empty() {
                    entry.insert("headers".into(), serde_json::json!(s.headers));
                }
                serde_json::from_value::<McpServerEntry>(entry.into())
                    .map(Into::into)
                    .map_err(|e| format!("[mcp_servers.{name}]: {e}"))
            })
            .collect()
    }
}

/// `[users.NAME]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserSection {
    /// The only roots this user may open sessions under (instead of `[workspace]
    /// roots` and `--workspace-root`, which stay the admin's and every other user's).
    #[serde(default)]
    pub workspace_roots: Vec<PathBuf>,
}

/// `[vendors]`: one table per vendor CLI.
#[derive(Debug, Default, Deserialize)]
pub struct VendorsSection {
    /// `[vendors.codex]`; absent: `TANDEM_CODEX_BIN` or `codex` on PATH, no extra arguments.
    pub codex: Option<VendorSection>,
    /// `[vendors.claude]`; absent: `TANDEM_CLAUDE_BIN` or `claude` on PATH, no extra arguments.
    pub claude: Option<VendorSection>,
    /// Every other table: an ACP agent, keyed by its vendor id (checked after parsing:
    /// each needs `protocol = "acp"` and a `bin`).
    #[serde(flatten)]
    pub others: BTreeMap<String, VendorSection>,
}

/// How to start one vendor's CLI.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorSection {
    /// The executable: a path, or a name looked up on PATH.
    pub bin: Option<PathBuf>,
    /// Extra arguments, before the adapter's own.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment for the process, on top of what it inherits from the server
    /// (all but `TANDEM_*`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds an idle vendor process is kept before it is closed.
    pub idle_secs: Option<u64>,
    /// Model names to offer besides the CLI's own (Claude Code lists only its
    /// aliases; a pinned full model name goes here).
    #[serde(default)]
    pub models: Vec<String>,
    /// `acp` for an agent speaking the Agent Client Protocol; absent for the built-in
    /// `codex` and `claude` adapters.
    pub protocol: Option<String>,
    /// Name shown to people (ACP agents; default: the id).
    pub display_name: Option<String>,
    /// Seconds an ACP agent may take to answer `initialize`, and again to open its
    /// session (default 30).
    pub startup_secs: Option<u64>,
}

/// `[workspace]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSection {
    /// Session working directories must lie under one of these.
    #[serde(default)]
    pub roots: Vec<PathBuf>,
    /// Where Workers work when `pair.create` does not say, and the Workers proposals
    /// and `send_to_partner` create: `shared` (default) or `worktree`.
    #[serde(default)]
    pub worker_workspace: Option<tandem_protocol::workspace::WorkspaceMode>,
    /// The ports worktrees get as `TANDEM_PORT`, one each: `"FIRST-LAST"`.
    #[serde(default)]
    pub ports: Option<String>,
}

/// Why the file could not be used. The message names the file, and for a bad value
/// the line and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("config file {path}: {source}")]
    Read {
        /// The file, named in the message.
        path: PathBuf,
        /// What the OS said (not found, permission denied, ...).
        source: std::io::Error,
    },
    /// The file is not valid TOML or has a wrong key or value.
    #[error("config file {path}, line {line}{key}: {message}")]
    Invalid {
        /// The file, named in the message.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// `, key `a.b``, when one can be named.
        key: String,
        /// What is wrong, as the TOML parser says it.
        message: String,
    },
    /// A `[vendors.ID]` table that parses but cannot be used.
    #[error("config file {path}, [vendors.{id}]: {message}")]
    Vendor {
        /// The file, named in the message.
        path: PathBuf,
        /// The table's id.
        id: String,
        /// What is wrong.
        message: String,
    },
}

impl ConfigFile {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text` (read from `path`, which only names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
        let file: ConfigFile = Self::parse_toml(path, text)?;
        file.check_vendors()
            .map_err(|(id, message)| ConfigError::Vendor {
                path: path.to_path_buf(),
                id,
                message,
            })?;
        Ok(file)
    }

    /// Refuses vendor tables that parse but make no sense: a protocol on a built-in
    /// vendor, another id without `protocol = "acp"` or `bin`, a bad id.
    fn check_vendors(&self) -> Result<(), (String, String)> {
        for (id, section) in [
            ("codex", &self.vendors.codex),
            ("claude", &self.vendors.claude),
        ] {
            if let Some(section) = section {
                if section.protocol.is_some() || section.startup_secs.is_some() {
                    return Err((
                        id.into(),
                        format!("`{id}` is a built-in adapter: `protocol` and `startup_secs` belong to ACP agents, which need another id"),
                    ));
                }
            }
        }
        for (id, section) in &self.vendors.others {
            let valid_id = !id.is_empty()
                && id.len() <= MAX_VENDOR_ID
                && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
            if !valid_id || id == VendorId::SCRIPTED.as_str() {
                return Err((
                    id.clone(),
                    format!("a vendor id is 1-{MAX_VENDOR_ID} lowercase letters, digits, `-` or `_`, and not `scripted`"),
                ));
            }
            match section.protocol.as_deref() {
                Some("acp") => {}
                Some(other) => {
                    return Err((
                        id.clone(),
                        format!("unknown protocol `{other}`; the only one is \"acp\""),
                    ))
                }
                None => {
                    return Err((
                        id.clone(),
                        "`protocol = \"acp\"` is required for a vendor other than codex and claude"
                            .into(),
                    ))
                }
            }
            if section.bin.is_none() {
                return Err((id.clone(), "`bin` is required for an ACP agent".into()));
            }
            if section.startup_secs == Some(0) {
                return Err((id.clone(), "`startup_secs` must be at least 1".into()));
            }
        }
        Ok(())
    }

    fn parse_toml(path: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
        toml::from_str(text).map_err(|e| {
            let offset = e.span().map_or(0, |span| span.start);
            let line = text[..offset.min(text.len())].matches('\n').count() + 1;
            ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                key: key_at(text, line)
                    .map(|k| format!(", key `{k}`"))
                    .unwrap_or_default(),
                message: e.message().trim().to_string(),
            }
        })
    }

    /// The vendor CLIs: the file's `bin`, overridden by `TANDEM_CODEX_BIN` /
    /// `TANDEM_CLAUDE_BIN` (`env_bin`), else the vendor's name on `path_var`. A binary
    /// that cannot be found leaves the vendor not installed.
    pub fn vendors(
        &self,
        env_bin: impl Fn(&str) -> Option<String>,
        path_var: Option<&std::ffi::OsStr>,
    ) -> VendorsConfig {
        let resolve = |name: &str, env_key: &str, section: Option<&VendorSection>| {
            let default = VendorSection::default();
            let section = section.unwrap_or(&default);
            let wanted = env_bin(env_key)
                .filter(|b| !b.is_empty())
                .map(PathBuf::from)
                .or_else(|| section.bin.clone())
                .unwrap_or_else(|| PathBuf::from(name));
            let Some(bin) = find_executable(&wanted, path_var) else {
                tracing::info!(vendor = name, bin = %wanted.display(), "vendor CLI not found; not installed");
                return None;
            };
            Some(process_of(section, bin))
        };
        let builtins = [
            (
                VendorId::CODEX,
                VendorProtocol::Codex,
                "TANDEM_CODEX_BIN",
                self.vendors.codex.as_ref(),
            ),
            (
                VendorId::CLAUDE,
                VendorProtocol::Claude,
                "TANDEM_CLAUDE_BIN",
                self.vendors.claude.as_ref(),
            ),
        ];
        let acp = self
            .vendors
            .others
            .iter()
            .filter_map(|(id, section)| acp_vendor(id, section, path_var));
        VendorsConfig {
            vendors: builtins
                .into_iter()
                .filter_map(|(id, protocol, env_key, section)| {
                    let process = resolve(id.as_str(), env_key, section)?;
                    Some(ConfiguredVendor {
                        id,
                        protocol,
                        display_name: None,
                        process,
                    })
                })
                .chain(acp)
                .collect(),
        }
    }
}

/// How vendor `section`'s CLI, found at `bin`, is started.
fn process_of(section: &VendorSection, bin: PathBuf) -> VendorProcess {
    VendorProcess {
        bin,
        args: section.args.clone(),
        env: section.env.clone(),
        idle_close: section.idle_secs.map(std::time::Duration::from_secs),
        confine: None,
    }
}

/// The ACP agent `[vendors.ID]` declares, unless its `bin` is missing or not found
/// (then it is not installed).
fn acp_vendor(
    id: &str,
    section: &VendorSection,
    path_var: Option<&std::ffi::OsStr>,
) -> Option<ConfiguredVendor> {
    let wanted = section.bin.clone()?;
    let Some(bin) = find_executable(&wanted, path_var) else {
        tracing::warn!(vendor = %id, bin = %wanted.display(), "ACP agent not found; not installed");
        return None;
    };
    Some(ConfiguredVendor {
        id: VendorId::new(id.to_string()),
        protocol: VendorProtocol::Acp {
            startup_timeout: section
                .startup_secs
                .map_or(DEFAULT_STARTUP, std::time::Duration::from_secs),
        },
        display_name: section
            .display_name
            .clone()
            .filter(|n| !n.trim().is_empty()),
        process: process_of(section, bin),
    })
}

impl ConfigFile {
    /// The `models` each `[vendors.X]` names, by vendor id.
    pub fn configured_models(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        [
            ("codex", &self.vendors.codex),
            ("claude", &self.vendors.claude),
        ]
        .into_iter()
        .filter_map(|(id, section)| {
            let models = &section.as_ref()?.models;
            (!models.is_empty()).then(|| (id.to_string(), models.clone()))
        })
        .collect()
    }
}

/// The dotted key a line sets: the nearest `[table]` header above it plus the name
/// before `=` on the line itself.
fn key_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?.trim();
    let name = here.split_once('=').map(|(k, _)| k.trim().to_string());
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    match (table, name) {
        (Some(t), Some(n)) => Some(format!("{t}.{n}")),
        (None, Some(n)) => Some(n),
        (Some(t), None) if here.starts_with('[') => Some(t),
        _ => None,
    }
}

/// `wanted` itself when it names a file (it has a `/`), else the first match on PATH;
/// only executable regular files count.
fn find_executable(wanted: &Path, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if wanted.components().count() > 1 || wanted.is_absolute() {
        return runnable(wanted).then(|| wanted.to_path_buf());
    }
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(wanted))
        .find(|p| runnable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(text: &str) -> String {
        match ConfigFile::parse(Path::new("/etc/tandem.toml"), text) {
            Ok(c) => panic!("parsed {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reads_every_key() {
        let text = "[vendors.codex]\nbin = \"/bin/sh\"\nargs = [\"-c\", \"x\"]\nenv = { CODEX_HOME = \"/tmp/c\" }\nidle_secs = 5\n\n[workspace]\nroots = [\"/tmp\"]\n";
        let config = ConfigFile::parse(Path::new("t.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let vendors = config.vendors(|_| None, None);
        let codex = vendors
            .get(&VendorId::CODEX)
            .map(|v| v.process.clone())
            .unwrap_or_else(|| panic!("codex not resolved"));
        assert_eq!(codex.bin, PathBuf::from("/bin/sh"));
        assert_eq!(codex.args, vec!["-c".to_string(), "x".to_string()]);
        assert_eq!(
            codex.env.get("CODEX_HOME").map(String::as_str),
            Some("/tmp/c")
        );
        assert_eq!(codex.idle_close, Some(std::time::Duration::from_secs(5)));
        assert!(
            vendors.get(&VendorId::CLAUDE).is_none(),
            "no PATH, no claude"
        );
        assert_eq!(config.workspace.roots, vec![PathBuf::from("/tmp")]);
    }

    #[test]
    fn configured_models_by_vendor() {
        let config = ConfigFile::parse(
            Path::new("t.toml"),
            "[vendors.claude]\nmodels = [\"claude-x\", \"claude-y\"]\n[vendors.codex]\nargs = []\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let models = config.configured_models();
        assert_eq!(
            models.get("claude").cloned(),
            Some(vec!["claude-x".to_string(), "claude-y".to_string()])
        );
        assert!(!models.contains_key("codex"), "no models, no entry");
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = invalid("[vendors.codex]\nargs = [\"a\"]\nbin = 3\n");
        assert!(e.contains("/etc/tandem.toml"), "{e}");
        assert!(e.contains("line 3"), "{e}");
        assert!(e.contains("vendors.codex.bin"), "{e}");
        let e = invalid("[vendors.codex]\nbinary = \"x\"\n");
        assert!(
            e.contains("line 2") && e.contains("vendors.codex.binary"),
            "{e}"
        );
        assert!(e.contains("unknown field"), "{e}");
        let e = invalid("[vendors.gemini]\nbin = \"x\"\n");
        assert!(
            e.contains("[vendors.gemini]") && e.contains("protocol = \"acp\""),
            "{e}"
        );
        let e = invalid("[workspace\n");
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn acp_agents_are_vendors_by_their_table_key() {
        let text = "[vendors.gemini]\nprotocol = \"acp\"\nbin = \"/bin/sh\"\nargs = [\"--experimental-acp\"]\nenv = { GEMINI_API_KEY = \"k\" }\ndisplay_name = \"Gemini CLI\"\nstartup_secs = 7\n\n[vendors.opencode]\nprotocol = \"acp\"\nbin = \"/nonexistent/opencode\"\n";
        let config = ConfigFile::parse(Path::new("t.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let vendors = config.vendors(|_| None, None);
        assert!(
            vendors.get(&VendorId::new("opencode")).is_none(),
            "a missing binary is not installed"
        );
        let gemini = vendors
            .get(&VendorId::new("gemini"))
            .unwrap_or_else(|| panic!("gemini not resolved"));
        assert_eq!(gemini.display_name.as_deref(), Some("Gemini CLI"));
        assert_eq!(gemini.process.args, vec!["--experimental-acp".to_string()]);
        assert_eq!(gemini.process.bin, PathBuf::from("/bin/sh"));
        assert_eq!(
            gemini.protocol,
            VendorProtocol::Acp {
                startup_timeout: std::time::Duration::from_secs(7)
            }
        );
        for (bad, says) in [
            (
                "[vendors.x]\nprotocol = \"mcp\"\nbin = \"/bin/sh\"\n",
                "unknown protocol",
            ),
            ("[vendors.x]\nprotocol = \"acp\"\n", "`bin` is required"),
            (
                "[vendors.Bad]\nprotocol = \"acp\"\nbin = \"/bin/sh\"\n",
                "lowercase",
            ),
            (
                "[vendors.scripted]\nprotocol = \"acp\"\nbin = \"/bin/sh\"\n",
                "not `scripted`",
            ),
            ("[vendors.codex]\nprotocol = \"acp\"\n", "built-in"),
            (
                "[vendors.x]\nprotocol = \"acp\"\nbin = \"/bin/sh\"\nstartup_secs = 0\n",
                "at least 1",
            ),
            (
                "[vendors.x]\nprotocol = \"acp\"\nbin = \"/bin/sh\"\nflavour = 1\n",
                "unknown field",
            ),
        ] {
            let e = invalid(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn env_override_and_path_lookup() {
        let config = ConfigFile::parse(
            Path::new("t.toml"),
            "[vendors.claude]\nbin = \"/nonexistent/claude\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let none = config.vendors(|_| None, None);
        assert!(
            none.get(&VendorId::CLAUDE).is_none(),
            "a missing binary is not installed"
        );
        let env = |k: &str| (k == "TANDEM_CLAUDE_BIN").then(|| "/bin/sh".to_string());
        let over = config.vendors(env, None);
        assert_eq!(
            over.get(&VendorId::CLAUDE).map(|c| c.process.bin.clone()),
            Some(PathBuf::from("/bin/sh"))
        );
        let dir = std::env::temp_dir().join(format!("tandem-path-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let fake = dir.join("codex");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        let found = ConfigFile::default().vendors(|_| None, Some(dir.as_os_str()));
        assert_eq!(
            found.get(&VendorId::CODEX).map(|c| c.process.bin.clone()),
            Some(fake)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
