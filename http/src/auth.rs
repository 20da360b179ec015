//! Who is calling: a bearer token in the `Authorization` header or `?token=`.

use std::sync::OnceLock;

use actix_web::HttpRequest;
use tandem_actors::{Principal, Runtime};
use tandem_protocol::ErrorCode;

use crate::error::ApiError;

/// How requests are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Every protected request needs a known token.
    Token,
    /// No checks; every caller is the local admin. Allowed on loopback only.
    None,
}

/// The caller of `req`, or 401.
pub fn caller(req: &HttpRequest, runtime: &Runtime, mode: AuthMode) -> Result<Principal, ApiError> {
    // A request this server sent itself for another cluster node, which authenticated
    // the caller (never set without `--nats`).
    if let Some(who) = forwarded_principal(req) {
        return Ok(who);
    }
    if mode == AuthMode::None {
        return Ok(Runtime::local_principal());
    }
    presented_token(req)
        .and_then(|t| runtime.authenticate(&t))
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "a valid token is required"))
}

/// Stands for "authenticated by a node of this cluster as the user named beside it"
/// (`crate::cluster_rest`): known only to this process, sent only to its own
/// listener. Set when the node joins a cluster.
static FORWARD_SECRET: OnceLock<String> = OnceLock::new();
/// Carries [`FORWARD_SECRET`].
pub const SECRET_HEADER: &str = "tandem-forwarded-secret";
/// The forwarded caller's user id.
pub const USER_HEADER: &str = "tandem-forwarded-user";
/// `1` when the forwarded caller is an admin.
pub const ADMIN_HEADER: &str = "tandem-forwarded-admin";

/// Makes this process's forwarding secret (once).
pub fn make_forward_secret() -> Result<(), String> {
    let secret = tandem_actors::clock::random_token("fwd_", 32).map_err(|e| e.to_string())?;
    FORWARD_SECRET
        .set(secret)
        .map_err(|_| "the forwarding secret is already set".to_string())
}

/// The forwarding secret, once made.
pub fn forward_secret() -> Option<&'static str> {
    FORWARD_SECRET.get().map(String::as_str)
}

/// The caller of a request this process sent itself for another cluster node, if it
/// is one.
pub fn forwarded_principal(req: &HttpRequest) -> Option<Principal> {
    let secret = FORWARD_SECRET.get()?;
    let presented = req.headers().get(SECRET_HEADER)?.as_bytes();
    if !same(presented, secret.as_bytes()) {
        return None;
    }
    let user_id = req.headers().get(USER_HEADER)?.to_str().ok()?.to_string();
    let admin = req.headers().get(ADMIN_HEADER)?.as_bytes() == b"1";
    Some(Principal { user_id, admin })
}

/// Compares in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token the request carries (header first, then `?token=`), if any.
pub fn presented_token(req: &HttpRequest) -> Option<String> {
    bearer(req).or_else(|| query_token(req.query_string()))
}

fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get("authorization")?.to_str().ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    Some(token.trim().to_string())
}

fn query_token(query: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn compares_secrets() {
        assert!(super::same(b"abc", b"abc"));
        assert!(!super::same(b"abc", b"abd"));
        assert!(!super::same(b"abc", b"abcd"));
    }

    #[test]
    fn finds_token_in_query() {
        assert_eq!(super::query_token("a=1&token=abc").as_deref(), Some("abc"));
        assert_eq!(super::query_token("a=1"), None);
    }
}
