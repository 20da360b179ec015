//! Server → client frames other than history events.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ErrorCode;
use crate::ids::{RequestId, SessionId};
use crate::permission::{PermissionChoice, PermissionKind, PermissionRule};
use crate::session::{BackgroundTask, SessionInfo, SessionStatus};

/// Control frames the server sends; history events are [`crate::Event`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ServerFrame {
    /// A request succeeded. The payload's fields sit beside `requestId` and `ok`.
    Reply {
        /// The client's `requestId`, if it sent one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// Always true: failures are `protocol_error`.
        ok: bool,
        /// Request-specific fields (`session`, `turnId`, ...).
        #[serde(flatten)]
        payload: Map<String, Value>,
    },
    /// A request or frame was refused; the socket stays open.
    ProtocolError {
        /// Machine-readable code.
        code: ErrorCode,
        /// What went wrong.
        error: String,
        /// The session the request named, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        /// The client's `requestId`, if it sent one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// The files the error is about (`BASE_DIRTY`, `MERGE_CONFLICT`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        paths: Option<Vec<String>>,
    },
    /// A subscription is in place; replayed events follow, then live ones.
    ChatSubscribed {
        /// The session.
        session_id: SessionId,
        /// Its status at subscription time.
        status: SessionStatus,
        /// The newest `seq` the session had at subscription time.
        last_seq: u64,
        /// Tool approvals still waiting for an answer.
        pending_permissions: Vec<PendingPermission>,
        /// Tools a person allowed for the rest of the session.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        permission_rules: Vec<PermissionRule>,
        /// Background work running at subscription time.
        background_tasks: Vec<BackgroundTask>,
        /// Messages waiting to be sent, oldest first (also `GET .../queue`).
        #[serde(default)]
        queued: Vec<QueuedEntry>,
    },
    /// The server dropped events for this socket; re-subscribe with
    /// `lastSeq = resumeFrom - 1` to get them.
    Lagged {
        /// The session whose events were dropped.
        session_id: SessionId,
        /// The first `seq` this socket did not receive.
        resume_from: u64,
    },
    /// A session this socket may see was created or changed (after `sessions.watch`).
    SessionUpserted {
        /// The session as it is now.
        session: Box<SessionInfo>,
    },
}

impl ServerFrame {
    /// A `reply` with the given payload fields.
    pub fn reply(request_id: Option<String>, payload: Map<String, Value>) -> Self {
        ServerFrame::Reply {
            request_id,
            ok: true,
            payload,
        }
    }

    /// A `reply` whose fields are those of `result` (a `*Result` of
    /// [`crate::results`], or any struct that serializes to an object).
    pub fn reply_with<T: Serialize>(request_id: Option<String>, result: &T) -> Self {
        let payload = match serde_json::to_value(result) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        ServerFrame::reply(request_id, payload)
    }

    /// Serializes the frame. Serializing these types cannot fail (string keys only),
    /// but a failure would still yield a valid frame rather than a panic.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"kind":"protocol_error","code":"INTERNAL","error":"serialize: {e}"}}"#)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_flattens_payload() {
        let mut payload = Map::new();
        payload.insert("turnId".into(), Value::from("turn_1"));
        let text = ServerFrame::reply(Some("r1".into()), payload).to_json();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind":"reply","requestId":"r1","ok":true,"turnId":"turn_1"})
        );
    }

    #[test]
    fn lagged_shape() {
        let text = ServerFrame::Lagged {
            session_id: "s".into(),
            resume_from: 42,
        }
        .to_json();
        assert_eq!(text, r#"{"kind":"lagged","sessionId":"s","resumeFrom":42}"#);
    }
}

/// A message waiting in a session's queue until the session has no turn and no
/// background work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedEntry {
    /// Its id (`q_…`); `chat.queue-cancel` and `chat.queue-edit` name it.
    pub queue_id: String,
    /// The user message it sends once the session is free.
    pub text: String,
    /// True for a message the server queued (a pushed-back result): it cannot be
    /// edited or cancelled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub internal: bool,
}

/// A tool approval the vendor asked for that no one has answered yet: the fields of
/// its `permission_request` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPermission {
    /// Unique across the server; answer with `chat.permission-response {requestId}`.
    pub request_id: RequestId,
    /// The tool the vendor wants to run.
    pub tool_name: String,
    /// Its input.
    pub input: Value,
    /// The files the tool would change (see `permission_request`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<crate::history::FileChange>,
    /// A tool call (left out) or a plan to approve.
    #[serde(default, skip_serializing_if = "PermissionKind::is_tool")]
    pub permission_kind: PermissionKind,
    /// The answers the vendor offers (see `permission_request`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<PermissionChoice>,
}
