//! Typed serde structs for the parts of Claude Code's stream-json and control protocol
//! the adapter uses (observed with `@anthropic-ai/claude-code@2.1.332`).
//!
//! Every inbound type tolerates unknown fields and unknown variants (`Other`): the CLI
//! adds message kinds and fields often, and a newer CLI must not break a turn. Only the
//! fields we read are declared.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line the CLI writes on stdout.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CliMessage {
    /// Session facts (`init`), background-task changes, status notes.
    System(SystemMessage),
    /// One complete assistant content block (the CLI sends one message per block).
    Assistant(AssistantMessage),
    /// Tool results, interrupt notes, replays of local commands.
    User(UserMessage),
    /// The end of one turn.
    Result(ResultMessage),
    /// A raw Messages API SSE event (only with `--include-partial-messages`).
    StreamEvent(StreamEventMessage),
    /// The CLI asks us something (`can_use_tool`).
    ControlRequest(InboundControlRequest),
    /// The CLI answers one of our control requests.
    ControlResponse(InboundControlResponse),
    /// The CLI withdraws a request it sent (after an interrupt).
    ControlCancelRequest(ControlCancel),
    /// A user message we sent (with a `uuid`) was queued, started or completed.
    CommandLifecycle(CommandLifecycle),
    /// Anything else; ignored.
    #[serde(other)]
    Other,
}

/// A `system` line. Only some subtypes carry each field.
#[derive(Debug, Default, Deserialize)]
pub struct SystemMessage {
    /// `init`, `background_tasks_changed`, `task_started`, `task_updated`,
    /// `task_notification`, `status`, ...
    #[serde(default)]
    pub subtype: String,
    /// The Claude session id (on every system line that has one).
    #[serde(default)]
    pub session_id: Option<String>,
    /// `background_tasks_changed`: the complete set of background tasks.
    #[serde(default)]
    pub tasks: Option<Vec<CliTask>>,
    /// `task_*`: the task concerned.
    #[serde(default)]
    pub task_id: Option<String>,
    /// `task_notification`: the final status (`completed`, `failed`, `stopped`, ...).
    #[serde(default)]
    pub status: Option<Value>,
    /// `task_updated`: the changed fields (`status`, `end_time`).
    #[serde(default)]
    pub patch: Option<Value>,
}

/// One background task as `background_tasks_changed` lists it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct CliTask {
    /// The id `stop_task` takes.
    pub task_id: String,
    /// `local_bash`, `local_agent`, ...
    #[serde(default)]
    pub task_type: String,
    /// What the task does.
    #[serde(default)]
    pub description: String,
}

/// An `assistant` line.
#[derive(Debug, Deserialize)]
pub struct AssistantMessage {
    /// The Messages API message (one content block).
    pub message: ApiMessage,
    /// Set when a sub-agent produced it; such lines are not the session's own text.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

/// The Messages API message inside `assistant` lines.
#[derive(Debug, Deserialize)]
pub struct ApiMessage {
    /// `<synthetic>` for messages the CLI made up itself (API error notes).
    #[serde(default)]
    pub model: Option<String>,
    /// Text, thinking and tool calls here become history events; other kinds are skipped.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
}

/// A content block of a message.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The block's complete text; becomes an assistant message unless empty.
        text: String,
    },
    /// Visible reasoning.
    Thinking {
        /// The complete reasoning; dropped when its deltas were already streamed.
        #[serde(default)]
        thinking: String,
    },
    /// The model calls a tool.
    ToolUse {
        /// Pairs the call with its result.
        id: String,
        /// Tool name (`Bash`, `mcp__tandem__send_to_partner`, ...).
        name: String,
        /// The tool's arguments as the model wrote them, kept verbatim on the tool call.
        #[serde(default)]
        input: Value,
    },
    /// A tool's answer (in `user` lines).
    ToolResult {
        /// The [`ContentBlock::ToolUse`] `id` of the call this answers.
        tool_use_id: String,
        /// A string or a list of content parts.
        #[serde(default)]
        content: Value,
        /// True when the tool failed or was denied.
        #[serde(default)]
        is_error: Option<bool>,
    },
    /// Any other block kind; ignored.
    #[serde(other)]
    Other,
}

