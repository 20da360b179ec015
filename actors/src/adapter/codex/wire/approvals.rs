//! Server → client requests (approvals) and our answers.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The command's item.
    pub item_id: String,
    /// The command.
    #[serde(default)]
    pub command: Option<String>,
    /// Where it would run.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Why the model wants it.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `item/fileChange/requestApproval` params.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The patch's item.
    pub item_id: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
    /// A root it wants write access under.
    #[serde(default)]
    pub grant_root: Option<String>,
}

/// `item/permissions/requestApproval` params.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item_id: String,
    /// Requested permission profile, granted back as is when allowed.
    pub permissions: Value,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `mcpServer/elicitation/request` params (an MCP tool asking for approval or input).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationParams {
    /// The thread.
    pub thread_id: String,
    /// The MCP server.
    pub server_name: String,
    /// The question.
    #[serde(default)]
    pub message: Option<String>,
    /// Details (for a tool-call approval: the tool and its arguments).
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}

/// Our answer to a command or file-change approval.
#[derive(Debug, Serialize, Deserialize)]
pub struct ApprovalResponse {
    /// The decision.
    pub decision: ApprovalDecision,
}

/// Decisions we give (app-server offers more; we use these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    /// Run it once.
    Accept,
    /// Run it, and do not ask again for the same in this session ("always allow").
    AcceptForSession,
    /// Do not run it; the turn goes on.
    Decline,
    /// Do not run it; the turn stops.
    Cancel,
}

/// Our answer to `item/permissions/requestApproval`.
#[derive(Debug, Serialize, Deserialize)]
pub struct PermissionsApprovalResponse {
    /// Granted permissions (`{}` grants nothing).
    pub permissions: Value,
}

/// Our answer to `mcpServer/elicitation/request`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ElicitationResponse {
    /// The answer.
    pub action: ElicitationAction,
    /// Form content when accepting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// Elicitation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ElicitationAction {
    /// Yes.
    Accept,
    /// No.
    Decline,
    /// Withdrawn.
    Cancel,
}
