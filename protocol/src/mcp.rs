//! The small part of MCP (JSON-RPC 2.0 over streamable HTTP) that `/mcp` speaks.
//!
//! Two eras of the protocol share the endpoint. The handshake revisions
//! (`2025-11-25` back to `2024-11-05`) open with `initialize`; the stateless revision
//! `2026-07-28` has no handshake: every request carries its revision and the client's
//! capabilities in `params._meta`, mirrored in HTTP headers, and `server/discover`
//! tells a client what the server speaks. [`era_of`] says which era a request is in;
//! [`check_stateless`] runs the checks a stateless request must pass.

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

/// JSON-RPC and MCP error codes `/mcp` answers with.
pub mod codes {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The body is JSON but not one request or notification (a batch, a response).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method (in the request's era).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params are malformed (a `tools/call` without a name, a stateless request
    /// without its `_meta` envelope).
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// 2026-07-28: the HTTP headers are missing, malformed or differ from the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request's revision is not one this server speaks.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// One of [`codes`].
    pub code: i64,
    /// Description.
    pub message: String,
    /// Details: for [`codes::UNSUPPORTED_PROTOCOL_VERSION`], [`UnsupportedVersionData`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// [`codes::UNSUPPORTED_PROTOCOL_VERSION`] naming the revisions this server speaks.
    pub fn unsupported_version(requested: &str) -> Self {
        let data = UnsupportedVersionData {
            supported: supported_versions(),
            requested: requested.to_string(),
        };
        RpcError {
            code: codes::UNSUPPORTED_PROTOCOL_VERSION,
            message: format!("unsupported protocol version `{requested}`"),
            data: serde_json::to_value(data).ok(),
        }
    }
}

/// The `data` of [`codes::UNSUPPORTED_PROTOCOL_VERSION`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedVersionData {
    /// Every revision this server speaks, newest first (the handshake ones through
    /// `initialize`).
    pub supported: Vec<String>,
    /// The revision the request named.
    pub requested: String,
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
        RpcResponse::error(id, RpcError::new(code, message))
    }

    /// A failure with a prepared error object.
    pub fn error(id: Value, error: RpcError) -> Self {
        RpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(error),
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

/// Revisions reached through `initialize`, newest first. Every one of them has the
/// methods `/mcp` serves (`initialize`, `ping`, `tools/list`, `tools/call`) with the
/// same shapes; `2025-11-25` adds an optional `description` to `serverInfo`.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Stateless revisions, newest first: no `initialize`, the revision in every request.
pub const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];

/// Every revision this server speaks, newest first, as `server/discover` and
/// [`codes::UNSUPPORTED_PROTOCOL_VERSION`] list them (the spec's example lists the
/// handshake revisions a dual-era server speaks too, so a client that cannot speak a
/// stateless one learns it may fall back to `initialize`).
pub fn supported_versions() -> Vec<String> {
    STATELESS_VERSIONS
        .iter()
        .chain(HANDSHAKE_VERSIONS.iter())
        .map(|v| v.to_string())
        .collect()
}

/// The revision to answer an `initialize` with: the client's when this server speaks
/// it through `initialize`, else the newest one it does (the client then decides
/// whether it can go on), as the MCP lifecycle rules ask.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|v| HANDSHAKE_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(HANDSHAKE_VERSIONS[0])
}

/// Whether `serverInfo` may carry `description` at `version`: the field came with
/// `2025-11-25`, so older clients are answered as before.
pub fn describes_server(version: &str) -> bool {
    version == "2025-11-25" || STATELESS_VERSIONS.contains(&version)
}

/// `_meta` key of a stateless request's revision.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a stateless request's client capabilities.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the server's identity on a stateless result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Which of the protocol's two eras a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` first; the `MCP-Protocol-Version` header, if any, names a handshake
    /// revision.
    Handshake,
    /// `2026-07-28` and later: the request names its revision itself.
    Stateless,
}

