//! The payload of each WebSocket request's `reply` (`*Result`, beside the `*Params` of
//! [`crate::client`]). A reply frame is `{kind: "reply", requestId?, ok: true,
//! ...fields of the result}`: [`crate::ServerFrame::reply_with`] flattens one of these.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ErrorCode;
use crate::ids::{PairId, RequestId, SessionId, TurnId};
use crate::pair::{PairInfo, ProposalStatus};
use crate::schedule::ScheduleStatus;
use crate::session::SessionInfo;

/// `ping` reply: `{pong: true}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PingResult {
    /// Always true.
    pub pong: bool,
}

/// `session.create` reply: the new session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreateResult {
    /// The session.
    pub session: SessionInfo,
}

/// `session.configure` reply: the session as it is now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionConfigureResult {
    /// The session.
    pub session: SessionInfo,
}

/// `chat.send` reply: the turn started, or the message was queued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ChatSendResult {
    /// A turn started with the message.
    #[serde(rename_all = "camelCase")]
    Started {
        /// The session.
        session_id: SessionId,
        /// The turn.
        turn_id: TurnId,
    },
    /// A turn ran and `queue: true` was given: the message waits.
    #[serde(rename_all = "camelCase")]
    Queued {
        /// The session.
        session_id: SessionId,
        /// Always true.
        queued: bool,
        /// Its place in the queue (1: next).
        position: usize,
    },
}

/// `chat.edit-send` reply: the conversation was rewound and the new turn started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatEditSendResult {
    /// The session.
    pub session_id: SessionId,
    /// The turn that runs the new message.
    pub turn_id: TurnId,
    /// The branch the rewind superseded (as its `history_rewound` event says).
    pub superseded: crate::session::SupersededRange,
    /// With `restoreFiles`: the restore made first (as `session.restore` answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<crate::queries::SessionRestoreResult>,
}

/// `session.fork` reply: the new session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionForkResult {
    /// The fork (its `forkedFrom` names the source and the anchor).
    pub session: SessionInfo,
    /// How its agent has the conversation.
    pub conversation: crate::session::ForkConversation,
}

/// `chat.abort` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatAbortResult {
    /// The session whose turn is being stopped.
    pub session_id: SessionId,
}

/// `chat.stop-task` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatStopTaskResult {
    /// The session.
    pub session_id: SessionId,
    /// The task being stopped.
    pub task_id: String,
}

/// `chat.permission-response` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatPermissionResponseResult {
    /// The permission request answered.
    pub permission_id: RequestId,
}

/// `chat.subscribe` reply (only when a `requestId` was given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatSubscribeResult {
    /// The sessions now subscribed; refused ones got a `protocol_error` each.
    pub subscribed: Vec<SessionId>,
}

/// `chat.unsubscribe` reply (only when a `requestId` was given): no fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatUnsubscribeResult {}

/// `tool.call` reply: the tool's result, or its failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalRespondResult {
    /// The proposal.
    pub proposal_id: String,
    /// `running` when accepted, `declined` otherwise.
    pub status: ProposalStatus,
    /// The Worker started for it (accepted only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<SessionId>,
    /// The pair created for it (accepted only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_id: Option<PairId>,
}

/// `pair.create` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairCreateResult {
    /// The new pair.
    pub pair: PairInfo,
}

/// `pair.close` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairCloseResult {
    /// The dissolved pair.
    pub pair_id: PairId,
    /// True when its Worker was running and was stopped.
    pub interrupted: bool,
}

/// `session.handoff` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionHandoffResult {
    /// The session handed off; it records `handoff_created`.
    pub source_session_id: SessionId,
    /// The session created to continue it; it starts with the handoff prompt.
    pub target_session_id: SessionId,
    /// The new session's vendor, as asked for (trimmed).
    pub target_vendor: String,
}

/// `session.schedule` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionScheduleResult {
    /// The new schedule.
    pub schedule_id: String,
    /// When it comes due, epoch ms.
    pub at: u64,
    /// Always `pending`.
    pub status: ScheduleStatus,
}

/// `session.schedule-cancel` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionScheduleCancelResult {
    /// The schedule.
    pub schedule_id: String,
    /// Always `cancelled`.
    pub status: ScheduleStatus,
}

