//! Tool descriptions and argument schemas, as `tools/list` shows them.

use serde_json::{json, Value};
use tandem_protocol::mcp::ToolDef;

/// Every tool, by name.
pub const SEND_TO_PARTNER: &str = "send_to_partner";
/// See [`SEND_TO_PARTNER`].
pub const READ_PARTNER: &str = "read_partner";
/// See [`SEND_TO_PARTNER`].
pub const INTERRUPT_PARTNER: &str = "interrupt_partner";
/// See [`SEND_TO_PARTNER`].
pub const CLOSE_PARTNER: &str = "close_partner";
/// See [`SEND_TO_PARTNER`].
pub const PROPOSE_WORKER: &str = "propose_worker";
/// See [`SEND_TO_PARTNER`].
pub const SPAWN_SESSIONS: &str = "spawn_sessions";
/// See [`SEND_TO_PARTNER`].
pub const CHECK_SPAWNED_SESSIONS: &str = "check_spawned_sessions";
/// See [`SEND_TO_PARTNER`].
pub const READ_HANDOFF_SOURCE: &str = "read_handoff_source";

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The definition of a tool.
pub fn def(name: &str) -> Option<ToolDef> {
    let (description, schema) = match name {
        SEND_TO_PARTNER => (
            "Give your Worker one concrete, bounded task. If you have no Worker yet, one is created and paired with you first (workerCreated: true). wait=true (default) returns the Worker's answer when its turn ends, or status 'running' with the text so far after timeoutSeconds; wait=false returns at once and the result arrives later as a new message. Delegation is one level deep.",
            object(
                json!({
                    "message": {"type": "string", "description": "The whole task or question for the Worker."},
                    "wait": {"type": "boolean", "description": "Wait for the Worker's turn to end. Default true."},
                    "timeoutSeconds": {"type": "number", "description": "Longest wait, 1 to 900 seconds. Default 300."},
                    "workerVendor": {"type": "string", "description": "Vendor for a Worker created by this call."},
                    "workerModel": {"type": "string", "description": "Model for a Worker created by this call."},
                    "workerEffort": {"type": "string", "description": "Reasoning effort for a Worker created by this call."}
                }),
                &["message"],
            ),
        ),
        READ_PARTNER => (
            "Check on your Worker: its status (running, interrupted, idle) and its last turns (what it was asked and what it answered).",
            object(json!({"lastTurns": {"type": "number", "description": "How many recent turns, 1 to 5. Default 1."}}), &[]),
        ),
        INTERRUPT_PARTNER => (
            "Stop the Worker's current task but keep the pair. Its partial work comes back to you to review.",
            object(json!({}), &[]),
        ),
        CLOSE_PARTNER => (
            "End the pair: stops the Worker if it is running and dissolves the pairing. Both session histories are kept.",
            object(json!({}), &[]),
        ),
        PROPOSE_WORKER => (
            "Propose handing a task to a new Worker; the user accepts (possibly choosing another vendor, model or effort) or declines, and you are resumed with the outcome. One proposal at a time.",
            object(
                json!({
                    "summary": {"type": "string", "description": "One line: what the Worker would do."},
                    "plan": {"type": "string", "description": "The plan it would follow."},
                    "message": {"type": "string", "description": "The task sent to the Worker on acceptance."},
                    "recommendedVendor": {"type": "string"},
                    "recommendedModel": {"type": "string"},
                    "recommendedEffort": {"type": "string"}
                }),
                &["summary", "plan", "message"],
            ),
        ),
        SPAWN_SESSIONS => (
            "Start independent sessions for side tasks (1 to 10 per call, at most 20 per session; 3 run at once, the rest wait). They do not report back: check them with check_spawned_sessions.",
            object(
                json!({
                    "sessions": {"type": "array", "minItems": 1, "maxItems": 10, "items": object(json!({
                        "title": {"type": "string"},
                        "prompt": {"type": "string"}
                    }), &["title", "prompt"])},
                    "vendor": {"type": "string", "description": "Vendor of the new sessions. Default: yours."}
                }),
                &["sessions"],
            ),
        ),
        CHECK_SPAWNED_SESSIONS => (
            "List the sessions you spawned with their status (running, interrupted, error, done), turn count and last activity.",
            object(json!({}), &[]),
        ),
        READ_HANDOFF_SOURCE => (
            "Read the conversation this session continues (after a handoff), including earlier handoffs up to 5 levels back: user and assistant messages, newest page first (offset 0 is the latest `limit` messages).",
            object(
                json!({
                    "offset": {"type": "number", "description": "Messages to skip, counted back from the newest. Default 0."},
                    "limit": {"type": "number", "description": "Messages per page, 1 to 100. Default 30."}
                }),
                &[],
            ),
        ),
        _ => return None,
    };
    Some(ToolDef {
        name: name.to_string(),
        description: description.to_string(),
        input_schema: schema,
    })
}
