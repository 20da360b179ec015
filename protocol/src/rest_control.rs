//! REST bodies of the control routes that mirror WebSocket requests (handoff,
//! schedules, permission answers); the path names the session and the item, so the
//! bodies hold only the rest. Replies are the WebSocket replies' `*Result` types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::TurnId;

/// `POST /api/v1/sessions/{id}/handoff`: the fields of `session.handoff` but the id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandoffBody {
    /// The vendor to continue in, one `GET /vendors` lists as installed (else 422:
    /// `INVALID_ARGUMENT` for an id it does not list, `VENDOR_NOT_INSTALLED` for one
    /// not installed). Required: its absence (or `null`) is refused like on the
    /// socket, and so is a blank one.
    // No `#[serde(default)]`: with it schemars leaves the field out of `required`;
    // serde reads an absent `Option` as `None` all the same, and the runtime refuses it.
    #[schemars(required, with = "String", regex(pattern = crate::content::NOT_BLANK))]
    pub target_vendor: Option<String>,
    /// Model of the new session.
    #[serde(default)]
    pub model: Option<String>,
    /// Effort of the new session (clamped to the vendor's levels).
    #[serde(default)]
    #[schemars(extend("enum" = ["", "minimal", "low", "medium", "high", "xhigh", "max", null]))]
    pub effort: Option<String>,
}

/// `POST /api/v1/sessions/{id}/schedules`: the fields of `session.schedule` but the id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleBody {
    /// The message to send, not only white space.
    #[schemars(regex(pattern = crate::content::NOT_BLANK))]
    pub content: String,
    /// When: RFC 3339 with an offset. A past time fires at once; a time before 1970 or
    /// more than 365 days ahead of the server's clock is refused with 422
    /// `INVALID_ARGUMENT` (a window a schema cannot state).
    #[schemars(extend("format" = "date-time"))]
    pub at: String,
    /// Repeat by this rule (see `session.schedule`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrule: Option<String>,
    /// The IANA time zone of the rule's wall-clock times (default `UTC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// What an occurrence does while a turn runs (default `skip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_busy: Option<crate::schedule::IfBusy>,
}

/// `POST /api/v1/sessions/{id}/permissions/{requestId}`: the answer to a pending
/// tool approval (the fields of `chat.permission-response` but the ids).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionAnswer {
    /// Allow the call once, or deny it.
    pub allow: bool,
    /// Replaces the tool's input when allowing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Why, when denying; the agent reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// With `allow`: also allow this tool for the rest of the session.
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub remember: Option<crate::permission::RememberScope>,
    /// With `allow`: the session's permission mode from now on.
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub permission_mode: Option<crate::session::PermissionMode>,
}

/// `POST /api/v1/sessions/{id}/fork`: the fields of `session.fork` but the id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkBody {
    /// The `seq` of the `user_message` whose turn the fork's conversation ends with.
    #[schemars(range(min = 1, max = crate::MAX_SEQ))]
    #[serde(deserialize_with = "crate::strict::whole")]
    pub anchor_seq: u64,
    /// The fork's title (default: the source's with " · fork").
    #[serde(default)]
    #[schemars(regex(pattern = crate::content::TITLE))]
    pub title: Option<String>,
    /// The fork's vendor (default: the source's).
    #[serde(default)]
    pub vendor: Option<String>,
    /// `worktree` or `shared` (default: `worktree` when the source has one).
    #[serde(default, deserialize_with = "crate::strict::name_opt")]
    pub workspace: Option<crate::workspace::WorkspaceMode>,
}

/// `POST /api/v1/sessions/{id}/restore`: the fields of `session.restore` but the id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreBody {
    /// The checkpoint to put the files back to (a `turnId` from
    /// `GET /sessions/{id}/checkpoints`).
    pub turn_id: TurnId,
}
