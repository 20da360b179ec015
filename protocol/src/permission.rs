//! Tool approvals: what a `permission_request` offers and what a remembered answer is.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{RequestId, SessionId};
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

/// Who answered a permission request (on `permission_resolved`; left out for a
/// request withdrawn because its turn ended or the vendor settled it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Decider {
    /// A person (`chat.permission-response`).
    User,
    /// The session's Driver (`approve_worker`), for a Worker whose pair has
    /// `workerApprovals: driver`.
    Driver,
    /// Nobody: the pair's `workerApprovals: bypass` allowed it at once.
    Bypass,
}

/// A Worker's permission request as its Driver is asked it (`send_to_partner` status
/// `approval`, or a pushed message), for `approve_worker`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAsk {
    /// The request; `approve_worker {requestId}` answers it.
    pub request_id: RequestId,
    /// The Worker that asks.
    pub worker_id: SessionId,
    /// The tool its agent wants.
    pub tool_name: String,
    /// The tool's input.
    pub input: serde_json::Value,
    /// A tool call (left out) or a plan to approve.
    #[serde(default, skip_serializing_if = "PermissionKind::is_tool")]
    pub permission_kind: PermissionKind,
    /// The answers the vendor offers (empty: allow or deny).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<PermissionChoice>,
}
