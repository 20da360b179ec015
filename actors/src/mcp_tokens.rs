//! Bearer tokens for the agent tools endpoint (`/mcp`), each bound to one session, and
//! the endpoint's URL. Kept in memory only: a restart mints new ones, and vendor
//! processes get theirs when their adapter starts.

use std::sync::{Arc, OnceLock};

use dashmap::DashMap;

use crate::adapter::McpAccess;
use crate::clock::{random_token, RandomError};

/// The registry of MCP tokens; cheap to clone.
#[derive(Clone, Default)]
pub struct McpTokens {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// `http://HOST:PORT/mcp`, known once the HTTP server is bound.
    url: OnceLock<String>,
    /// Token → session: a tool call's bearer token says which session calls.
    sessions: DashMap<String, String>,
    /// Session → token, so a session keeps one token.
    tokens: DashMap<String, String>,
}

impl McpTokens {
    /// Records the server's base URL (`http://HOST:PORT`); the first call wins.
    pub fn set_base_url(&self, base: &str) {
        let _ = self
            .inner
            .url
            .set(format!("{}/mcp", base.trim_end_matches('/')));
    }

    /// `http://HOST:PORT/mcp` of this server, once it is bound.
    pub fn url(&self) -> Option<String> {
        self.inner.url.get().cloned()
    }

    /// The token bound to `session_id`, minted on first use. Fails closed when the
    /// OS random source fails: a token is a secret, never clock-derived.
    pub fn token_for(&self, session_id: &str) -> Result<String, RandomError> {
        if let Some(token) = self.inner.tokens.get(session_id) {
            return Ok(token.clone());
        }
        let entry = self.inner.tokens.entry(session_id.to_string());
        let token = match entry {
            dashmap::Entry::Occupied(e) => e.get().clone(),
            dashmap::Entry::Vacant(e) => {
                let token = random_token("mcp_", 24)?;
                self.inner
                    .sessions
                    .insert(token.clone(), session_id.to_string());
                e.insert(token.clone());
                token
            }
        };
        Ok(token)
    }

    /// Drops the session's token (its session was reassigned): the old one no longer
    /// resolves, and the next [`McpTokens::token_for`] mints another.
    pub fn forget(&self, session_id: &str) {
        if let Some((_, token)) = self.inner.tokens.remove(session_id) {
            self.inner.sessions.remove(&token);
        }
    }

    /// The session a token is bound to.
    pub fn session_of(&self, token: &str) -> Option<String> {
        self.inner.sessions.get(token).map(|s| s.clone())
    }

    /// URL and token for `session_id`, whose agent also gets `servers`; `None` before
    /// the server is bound.
    pub fn access(
        &self,
        session_id: &str,
        servers: Arc<Vec<crate::adapter::mcp_servers::NamedServer>>,
    ) -> Option<McpAccess> {
        let url = self.inner.url.get()?.clone();
        match self.token_for(session_id) {
            Ok(token) => Some(McpAccess {
                url,
                token,
                servers,
            }),
            Err(e) => {
                tracing::error!(error = %e, "no MCP token for a vendor process");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::McpTokens;

    #[test]
    fn one_token_per_session_and_back() {
        let tokens = McpTokens::default();
        assert!(
            tokens.access("s1", Default::default()).is_none(),
            "no URL before bind"
        );
        tokens.set_base_url("http://127.0.0.1:9/");
        let token = |s: &str| tokens.token_for(s).unwrap_or_else(|e| panic!("{e}"));
        let a = token("s1");
        assert_eq!(token("s1"), a);
        assert_ne!(token("s2"), a);
        assert_eq!(tokens.session_of(&a).as_deref(), Some("s1"));
        assert_eq!(tokens.session_of("nope"), None);
        let access = tokens
            .access("s1", Default::default())
            .unwrap_or_else(|| panic!("no access"));
        assert_eq!(access.url, "http://127.0.0.1:9/mcp");
        assert_eq!(access.token, a);
        tokens.forget("s1");
        assert_eq!(
            tokens.session_of(&a),
            None,
            "a forgotten token resolves no more"
        );
        assert_ne!(token("s1"), a, "a new one is minted");
    }
}
