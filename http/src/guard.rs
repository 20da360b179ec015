//! Refuses what a hostile web page can make a browser send to a server on the same
//! machine. tandem listens on loopback next to the person's browser and runs agents
//! that execute shell commands, so every request passes three checks (with
//! `--auth none` too). Host and Origin come before any route and before
//! authentication; the media type comes after authentication (a caller without a
//! valid token gets 401 whatever it sent, see `crate::request::Caller`) and before any
//! body is read, so under `--auth none` it is the first check a route makes:
//!
//! - **Host**: the raw `Host` header must name the bound address, `localhost`, or a
//!   configured name (`--allowed-host`). A DNS-rebinding page reaches us under its own
//!   name, which fails this check.
//! - **Origin**: when present (browsers send it on every WebSocket upgrade, POST and
//!   cross-origin fetch), it must be the server's own origin (`http://` or `https://`
//!   followed by the request's `Host`) or one configured with `--allowed-origin`.
//!   Clients that are not browsers send no `Origin` and are unaffected.
//! - **Content-Type**: a POST, PUT or PATCH must declare `application/json`. Browsers
//!   send `text/plain`, form and multipart bodies cross-site without a CORS preflight;
//!   a JSON body needs one, which we never grant.
//!
//! A refusal is a JSON error body (`ORIGIN_NOT_ALLOWED`, `HOST_NOT_ALLOWED`: 403;
//! `UNSUPPORTED_MEDIA_TYPE`: 415).

use std::net::IpAddr;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest};
use tandem_protocol::ErrorCode;

use crate::error::ApiError;

/// What the guard lets through; built once at start from the bound address and flags.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The address the server is bound to. An unspecified address (`0.0.0.0`, `::`)
    /// accepts any IP literal as `Host`: a literal cannot be rebound.
    bound: IpAddr,
    /// Host names accepted besides the bound address and `localhost`, lowercase.
    hosts: Vec<String>,
    /// Origins accepted besides the server's own, lowercase, no trailing slash.
    origins: Vec<String>,
}

impl Guard {
    /// A guard for a server bound to `bound`, accepting `hosts` and `origins` too.
    pub fn new(bound: IpAddr, hosts: &[String], origins: &[String]) -> Arc<Guard> {
        Arc::new(Guard {
            bound,
            hosts: hosts
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
            origins: origins.iter().map(|o| normalize_origin(o)).collect(),
        })
    }

    /// Checks one request; `Err` is the answer to send instead of handling it.
    pub fn check(&self, req: &HttpRequest) -> Result<(), ApiError> {
        // The raw header, never `connection_info()`: that believes `X-Forwarded-Host`,
        // which a rebinding page may set (to the page it is same-origin).
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
            .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()))
            .unwrap_or_default();
        if !self.host_allowed(&host) {
            return Err(ApiError::new(
                ErrorCode::HostNotAllowed,
                format!(
                    "Host `{}` is not this server's address, localhost or an allowed name \
                     (--allowed-host)",
                    truncate(&host)
                ),
            ));
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin, &host) {
                return Err(ApiError::new(
                    ErrorCode::OriginNotAllowed,
                    format!(
                        "requests from web pages at `{}` are refused (--allowed-origin adds one)",
                        truncate(origin)
                    ),
                ));
            }
        }
        // The REST API and MCP check the media type themselves, once the caller is
        // known (`require_json`); any other route here.
        let routed = req.path().starts_with("/api/v1/") || req.path() == "/mcp";
        if !routed {
            require_json(req)?;
        }
        Ok(())
    }

    /// Is `host` (a `Host` header value, port optional) one we answer to?
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        if name.is_empty() {
            return false;
        }
        if name == "localhost" || self.hosts.contains(&name) {
            return true;
        }
        match name.parse::<IpAddr>() {
            Ok(ip) => self.bound.is_unspecified() || ip == self.bound,
            Err(_) => false,
        }
    }

    /// Is `origin` the server's own (as reached through `host`) or allow-listed?
    pub fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let origin = normalize_origin(origin);
        let host = host.trim().to_ascii_lowercase();
        if origin == format!("http://{host}") || origin == format!("https://{host}") {
            return true;
        }
        self.origins.contains(&origin)
    }
}

