//! Whether a session's owner was revoked (`tandem user revoke`, run as another process
//! on the same database), asked by every path that acts for a session's owner without
//! a caller's token: a turn starting (sends, scheduled messages, queued messages,
//! delegations, spawned children), a tool call, an MCP request, a session created for
//! that owner. Each answer is trusted for [`OWNER_RECHECK`], the same second a token
//! is trusted for, so a revocation takes effect within a second on a running server
//! without a store read per event.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::store::Store;

/// How long an answer from the store is trusted before it is asked again.
const OWNER_RECHECK: Duration = Duration::from_secs(1);

/// Revoked owners, cached; cheap to clone.
#[derive(Clone)]
pub struct Owners {
    /// Where `revoked_users` is read.
    store: Store,
    /// User id → whether revoked, and when the store said so.
    seen: Arc<DashMap<String, (bool, Instant)>>,
}

impl Owners {
    /// Checks owners against `store`.
    pub fn new(store: Store) -> Self {
        Owners {
            store,
            seen: Arc::default(),
        }
    }

    /// True when `user_id` was removed and not added again. Fails closed: when the
    /// store cannot be read, the owner counts as revoked (and it is logged), as a
    /// token that cannot be looked up does not authenticate.
    pub fn revoked(&self, user_id: &str) -> bool {
        if let Some(entry) = self.seen.get(user_id) {
            let (revoked, checked) = *entry.value();
            if checked.elapsed() < OWNER_RECHECK {
                return revoked;
            }
        }
        let revoked = match self.store.user_revoked(user_id) {
            Ok(revoked) => revoked,
            Err(e) => {
                tracing::error!(error = %e, "revoked-user lookup failed");
                return true;
            }
        };
        self.seen
            .insert(user_id.to_string(), (revoked, Instant::now()));
        revoked
    }
}