/// The era of a request from its `MCP-Protocol-Version` header and its params. A
/// header naming a handshake revision keeps the request there; any other header value
/// (a stateless revision, or one this server does not know, which the stateless checks
/// then refuse by name) makes it stateless. Without the header, a `_meta` carrying the
/// revision key makes it stateless: that key is reserved to the stateless envelope, while
/// handshake requests may carry other `_meta` (a `progressToken`).
pub fn era_of(header_version: Option<&str>, params: &Value) -> Era {
    match header_version {
        Some(v) if HANDSHAKE_VERSIONS.contains(&v) => Era::Handshake,
        Some(_) => Era::Stateless,
        None if params
            .get("_meta")
            .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
            .is_some() =>
        {
            Era::Stateless
        }
        None => Era::Handshake,
    }
}

/// The `Mcp-Name` header as the transport read it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NameHeader {
    /// Not sent.
    #[default]
    Absent,
    /// Sent, and decoded when it used the `=?base64?...?=` form.
    Value(String),
    /// Sent in the base64 form, but not valid base64 of UTF-8.
    Malformed,
}

/// The routing headers of one request (2026-07-28 mirrors body fields in them so that
/// intermediaries can route without reading the body; the server checks they agree).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoutingHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name`.
    pub name: NameHeader,
    /// The first of the three that was sent more than once: first-copy and last-copy
    /// readers would disagree on it, so such a request is refused.
    pub duplicated: Option<&'static str>,
}

/// The methods whose `Mcp-Name` header mirrors a body param, and that param.
fn named_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// The revision a stateless request may be answered in, or the error (with the HTTP
/// status the spec gives it, see [`stateless_status`]) it must get instead. In order,
/// first failure wins: a routing header sent twice (-32020); a header revision this
/// server does not speak statelessly (-32022); a `_meta` without the revision string
/// and the client capabilities object (-32602); headers that are missing or differ
/// from the body (-32020); a body revision not spoken (-32022).
pub fn check_stateless(request: &RpcRequest, headers: &RoutingHeaders) -> Result<String, RpcError> {
    if let Some(name) = headers.duplicated {
        return Err(mismatch(format!(
            "the {name} header is sent more than once"
        )));
    }
    if let Some(v) = headers.protocol_version.as_deref() {
        check_version(v)?;
    }
    let version = envelope_version(&request.params)?;
    check_headers(request, headers, &version)?;
    check_version(&version)?;
    Ok(version)
}

/// Refuses a revision that is not a stateless one this server speaks.
pub fn check_version(version: &str) -> Result<(), RpcError> {
    if STATELESS_VERSIONS.contains(&version) {
        Ok(())
    } else {
        Err(RpcError::unsupported_version(version))
    }
}

/// The revision from `params._meta`, which must also declare the client's capabilities.
fn envelope_version(params: &Value) -> Result<String, RpcError> {
    let meta = params
        .get("_meta")
        .filter(|m| m.is_object())
        .ok_or_else(|| {
            RpcError::new(
                codes::INVALID_PARAMS,
                format!(
                    "params._meta must be an object carrying `{PROTOCOL_VERSION_KEY}` and \
                 `{CLIENT_CAPABILITIES_KEY}`"
                ),
            )
        })?;
    let version = meta
        .get(PROTOCOL_VERSION_KEY)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            RpcError::new(
                codes::INVALID_PARAMS,
                format!("params._meta needs `{PROTOCOL_VERSION_KEY}` as a string"),
            )
        })?;
    if !meta
        .get(CLIENT_CAPABILITIES_KEY)
        .is_some_and(Value::is_object)
    {
        return Err(RpcError::new(
            codes::INVALID_PARAMS,
            format!("params._meta needs `{CLIENT_CAPABILITIES_KEY}` as an object"),
        ));
    }
    Ok(version.to_string())
}