/// The middleware: refuses a request the [`Guard`] in the app data rejects, before
/// any route sees it. Registered with `.app_data(Data<Guard>)` and
/// `.wrap(from_fn(middleware))`.
pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let Some(guard) = req.app_data::<web::Data<Guard>>() else {
        return Err(
            ApiError::new(ErrorCode::Internal, "the request guard is not configured").into(),
        );
    };
    guard.check(req.request())?;
    next.call(req).await
}

/// Refuses a POST, PUT or PATCH not declared `application/json` (415): browsers send
/// `text/plain`, form and multipart bodies cross-site without a CORS preflight; a JSON
/// body needs one, which we never grant. Called after authentication and before the
/// body is read.
pub fn require_json(req: &HttpRequest) -> Result<(), ApiError> {
    // An upload's body is the file itself, with its own type; the token and the
    // Origin check keep other pages out.
    let needs_json = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH)
        && req.path() != "/api/v1/uploads";
    if needs_json && !is_json(req.headers().get(header::CONTENT_TYPE)) {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "a POST, PUT or PATCH must carry `Content-Type: application/json`",
        ));
    }
    Ok(())
}

/// The host part of a `Host` value: lowercase, without port, brackets or trailing dot.
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host.as_str(),
        }
    };
    name.trim_end_matches('.').to_string()
}

fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// `application/json`, with or without parameters (`; charset=utf-8`).
fn is_json(value: Option<&header::HeaderValue>) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// Header values are echoed in messages; keep them short.
fn truncate(s: &str) -> String {
    s.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn guard() -> Arc<Guard> {
        Guard::new(
            IpAddr::from([127, 0, 0, 1]),
            &["tandem.example".into()],
            &["https://app.example/".into()],
        )
    }

    #[test]
    fn hosts() {
        let g = guard();
        for ok in [
            "127.0.0.1:7420",
            "localhost:7420",
            "LOCALHOST",
            "tandem.example",
            "tandem.example.:80",
        ] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.example:7420",
            "",
            "10.0.0.1",
            "[::1]:7420",
            "localhost.evil",
        ] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
        let any = Guard::new(IpAddr::from([0, 0, 0, 0]), &[], &[]);
        assert!(any.host_allowed("10.1.2.3:7420") && any.host_allowed("[::1]:1"));
        assert!(!any.host_allowed("rebind.example"));
    }

    #[test]
    fn origins() {
        let g = guard();
        assert!(g.origin_allowed("http://127.0.0.1:7420", "127.0.0.1:7420"));
        assert!(g.origin_allowed("https://app.example", "127.0.0.1:7420"));
        assert!(!g.origin_allowed("http://127.0.0.1:9999", "127.0.0.1:7420"));
        assert!(!g.origin_allowed("null", "127.0.0.1:7420"));
        assert!(!g.origin_allowed("http://evil.example", "127.0.0.1:7420"));
    }

    #[test]
    fn content_type() {
        let g = guard();
        let post = |ct: Option<&str>| {
            let mut r = TestRequest::post().insert_header(("Host", "127.0.0.1:7420"));
            if let Some(ct) = ct {
                r = r.insert_header(("Content-Type", ct));
            }
            let req = r.to_http_request();
            g.check(&req)
                .and_then(|()| require_json(&req))
                .map_err(|e| e.code)
        };
        assert_eq!(post(Some("application/json")), Ok(()));
        assert_eq!(post(Some("Application/JSON; charset=utf-8")), Ok(()));
        for bad in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
        ] {
            assert_eq!(post(bad), Err(ErrorCode::UnsupportedMediaType), "{bad:?}");
        }
        let get = TestRequest::get()
            .insert_header(("Host", "127.0.0.1:7420"))
            .to_http_request();
        assert!(g.check(&get).is_ok());
    }
}
