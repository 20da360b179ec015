//! What we write on the CLI's stdin: user turns, control requests and our answers.

use serde::Serialize;
use serde_json::Value;

/// A random version-4 UUID, the form the CLI accepts as a message id.
pub fn new_uuid() -> String {
    let h = crate::clock::random_id("", 16);
    // 32 hex digits as 8-4-4-4-12, with version 4 and variant 10xx.
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// A user turn written to the CLI's stdin.
#[derive(Debug, Serialize)]
pub struct UserTurn<'a> {
    /// Always `user`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The person's (or Driver's) text as one user message.
    pub message: UserTurnMessage<'a>,
    /// Always null for the session's own turns.
    pub parent_tool_use_id: Option<String>,
    /// Empty: the CLI fills in its own session id.
    pub session_id: &'static str,
    /// Ours: `command_lifecycle` lines name the message by it.
    pub uuid: &'a str,
}

/// The message of a [`UserTurn`].
#[derive(Debug, Serialize)]
pub struct UserTurnMessage<'a> {
    /// Always `user`.
    pub role: &'static str,
    /// The text block, then one block per image.
    pub content: Vec<UserBlock<'a>>,
}

/// A block of a user message, as the Anthropic Messages API takes it.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserBlock<'a> {
    /// `{type: "text", text}`: the message text, verbatim.
    Text {
        /// The text.
        text: &'a str,
    },
    /// `{type: "image", source: {type: "base64", media_type, data}}`.
    Image {
        /// The image's bytes.
        source: ImageSource<'a>,
    },
}

/// `source` of an image block.
#[derive(Debug, Serialize)]
pub struct ImageSource<'a> {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: &'a str,
    /// The bytes, base64.
    pub data: &'a str,
}

impl<'a> UserTurn<'a> {
    /// A user turn with this text and id.
    pub fn new(text: &'a str, uuid: &'a str) -> Self {
        UserTurn::with_images(text, &[], uuid)
    }

    /// A user turn with this text, images (`(media type, base64 bytes)`) and id.
    pub fn with_images(text: &'a str, images: &'a [(String, String)], uuid: &'a str) -> Self {
        let mut content = Vec::with_capacity(1 + images.len());
        if !text.is_empty() || images.is_empty() {
            content.push(UserBlock::Text { text });
        }
        content.extend(images.iter().map(|(media_type, data)| UserBlock::Image {
            source: ImageSource {
                kind: "base64",
                media_type,
                data,
            },
        }));
        UserTurn {
            kind: "user",
            message: UserTurnMessage {
                role: "user",
                content,
            },
            parent_tool_use_id: None,
            session_id: "",
            uuid,
        }
    }
}

/// A control request we send.
#[derive(Debug, Serialize)]
pub struct OutboundControlRequest<'a> {
    /// Always `control_request`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Our id; the CLI's response echoes it.
    pub request_id: &'a str,
    /// What we ask.
    pub request: OutboundRequest<'a>,
}

/// The requests we send.
#[derive(Debug, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum OutboundRequest<'a> {
    /// Stop the current turn.
    Interrupt {},
    /// Switch model for later requests (`None` = the default model).
    SetModel {
        /// `None` (serialized as null) returns to the CLI's default model.
        model: Option<&'a str>,
    },
    /// Switch the permission mode.
    SetPermissionMode {
        /// The CLI's mode name.
        mode: &'a str,
    },
    /// Stop one background task.
    StopTask {
        /// The CLI's `task_id` from `background_tasks_changed`.
        task_id: &'a str,
    },
    /// Read the session's plan (plan mode keeps it in a file; `ExitPlanMode`'s input
    /// does not carry it). Answered `{exists, content?}`.
    GetPlan {},
}

/// Our answer to a control request from the CLI.
#[derive(Debug, Serialize)]
pub struct OutboundControlResponse<'a> {
    /// Always `control_response`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Tagged by `subtype`: a permission decision or a refusal.
    pub response: OutboundResponseBody<'a>,
}