/// `chat.queue-cancel` and `chat.queue-edit` reply: the queue as it is now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatQueueChangeResult {
    /// The session.
    pub session_id: SessionId,
    /// The message cancelled or edited.
    pub queue_id: String,
    /// What the queue holds after the change, oldest first.
    pub queued: Vec<crate::server::QueuedEntry>,
}

/// The schema of every WebSocket request's fields and of its reply, as
/// `protocol/schemas/requests.json` holds it: `{requests: {TYPE: {params, result}},
/// rest: {"METHOD PATH": body}, event, $defs}` (JSON Schema 2020-12; `rest` holds the
/// REST bodies the web page reads and `event` a history event, whose JSDoc types are
/// generated from this file). Params describe the frame's fields besides `type`
/// and `requestId`; a result, the reply's fields besides `kind`, `requestId` and
/// `ok`. Generated, so a change to a request's wire shape is a visible diff.
pub fn request_schemas() -> Value {
    use schemars::generate::SchemaSettings;

    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.meta_schema = None)
        .into_generator();
    let mut requests = serde_json::Map::new();
    crate::operations::ClientRequest::schemas(&mut generator, |name, params, result| {
        requests.insert(
            name.to_string(),
            serde_json::json!({"params": params, "result": result}),
        );
    });
    // REST bodies the web page reads, so its generated types cover them too.
    let mut rest = serde_json::Map::new();
    macro_rules! body {
        ($path:literal, $ty:ty) => {{
            rest.insert($path.to_string(), generator.subschema_for::<$ty>().into());
        }};
    }
    body!("GET /vendors", crate::rest::VendorsListResult);
    body!("GET /pairs", crate::rest::PairsListResult);
    body!("GET /sessions/running", crate::rest::SessionsRunningResult);
    body!(
        "GET /sessions/{id}/schedules",
        crate::rest::SessionSchedulesResult
    );
    body!("GET /sessions/{id}/queue", crate::rest::ChatQueueResult);
    body!("GET /sessions/{id}/usage", crate::rest::UsageSummary);
    body!("GET /sessions/{id}/changes", crate::workspace::GitState);
    body!(
        "GET /sessions/{id}/changes/diff",
        crate::workspace::FileDiff
    );
    body!("GET /sessions/{id}/files", crate::workspace::DirListing);
    body!(
        "GET /sessions/{id}/files/content",
        crate::workspace::FileContent
    );
    body!(
        "PUT /sessions/{id}/files/content",
        crate::workspace::FileSaved
    );
    body!(
        "POST /sessions/{id}/merge",
        crate::workspace::SessionMergeResult
    );
    body!(
        "POST /sessions/{id}/discard",
        crate::workspace::SessionDiscardResult
    );
    body!("event git_state", crate::workspace::GitState);
    body!("event delegation changes", crate::workspace::ChangeSummary);
    body!("error", crate::error::ErrorBody);
    // History events, so the page's event handling is typed too.
    let event = generator.subschema_for::<crate::event::Event>();
    let defs = generator.take_definitions(true);
    serde_json::json!({"requests": requests, "rest": rest, "event": event, "$defs": defs})
}

/// `ping` has no fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PingParams {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire<T: Serialize>(v: &T) -> Value {
        serde_json::to_value(v).unwrap()
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

    /// `protocol/schemas/requests.json` holds [`request_schemas`]; any change to a
    /// request's or reply's wire shape shows as a diff of it. `UPDATE_SNAPSHOTS=1`
    /// rewrites it.
    #[test]
    fn request_schemas_match_the_snapshot() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/requests.json");
        let generated = serde_json::to_string_pretty(&request_schemas()).unwrap() + "\n";
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("{e}"));
        }
        let stored = std::fs::read_to_string(&path).unwrap();
        assert!(
            stored == generated,
            "the request schemas changed; if that is meant, run with UPDATE_SNAPSHOTS=1 \
             and commit protocol/schemas/requests.json\n--- generated ---\n{generated}"
        );
        let schemas = request_schemas();
        assert_eq!(
            schemas["requests"].as_object().map(|r| r.len()),
            Some(crate::operations::OPERATIONS.len()),
            "one entry per request of the table"
        );
    }
}
