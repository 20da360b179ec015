//! Typed serde shapes of the `codex app-server` messages this adapter uses.
//!
//! Only the fields we read or write are declared; app-server adds fields and
//! notifications from version to version, and serde ignores what we do not name.
//! Every optional field is `Option` (or defaulted) so a field a newer version drops
//! does not fail a parse. `schema_check` (a test) compares these shapes with the JSON
//! schema the pinned binary generates.

use serde::{Deserialize, Serialize};
use serde_json::Value;

// ---------------------------------------------------------------------------
// JSON-RPC framing
// ---------------------------------------------------------------------------

/// A JSON-RPC request id. We send numbers; app-server's own requests use numbers too,
/// but the protocol allows strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    Text(String),
}

/// One line read from app-server, before it is classified. `jsonrpc` may be absent.
#[derive(Debug, Deserialize)]
pub struct RawMessage {
    /// Present on responses and on server→client requests.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// Present on notifications and requests.
    #[serde(default)]
    pub method: Option<String>,
    /// Parameters of a notification or request.
    #[serde(default)]
    pub params: Option<Value>,
    /// A successful response's result.
    #[serde(default)]
    pub result: Option<Value>,
    /// A failed response's error.
    #[serde(default)]
    pub error: Option<RpcErrorBody>,
}

/// The `error` member of a failed response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcErrorBody {
    /// JSON-RPC error code (-32600 "Not initialized", -32601 unknown method, ...).
    pub code: i64,
    /// Human-readable reason.
    pub message: String,
}

/// Which thread a notification or server request concerns: the routing key.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRef {
    /// Absent on process-wide notifications (rate limits, config warnings).
    #[serde(default)]
    pub thread_id: Option<String>,
}

mod approvals;
mod notifications;
mod requests;

pub use approvals::*;
pub use notifications::*;
pub use requests::*;

/// Notification and request method names we handle.
pub mod method {
    /// Client → server.
    pub const INITIALIZE: &str = "initialize";
    /// Client → server notification after `initialize`.
    pub const INITIALIZED: &str = "initialized";
    /// Client → server.
    pub const THREAD_START: &str = "thread/start";
    /// Client → server.
    pub const THREAD_RESUME: &str = "thread/resume";
    /// Client → server.
    pub const TURN_START: &str = "turn/start";
    /// The turns of a thread, a page at a time.
    pub const THREAD_TURNS_LIST: &str = "thread/turns/list";
    /// A new thread from a prefix of another (how a rewind forgets turns).
    pub const THREAD_FORK: &str = "thread/fork";
    /// Client → server.
    pub const TURN_INTERRUPT: &str = "turn/interrupt";
    /// Client → server (experimental).
    pub const TERMINALS_LIST: &str = "thread/backgroundTerminals/list";
    /// Client → server (experimental).
    pub const TERMINALS_TERMINATE: &str = "thread/backgroundTerminals/terminate";
    /// Client → server.
    pub const MODEL_LIST: &str = "model/list";
    /// Client → server.
    pub const ACCOUNT_READ: &str = "account/read";

    /// Server notification.
    pub const TURN_STARTED: &str = "turn/started";
    /// Server notification.
    pub const TURN_COMPLETED: &str = "turn/completed";
    /// Server notification.
    pub const ITEM_STARTED: &str = "item/started";
    /// Server notification.
    pub const ITEM_COMPLETED: &str = "item/completed";
    /// Server notification.
    pub const AGENT_MESSAGE_DELTA: &str = "item/agentMessage/delta";
    /// Server notification.
    pub const REASONING_SUMMARY_DELTA: &str = "item/reasoning/summaryTextDelta";
    /// Server notification.
    pub const REASONING_TEXT_DELTA: &str = "item/reasoning/textDelta";
    /// Server notification.
    pub const TOKEN_USAGE: &str = "thread/tokenUsage/updated";
    /// Server notification.
    pub const ERROR: &str = "error";
    /// Server notification.
    pub const REQUEST_RESOLVED: &str = "serverRequest/resolved";

    /// Server request.
    pub const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
    /// Server request.
    pub const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";
    /// Server request.
    pub const PERMISSIONS_APPROVAL: &str = "item/permissions/requestApproval";
    /// Server request.
    pub const ELICITATION: &str = "mcpServer/elicitation/request";

    /// Notifications we never read; app-server is asked not to send them.
    pub const OPTED_OUT: &[&str] = &[
        "thread/readState/changed",
        "remoteControl/status/changed",
        "item/commandExecution/outputDelta",
        "item/fileChange/outputDelta",
        "thread/status/changed",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_items_seen_from_the_pinned_binary() {
        let cmd = json!({"type":"commandExecution","id":"call_1","pluginId":null,
            "command":"/bin/bash -lc 'echo hi'","cwd":"/tmp","processId":"79502",
            "source":"unifiedExecStartup","status":"failed","commandActions":[],
            "aggregatedOutput":"out\n","exitCode":3,"durationMs":0,"startedAtMs":1});
        match serde_json::from_value::<ThreadItem>(cmd) {
            Ok(ThreadItem::CommandExecution {
                status, exit_code, ..
            }) => {
                assert_eq!(status, ItemStatus::Failed);
                assert_eq!(exit_code, Some(3));
            }
            other => panic!("{other:?}"),
        }
        let user = json!({"type":"userMessage","id":"u","content":[]});
        assert!(matches!(
            serde_json::from_value::<ThreadItem>(user),
            Ok(ThreadItem::Other)
        ));
        let raw: RawMessage =
            serde_json::from_str(r#"{"id":0,"method":"x","params":{"threadId":"t"}}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(raw.id, Some(RequestId::Number(0)));
    }

    #[test]
    fn serializes_policies_as_app_server_spells_them() {
        assert_eq!(
            serde_json::to_value(ApprovalPolicy::OnRequest).ok(),
            Some(json!("on-request"))
        );
        assert_eq!(
            serde_json::to_value(SandboxPolicy::WorkspaceWrite).ok(),
            Some(json!({"type": "workspaceWrite"}))
        );
        assert_eq!(
            serde_json::to_value(SandboxMode::DangerFullAccess).ok(),
            Some(json!("danger-full-access"))
        );
    }
}