/// The body of our answer.
#[derive(Debug, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum OutboundResponseBody<'a> {
    /// The request is answered.
    Success {
        /// The CLI's request id, so it can match our answer to its request.
        request_id: &'a str,
        /// Whether the tool may run, and with which input.
        response: PermissionDecision,
    },
    /// The request is not supported.
    Error {
        /// The CLI's request id, so it can match our answer to its request.
        request_id: &'a str,
        /// Our reason; sent for requests tandem does not support.
        error: &'a str,
    },
}

/// The answer to `can_use_tool`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Run the tool with this input.
    Allow {
        /// The input to run it with (the original one unless a person changed it).
        #[serde(rename = "updatedInput")]
        updated_input: Value,
        /// Permission changes that come with the answer ("always allow", a new mode).
        #[serde(rename = "updatedPermissions", skip_serializing_if = "Vec::is_empty")]
        updated_permissions: Vec<PermissionUpdate>,
    },
    /// Do not run it; the model sees `message`.
    Deny {
        /// Why, for the model.
        message: String,
    },
}

/// A change to the CLI's permissions, sent with an answer to `can_use_tool`; we only
/// make changes for the running session (`destination: session`), never to settings
/// files.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PermissionUpdate {
    /// Allow these tools without asking from now on.
    AddRules {
        /// The tools, each without a content pattern (the whole tool).
        rules: Vec<PermissionRuleValue>,
        /// Always `allow`.
        behavior: &'static str,
        /// Always `session`.
        destination: &'static str,
    },
    /// Switch the permission mode.
    SetMode {
        /// The CLI's mode name.
        mode: &'static str,
        /// Always `session`.
        destination: &'static str,
    },
}

/// One rule of [`PermissionUpdate::AddRules`].
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRuleValue {
    /// The tool (`Bash`, `Edit`, an `mcp__…` name).
    pub tool_name: String,
}

impl PermissionUpdate {
    /// Allow `tool` for the rest of the session.
    pub fn allow_tool(tool: &str) -> Self {
        PermissionUpdate::AddRules {
            rules: vec![PermissionRuleValue {
                tool_name: tool.to_string(),
            }],
            behavior: "allow",
            destination: "session",
        }
    }

    /// Run in `mode` (the CLI's name) from now on.
    pub fn set_mode(mode: &'static str) -> Self {
        PermissionUpdate::SetMode {
            mode,
            destination: "session",
        }
    }
}

impl<'a> OutboundControlRequest<'a> {
    /// A control request with our id.
    pub fn new(request_id: &'a str, request: OutboundRequest<'a>) -> Self {
        OutboundControlRequest {
            kind: "control_request",
            request_id,
            request,
        }
    }
}

impl<'a> OutboundControlResponse<'a> {
    /// Answers `can_use_tool`.
    pub fn decision(request_id: &'a str, decision: PermissionDecision) -> Self {
        OutboundControlResponse {
            kind: "control_response",
            response: OutboundResponseBody::Success {
                request_id,
                response: decision,
            },
        }
    }

    /// Refuses a request we do not support.
    pub fn error(request_id: &'a str, error: &'a str) -> Self {
        OutboundControlResponse {
            kind: "control_response",
            response: OutboundResponseBody::Error { request_id, error },
        }
    }
}

/// Serializes one outbound line (JSON and a newline); empty when it cannot be written.
pub fn line<T: Serialize>(value: &T) -> Vec<u8> {
    match serde_json::to_vec(value) {
        Ok(mut out) => {
            out.push(b'\n');
            out
        }
        // The messages are plain structs and JSON values, which cannot fail to be
        // written; were one to, nothing is sent (rather than an empty line the agent
        // would take for a message) and the log says why.
        Err(e) => {
            tracing::error!(error = %e, message = std::any::type_name::<T>(), "cannot serialize a Claude Code input line; not sent");
            Vec::new()
        }
    }
}
