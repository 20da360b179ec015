//! The wire types against frames as ACP agents write them.

use super::*;
use serde_json::json;

#[test]
fn frames_are_classified() {
    let req = parse_frame(
        r#"{"jsonrpc":"2.0","id":"ab","method":"session/request_permission","params":{}}"#,
    );
    assert!(matches!(req, Ok(Frame::Request { id, .. }) if id == json!("ab")));
    let note = parse_frame(r#"{"jsonrpc":"2.0","method":"session/update","params":{"x":1}}"#);
    assert!(matches!(note, Ok(Frame::Notification { method, .. }) if method == "session/update"));
    let ok = parse_frame(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
    assert!(matches!(
        ok,
        Ok(Frame::Response {
            id: 3,
            outcome: Ok(_)
        })
    ));
    let err = parse_frame(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"boom"}}"#);
    assert!(matches!(err, Ok(Frame::Response { id: 4, outcome: Err(e) }) if e.message == "boom"));
    assert!(matches!(parse_frame("{not json"), Err(FrameError::Json(_))));
    assert_eq!(parse_frame(r#"{"jsonrpc":"2.0"}"#), Err(FrameError::Shape));
    assert_eq!(
        parse_frame(r#"{"id":"x","result":{}}"#),
        Err(FrameError::Shape)
    );
    assert!(matches!(parse_frame("[1,2]"), Err(FrameError::Json(_))));
}

#[test]
fn updates_parse_by_tag_and_unknown_ones_are_other() {
    let chunk: SessionUpdate = serde_json::from_value(json!({
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(chunk, SessionUpdate::AgentMessageChunk { content } if content.text.as_deref() == Some("hi"))
    );
    let call: SessionUpdate = serde_json::from_value(json!({
        "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls", "kind": "execute",
        "status": "pending", "rawInput": {"command": "ls"},
        "locations": [{"path": "/a", "line": 3}]}))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(call, SessionUpdate::ToolCall(f) if f.tool_call_id == "c1" && f.locations.is_some())
    );
    let commands: SessionUpdate = serde_json::from_value(json!({
        "sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "review", "description": "Review", "input": {"hint": "what"}}]}))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(commands, SessionUpdate::AvailableCommandsUpdate { available_commands: c }
            if c.len() == 1 && c[0].name == "review")
    );
    let other: SessionUpdate = serde_json::from_value(json!({
        "sessionUpdate": "session_info_update", "title": "t"}))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(other, SessionUpdate::Other));
}

#[test]
fn answers_serialize_as_the_schema_says() {
    let picked = serde_json::to_value(PermissionAnswer {
        outcome: PermissionOutcome::Selected {
            option_id: "allow".into(),
        },
    })
    .unwrap_or_default();
    assert_eq!(
        picked,
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
    );
    let cancelled = serde_json::to_value(PermissionAnswer {
        outcome: PermissionOutcome::Cancelled,
    })
    .unwrap_or_default();
    assert_eq!(cancelled, json!({"outcome": {"outcome": "cancelled"}}));
    let server = McpServer::Http {
        kind: "http",
        name: "tandem".into(),
        url: "http://127.0.0.1:1/mcp".into(),
        headers: vec![HttpHeader {
            name: "Authorization".into(),
            value: "Bearer T".into(),
        }],
    };
    let stdio = McpServer::Stdio {
        name: "everything".into(),
        command: "node".into(),
        args: vec!["index.js".into()],
        env: vec![HttpHeader {
            name: "KEY".into(),
            value: "v".into(),
        }],
    };
    let new = serde_json::to_value(NewSessionParams {
        cwd: "/w",
        mcp_servers: &[server, stdio],
    })
    .unwrap_or_default();
    assert_eq!(
        new,
        json!({"cwd": "/w", "mcpServers": [{"type": "http", "name": "tandem",
            "url": "http://127.0.0.1:1/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer T"}]},
            {"name": "everything", "command": "node", "args": ["index.js"],
             "env": [{"name": "KEY", "value": "v"}]}]})
    );
}
