//! `/mcp`: the agent tools over MCP's streamable HTTP transport (JSON-RPC 2.0 in a
//! POST, a JSON body back). Each vendor process gets a bearer token bound to its
//! session; every call runs as that session.
//!
//! Both eras of MCP are served on the one endpoint (see `tandem_protocol::mcp`): the
//! handshake revisions through `initialize`, and the stateless `2026-07-28`, whose
//! requests carry their revision (`server/discover` first, or straight away). Neither
//! keeps state between requests here: the token says which session a request is for.
//! `tools/call` runs as the `tool.call` request of the table through
//! `operation::execute`, as the session's owner (never as an admin).
//!
//! Hand-written rather than built on the official `rmcp` crate: its streamable-HTTP
//! server is a tower service meant for axum, and the actix-web transport is a separate
//! third-party crate (`rmcp-actix-web`) built around rmcp's session managers and SSE
//! streams, so adopting it would mean hosting rmcp's MCP sessions beside the
//! token-bound ones here for the few methods already served. It stays a candidate for
//! when the agent tools need server-initiated messages (progress, list-changed). The
//! official MCP Python SDK drives both eras in the end-to-end tests (`mcp_sdk`).

use actix_web::http::header::HeaderName;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use base64::Engine as _;
use serde_json::Value;
use tandem_protocol::client::ToolCallParams;
use tandem_protocol::ids::SessionId;
use tandem_protocol::mcp::{
    check_stateless, check_version, codes, describes_server, era_of, negotiate_version,
    stateless_status, supported_versions, Cacheable, CallToolParams, CallToolResult,
    DiscoverResult, EmptyResult, Era, Implementation, InitializeParams, InitializeResult,
    ListToolsResult, NameHeader, RoutingHeaders, RpcError, RpcRequest, RpcResponse,
    ServerCapabilities, Stateless, ToolDef, HANDSHAKE_VERSIONS,
};
use tandem_protocol::results::ToolCallResult;
use tandem_protocol::{ClientRequest, ErrorCode};

use crate::error::ApiError;
use crate::state::AppState;

/// Mounts `/mcp`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/mcp", web::post().to(post))
        .route("/mcp", web::to(not_allowed));
}

async fn not_allowed(req: HttpRequest) -> HttpResponse {
    // No server-initiated stream (2026-07-28 has none; the handshake revisions let a
    // server refuse the GET stream with 405): everything is request/response.
    HttpResponse::MethodNotAllowed()
        .insert_header(("Allow", "POST"))
        .json(tandem_protocol::error::ErrorBody {
            error: tandem_protocol::error::ErrorDetail {
                code: ErrorCode::MethodNotAllowed,
                message: format!("{} is not allowed on /mcp; POST JSON-RPC", req.method()),
                paths: None,
            },
        })
}

fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get("authorization")?.to_str().ok()?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(|t| t.trim().to_string())
}

/// One POST: the token (401 first), the media type, the body, then the message in
/// its era.
async fn post(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (session_id, who) = bearer(&req)
        .and_then(|t| state.runtime.mcp_caller(&t))
        .ok_or_else(|| {
            ApiError::new(ErrorCode::Unauthorized, "an MCP session token is required")
        })?;
    // After the token (401 first), before the body.
    crate::guard::require_json(&req)?;
    let body = payload
        .to_bytes_limited(state.max_frame_bytes)
        .await
        .map_err(|_| ApiError::new(ErrorCode::FrameTooLarge, "request is too large"))?
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, e.to_string()))?;
    let headers = routing_headers(&req);
    let request = match parse(&body) {
        Ok(r) => r,
        // Unreadable: only the header can tell the era.
        Err(e) => {
            let era = era_of(headers.protocol_version.as_deref(), &Value::Null);
            return Ok(answer(era, RpcResponse::error(Value::Null, e)));
        }
    };
    let era = era_of(headers.protocol_version.as_deref(), &request.params);
    // Which revision each client settles on is what an operator debugging a vendor's
    // MCP connection needs first.
    let version = headers.protocol_version.as_deref();
    tracing::debug!(?era, method = %request.method, ?version, "mcp request");
    let call = Call {
        state: &state,
        session_id: &session_id,
        who,
    };
    Ok(match era {
        Era::Handshake => handshake(&call, request).await,
        Era::Stateless => stateless(&call, request, &headers).await,
    })
}

