//! REST requests for sessions of other cluster nodes (`--nats`).
//!
//! A request under `/api/v1/sessions/{id}` for a session another node owns (or
//! `DELETE /api/v1/pairs/{id}` for a pair that runs on another node: its Driver's) is
//! authenticated here, then sent to the owner over NATS request/reply (the same
//! subject as forwarded WebSocket requests, [`crate::cluster_wire::Call::Rest`]):
//! method, path and query, content type and body, with the caller's identity. The
//! owner runs it through its own routes, by sending it to its own listener on
//! loopback ([`Loopback`]) marked with a per-process secret that stands for "already
//! authenticated as this user", and returns status, content type and body, which go
//! to the client unchanged: the owner's answer, errors included. A session whose
//! node's lease lapsed, or a node that does not answer, is `503 NODE_UNAVAILABLE`.
//!
//! Without `--nats` the middleware looks at one `None` and passes the request on, and
//! [`auth::forwarded_principal`] at one unset `OnceLock`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse, ResponseError};
use serde::{Deserialize, Serialize};
use tandem_actors::cluster::Owner;
use tandem_actors::Principal;
use tandem_protocol::error::{ErrorBody, ErrorDetail};
use tandem_protocol::ErrorCode;

use crate::auth;
use crate::cluster_wire::{Call, Forward};
use crate::error::ApiError;
use crate::state::AppState;

/// How long a forwarded REST request may take (on either side).
const TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer passed back; NATS's own limit (1 MiB by default) applies too.
const MAX_ANSWER: usize = 64 << 20;

/// A REST request run on this node for a caller another node authenticated.
#[derive(Debug)]
pub struct RestCall {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Path and query.
    pub path: String,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: String,
}

/// The owner's answer to a forwarded REST request, passed to the client unchanged.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestAnswer {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type` of the body.
    pub content_type: Option<String>,
    /// The body (REST answers are JSON text).
    pub body: String,
}

impl RestAnswer {
    fn error(code: ErrorCode, message: String) -> RestAnswer {
        RestAnswer {
            status: code.http_status(),
            content_type: Some("application/json".into()),
            body: serde_json::to_string(&ErrorBody {
                error: ErrorDetail {
                    code,
                    message,
                    paths: None,
                },
            })
            .unwrap_or_default(),
        }
    }
}

/// This server's own listener, where forwarded REST requests run.
pub struct Loopback {
    base: String,
    client: awc::Client,
    /// The largest message the NATS server carries: a larger answer is refused here
    /// with a clear error instead of never arriving.
    max_payload: usize,
}

impl Loopback {
    /// For a server listening on `addr`, answering through a NATS server that
    /// carries messages of at most `max_payload` bytes; makes this process's
    /// forwarding secret.
    pub fn new(addr: SocketAddr, max_payload: usize) -> Result<Loopback, String> {
        crate::auth::make_forward_secret()?;
        let ip = match addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        Ok(Loopback {
            base: format!("http://{}", SocketAddr::new(ip, addr.port())),
            client: awc::Client::builder().timeout(TIMEOUT).finish(),
            max_payload,
        })
    }

    /// Runs `call` as `who` through this server's routes; returns the
    /// [`RestAnswer`] as JSON.
    pub async fn run(&self, who: &Principal, call: RestCall) -> String {
        let answer = match self.send(who, call).await {
            Ok(answer) => answer,
            Err(e) => RestAnswer::error(ErrorCode::Internal, e),
        };
        let json = serde_json::to_string(&answer).unwrap_or_default();
        // Room for the reply's headers and subject.
        if json.len() + 1024 > self.max_payload {
            let too_large = RestAnswer::error(
                ErrorCode::FrameTooLarge,
                format!(
                    "the answer ({} bytes) is larger than the cluster's NATS server carries \
                     ({} bytes); ask for less (events: a smaller `limit`)",
                    json.len(),
                    self.max_payload
                ),
            );
            return serde_json::to_string(&too_large).unwrap_or_default();
        }
        json
    }