/// The headers must be present and agree with the body: the revision, the method and,
/// for the named methods, the name.
fn check_headers(
    request: &RpcRequest,
    headers: &RoutingHeaders,
    version: &str,
) -> Result<(), RpcError> {
    agree(
        "MCP-Protocol-Version",
        headers.protocol_version.as_deref(),
        version,
    )?;
    agree("Mcp-Method", headers.method.as_deref(), &request.method)?;
    let Some(param) = named_param(&request.method) else {
        return Ok(());
    };
    // A body without the param is the method's own error (-32602), not a mismatch.
    let Some(body) = request.params.get(param).and_then(Value::as_str) else {
        return Ok(());
    };
    match &headers.name {
        NameHeader::Value(v) => agree("Mcp-Name", Some(v), body),
        NameHeader::Absent => agree("Mcp-Name", None, body),
        NameHeader::Malformed => Err(mismatch("the Mcp-Name header is not valid base64 of UTF-8")),
    }
}

/// One header against its body value.
fn agree(header: &str, sent: Option<&str>, body: &str) -> Result<(), RpcError> {
    match sent {
        None => Err(mismatch(format!("the {header} header is required"))),
        Some(v) if v != body => Err(mismatch(format!(
            "the {header} header `{v}` does not match the body's `{body}`"
        ))),
        Some(_) => Ok(()),
    }
}

fn mismatch(message: impl Into<String>) -> RpcError {
    RpcError::new(codes::HEADER_MISMATCH, message)
}

/// The HTTP status of a stateless error answer: 404 for an unknown method and 400 for
/// the header, revision and params errors, as 2026-07-28's transport says (the other
/// malformed-body codes get 400 too, as the official Python SDK's server does);
/// anything else 200.
pub fn stateless_status(code: i64) -> u16 {
    match code {
        codes::METHOD_NOT_FOUND => 404,
        codes::PARSE_ERROR
        | codes::INVALID_REQUEST
        | codes::INVALID_PARAMS
        | codes::HEADER_MISMATCH
        | codes::UNSUPPORTED_PROTOCOL_VERSION => 400,
        _ => 200,
    }
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
    /// Always false: no `notifications/tools/list_changed` (and, in 2026-07-28, no
    /// `subscriptions/listen` to carry one).
    pub list_changed: bool,
}

/// The server's identity (`serverInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// "tandem".
    pub name: String,
    /// The server's version.
    pub version: String,
    /// What the server is for; only from `2025-11-25` on (see [`describes_server`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
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

/// `server/discover` result (2026-07-28), before the [`Cacheable`] and [`Stateless`]
/// fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Every revision this server speaks, newest first ([`supported_versions`]).
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// The session's system instruction, as `initialize` gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Who may cache a [`Cacheable`] result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CacheScope {
    /// Any client or intermediary.
    Public,
    /// Only under the same authorization.
    Private,
}

/// A 2026-07-28 result that carries caching hints (`tools/list`, `server/discover`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cacheable<T> {
    /// The result itself.
    #[serde(flatten)]
    pub result: T,
    /// How long the client may consider it fresh.
    pub ttl_ms: u64,
    /// Who may cache it.
    pub cache_scope: CacheScope,
}

impl<T> Cacheable<T> {
    /// Fresh for no time, cacheable only under the same token: both answers depend on
    /// the session the token is bound to, and its tools change when it pairs.
    pub fn per_session(result: T) -> Self {
        Cacheable {
            result,
            ttl_ms: 0,
            cache_scope: CacheScope::Private,
        }
    }
}

/// How a 2026-07-28 result is to be read: always complete here (this server never asks
/// the client for input mid-request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The final result.
    Complete,
}

/// `_meta` of a 2026-07-28 result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultMeta {
    /// Who answers (the spec asks servers to say so on every result).
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: Implementation,
}

/// A 2026-07-28 result: the method's own fields plus `resultType` and `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stateless<T> {
    /// The method's result.
    #[serde(flatten)]
    pub result: T,
    /// Always `complete`.
    #[serde(rename = "resultType")]
    pub result_type: ResultType,
    /// The server's identity.
    #[serde(rename = "_meta")]
    pub meta: ResultMeta,
}

impl<T> Stateless<T> {
    /// `result` as a complete answer from `server_info`.
    pub fn complete(result: T, server_info: Implementation) -> Self {
        Stateless {
            result,
            result_type: ResultType::Complete,
            meta: ResultMeta { server_info },
        }
    }
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

