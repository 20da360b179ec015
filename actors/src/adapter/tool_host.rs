//! How an adapter calls the agent tools without knowing what implements them. The
//! session hands its adapter a [`ToolHost`]; the tools module implements it on top of
//! the runtime, so neither the adapters nor the session actor depend on either.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ToolError;

/// The answer of a tool call: its JSON result, or why it failed (with a wire code).
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>>>>;

/// Calls agent tools on behalf of a session.
pub trait ToolHost: Send + Sync {
    /// Calls tool `name` with `arguments` as session `caller`.
    fn call(&self, caller: &str, name: &str, arguments: Value) -> ToolFuture;
}

/// A shared tool host, as sessions and adapters hold it.
pub type Tools = Arc<dyn ToolHost>;
