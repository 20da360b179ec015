//! The user's MCP servers, declared in the config (`[mcp_servers.NAME]`):
//! `mcp-servers.list` and `mcp-servers.probe`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A variable or header whose value may be a secret: only whether it is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    /// Its name.
    pub name: String,
    /// Whether it has a value (never shown).
    pub set: bool,
}

/// One MCP server, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// Its name.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The program (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its endpoint (http).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its environment's variables (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<Secret>,
    /// Its headers (http).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Secret>,
}

/// Fields of `mcp-servers.list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServersListParams {}

/// `mcp-servers.list` reply, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServersListResult {
    /// The servers.
    pub servers: Vec<McpServerInfo>,
}

/// Fields of `mcp-servers.probe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerProbeParams {
    /// The server.
    pub name: String,
}

/// `mcp-servers.probe` reply: whether an MCP client got through, and what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerProbeResult {
    /// The server.
    pub name: String,
    /// It answered `initialize` and `tools/list`.
    pub reachable: bool,
    /// Its own name (`serverInfo.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Its version (`serverInfo.version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Its tools' names.
    pub tools: Vec<String>,
    /// Why it is not reachable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
