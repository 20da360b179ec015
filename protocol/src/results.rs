//! The payload of each WebSocket request's `reply` (`*Result`, beside the `*Params` of
//! [`crate::client`]). A reply frame is `{kind: "reply", requestId?, ok: true,
//! ...fields of the result}`: [`crate::ServerFrame::reply_with`] flattens one of these.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::{ListParams, SessionRef};
use crate::error::ErrorCode;
use crate::pair::{PairInfo, ProposalStatus};
use crate::schedule::ScheduleStatus;
use crate::session::SessionInfo;

/// `chat.abort` fields: the session only.
pub type ChatAbortParams = SessionRef;
/// `sessions.watch` fields.
pub type SessionsWatchParams = ListParams;
/// `sessions.list` fields.
pub type SessionsListParams = ListParams;

/// `ping` reply: `{pong: true}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingResult {
    /// Always true.
    pub pong: bool,
}

/// `session.create` and `session.configure` reply: the session as it is now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionResult {
    /// The session.
    pub session: SessionInfo,
}

/// `session.create` reply.
pub type SessionCreateResult = SessionResult;
/// `session.configure` reply.
pub type SessionConfigureResult = SessionResult;
/// `sessions.watch` and `sessions.list` reply: one page.
pub type SessionsListResult = crate::rest::SessionList;

/// `chat.send` reply: the turn started, or the message was queued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ChatSendResult {
    /// A turn started with the message.
    #[serde(rename_all = "camelCase")]
    Started {
        /// The session.
        session_id: String,
        /// The turn.
        turn_id: String,
    },
    /// A turn ran and `queue: true` was given: the message waits.
    #[serde(rename_all = "camelCase")]
    Queued {
        /// The session.
        session_id: String,
        /// Always true.
        queued: bool,
        /// Its place in the queue (1: next).
        position: usize,
    },
}

/// `chat.abort` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatAbortResult {
    /// The session whose turn is being stopped.
    pub session_id: String,
}

/// `chat.stop-task` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatStopTaskResult {
    /// The session.
    pub session_id: String,
    /// The task being stopped.
    pub task_id: String,
}

/// `chat.permission-response` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResponseResult {
    /// The permission request answered.
    pub permission_id: String,
}

/// `chat.subscribe` reply (only when a `requestId` was given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatSubscribeResult {
    /// The sessions now subscribed; refused ones got a `protocol_error` each.
    pub subscribed: Vec<String>,
}

/// `chat.unsubscribe` reply (only when a `requestId` was given): no fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatUnsubscribeResult {}

/// `tool.call` reply: the tool's result, or its failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    /// The tool's JSON result, or its error text when `isError`.
    pub result: Value,
    /// True when the tool refused or failed.
    pub is_error: bool,
    /// Why it failed, for programs (only when `isError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
}

/// `proposal.respond` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalRespondResult {
    /// The proposal.
    pub proposal_id: String,
    /// `running` when accepted, `declined` otherwise.
    pub status: ProposalStatus,
    /// The Worker started for it (accepted only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<String>,
    /// The pair created for it (accepted only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_id: Option<String>,
}

/// `pair.create` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairCreateResult {
    /// The new pair.
    pub pair: PairInfo,
}

/// `pair.close` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairCloseResult {
    /// The dissolved pair.
    pub pair_id: String,
    /// True when its Worker was running and was stopped.
    pub interrupted: bool,
}

/// `session.handoff` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffResult {
    /// The session continued.
    pub source_session_id: String,
    /// The new session.
    pub target_session_id: String,
    /// Its vendor.
    pub target_vendor: String,
}

/// `session.schedule` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleResult {
    /// The new schedule.
    pub schedule_id: String,
    /// When it comes due, epoch ms.
    pub at: u64,
    /// Always `pending`.
    pub status: ScheduleStatus,
}

/// `session.schedule-cancel` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleCancelResult {
    /// The schedule.
    pub schedule_id: String,
    /// Always `cancelled`.
    pub status: ScheduleStatus,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire<T: Serialize>(v: &T) -> Value {
        serde_json::to_value(v).unwrap_or_default()
    }

    /// The shapes docs/PROTOCOL.md gives for the replies.
    #[test]
    fn reply_shapes() {
        assert_eq!(
            wire(&ChatSendResult::Queued {
                session_id: "s".into(),
                queued: true,
                position: 2
            }),
            json!({"sessionId": "s", "queued": true, "position": 2})
        );
        assert_eq!(
            wire(&ChatSendResult::Started {
                session_id: "s".into(),
                turn_id: "turn_1".into()
            }),
            json!({"sessionId": "s", "turnId": "turn_1"})
        );
        assert_eq!(
            wire(&ProposalRespondResult {
                proposal_id: "p".into(),
                status: ProposalStatus::Declined,
                worker_id: None,
                pair_id: None,
            }),
            json!({"proposalId": "p", "status": "declined"})
        );
        assert_eq!(
            wire(&ToolCallResult {
                result: json!("no"),
                is_error: true,
                code: Some(ErrorCode::NotPaired),
            }),
            json!({"result": "no", "isError": true, "code": "NOT_PAIRED"})
        );
        assert_eq!(wire(&ChatUnsubscribeResult {}), json!({}));
    }
}
