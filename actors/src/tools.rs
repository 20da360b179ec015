//! Session-bound agent tools: one entry point that the MCP endpoint, the WebSocket
//! `tool.call` and the scripted vendor's `/tool` directive all go through.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// The answer of a tool call: a JSON result, or a readable failure.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, String>>>>;

/// Routes a tool call made *as* a session to the tool's implementation.
///
/// No tools exist in this build yet (the pair tools come with Driver/Worker support), so
/// every call fails with "unknown tool"; the call path itself is real and recorded.
#[derive(Debug, Clone, Default)]
pub struct ToolRouter;

impl ToolRouter {
    /// Calls `name` with `arguments` on behalf of `caller`.
    pub fn call(&self, caller: &str, name: &str, arguments: Value) -> ToolFuture {
        let message = format!("unknown tool `{name}`");
        tracing::debug!(session = %caller, tool = %name, args = %arguments, "tool call refused");
        Box::pin(async move { Err(message) })
    }
}