/// A `user` line.
#[derive(Debug, Deserialize)]
pub struct UserMessage {
    /// The message; its content may be a string (replays) or blocks.
    pub message: UserContent,
    /// Set for a sub-agent's messages.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

/// The message inside a `user` line.
#[derive(Debug, Deserialize)]
pub struct UserContent {
    /// A string or a list of blocks.
    #[serde(default)]
    pub content: MessageContent,
}

/// Content that is either a plain string or a list of blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Tool results arrive this way; the only form the adapter reads.
    Blocks(Vec<ContentBlock>),
    /// Replays of local commands; carries no tool result, so it is ignored.
    Text(String),
}

impl Default for MessageContent {
    fn default() -> Self {
        MessageContent::Blocks(Vec::new())
    }
}

/// A `result` line: the end of one turn.
#[derive(Debug, Deserialize)]
pub struct ResultMessage {
    /// `success`, `error_during_execution`, `error_max_turns`, ...
    #[serde(default)]
    pub subtype: String,
    /// True when the turn did not end normally (also for API errors with `success`).
    #[serde(default)]
    pub is_error: bool,
    /// The Claude session id (the adapter takes it from `init` instead).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The final text, or the error text.
    #[serde(default)]
    pub result: Option<String>,
    /// Diagnostic errors, joined as the turn's error when `result` is empty.
    #[serde(default)]
    pub errors: Option<Vec<String>>,
    /// Token usage of the turn.
    #[serde(default)]
    pub usage: Option<Value>,
    /// The process's cumulative cost so far.
    #[serde(default)]
    pub total_cost_usd: Option<f64>,
    /// Wall time of the turn.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Model round trips in the turn.
    #[serde(default)]
    pub num_turns: Option<u64>,
    /// Set when the CLI started the turn itself (`{kind: "task-notification"}` after
    /// a background task finished); absent for turns we sent.
    #[serde(default)]
    pub origin: Option<Value>,
}

impl ResultMessage {
    /// True when the CLI started this turn by itself rather than for a user message.
    pub fn is_self_started(&self) -> bool {
        self.origin.is_some()
    }
}

/// A `stream_event` line.
#[derive(Debug, Deserialize)]
pub struct StreamEventMessage {
    /// Only `message_start` and text/thinking deltas are read; the rest is `Other`.
    pub event: StreamEvent,
    /// Set for a sub-agent's stream.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

/// The SSE events the adapter reads; the rest are `Other`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A new message begins.
    MessageStart {},
    /// A piece of a content block.
    ContentBlockDelta {
        /// Text and thinking deltas are streamed out; tool-input deltas are ignored.
        delta: Delta,
    },
    /// Anything else.
    #[serde(other)]
    Other,
}

/// A content-block delta.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// More text.
    TextDelta {
        /// Streamed out as a text delta unless empty.
        text: String,
    },
    /// More reasoning.
    ThinkingDelta {
        /// Streamed out as thinking; marks the message's thinking as already sent.
        thinking: String,
    },
    /// Tool input JSON, signatures, ...
    #[serde(other)]
    Other,
}

/// A control request from the CLI.
#[derive(Debug, Deserialize)]
pub struct InboundControlRequest {
    /// Echoed in our answer.
    pub request_id: String,
    /// What it asks.
    pub request: InboundRequest,
}

/// The requests the CLI may send us.
#[derive(Debug, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum InboundRequest {
    /// May the model run this tool (only with `--permission-prompt-tool stdio`)?
    CanUseTool {
        /// Shown to the person who approves (`Bash`, `Edit`, ...).
        tool_name: String,
        /// Shown for approval and sent back as `updatedInput` when allowed unchanged.
        #[serde(default)]
        input: Value,
        /// The tool_use block it belongs to.
        #[serde(default)]
        tool_use_id: Option<String>,
    },
    /// Anything else (answered with an error).
    #[serde(other)]
    Other,
}

