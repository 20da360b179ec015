//! Who is calling: a bearer token in the `Authorization` header or `?token=`.

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
    if mode == AuthMode::None {
        return Ok(tandem_actors::runtime::AuthService::local_principal());
    }
    presented_token(req)
        .and_then(|t| runtime.auth().authenticate(&t))
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "a valid token is required"))
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
    fn finds_token_in_query() {
        assert_eq!(super::query_token("a=1&token=abc").as_deref(), Some("abc"));
        assert_eq!(super::query_token("a=1"), None);
    }
}
