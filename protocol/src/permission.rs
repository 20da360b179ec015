//! Tool approvals: what a `permission_request` offers and what a remembered answer is.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::PermissionMode;

/// What a permission request asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PermissionKind {
    /// May the agent run this tool call (the input says with what)?
    #[default]
    Tool,
    /// May the agent leave planning and carry out this plan (`input.plan` holds it)?
    Plan,
}

impl PermissionKind {
    /// True for the default kind, which the wire leaves out.
    pub fn is_tool(&self) -> bool {
        *self == PermissionKind::Tool
    }
}

/// How long a remembered answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RememberScope {
    /// For the rest of the session (across turns, processes and server restarts).
    Session,
}

/// One answer a vendor offers for a permission request. Its fields are the fields of
/// the `chat.permission-response` that picks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionChoice {
    /// What to show people (the vendor's own words where it has them).
    pub label: String,
    /// Allow (true) or deny.
    pub allow: bool,
    /// Also allow this tool without asking from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remember: Option<RememberScope>,
    /// The session's permission mode after this answer (approving a plan and accepting
    /// edits from then on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<PermissionMode>,
}

/// A remembered answer: requests to use `tool_name` are allowed without asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRule {
    /// The tool, as `permission_request.toolName` names it.
    pub tool_name: String,
    /// How long it holds.
    pub scope: RememberScope,
}