/// The CLI's answer to one of our control requests.
#[derive(Debug, Deserialize)]
pub struct InboundControlResponse {
    /// Only a non-`success` answer is acted on: it is logged as a refusal.
    pub response: ControlResponseBody,
}

/// The body of a control response.
#[derive(Debug, Deserialize)]
pub struct ControlResponseBody {
    /// `success` or `error`.
    pub subtype: String,
    /// Our request's id (`tandem_N`); logged when the CLI refuses it.
    pub request_id: String,
    /// The error text, for `error`.
    #[serde(default)]
    pub error: Option<String>,
}

/// The CLI withdraws a request (its turn was interrupted).
#[derive(Debug, Deserialize)]
pub struct ControlCancel {
    /// The CLI's id of the withdrawn `can_use_tool`; its pending approval is resolved.
    pub request_id: String,
}

/// Progress of one user message we sent: `queued`, `started`, `completed`.
#[derive(Debug, Deserialize)]
pub struct CommandLifecycle {
    /// The `uuid` we gave the message.
    pub command_uuid: String,
    /// `queued`, `started` or `completed`; `started` marks our turn as running.
    pub state: String,
}

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
    /// One text block.
    pub content: [TextBlock<'a>; 1],
}

/// `{type: "text", text}`.
#[derive(Debug, Serialize)]
pub struct TextBlock<'a> {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The message text, verbatim.
    pub text: &'a str,
}

