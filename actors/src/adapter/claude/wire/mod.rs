//! Typed serde structs for the parts of Claude Code's stream-json and control protocol
//! the adapter uses (observed with `@anthropic-ai/claude-code@2.1.332`).
//!
//! Every inbound type tolerates unknown fields and unknown variants (`Other`): the CLI
//! adds message kinds and fields often, and a newer CLI must not break a turn. Only the
//! fields we read are declared.

mod inbound;
mod outbound;

pub use inbound::*;
pub use outbound::*;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

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
            parse(json!({"type":"some_future_kind","x":1})),
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