    fn tandem(description: Option<&str>) -> Implementation {
        Implementation {
            name: "tandem".into(),
            version: "1".into(),
            description: description.map(String::from),
        }
    }

    /// The shapes docs/PROTOCOL.md gives for `initialize` and `tools/call`.
    #[test]
    fn result_shapes() {
        let init = InitializeResult {
            protocol_version: "2025-06-18".into(),
            capabilities: ServerCapabilities::default(),
            server_info: tandem(None),
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

    /// The 2026-07-28 shapes: `resultType` and the `serverInfo` stamp on every result,
    /// the caching hints on `server/discover` and `tools/list`.
    #[test]
    fn stateless_shapes() {
        let discover = DiscoverResult {
            supported_versions: supported_versions(),
            capabilities: ServerCapabilities::default(),
            instructions: Some("be brief".into()),
        };
        let wire = Stateless::complete(Cacheable::per_session(discover), tandem(Some("d")));
        assert_eq!(
            serde_json::to_value(wire).unwrap(),
            json!({"supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                "capabilities": {"tools": {"listChanged": false}}, "instructions": "be brief",
                "ttlMs": 0, "cacheScope": "private", "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo":
                    {"name": "tandem", "version": "1", "description": "d"}}})
        );
        let call = Stateless::complete(CallToolResult::success(json!(1)), tandem(None));
        assert_eq!(
            serde_json::to_value(call).unwrap(),
            json!({"content": [{"type": "text", "text": "1"}], "structuredContent": 1,
                "isError": false, "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tandem", "version": "1"}}})
        );
        assert_eq!(
            serde_json::to_value(RpcError::unsupported_version("1999-01-01")).unwrap(),
            json!({"code": -32022, "message": "unsupported protocol version `1999-01-01`",
                "data": {"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                    "requested": "1999-01-01"}})
        );
    }

    #[test]
    fn answers_a_version_it_speaks() {
        assert_eq!(negotiate_version(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate_version(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate_version(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate_version(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate_version(Some("1999-01-01")), "2025-11-25");
        // The stateless revision has no handshake: `initialize` offers the newest one.
        assert_eq!(negotiate_version(Some("2026-07-28")), "2025-11-25");
        assert_eq!(negotiate_version(Some("")), "2025-11-25");
        assert_eq!(negotiate_version(None), "2025-11-25");
        assert!(describes_server("2025-11-25") && describes_server("2026-07-28"));
        assert!(!describes_server("2025-06-18"));
    }

    #[test]
    fn the_era_comes_from_the_header_then_the_envelope() {
        let stateless = json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}});
        let progress = json!({"_meta": {"progressToken": 1}});
        assert_eq!(era_of(Some("2025-11-25"), &stateless), Era::Handshake);
        assert_eq!(era_of(Some("2024-11-05"), &Value::Null), Era::Handshake);
        assert_eq!(era_of(Some("2026-07-28"), &Value::Null), Era::Stateless);
        assert_eq!(era_of(Some("2099-01-01"), &Value::Null), Era::Stateless);
        assert_eq!(era_of(None, &stateless), Era::Stateless);
        assert_eq!(era_of(None, &progress), Era::Handshake);
        assert_eq!(era_of(None, &Value::Null), Era::Handshake);
    }

    fn call(name: &str, version: &str) -> RpcRequest {
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "_meta": {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {}}}}))
        .unwrap()
    }

    fn headers(version: Option<&str>, method: Option<&str>, name: NameHeader) -> RoutingHeaders {
        RoutingHeaders {
            protocol_version: version.map(String::from),
            method: method.map(String::from),
            name,
            duplicated: None,
        }
    }

    fn code(r: Result<String, RpcError>) -> i64 {
        r.map(|_| 0).unwrap_or_else(|e| e.code)
    }

    #[test]
    fn a_stateless_request_needs_agreeing_headers_and_its_envelope() {
        let name = || NameHeader::Value("spawn_sessions".into());
        let good = headers(Some("2026-07-28"), Some("tools/call"), name());
        let req = call("spawn_sessions", "2026-07-28");
        assert_eq!(check_stateless(&req, &good).unwrap(), "2026-07-28");
        let cases = [
            (
                headers(None, Some("tools/call"), name()),
                codes::HEADER_MISMATCH,
            ),
            (
                headers(Some("2026-07-28"), None, name()),
                codes::HEADER_MISMATCH,
            ),
            (
                headers(Some("2026-07-28"), Some("tools/list"), name()),
                codes::HEADER_MISMATCH,
            ),
            (
                headers(Some("2026-07-28"), Some("tools/call"), NameHeader::Absent),
                codes::HEADER_MISMATCH,
            ),
            (
                headers(
                    Some("2026-07-28"),
                    Some("tools/call"),
                    NameHeader::Value("x".into()),
                ),
                codes::HEADER_MISMATCH,
            ),
            (
                headers(
                    Some("2026-07-28"),
                    Some("tools/call"),
                    NameHeader::Malformed,
                ),
                codes::HEADER_MISMATCH,
            ),
            (
                headers(Some("2099-01-01"), Some("tools/call"), name()),
                codes::UNSUPPORTED_PROTOCOL_VERSION,
            ),
        ];
        for (h, want) in cases {
            assert_eq!(code(check_stateless(&req, &h)), want, "{h:?}");
        }
        let twice = RoutingHeaders {
            duplicated: Some("Mcp-Method"),
            ..good.clone()
        };
        assert_eq!(code(check_stateless(&req, &twice)), codes::HEADER_MISMATCH);
        // The body's own revision, when the header agrees with it, must be spoken too.
        let old = headers(Some("2025-11-25"), Some("tools/call"), name());
        assert_eq!(
            code(check_stateless(&call("spawn_sessions", "2025-11-25"), &old)),
            codes::UNSUPPORTED_PROTOCOL_VERSION
        );
        // The header and the body disagree on the revision.
        assert_eq!(
            code(check_stateless(
                &call("spawn_sessions", "2025-11-25"),
                &good
            )),
            codes::HEADER_MISMATCH
        );
    }

    #[test]
    fn a_stateless_request_without_its_envelope_is_invalid_params() {
        let h = headers(Some("2026-07-28"), Some("tools/list"), NameHeader::Absent);
        for params in [
            json!(null),
            json!({}),
            json!({"_meta": []}),
            json!({"_meta": {CLIENT_CAPABILITIES_KEY: {}}}),
            json!({"_meta": {PROTOCOL_VERSION_KEY: 2026, CLIENT_CAPABILITIES_KEY: {}}}),
            json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}),
        ] {
            let req = RpcRequest {
                jsonrpc: Some("2.0".into()),
                id: Some(json!(1)),
                method: "tools/list".into(),
                params: params.clone(),
            };
            assert_eq!(
                code(check_stateless(&req, &h)),
                codes::INVALID_PARAMS,
                "{params}"
            );
        }
    }

    #[test]
    fn statuses_follow_the_transport() {
        assert_eq!(stateless_status(codes::METHOD_NOT_FOUND), 404);
        assert_eq!(stateless_status(codes::HEADER_MISMATCH), 400);
        assert_eq!(stateless_status(codes::UNSUPPORTED_PROTOCOL_VERSION), 400);
        assert_eq!(stateless_status(codes::INVALID_PARAMS), 400);
        assert_eq!(stateless_status(codes::PARSE_ERROR), 400);
        assert_eq!(stateless_status(codes::INTERNAL_ERROR), 200);
    }

    /// Both current revisions require `type: "object"` at the root of every input
    /// schema, and 2025-11-25 asks for tool names of 1 to 128 characters from
    /// `[A-Za-z0-9_.-]`: every tool in the snapshot keeps to both.
    #[test]
    fn tool_definitions_keep_to_the_newest_revisions() {
        let tools: Vec<ToolDef> =
            serde_json::from_str(include_str!("../schemas/tools.json")).unwrap();
        assert!(!tools.is_empty());
        for tool in tools {
            let n = &tool.name;
            assert!(
                (1..=128).contains(&n.len())
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
                "{n}"
            );
            assert_eq!(tool.input_schema["type"], "object", "{n}");
        }
    }
}