    async fn send(&self, who: &Principal, call: RestCall) -> Result<RestAnswer, String> {
        let Some(secret) = crate::auth::forward_secret() else {
            return Err("no forwarding secret".into());
        };
        if !call.path.starts_with("/api/v1/sessions/") && !call.path.starts_with("/api/v1/pairs/") {
            return Err(format!("{} is not a session's or a pair's path", call.path));
        }
        let method = actix_web::http::Method::from_bytes(call.method.as_bytes())
            .map_err(|e| format!("bad method {}: {e}", call.method))?;
        let mut request = self
            .client
            .request(method, format!("{}{}", self.base, call.path))
            .insert_header((auth::SECRET_HEADER, secret))
            .insert_header((auth::USER_HEADER, who.user_id.as_str()))
            .insert_header((auth::ADMIN_HEADER, if who.admin { "1" } else { "0" }));
        if let Some(ct) = &call.content_type {
            request = request.insert_header(("content-type", ct.as_str()));
        }
        let mut response = request
            .send_body(call.body)
            .await
            .map_err(|e| format!("forwarded request: {e}"))?;
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response
            .body()
            .limit(MAX_ANSWER)
            .await
            .map_err(|e| format!("forwarded answer: {e}"))?;
        Ok(RestAnswer {
            status: response.status().as_u16(),
            content_type,
            body: String::from_utf8(body.to_vec()).map_err(|e| e.to_string())?,
        })
    }
}

/// The session a REST path is about, if it is `/api/v1/sessions/{id}[/...]`.
fn session_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/v1/sessions/")?;
    let id = rest.split('/').next()?;
    (!id.is_empty() && id != "running").then_some(id)
}

/// The upload a path names, if it is `/api/v1/sessions/{id}/uploads/{upload}`.
fn upload_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/v1/sessions/")?;
    let mut parts = rest.split('/');
    let (_, kind, upload) = (parts.next()?, parts.next()?, parts.next()?);
    (kind == "uploads" && !upload.is_empty() && parts.next().is_none()).then_some(upload)
}

/// The pair a REST path closes, if it is `DELETE /api/v1/pairs/{id}`.
fn pair_of<'a>(method: &actix_web::http::Method, path: &'a str) -> Option<&'a str> {
    let id = path.strip_prefix("/api/v1/pairs/")?;
    (method == actix_web::http::Method::DELETE && !id.is_empty() && !id.contains('/')).then_some(id)
}

/// Where a request runs: the owner of the session it is about, or the node of the
/// pair it closes (its Driver's node); `Owner::Local` for everything else.
fn owner_of(
    state: &AppState,
    cluster: &tandem_actors::cluster::Cluster,
    req: &ServiceRequest,
) -> (Owner, String) {
    if let Some(id) = session_of(req.path()) {
        return (cluster.owner(id), id.to_string());
    }
    match pair_of(req.method(), req.path()) {
        Some(id) if state.runtime.pair_addr(id).is_none() => {
            (cluster.pair_owner(id), id.to_string())
        }
        _ => (Owner::Local, String::new()),
    }
}

