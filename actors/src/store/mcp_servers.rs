//! MCP servers users added (`mcp-servers.add`): each user's own, the entry kept as
//! JSON with its secrets (the database file is 0600). Written at once, as devices are:
//! an added server is on disk before the request is answered.

use rusqlite::params;
use tandem_protocol::mcp_servers::McpServerEntry;

use super::Store;
use crate::clock::now_ms;
use crate::error::RuntimeError;

impl Store {
    /// Every user's added servers, oldest first; an entry that no longer reads (a
    /// rule tightened since) is left out with a warning.
    pub fn mcp_servers(&self) -> Result<Vec<(String, McpServerEntry)>, RuntimeError> {
        let rows = self.with_reader(|conn| {
            let mut stmt = conn.prepare(
                "SELECT user_id, name, entry FROM mcp_servers ORDER BY created_at, name",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?;
            rows.collect::<Result<Vec<_>, _>>()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(user, name, entry)| {
                match serde_json::from_str::<McpServerEntry>(&entry) {
                    Ok(e) => Some((user, e)),
                    Err(e) => {
                        tracing::warn!(user, name, error = %e, "an added MCP server no longer reads; left out");
                        None
                    }
                }
            })
            .collect())
    }

    /// Keeps `entry` as one of `user_id`'s servers.
    pub fn put_mcp_server(
        &self,
        user_id: &str,
        entry: &McpServerEntry,
    ) -> Result<(), RuntimeError> {
        let json = serde_json::to_string(entry)
            .map_err(|e| RuntimeError::Internal(format!("an MCP server entry: {e}")))?;
        self.with_reader(|conn| {
            conn.execute(
                "INSERT INTO mcp_servers (user_id, name, entry, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![user_id, entry.name, json, now_ms() as i64],
            )
        })?;
        Ok(())
    }

    /// Removes one of `user_id`'s servers; whether there was one.
    pub fn delete_mcp_server(&self, user_id: &str, name: &str) -> Result<bool, RuntimeError> {
        let n = self.with_reader(|conn| {
            conn.execute(
                "DELETE FROM mcp_servers WHERE user_id = ?1 AND name = ?2",
                params![user_id, name],
            )
        })?;
        Ok(n > 0)
    }
}
