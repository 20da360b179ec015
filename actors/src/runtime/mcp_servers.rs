//! `mcp-servers.list` and `mcp-servers.probe`: the user's MCP servers
//! (`crate::adapter::mcp_servers`).

use tandem_protocol::mcp_servers::{
    McpServerProbeParams, McpServerProbeResult, McpServersListResult,
};

use super::Runtime;
use crate::error::RuntimeError;

impl Runtime {
    /// `mcp-servers.list`: the declared servers by name, secrets shown as set or not.
    pub fn list_mcp_servers(&self) -> McpServersListResult {
        McpServersListResult {
            servers: self
                .inner
                .services
                .mcp
                .servers()
                .iter()
                .map(|s| s.info())
                .collect(),
        }
    }

    /// `mcp-servers.probe`: connects to one as an MCP client.
    pub async fn probe_mcp_server(
        &self,
        p: McpServerProbeParams,
    ) -> Result<McpServerProbeResult, RuntimeError> {
        let server = self
            .inner
            .services
            .mcp
            .servers()
            .iter()
            .find(|s| s.name == p.name)
            .cloned()
            .ok_or_else(|| RuntimeError::Missing(format!("no MCP server `{:.64}`", p.name)))?;
        Ok(crate::adapter::mcp_servers::probe::probe(&server).await)
    }
}
