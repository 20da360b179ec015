//! The small part of MCP (JSON-RPC 2.0 over streamable HTTP) that `/mcp` speaks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC request or notification (a notification has no `id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcRequest {
    /// "2.0" (some clients omit it).
    #[serde(default)]
    pub jsonrpc: Option<String>,
    /// Request id; absent for notifications.
    #[serde(default)]
    pub id: Option<Value>,
    /// Method name.
    pub method: String,
    /// Parameters.
    #[serde(default)]
    pub params: Value,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// -32700 parse error, -32600 invalid request, -32601 method not found,
    /// -32602 invalid params.
    pub code: i64,
    /// Description.
    pub message: String,
}

/// A JSON-RPC response: exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcResponse {
    /// Always "2.0".
    pub jsonrpc: String,
    /// The request's id (null when it could not be read).
    pub id: Value,
    /// The result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl RpcResponse {
    /// A success.
    pub fn ok(id: Value, result: Value) -> Self {
        RpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// A failure.
    pub fn err(id: Value, code: i64, message: impl Into<String>) -> Self {
        RpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(RpcError {
                code,
                message: message.into(),
            }),
        }
    }
}

/// A tool as `tools/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDef {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
}

/// MCP revisions this server speaks, newest first. Every one of them has the methods
/// `/mcp` serves (`initialize`, `ping`, `tools/list`, `tools/call`) with the same shapes.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision to answer an `initialize` with: the client's when this server speaks
/// it, else the newest this server speaks (the client then decides whether it can go
/// on), as the MCP lifecycle rules ask.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|v| SUPPORTED_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(SUPPORTED_VERSIONS[0])
}

/// The result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The negotiated revision.
    pub protocol_version: String,
    /// What the server offers: `{tools: {listChanged: false}}`.
    pub capabilities: Value,
    /// `{name, version}`.
    pub server_info: Value,
    /// The session's system instruction (the Driver's, or an unpaired session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::negotiate_version;

    #[test]
    fn answers_a_version_it_speaks() {
        assert_eq!(negotiate_version(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate_version(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate_version(Some("1999-01-01")), "2025-06-18");
        assert_eq!(negotiate_version(Some("")), "2025-06-18");
        assert_eq!(negotiate_version(None), "2025-06-18");
    }
}
