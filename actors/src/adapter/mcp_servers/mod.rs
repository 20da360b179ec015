//! The user's MCP servers (`[mcp_servers.NAME]` in the config): every session's agent
//! gets them beside tandem's own tools, each vendor its own way (Claude Code's
//! `--mcp-config`, a Codex thread's `config.mcp_servers`, an ACP `session/new`'s
//! `mcpServers`), and `mcp-servers.probe` connects to one as an MCP client
//! ([`probe`]). Values of `env` and `headers` may hold secrets: they reach the
//! vendor's process and the probe, and are never listed.

pub mod probe;

use std::collections::BTreeMap;

use tandem_protocol::mcp_servers::{McpServerInfo, Secret};

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

impl NamedServer {
    /// What `mcp-servers.list` shows of it: never a secret's value.
    pub fn info(&self) -> McpServerInfo {
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
                transport: "stdio".into(),
                command: Some(command.clone()),
                args: args.clone(),
                url: None,
                env: secrets(env),
                headers: Vec::new(),
            },
            McpServerSpec::Http { url, headers } => McpServerInfo {
                name: self.name.clone(),
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

/// Checks a server's name: letters, digits, `-` and `_`, 1 to 40 of them, and not
/// `tandem` (tandem's own tools are that server).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(format!(
            "MCP server name `{name:.64}`: use 1 to 40 letters, digits, `-` or `_`"
        ));
    }
    if name == "tandem" {
        return Err("MCP server name `tandem` is tandem's own tools".into());
    }
    Ok(())
}