impl<'a> UserTurn<'a> {
    /// A user turn with this text and id.
    pub fn new(text: &'a str, uuid: &'a str) -> Self {
        UserTurn {
            kind: "user",
            message: UserTurnMessage {
                role: "user",
                content: [TextBlock { kind: "text", text }],
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

/// Serializes one outbound line (JSON and a newline).
pub fn line<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec(value).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> CliMessage {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn reads_lines_seen_from_the_cli() {
        // Shapes copied from a real 2.1.332 session (trimmed).
        let m = parse(
            json!({"type":"system","subtype":"init","cwd":"/w","session_id":"s1",
            "tools":["Bash"],"mcp_servers":[{"name":"tandem","status":"connected"}],"model":"m"}),
        );
        assert!(
            matches!(m, CliMessage::System(s) if s.subtype == "init" && s.session_id.as_deref() == Some("s1"))
        );
        let m = parse(
            json!({"type":"stream_event","event":{"delta":{"text":"hi ","type":"text_delta"},
            "index":0,"type":"content_block_delta"},"session_id":"s1","parent_tool_use_id":null}),
        );
        assert!(matches!(m, CliMessage::StreamEvent(StreamEventMessage {
            event: StreamEvent::ContentBlockDelta { delta: Delta::TextDelta { ref text } }, .. }) if text == "hi "));
        let m = parse(
            json!({"type":"assistant","message":{"content":[{"id":"t1","input":{"command":"ls"},
            "name":"Bash","type":"tool_use"}],"id":"msg","model":"m","role":"assistant"},
            "parent_tool_use_id":null,"session_id":"s1"}),
        );
        assert!(
            matches!(m, CliMessage::Assistant(a) if matches!(&a.message.content[0], ContentBlock::ToolUse { name, .. } if name == "Bash"))
        );
        let m = parse(
            json!({"type":"user","message":{"role":"user","content":"<local-command-stdout>x</local-command-stdout>"},
            "isReplay":true}),
        );
        assert!(matches!(
            m,
            CliMessage::User(UserMessage {
                message: UserContent {
                    content: MessageContent::Text(_)
                },
                ..
            })
        ));
        let m = parse(
            json!({"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool",
            "tool_name":"Bash","input":{"command":"touch x"},"tool_use_id":"t1","permission_suggestions":[]}}),
        );
        assert!(
            matches!(m, CliMessage::ControlRequest(r) if matches!(r.request, InboundRequest::CanUseTool { ref tool_name, .. } if tool_name == "Bash"))
        );
        let m = parse(
            json!({"type":"result","subtype":"error_during_execution","is_error":true,
            "session_id":"s1","total_cost_usd":0.1,"usage":{"input_tokens":1},"terminal_reason":"aborted_streaming"}),
        );
        assert!(matches!(m, CliMessage::Result(r) if r.is_error && !r.is_self_started()));
        let m = parse(json!({"type":"result","subtype":"success","is_error":false,
            "origin":{"kind":"task-notification"}}));
        assert!(matches!(m, CliMessage::Result(r) if r.is_self_started()));
        let m = parse(
            json!({"type":"command_lifecycle","command_uuid":"u-1","state":"started",
            "uuid":"x","session_id":"s1"}),
        );
        assert!(
            matches!(m, CliMessage::CommandLifecycle(c) if c.command_uuid == "u-1" && c.state == "started")
        );
        assert!(matches!(
            parse(json!({"type":"rate_limit_event","x":1})),
            CliMessage::Other
        ));
        assert!(matches!(
            parse(
                json!({"type":"control_request","request_id":"r","request":{"subtype":"mcp_message"}})
            ),
            CliMessage::ControlRequest(InboundControlRequest {
                request: InboundRequest::Other,
                ..
            })
        ));
    }

    #[test]
    fn uuids_have_the_standard_form() {
        let u = new_uuid();
        let parts: Vec<usize> = u.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{u}");
        assert_eq!(&u[14..15], "4");
        assert_ne!(new_uuid(), u);
    }

    #[test]
    fn writes_the_shapes_the_cli_reads() {
        let v: Value =
            serde_json::from_slice(&line(&UserTurn::new("hello", "u-1"))).unwrap_or(Value::Null);
        assert_eq!(
            v,
            json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"hello"}]},
                   "parent_tool_use_id":null,"session_id":"","uuid":"u-1"})
        );
        let v = serde_json::to_value(OutboundControlRequest::new(
            "c1",
            OutboundRequest::Interrupt {},
        ))
        .unwrap_or(Value::Null);
        assert_eq!(
            v,
            json!({"type":"control_request","request_id":"c1","request":{"subtype":"interrupt"}})
        );
        let v = serde_json::to_value(OutboundControlRequest::new(
            "c2",
            OutboundRequest::SetPermissionMode { mode: "plan" },
        ))
        .unwrap_or(Value::Null);
        assert_eq!(
            v["request"],
            json!({"subtype":"set_permission_mode","mode":"plan"})
        );
        let v = serde_json::to_value(OutboundControlResponse::decision(
            "r1",
            PermissionDecision::Allow {
                updated_input: json!({"a":1}),
                updated_permissions: Vec::new(),
            },
        ))
        .unwrap_or(Value::Null);
        assert_eq!(
            v,
            json!({"type":"control_response","response":{"subtype":"success","request_id":"r1",
                   "response":{"behavior":"allow","updatedInput":{"a":1}}}})
        );
        let v = serde_json::to_value(PermissionDecision::Allow {
            updated_input: json!({}),
            updated_permissions: vec![
                PermissionUpdate::allow_tool("Bash"),
                PermissionUpdate::set_mode("acceptEdits"),
            ],
        })
        .unwrap_or(Value::Null);
        assert_eq!(
            v["updatedPermissions"],
            json!([{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"allow","destination":"session"},
                   {"type":"setMode","mode":"acceptEdits","destination":"session"}])
        );
        let v = serde_json::to_value(OutboundControlResponse::decision(
            "r2",
            PermissionDecision::Deny {
                message: "no".into(),
            },
        ))
        .unwrap_or(Value::Null);
        assert_eq!(
            v["response"]["response"],
            json!({"behavior":"deny","message":"no"})
        );
    }
}
