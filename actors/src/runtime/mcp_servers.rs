//! [`McpServerService`]: `mcp-servers.list`, `.add`, `.remove` and `.probe`: the MCP
//! servers a user's sessions may get (`crate::adapter::mcp_servers`).

use std::sync::Arc;

use tandem_protocol::mcp_servers::{
    McpServerEntry, McpServerInfo, McpServerProbeParams, McpServerProbeResult,
    McpServerRemoveParams, McpServerRemoveResult, McpServerScope, McpServersListResult,
};

use crate::adapter::mcp_servers::registry::{McpServers, RegistryError};
use crate::adapter::mcp_servers::NamedServer;
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::store::Store;
use crate::Principal;

impl From<RegistryError> for RuntimeError {
    fn from(e: RegistryError) -> RuntimeError {
        match e {
            RegistryError::Taken(_) | RegistryError::Declared(_) => {
                RuntimeError::Conflict(e.to_string())
            }
            RegistryError::TooMany => RuntimeError::LimitExceeded(e.to_string()),
            RegistryError::Missing(_) => RuntimeError::Missing(e.to_string()),
        }
    }
}

/// The MCP servers service.
pub struct McpServerService {
    /// The config's servers and each user's own (what sessions are given).
    servers: McpServers,
    /// Where a user's own are kept.
    store: Store,
    /// How a user's own stdio server is confined, and where it works.
    config: Arc<RuntimeConfig>,
}

impl McpServerService {
    /// Serves `servers`, keeping users' own in `store`.
    pub(super) fn new(servers: McpServers, store: Store, config: Arc<RuntimeConfig>) -> Self {
        McpServerService {
            servers,
            store,
            config,
        }
    }

    /// `mcp-servers.list`: the config's servers and the caller's own, secrets shown as
    /// set or not.
    pub fn list(&self, who: &Principal) -> McpServersListResult {
        McpServersListResult {
            servers: self
                .servers
                .listed(&who.user_id)
                .iter()
                .map(|(s, scope)| s.info(*scope))
                .collect(),
        }
    }

    /// `mcp-servers.add`: one of the caller's own, on disk before it is answered.
    pub async fn add(
        &self,
        who: &Principal,
        entry: McpServerEntry,
    ) -> Result<McpServerInfo, RuntimeError> {
        let server = NamedServer::from(entry.clone());
        let info = server.info(McpServerScope::User);
        let (registry, store, user) = (
            self.servers.clone(),
            self.store.clone(),
            who.user_id.clone(),
        );
        // The store writes at once: off the actor threads.
        actix_rt::task::spawn_blocking(move || {
            registry.add(&user, server, || store.put_mcp_server(&user, &entry))
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("adding an MCP server: {e}")))???;
        Ok(info)
    }

    /// `mcp-servers.remove`: one of the caller's own; sessions whose agent starts
    /// after no longer get it.
    pub async fn remove(
        &self,
        who: &Principal,
        p: McpServerRemoveParams,
    ) -> Result<McpServerRemoveResult, RuntimeError> {
        let (registry, store, user, name) = (
            self.servers.clone(),
            self.store.clone(),
            who.user_id.clone(),
            p.name.clone(),
        );
        actix_rt::task::spawn_blocking(move || {
            registry.remove(&user, &name, || {
                store.delete_mcp_server(&user, &name).map(|_| ())
            })
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("removing an MCP server: {e}")))???;
        Ok(McpServerRemoveResult { name: p.name })
    }

    /// `mcp-servers.probe`: connects to one the caller may use as an MCP client. A
    /// user's own stdio server starts as that user's agents would start it: confined
    /// where they are, working in the user's first workspace root, reading nothing
    /// else of theirs; the config's runs as declared.
    pub async fn probe(
        &self,
        who: &Principal,
        p: McpServerProbeParams,
    ) -> Result<McpServerProbeResult, RuntimeError> {
        let (server, scope) = self
            .servers
            .find(&who.user_id, &p.name)
            .ok_or_else(|| RuntimeError::Missing(format!("no MCP server `{:.64}`", p.name)))?;
        let confined = match (scope, &self.config.confinement.launcher) {
            (McpServerScope::User, Some(launcher)) => {
                let root = self.config.roots_of(&who.user_id, who.admin).first();
                let root = root.cloned().ok_or_else(|| {
                    RuntimeError::InvalidArgument("no workspace root configured".into())
                })?;
                Some((launcher.clone(), root))
            }
            _ => None,
        };
        let confined = confined.as_ref().map(|(l, dir)| (l, dir.as_path()));
        Ok(crate::adapter::mcp_servers::probe::probe(&server, confined).await)
    }
}
