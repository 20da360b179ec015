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

/// The params of `initialize` this server reads (the rest is ignored).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The revision the client asks for.
    #[serde(default)]
    pub protocol_version: Option<String>,
}

/// The result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The negotiated revision.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Who answers.
    pub server_info: Implementation,
    /// The session's system instruction (the Driver's, or an unpaired session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// What the server offers: tools only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// The tools capability.
    pub tools: ToolsCapability,
}

/// The tools capability: the list never changes within a call (it depends on the
/// session's role, which the client reads again with `tools/list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Always false: no `notifications/tools/list_changed`.
    pub list_changed: bool,
}

/// `{name, version}` of the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// "tandem".
    pub name: String,
    /// The server's version.
    pub version: String,
}

/// `ping` result: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {}

/// `tools/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListToolsResult {
    /// The tools the session's role is offered.
    pub tools: Vec<ToolDef>,
}

/// `tools/call` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolParams {
    /// The tool.
    pub name: String,
    /// Its arguments (an object; absent means none).
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// One content block of a tool result: always text here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
}

/// `tools/call` result. A tool's own failure is a result with `isError: true` (the
/// model reads the text), not a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The result as JSON text, or the error message.
    pub content: Vec<Content>,
    /// The result as JSON; on failure `{error: {code, message}}` (as REST errors), so
    /// programs get the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool refused or failed.
    pub is_error: bool,
}

impl CallToolResult {
    /// A success: the result as text and as structured content.
    pub fn success(result: Value) -> Self {
        CallToolResult {
            content: vec![Content::Text {
                text: result.to_string(),
            }],
            structured_content: Some(result),
            is_error: false,
        }
    }

    /// A failure: its message as text, and `{error: {code, message}}`.
    pub fn failure(code: crate::ErrorCode, message: String) -> Self {
        let body = crate::error::ErrorBody {
            error: crate::error::ErrorDetail {
                code,
                message: message.clone(),
                paths: None,
            },
        };
        CallToolResult {
            content: vec![Content::Text { text: message }],
            structured_content: serde_json::to_value(body).ok(),
            is_error: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shapes docs/PROTOCOL.md gives for `initialize` and `tools/call`.
    #[test]
    fn result_shapes() {
        let init = InitializeResult {
            protocol_version: "2025-06-18".into(),
            capabilities: ServerCapabilities::default(),
            server_info: Implementation {
                name: "tandem".into(),
                version: "1".into(),
            },
            instructions: None,
        };
        assert_eq!(
            serde_json::to_value(init).unwrap(),
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "tandem", "version": "1"}})
        );
        assert_eq!(
            serde_json::to_value(CallToolResult::success(json!({"a": 1}))).unwrap(),
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}],
                "structuredContent": {"a": 1}, "isError": false})
        );
        assert_eq!(
            serde_json::to_value(CallToolResult::failure(
                crate::ErrorCode::UnknownTool,
                "unknown tool `x`".into()
            ))
            .unwrap(),
            json!({"content": [{"type": "text", "text": "unknown tool `x`"}],
                "structuredContent": {"error": {"code": "UNKNOWN_TOOL", "message": "unknown tool `x`"}},
                "isError": true})
        );
    }

    #[test]
    fn answers_a_version_it_speaks() {
        assert_eq!(negotiate_version(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate_version(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate_version(Some("1999-01-01")), "2025-06-18");
        assert_eq!(negotiate_version(Some("")), "2025-06-18");
        assert_eq!(negotiate_version(None), "2025-06-18");
    }
}
