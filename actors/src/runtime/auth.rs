//! [`AuthService`]: who a bearer token is (users' tokens and paired devices' tokens, both
//! in the store), and where other devices reach this server for pairing
//! (`devices.rs` holds pairing and the device list).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::access::{Principal, ADMIN_USER};
use crate::store::tokens::{digest, digests_equal, TokenDigest};
use crate::store::Store;

/// How long a token found in the store is trusted before it is looked up again.
const TOKEN_RECHECK: Duration = Duration::from_secs(1);

/// The auth service: token checks, pairing codes and devices.
pub struct AuthService {
    pub(super) store: Store,
    /// Token digest → user and when the store was last asked, so a revoked or
    /// rotated token stops working within [`TOKEN_RECHECK`] on a running server.
    tokens: DashMap<TokenDigest, (Principal, Instant)>,
    /// Where other devices reach this server (`https://LAN-ADDRESS:PORT`), the base of
    /// pairing links, and whether another device can (not a loopback address). Set
    /// once the server listens.
    pub(super) public_url: OnceLock<(String, bool)>,
}

impl AuthService {
    /// Checks tokens against `store`.
    pub(super) fn new(store: Store) -> Self {
        AuthService {
            store,
            tokens: DashMap::new(),
            public_url: OnceLock::new(),
        }
    }

    /// The principal used when authentication is off (`--auth none`, loopback only).
    pub fn local_principal() -> Principal {
        Principal {
            user_id: ADMIN_USER.into(),
            admin: true,
        }
    }

    /// The user a token belongs to. Tokens are looked up by their SHA-256 digest and
    /// remembered for a second, so users added, revoked or rotated with the CLI while
    /// the server runs take effect within that second.
    pub fn authenticate(&self, token: &str) -> Option<Principal> {
        let wanted = digest(token);
        if let Some(entry) = self.tokens.get(&wanted) {
            let (principal, checked) = entry.value();
            if digests_equal(entry.key(), &wanted) && checked.elapsed() < TOKEN_RECHECK {
                return Some(principal.clone());
            }
        }
        match self.store.user_by_token(token) {
            Ok(Some((user_id, admin))) => {
                let principal = Principal {
                    user_id: user_id.into(),
                    admin,
                };
                self.tokens
                    .insert(wanted, (principal.clone(), Instant::now()));
                Some(principal)
            }
            Ok(None) => {
                self.tokens.remove(&wanted);
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "token lookup failed");
                None
            }
        }
    }
}
