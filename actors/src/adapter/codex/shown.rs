//! How Codex work is shown in our events: the `input` of a `tool_call` or a
//! `permission_request` and a `tool_result`'s output.
//! The protocol leaves these vendor-shaped; typing them here keeps each shape in one
//! place (camelCase, like the rest of our wire).

use serde::Serialize;
use serde_json::Value;

use super::wire::ItemStatus;

/// Any of the shapes below as the JSON value an event carries. The shapes hold
/// strings, numbers and JSON values, so this cannot fail; were it to, the event shows
/// `null` and the log says why.
pub fn value<T: Serialize>(shape: T) -> Value {
    serde_json::to_value(shape).unwrap_or_else(|e| {
        tracing::error!(target: "codex", error = %e, shape = std::any::type_name::<T>(), "cannot serialize what an event shows");
        Value::Null
    })
}

/// A shell command's `tool_call` input, and (with `reason`) its approval request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shell<'a> {
    /// The command line.
    pub command: Option<&'a str>,
    /// Where it runs.
    pub cwd: Option<&'a str>,
    /// Why Codex asks (approval requests only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
}

/// A command's `tool_result` output.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellOutput<'a> {
    /// stdout and stderr together, as Codex aggregated them.
    pub output: &'a str,
    /// The process's exit code, once it exited.
    pub exit_code: Option<i64>,
    /// How the item ended.
    pub status: &'a ItemStatus,
}

/// A file change's `tool_call` input: Codex's list of changes, as it sent them.
#[derive(Serialize)]
pub struct Patch<'a> {
    /// One entry per file.
    pub changes: &'a [Value],
}

/// A file change's approval request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchApproval<'a> {
    /// The file-change item the approval is for.
    pub item_id: &'a str,
    /// Why Codex asks.
    pub reason: Option<&'a str>,
    /// A directory Codex wants write access to for the rest of the session.
    pub grant_root: Option<&'a str>,
}

/// A status-only `tool_result` output (file changes).
#[derive(Serialize)]
pub struct Status<'a> {
    /// How the item ended.
    pub status: &'a ItemStatus,
}

/// A web search's `tool_call` input and `tool_result` output.
#[derive(Serialize)]
pub struct Search<'a> {
    /// What was searched for.
    pub query: &'a str,
}

/// A request for more sandbox permissions.
#[derive(Serialize)]
pub struct Permissions<'a> {
    /// What Codex asks for, as it sent it.
    pub permissions: &'a Value,
    /// Why.
    pub reason: Option<&'a str>,
}

/// An MCP server's question to the user (elicitation) without tool details.
#[derive(Serialize)]
pub struct Elicitation<'a> {
    /// The server's message.
    pub message: Option<&'a str>,
}

/// An empty JSON object (`{}`), where Codex wants one.
#[derive(Serialize, Default)]
pub struct Empty {}

/// A thread's `config`: our `tandem` MCP server (Codex's own config keys, snake_case).
#[derive(Serialize)]
pub struct ThreadConfig<'a> {
    /// MCP servers by name.
    pub mcp_servers: McpServers<'a>,
}

/// The one MCP server we give a thread.
#[derive(Serialize)]
pub struct McpServers<'a> {
    /// The server's `/mcp` endpoint, as this session.
    pub tandem: McpServer<'a>,
}

/// How Codex reaches our `/mcp`.
#[derive(Serialize)]
pub struct McpServer<'a> {
    /// `http://HOST:PORT/mcp`.
    pub url: &'a str,
    /// Headers sent with every request: the session's bearer token.
    pub http_headers: std::collections::BTreeMap<&'static str, String>,
    /// `approve`: our tools run without a Codex prompt (they are the server's own).
    pub default_tools_approval_mode: &'static str,
}

impl<'a> ThreadConfig<'a> {
    /// The config that gives a thread our tools as the session `token` is bound to.
    pub fn tandem(url: &'a str, token: &str) -> Self {
        ThreadConfig {
            mcp_servers: McpServers {
                tandem: McpServer {
                    url,
                    http_headers: [("Authorization", format!("Bearer {token}"))].into(),
                    default_tools_approval_mode: "approve",
                },
            },
        }
    }
}