/// The body as one JSON-RPC request or notification, or the error to answer (with a
/// null id: the request's could not be read).
fn parse(body: &[u8]) -> Result<RpcRequest, RpcError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| RpcError::new(codes::PARSE_ERROR, format!("parse error: {e}")))?;
    if value.is_array() {
        return Err(RpcError::new(
            codes::INVALID_REQUEST,
            "batches are not supported",
        ));
    }
    serde_json::from_value(value)
        .map_err(|e| RpcError::new(codes::INVALID_REQUEST, format!("invalid request: {e}")))
}

/// The `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers (header names are
/// case-insensitive; actix stores them lowercase).
fn routing_headers(req: &HttpRequest) -> RoutingHeaders {
    let names = ["mcp-protocol-version", "mcp-method", "mcp-name"];
    let duplicated = names
        .into_iter()
        .find(|n| req.headers().get_all(HeaderName::from_static(n)).count() > 1);
    let text = |n: &str| {
        req.headers()
            .get(n)
            .map(|v| v.to_str().map(String::from).unwrap_or_default())
    };
    RoutingHeaders {
        protocol_version: text("mcp-protocol-version"),
        method: text("mcp-method"),
        name: match text("mcp-name") {
            None => NameHeader::Absent,
            Some(v) => decode_name(&v),
        },
        duplicated,
    }
}

/// An `Mcp-Name` value, decoded when the client used the `=?base64?...?=` form (which
/// it must for a value that is not plain printable ASCII).
fn decode_name(value: &str) -> NameHeader {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return NameHeader::Value(value.to_string());
    };
    base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .map_or(NameHeader::Malformed, NameHeader::Value)
}

/// What every method needs: the server's state and the session the token names.
struct Call<'a> {
    /// The runtime, for the session's tools.
    state: &'a AppState,
    /// The session the bearer token is bound to: every call runs as it.
    session_id: &'a SessionId,
    /// Who the calls act as: the session's owner.
    who: tandem_actors::Principal,
}

impl Call<'_> {
    /// The session's tools and system instruction.
    async fn tools(&self) -> Result<(Vec<ToolDef>, Option<String>), RpcError> {
        self.state
            .runtime
            .tools_for_session(self.session_id)
            .await
            .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, e.to_string()))
    }

    /// The session's system instruction, if it has one (and it can be read).
    async fn instructions(&self) -> Option<String> {
        self.tools().await.ok().and_then(|(_, i)| i)
    }

    /// `tools/call`: a refused or failed tool is a result the model reads, not an error.
    async fn call_tool(&self, params: Value) -> Result<CallToolResult, RpcError> {
        let params: CallToolParams = serde_json::from_value(params).map_err(|e| {
            RpcError::new(
                codes::INVALID_PARAMS,
                format!("tools/call needs a tool `name`: {e}"),
            )
        })?;
        // The `tool.call` request of the table, as the session's owner: the one
        // operation path (its rules, durability and node) for MCP too.
        let request = ClientRequest::ToolCall(ToolCallParams {
            session_id: self.session_id.clone(),
            name: params.name,
            arguments: params.arguments.unwrap_or(Value::Null),
        });
        let answer = crate::operation::execute(&self.state.context(), &self.who, request)
            .await
            .and_then(|text| {
                serde_json::from_str::<ToolCallResult>(&text)
                    .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
            });
        Ok(match answer {
            Ok(done) if !done.is_error => CallToolResult::success(done.result),
            Ok(failed) => CallToolResult::failure(
                failed.code.unwrap_or(ErrorCode::Internal),
                failed
                    .result
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_default(),
            ),
            Err(e) => CallToolResult::failure(e.code, e.message),
        })
    }
}

/// The server's identity at `version`.
fn server_info(version: &str) -> Implementation {
    Implementation {
        name: "tandem".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        description: describes_server(version).then(|| {
            "tandem's agent tools (delegation to a Worker, proposals, spawned sessions) \
             for the session this token is bound to"
                .to_string()
        }),
    }
}

/// A handshake-era message: `initialize`, `ping`, `tools/list`, `tools/call`.
/// JSON-RPC errors are answered 200, as before the stateless era.
async fn handshake(call: &Call<'_>, request: RpcRequest) -> HttpResponse {
    let Some(id) = request.id.clone() else {
        // Notifications (`notifications/initialized`, ...) need no answer.
        return HttpResponse::Accepted().finish();
    };
    let result = match request.method.as_str() {
        "initialize" => initialize(call, request.params).await,
        "ping" => to_value(EmptyResult {}),
        "tools/list" => match call.tools().await {
            Ok((tools, _)) => to_value(ListToolsResult { tools }),
            Err(e) => Err(e),
        },
        "tools/call" => match call.call_tool(request.params).await {
            Ok(result) => to_value(result),
            Err(e) => Err(e),
        },
        other => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        )),
    };
    answer(Era::Handshake, respond(id, result))
}

