//! `/mcp`: the agent tools over MCP's streamable HTTP transport (JSON-RPC 2.0 in a
//! POST, a JSON body back). Each vendor process gets a bearer token bound to its
//! session; every call runs as that session.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;
use tandem_protocol::mcp::{
    negotiate_version, CallToolParams, CallToolResult, EmptyResult, Implementation,
    InitializeParams, InitializeResult, ListToolsResult, RpcRequest, RpcResponse,
    ServerCapabilities,
};
use tandem_protocol::ErrorCode;

use crate::error::ApiError;
use crate::state::AppState;

/// Mounts `/mcp`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/mcp", web::post().to(post))
        .route("/mcp", web::to(not_allowed));
}

async fn not_allowed(req: HttpRequest) -> HttpResponse {
    // No server-initiated stream: everything is request/response.
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

async fn post(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = bearer(&req)
        .and_then(|t| state.runtime.mcp_session(&t))
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
    let value: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return Ok(rpc(RpcResponse::err(
                Value::Null,
                -32700,
                format!("parse error: {e}"),
            )))
        }
    };
    if value.is_array() {
        return Ok(rpc(RpcResponse::err(
            Value::Null,
            -32600,
            "batches are not supported",
        )));
    }
    let request: RpcRequest = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            return Ok(rpc(RpcResponse::err(
                Value::Null,
                -32600,
                format!("invalid request: {e}"),
            )))
        }
    };
    let Some(id) = request.id.clone() else {
        // Notifications (`notifications/initialized`, ...) need no answer.
        return Ok(HttpResponse::Accepted().finish());
    };
    let rt = &state.runtime;
    let response = match request.method.as_str() {
        "initialize" => {
            // Params this server does not read are ignored; unreadable ones count as
            // absent (the answer is then the newest revision).
            let params: InitializeParams =
                serde_json::from_value(request.params).unwrap_or_default();
            let instructions = rt
                .tools_for_session(&session_id)
                .await
                .ok()
                .and_then(|(_, i)| i);
            ok(
                id,
                InitializeResult {
                    protocol_version: negotiate_version(params.protocol_version.as_deref())
                        .to_string(),
                    capabilities: ServerCapabilities::default(),
                    server_info: Implementation {
                        name: "tandem".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    },
                    instructions,
                },
            )
        }
        "ping" => ok(id, EmptyResult {}),
        "tools/list" => match rt.tools_for_session(&session_id).await {
            Ok((tools, _)) => ok(id, ListToolsResult { tools }),
            Err(e) => RpcResponse::err(id, -32603, e.to_string()),
        },
        "tools/call" => {
            let params: CallToolParams = match serde_json::from_value(request.params) {
                Ok(p) => p,
                Err(e) => {
                    return Ok(rpc(RpcResponse::err(
                        id,
                        -32602,
                        format!("tools/call needs a tool `name`: {e}"),
                    )))
                }
            };
            let arguments = params.arguments.unwrap_or(Value::Null);
            let result = match rt.call_tool_as(&session_id, &params.name, arguments).await {
                Ok(value) => CallToolResult::success(value),
                Err(e) => CallToolResult::failure(e.code(), e.to_string()),
            };
            ok(id, result)
        }
        other => RpcResponse::err(id, -32601, format!("method not found: {other}")),
    };
    Ok(rpc(response))
}

/// A success answer carrying `result`.
fn ok<T: serde::Serialize>(id: Value, result: T) -> RpcResponse {
    match serde_json::to_value(result) {
        Ok(value) => RpcResponse::ok(id, value),
        Err(e) => RpcResponse::err(id, -32603, format!("result not serializable: {e}")),
    }
}

fn rpc(response: RpcResponse) -> HttpResponse {
    HttpResponse::Ok().json(response)
}
