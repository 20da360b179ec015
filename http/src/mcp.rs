//! `/mcp`: the agent tools over MCP's streamable HTTP transport (JSON-RPC 2.0 in a
//! POST, a JSON body back). Each vendor process gets a bearer token bound to its
//! session; every call runs as that session.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};
use tandem_protocol::mcp::{negotiate_version, InitializeResult, RpcRequest, RpcResponse};
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
            let requested = request
                .params
                .get("protocolVersion")
                .and_then(Value::as_str);
            let instructions = rt
                .tools_for_session(&session_id)
                .await
                .ok()
                .and_then(|(_, i)| i);
            let result = InitializeResult {
                protocol_version: negotiate_version(requested).to_string(),
                capabilities: json!({"tools": {"listChanged": false}}),
                server_info: json!({"name": "tandem", "version": env!("CARGO_PKG_VERSION")}),
                instructions,
            };
            RpcResponse::ok(id, serde_json::to_value(result).unwrap_or_default())
        }
        "ping" => RpcResponse::ok(id, json!({})),
        "tools/list" => match rt.tools_for_session(&session_id).await {
            Ok((tools, _)) => RpcResponse::ok(id, json!({ "tools": tools })),
            Err(e) => RpcResponse::err(id, -32603, e),
        },
        "tools/call" => {
            let Some(name) = request.params.get("name").and_then(Value::as_str) else {
                return Ok(rpc(RpcResponse::err(
                    id,
                    -32602,
                    "tools/call needs a tool `name`",
                )));
            };
            let arguments = request
                .params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let result = match rt.call_tool_as(&session_id, name, arguments).await {
                Ok(value) => json!({
                    "content": [{"type": "text", "text": value.to_string()}],
                    "structuredContent": value,
                    "isError": false,
                }),
                Err(message) => json!({
                    "content": [{"type": "text", "text": message}],
                    "isError": true,
                }),
            };
            RpcResponse::ok(id, result)
        }
        other => RpcResponse::err(id, -32601, format!("method not found: {other}")),
    };
    Ok(rpc(response))
}

fn rpc(response: RpcResponse) -> HttpResponse {
    HttpResponse::Ok().json(response)
}
