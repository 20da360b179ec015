//! Bearer tokens for the agent tools endpoint (`/mcp`), each bound to one session, and
//! the endpoint's URL. Kept in memory only: a restart mints new ones, and vendor
//! processes get theirs when their adapter starts.

use std::sync::{Arc, OnceLock};

use dashmap::DashMap;

use crate::adapter::McpAccess;
use crate::clock::random_id;

/// The registry of MCP tokens; cheap to clone.
#[derive(Clone, Default)]
pub struct McpTokens {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// `http://HOST:PORT/mcp`, known once the HTTP server is bound.
    url: OnceLock<String>,
    /// Token → session.
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

    /// The token bound to `session_id`, minted on first use.
    pub fn token_for(&self, session_id: &str) -> String {
        self.inner
            .tokens
            .entry(session_id.to_string())
            .or_insert_with(|| {
                let token = random_id("mcp_", 24);
                self.inner
                    .sessions
                    .insert(token.clone(), session_id.to_string());
                token
            })
            .clone()
    }

    /// The session a token is bound to.
    pub fn session_of(&self, token: &str) -> Option<String> {
        self.inner.sessions.get(token).map(|s| s.clone())
    }

    /// URL and token for `session_id`; `None` before the server is bound.
    pub fn access(&self, session_id: &str) -> Option<McpAccess> {
        let url = self.inner.url.get()?.clone();
        Some(McpAccess {
            url,
            token: self.token_for(session_id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::McpTokens;

    #[test]
    fn one_token_per_session_and_back() {
        let tokens = McpTokens::default();
        assert!(tokens.access("s1").is_none(), "no URL before bind");
        tokens.set_base_url("http://127.0.0.1:9/");
        let a = tokens.token_for("s1");
        assert_eq!(tokens.token_for("s1"), a);
        assert_ne!(tokens.token_for("s2"), a);
        assert_eq!(tokens.session_of(&a).as_deref(), Some("s1"));
        assert_eq!(tokens.session_of("nope"), None);
        let access = tokens.access("s1").unwrap_or_else(|| panic!("no access"));
        assert_eq!(access.url, "http://127.0.0.1:9/mcp");
        assert_eq!(access.token, a);
    }
}