/// `initialize`: the client's revision when this server speaks it through the
/// handshake, else the newest one that it does.
async fn initialize(call: &Call<'_>, params: Value) -> Result<Value, RpcError> {
    // Params this server does not read are ignored; unreadable ones count as absent
    // (the answer is then the newest revision).
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let version = negotiate_version(params.protocol_version.as_deref());
    to_value(InitializeResult {
        protocol_version: version.to_string(),
        capabilities: ServerCapabilities::default(),
        server_info: server_info(version),
        instructions: call.instructions().await,
    })
}

/// A 2026-07-28 message: its revision, headers and envelope are checked, then
/// `server/discover`, `tools/list` or `tools/call` answers with `resultType` and the
/// server's identity in `_meta`.
async fn stateless(call: &Call<'_>, request: RpcRequest, headers: &RoutingHeaders) -> HttpResponse {
    let Some(id) = request.id.clone() else {
        // The revision defines no client notifications over HTTP; one is acknowledged
        // and dropped (as the official SDK's server does), when its revision is spoken.
        let version = headers.protocol_version.as_deref().unwrap_or_default();
        return match check_version(version) {
            Ok(()) => HttpResponse::Accepted().finish(),
            Err(e) => answer(Era::Stateless, RpcResponse::error(Value::Null, e)),
        };
    };
    let version = match check_stateless(&request, headers) {
        Ok(v) => v,
        Err(e) => return answer(Era::Stateless, RpcResponse::error(id, e)),
    };
    let info = server_info(&version);
    let result = match request.method.as_str() {
        "server/discover" => {
            let discover = DiscoverResult {
                supported_versions: supported_versions(),
                capabilities: ServerCapabilities::default(),
                instructions: call.instructions().await,
            };
            to_value(Stateless::complete(Cacheable::per_session(discover), info))
        }
        "tools/list" => match call.tools().await {
            Ok((tools, _)) => to_value(Stateless::complete(
                Cacheable::per_session(ListToolsResult { tools }),
                info,
            )),
            Err(e) => Err(e),
        },
        "tools/call" => match call.call_tool(request.params).await {
            Ok(result) => to_value(Stateless::complete(result, info)),
            Err(e) => Err(e),
        },
        other => Err(not_stateless(other, &version)),
    };
    answer(Era::Stateless, respond(id, result))
}

/// -32601 for a method `version` does not have, saying where the handshake ones went.
fn not_stateless(method: &str, version: &str) -> RpcError {
    let message = match method {
        "initialize" => format!(
            "initialize is not a method of {version} (use server/discover, or send \
             initialize without the stateless headers and _meta to speak {})",
            HANDSHAKE_VERSIONS.join(", ")
        ),
        "ping" => format!("ping is not a method of {version}"),
        other => format!("method not found: {other}"),
    };
    RpcError::new(codes::METHOD_NOT_FOUND, message)
}

/// A result as JSON, or an internal error if it cannot be.
fn to_value<T: serde::Serialize>(result: T) -> Result<Value, RpcError> {
    serde_json::to_value(result).map_err(|e| {
        RpcError::new(
            codes::INTERNAL_ERROR,
            format!("result not serializable: {e}"),
        )
    })
}

fn respond(id: Value, result: Result<Value, RpcError>) -> RpcResponse {
    match result {
        Ok(value) => RpcResponse::ok(id, value),
        Err(e) => RpcResponse::error(id, e),
    }
}

/// The HTTP answer: 200 with the JSON-RPC body, except a stateless error, whose
/// status the 2026-07-28 transport gives (400, or 404 for an unknown method).
fn answer(era: Era, response: RpcResponse) -> HttpResponse {
    let status = match (era, &response.error) {
        (Era::Stateless, Some(e)) => stateless_status(e.code),
        _ => 200,
    };
    HttpResponse::build(StatusCode::from_u16(status).unwrap_or(StatusCode::OK)).json(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_decoded_from_the_base64_form() {
        assert_eq!(
            decode_name("send_to_partner"),
            NameHeader::Value("send_to_partner".into())
        );
        // "Hello, 世界" as the transport's own example encodes it.
        assert_eq!(
            decode_name("=?base64?SGVsbG8sIOS4lueVjA==?="),
            NameHeader::Value("Hello, 世界".into())
        );
        assert_eq!(decode_name("=?base64?not base64!?="), NameHeader::Malformed);
        // Valid base64, but not UTF-8.
        assert_eq!(decode_name("=?base64?/w==?="), NameHeader::Malformed);
    }
}
