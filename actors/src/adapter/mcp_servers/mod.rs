//! The MCP servers agents get beside tandem's own tools: the config's
//! (`[mcp_servers.NAME]`), each user's own (`mcp-servers.add`) and a session's own
//! entries ([`registry`]). A session's agent gets them each vendor its own way (Claude
//! Code's `--mcp-config`, a Codex thread's `config.mcp_servers`, an ACP
//! `session/new`'s `mcpServers`), and `mcp-servers.probe` connects to one as an MCP
//! client ([`probe`]). Values of `env` and `headers` may hold secrets: they reach the
//! vendor's process and the probe, and are never listed.

pub mod probe;
pub mod registry;

use std::collections::BTreeMap;

use tandem_protocol::mcp_servers::{
    McpServerEntry, McpServerInfo, McpServerScope, McpServerTransport, Secret,
};

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerSpec {
    /// A program speaking MCP on its standard input and output.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment, on top of the server's own (minus `TANDEM_*`).
        env: BTreeMap<String, String>,
    },
    /// A server speaking MCP's streamable HTTP.
    Http {
        /// Its endpoint.
        url: String,
        /// Headers sent with every request (a token, say).
        headers: BTreeMap<String, String>,
    },
}

/// A declared MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedServer {
    /// Its name: agents see its tools under it (`mcp__NAME__TOOL` in Claude Code).
    pub name: String,
    /// How to reach it.
    pub spec: McpServerSpec,
}

impl From<McpServerEntry> for NamedServer {
    fn from(entry: McpServerEntry) -> NamedServer {
        let spec = match entry.transport {
            McpServerTransport::Stdio { command, args, env } => {
                McpServerSpec::Stdio { command, args, env }
            }
            McpServerTransport::Http { url, headers } => McpServerSpec::Http { url, headers },
        };
        NamedServer {
            name: entry.name,
            spec,
        }
    }
}

impl NamedServer {
    /// What `mcp-servers.list` shows of it: never a secret's value.
    pub fn info(&self, scope: McpServerScope) -> McpServerInfo {
        let secrets = |map: &BTreeMap<String, String>| {
            map.iter()
                .map(|(name, value)| Secret {
                    name: name.clone(),
                    set: !value.is_empty(),
                })
                .collect()
        };
        match &self.spec {
            McpServerSpec::Stdio { command, args, env } => McpServerInfo {
                name: self.name.clone(),
                scope,
                transport: "stdio".into(),
                command: Some(command.clone()),
                args: args.clone(),
                url: None,
                env: secrets(env),
                headers: Vec::new(),
            },
            McpServerSpec::Http { url, headers } => McpServerInfo {
                name: self.name.clone(),
                scope,
                transport: "http".into(),
                command: None,
                args: Vec::new(),
                url: Some(url.clone()),
                env: Vec::new(),
                headers: secrets(headers),
            },
        }
    }
}

/// The programs `servers` run and the files their arguments name, for a confined
/// process that starts them to be allowed to read them: a stdio server's command
/// (looked up on `PATH` when it is a bare name) and each argument that is an absolute
/// path to something that exists (`node /opt/tools/server.js`). A path in the data
/// directory is still refused by the allow list.
pub fn program_paths(servers: &[NamedServer]) -> Vec<std::path::PathBuf> {
    use std::path::{Path, PathBuf};
    let on_path = |name: &str| -> Option<PathBuf> {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    };
    let mut paths = Vec::new();
    for server in servers {
        let McpServerSpec::Stdio { command, args, .. } = &server.spec else {
            continue;
        };
        let program = if command.contains('/') {
            Some(PathBuf::from(command)).filter(|p| p.is_absolute())
        } else {
            on_path(command)
        };
        paths.extend(program);
        paths.extend(
            args.iter()
                .map(Path::new)
                .filter(|p| p.is_absolute() && p.exists())
                .map(Path::to_path_buf),
        );
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_servers_program_and_the_files_its_arguments_name() {
        let scratch = crate::testkit::Scratch::new("mcp-programs");
        let script = scratch.path().join("server.js");
        std::fs::write(&script, "").unwrap_or_else(|e| panic!("{e}"));
        let servers = [
            NamedServer {
                name: "local".into(),
                spec: McpServerSpec::Stdio {
                    command: "sh".into(),
                    args: vec![
                        script.display().to_string(),
                        "relative.js".into(),
                        "/no/such/file".into(),
                    ],
                    env: BTreeMap::new(),
                },
            },
            NamedServer {
                name: "remote".into(),
                spec: McpServerSpec::Http {
                    url: "http://127.0.0.1:9/mcp".into(),
                    headers: BTreeMap::new(),
                },
            },
        ];
        let paths = program_paths(&servers);
        // `sh` as PATH finds it, the script; nothing relative, missing or remote.
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert!(
            paths[0].ends_with("sh") && paths[0].is_absolute(),
            "{paths:?}"
        );
        assert_eq!(paths[1], script);
    }
}