/// The middleware: sends a request about another node's session (or pair) there;
/// every other request goes on here.
pub async fn middleware(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let target = req
        .app_data::<web::Data<AppState>>()
        .filter(|state| state.cluster.is_some())
        .cloned()
        .filter(|_| auth::forwarded_principal(req.request()).is_none());
    let Some(state) = target else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let Some(cluster) = state.cluster.as_ref() else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let (owner, id) = owner_of(&state, cluster, &req);
    let node = match owner {
        Owner::Local | Owner::Unknown => return Ok(next.call(req).await?.map_into_left_body()),
        Owner::Unavailable { node } => {
            let e = ApiError::new(
                ErrorCode::NodeUnavailable,
                format!("node {node} is unavailable (its lease lapsed), so {id} cannot be reached"),
            );
            return Ok(req.into_response(e.error_response()).map_into_right_body());
        }
        Owner::Remote { node, .. } => node,
    };
    if let Some(upload) = upload_of(req.path()).filter(|_| req.method() == "GET") {
        // Bytes, not JSON: read from the owner in parts and served as here.
        let upload = upload.to_string();
        let served = async {
            let who = auth::caller(req.request(), &state.runtime, state.auth)?;
            crate::cluster_uploads::fetch(cluster, &who, &node, &id, &upload)
                .await
                .map_err(|(code, message)| ApiError::new(code, message))
        };
        let response = match served.await {
            Ok((mime, bytes)) => crate::uploads::serve(&mime, bytes),
            Err(e) => e.error_response(),
        };
        return Ok(req.into_response(response).map_into_right_body());
    }
    let answer = async {
        let who = auth::caller(req.request(), &state.runtime, state.auth)?;
        // As `crate::request::Caller` does here: after the token, before the body.
        crate::request::usable_target(req.request())?;
        crate::guard::require_json(req.request())?;
        let body = req
            .extract::<web::Payload>()
            .await
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
            .to_bytes_limited(state.max_frame_bytes)
            .await
            .map_err(|_| {
                ApiError::new(
                    ErrorCode::FrameTooLarge,
                    format!("body is larger than {} bytes", state.max_frame_bytes),
                )
            })?
            .map_err(|e| {
                ApiError::new(
                    ErrorCode::InvalidJson,
                    format!("body could not be read: {e}"),
                )
            })?;
        let body = String::from_utf8(body.to_vec())
            .map_err(|_| ApiError::new(ErrorCode::InvalidJson, "body is not UTF-8"))?;
        // Uploads the body names live here; the owner resolves the message.
        crate::cluster_uploads::hand_over(cluster, &state.runtime, &who, &node, &body)
            .await
            .map_err(|(code, message)| ApiError::new(code, message))?;
        let path = match req.query_string() {
            "" => req.path().to_string(),
            q => format!("{}?{q}", req.path()),
        };
        let forward = Forward {
            user_id: who.user_id,
            admin: who.admin,
            call: Call::Rest {
                method: req.method().to_string(),
                path,
                content_type: req
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                body,
            },
        };
        let payload = serde_json::to_vec(&forward)
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        let reply = cluster
            .request(&node, payload, TIMEOUT)
            .await
            .map_err(|e| {
                tracing::warn!(%node, error = %e, "forwarded REST request failed");
                ApiError::new(
                    ErrorCode::NodeUnavailable,
                    format!("node {node} did not answer for {id}: {e}"),
                )
            })?;
        serde_json::from_slice::<RestAnswer>(&reply).map_err(|e| {
            ApiError::new(
                ErrorCode::Internal,
                format!("bad answer from node {node}: {e}"),
            )
        })
    };
    let response = match answer.await {
        Ok(answer) => {
            let status = actix_web::http::StatusCode::from_u16(answer.status)
                .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = HttpResponse::build(status);
            if let Some(ct) = answer.content_type {
                response.insert_header(("content-type", ct));
            }
            response.body(answer.body)
        }
        Err(e) => e.error_response(),
    };
    Ok(req.into_response(response).map_into_right_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_session_of_a_path() {
        assert_eq!(session_of("/api/v1/sessions/ses_1"), Some("ses_1"));
        assert_eq!(session_of("/api/v1/sessions/ses_1/events"), Some("ses_1"));
        assert_eq!(session_of("/api/v1/sessions/running"), None);
        assert_eq!(session_of("/api/v1/sessions"), None);
        assert_eq!(session_of("/api/v1/sessions/"), None);
        assert_eq!(session_of("/api/v1/pairs"), None);
    }

    #[test]
    fn finds_the_pair_a_path_closes() {
        use actix_web::http::Method;
        assert_eq!(
            pair_of(&Method::DELETE, "/api/v1/pairs/pair_1"),
            Some("pair_1")
        );
        assert_eq!(pair_of(&Method::GET, "/api/v1/pairs/pair_1"), None);
        assert_eq!(pair_of(&Method::DELETE, "/api/v1/pairs/"), None);
        assert_eq!(pair_of(&Method::DELETE, "/api/v1/pairs/a/b"), None);
        assert_eq!(pair_of(&Method::DELETE, "/api/v1/pairs"), None);
    }

    #[test]
    fn finds_the_upload_of_a_path() {
        assert_eq!(
            upload_of("/api/v1/sessions/ses_1/uploads/up_a"),
            Some("up_a")
        );
        assert_eq!(upload_of("/api/v1/sessions/ses_1/uploads/"), None);
        assert_eq!(upload_of("/api/v1/sessions/ses_1/uploads/up_a/x"), None);
        assert_eq!(upload_of("/api/v1/sessions/ses_1/events"), None);
        assert_eq!(upload_of("/api/v1/uploads/up_a"), None);
    }
}
