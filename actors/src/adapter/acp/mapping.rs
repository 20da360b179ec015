//! ACP → tandem: `session/update`s into history events, permission options into
//! choices and answers back, stop reasons into turn outcomes, tandem's permission mode
//! into one of the agent's modes. Pure functions and one small per-turn state
//! ([`TurnMapper`]), unit-tested here.

use serde_json::{Map, Value};
use tandem_protocol::history::{ContextUsage, Cost};
use tandem_protocol::{
    EventBody, PermissionChoice, PermissionMode, PlanEntry, RememberScope, TurnStatus, TurnUsage,
};

use super::wire::{
    Mode, PermissionOption, PermissionOutcome, PromptUsage, SessionUpdate, ToolCallFields,
};

/// A tool call seen in this turn.
#[derive(Debug, Default)]
struct Call {
    /// Everything the agent said about it so far (updates merged in).
    fields: ToolCallFields,
    /// Its `tool_call` event was written.
    announced: bool,
    /// Its `tool_result` event was written.
    finished: bool,
}

/// Turns one turn's `session/update`s into events. Text streams as `text_delta`s and
/// is closed by one `assistant_message` when something else comes (or the turn ends);
/// reasoning is gathered into one `thinking` per stretch; a tool call is announced once
/// its input is known (agents often announce an empty call first and fill it in), and
/// its result is written when it completes or fails.
#[derive(Debug, Default)]
pub struct TurnMapper {
    /// Assistant text since the last `assistant_message`.
    text: String,
    /// Reasoning since the last `thinking`.
    thought: String,
    /// Tool calls by id, in the order first seen.
    calls: Vec<Call>,
    /// The latest context usage (`usage_update`).
    context: Option<ContextUsage>,
    /// The session's cost so far, as the latest `usage_update` gave it.
    session_cost: Option<Cost>,
}

impl TurnMapper {
    /// The events one update becomes.
    pub fn update(&mut self, update: SessionUpdate) -> Vec<EventBody> {
        let mut out = Vec::new();
        match update {
            SessionUpdate::AgentMessageChunk { content } => {
                self.close_thought(&mut out);
                if let Some(text) = content.text.filter(|t| !t.is_empty()) {
                    self.text.push_str(&text);
                    out.push(EventBody::TextDelta { text });
                }
            }
            SessionUpdate::AgentThoughtChunk { content } => {
                self.close_text(&mut out);
                if let Some(text) = content.text {
                    self.thought.push_str(&text);
                }
            }
            SessionUpdate::ToolCall(fields) | SessionUpdate::ToolCallUpdate(fields) => {
                self.close_thought(&mut out);
                self.close_text(&mut out);
                self.tool(fields, &mut out);
            }
            SessionUpdate::Plan { entries } => {
                self.close_thought(&mut out);
                self.close_text(&mut out);
                let entries = entries.iter().map(PlanEntry::from_value).collect();
                out.push(EventBody::Plan { entries });
            }
            SessionUpdate::UsageUpdate { used, size, cost } => {
                self.context = Some(ContextUsage { used, size });
                if let Some(cost) = cost {
                    self.session_cost = Some(Cost {
                        amount: cost.amount,
                        currency: cost.currency,
                    });
                }
            }
            SessionUpdate::UserMessageChunk { .. }
            | SessionUpdate::CurrentModeUpdate { .. }
            | SessionUpdate::AvailableCommandsUpdate { .. }
            | SessionUpdate::Other => {}
        }
        out
    }

    /// Announces the call now if it was not yet (a permission request is about to
    /// name it), so its `tool_call` precedes the request. Returns the events and the
    /// call as known so far (the request repeats only part of it).
    pub fn announce(&mut self, fields: ToolCallFields) -> (Vec<EventBody>, ToolCallFields) {
        let mut out = Vec::new();
        self.close_thought(&mut out);
        self.close_text(&mut out);
        let id = fields.tool_call_id.clone();
        self.merge(fields);
        let mut known = ToolCallFields::default();
        if let Some(call) = self.calls.iter_mut().find(|c| c.fields.tool_call_id == id) {
            if !call.announced {
                call.announced = true;
                out.push(call_event(&call.fields));
            }
            known = call.fields.clone();
        }
        (out, known)
    }

    /// True while a tool call the agent announced has not completed or failed.
    pub fn calls_open(&self) -> bool {
        self.calls.iter().any(|c| !c.finished)
    }

    /// What is still open when the turn ends: the last text and reasoning, and calls
    /// never announced.
    pub fn finish(&mut self) -> Vec<EventBody> {
        let mut out = Vec::new();
        self.close_thought(&mut out);
        self.close_text(&mut out);
        for call in self.calls.iter_mut().filter(|c| !c.announced) {
            call.announced = true;
            out.push(call_event(&call.fields));
        }
        out
    }

    /// The session's cost in USD so far, as the latest `usage_update` said (a cost in
    /// another currency is kept as the session's cost alone).
    pub fn cost_usd(&self) -> Option<f64> {
        let cost = self.session_cost.as_ref()?;
        (cost.currency == "USD").then_some(cost.amount)
    }

    /// The turn's usage for `turn_completed`: the tokens `session/prompt` answered
    /// with, the last context usage, the session's cost so far and the turn's own
    /// cost in USD when known; `None` when the agent said nothing of it.
    pub fn usage(&self, reported: Option<PromptUsage>, cost_usd: Option<f64>) -> Option<TurnUsage> {
        if reported.is_none() && self.context.is_none() && self.session_cost.is_none() {
            return None;
        }
        let tokens = reported.unwrap_or_default();
        Some(TurnUsage {
            input_tokens: tokens.input_tokens,
            cached_input_tokens: tokens.cached_read_tokens.unwrap_or(0),
            cache_write_tokens: tokens.cached_write_tokens,
            output_tokens: tokens.output_tokens,
            reasoning_tokens: tokens.thought_tokens,
            context: self.context,
            cost_usd,
            session_cost: self.session_cost.clone(),
        })
    }

    fn close_text(&mut self, out: &mut Vec<EventBody>) {
        if !self.text.is_empty() {
            out.push(EventBody::AssistantMessage {
                text: std::mem::take(&mut self.text),
            });
        }
    }

    fn close_thought(&mut self, out: &mut Vec<EventBody>) {
        if !self.thought.trim().is_empty() {
            out.push(EventBody::Thinking {
                text: std::mem::take(&mut self.thought),
            });
        }
        self.thought.clear();
    }

    fn merge(&mut self, fields: ToolCallFields) {
        let id = fields.tool_call_id.clone();
        let pos = match self.calls.iter().position(|c| c.fields.tool_call_id == id) {
            Some(pos) => pos,
            None => {
                self.calls.push(Call::default());
                self.calls.len() - 1
            }
        };
        let have = &mut self.calls[pos].fields;
        have.tool_call_id = id;
        let ToolCallFields {
            title,
            kind,
            status,
            content,
            locations,
            raw_input,
            raw_output,
            ..
        } = fields;
        if title.is_some() {
            have.title = title;
        }
        if kind.is_some() {
            have.kind = kind;
        }
        if status.is_some() {
            have.status = status;
        }
        if content.is_some() {
            have.content = content;
        }
        if locations.is_some() {
            have.locations = locations;
        }
        if raw_input.as_ref().is_some_and(|v| !is_empty(v)) {
            have.raw_input = raw_input;
        }
        if raw_output.is_some() {
            have.raw_output = raw_output;
        }
    }

    fn tool(&mut self, fields: ToolCallFields, out: &mut Vec<EventBody>) {
        let id = fields.tool_call_id.clone();
        self.merge(fields);
        let Some(call) = self.calls.iter_mut().find(|c| c.fields.tool_call_id == id) else {
            return;
        };
        let status = call.fields.status.as_deref().unwrap_or("pending");
        let done = matches!(status, "completed" | "failed");
        let ready = call.fields.raw_input.is_some() || status != "pending";
        if !call.announced && (ready || done) {
            call.announced = true;
            out.push(call_event(&call.fields));
        }
        if done && !call.finished {
            call.finished = true;
            out.push(EventBody::ToolResult {
                call_id: id,
                output: result_output(&call.fields),
                is_error: status == "failed",
            });
        }
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The name a tool call is shown with: the agent's tool kind (`execute`, `edit`,
/// `read`, ...), the one name every ACP agent gives.
pub fn tool_name(fields: &ToolCallFields) -> String {
    fields.kind.clone().unwrap_or_else(|| "other".into())
}

/// A tool call's input as shown: its title, raw input, and the files it touches.
pub fn tool_input(fields: &ToolCallFields) -> Value {
    let mut input = Map::new();
    if let Some(title) = &fields.title {
        input.insert("title".into(), Value::String(title.clone()));
    }
    if let Some(raw) = &fields.raw_input {
        input.insert("rawInput".into(), raw.clone());
    }
    if let Some(locations) = fields.locations.as_ref().filter(|l| !l.is_empty()) {
        input.insert("locations".into(), Value::Array(locations.clone()));
    }
    if let Some(content) = fields.content.as_ref().filter(|c| !c.is_empty()) {
        input.insert("content".into(), Value::Array(content.clone()));
    }
    Value::Object(input)
}

/// The files a tool call changes: its diff content.
pub fn tool_changes(fields: &ToolCallFields) -> Vec<tandem_protocol::FileChange> {
    fields
        .content
        .iter()
        .flatten()
        .flat_map(crate::adapter::edits::acp)
        .collect()
}

fn call_event(fields: &ToolCallFields) -> EventBody {
    EventBody::ToolCall {
        call_id: fields.tool_call_id.clone(),
        name: tool_name(fields),
        input: tool_input(fields),
        changes: tool_changes(fields),
    }
}

/// A finished call's output: its text, the content the agent attached (diffs kept
/// whole), the raw output and the files touched.
fn result_output(fields: &ToolCallFields) -> Value {
    let mut output = Map::new();
    let text: Vec<&str> = fields
        .content
        .iter()
        .flatten()
        .filter(|c| c["type"] == "content")
        .filter_map(|c| c["content"]["text"].as_str())
        .collect();
    if !text.is_empty() {
        output.insert("text".into(), Value::String(text.join("\n")));
    }
    if let Some(content) = fields.content.as_ref().filter(|c| !c.is_empty()) {
        output.insert("content".into(), Value::Array(content.clone()));
    }
    if let Some(raw) = &fields.raw_output {
        output.insert("rawOutput".into(), raw.clone());
    }
    if let Some(locations) = fields.locations.as_ref().filter(|l| !l.is_empty()) {
        output.insert("locations".into(), Value::Array(locations.clone()));
    }
    Value::Object(output)
}

/// What an ACP permission option means (its `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionKind {
    /// `allow_once`.
    AllowOnce,
    /// `allow_always`.
    AllowAlways,
    /// `reject_once`.
    RejectOnce,
    /// `reject_always`.
    RejectAlways,
}

impl OptionKind {
    fn parse(kind: &str) -> Option<Self> {
        match kind {
            "allow_once" => Some(Self::AllowOnce),
            "allow_always" => Some(Self::AllowAlways),
            "reject_once" => Some(Self::RejectOnce),
            "reject_always" => Some(Self::RejectAlways),
            _ => None,
        }
    }
}

/// The agent's options as tandem's choices, each the answer that picks it, labelled
/// with the agent's words: `allow_always` is an allow remembered for the session.
/// Options of a kind tandem does not know are left out (answers map by kind).
pub fn choices(options: &[PermissionOption]) -> Vec<PermissionChoice> {
    options
        .iter()
        .filter_map(|o| {
            let kind = OptionKind::parse(&o.kind)?;
            Some(PermissionChoice {
                label: o.name.clone(),
                allow: matches!(kind, OptionKind::AllowOnce | OptionKind::AllowAlways),
                remember: (kind == OptionKind::AllowAlways).then_some(RememberScope::Session),
                permission_mode: None,
            })
        })
        .collect()
}

/// Maps a person's answer onto the agent's options by kind, never by label: allow →
/// `allow_once` (`allow_always` when remembered), deny → `reject_once`; each falls back
/// to its sibling when the agent lacks it. No option of the right sort: `cancelled`.
pub fn answer(options: &[PermissionOption], allow: bool, remember: bool) -> PermissionOutcome {
    use OptionKind::*;
    let order: &[OptionKind] = match (allow, remember) {
        (true, true) => &[AllowAlways, AllowOnce],
        (true, false) => &[AllowOnce, AllowAlways],
        (false, _) => &[RejectOnce, RejectAlways],
    };
    order
        .iter()
        .find_map(|want| {
            options
                .iter()
                .find(|o| OptionKind::parse(&o.kind) == Some(*want))
        })
        .map_or(PermissionOutcome::Cancelled, |o| {
            PermissionOutcome::Selected {
                option_id: o.option_id.clone(),
            }
        })
}

/// How a prompt's stop reason ends the turn. `cancelled` is `interrupted` (tandem's
/// interrupt, or a denial the agent treats as a stop).
pub fn turn_outcome(stop_reason: &str) -> (TurnStatus, Option<String>) {
    match stop_reason {
        "end_turn" | "max_tokens" | "max_turn_requests" => (TurnStatus::Completed, None),
        "cancelled" => (TurnStatus::Interrupted, None),
        "refusal" => (
            TurnStatus::Failed,
            Some("the agent refused to continue".into()),
        ),
        other => (
            TurnStatus::Failed,
            Some(format!(
                "the agent stopped with an unknown reason `{other}`"
            )),
        ),
    }
}

/// The agent mode that matches tandem's permission mode, among those it offers: its
/// own name where the agent uses tandem's (Claude Code's), else the usual preset names
/// (Codex's). `default` asks before an edit, so it is Codex's `read-only` ("approval is
/// required to edit files"), not its `auto`, which edits and runs commands without
/// asking (that is `acceptEdits`). `None`: the agent has no such mode, and none is
/// set.
pub fn mode_for(mode: PermissionMode, available: &[Mode]) -> Option<String> {
    let names: &[&str] = match mode {
        PermissionMode::Default => &["default", "read-only"],
        PermissionMode::AcceptEdits => &["acceptEdits", "auto"],
        PermissionMode::Plan => &["plan", "read-only"],
        PermissionMode::BypassPermissions => &["bypassPermissions", "full-access"],
    };
    names
        .iter()
        .find(|n| available.iter().any(|m| m.id == **n))
        .map(|n| (*n).to_string())
}

/// Whether an agent's error says a usage or rate limit stopped it (ACP has no error
/// code for one; agents pass the vendor's words on: "rate limit", "usage limit",
/// "429", "quota").
pub fn is_limit_error(error: &str) -> bool {
    let error = error.to_ascii_lowercase();
    [
        "rate limit",
        "rate_limit",
        "usage limit",
        "usage_limit",
        "429",
        "quota",
    ]
    .iter()
    .any(|w| error.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::acp::wire::ContentBlock;
    use serde_json::json;

    fn chunk(text: &str) -> SessionUpdate {
        SessionUpdate::AgentMessageChunk {
            content: ContentBlock {
                kind: "text".into(),
                text: Some(text.into()),
            },
        }
    }

    fn update(v: Value) -> SessionUpdate {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn text_streams_then_closes_at_a_tool_and_at_the_end() {
        let mut m = TurnMapper::default();
        let mut events = m.update(chunk("hel"));
        events.extend(m.update(chunk("lo")));
        events.extend(m.update(update(json!({"sessionUpdate": "tool_call",
            "toolCallId": "c1", "title": "Terminal", "kind": "execute", "status": "pending",
            "rawInput": {}}))));
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(matches!(&events[2], EventBody::AssistantMessage { text } if text == "hello"));
        // An empty call is not announced until its input is known.
        let again = m.update(update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1",
            "title": "`ls`", "kind": "execute", "status": "pending",
            "rawInput": {"command": "ls"}, "locations": [{"path": "/w/a.rs", "line": 2}]}),
        ));
        assert!(
            matches!(&again[..], [EventBody::ToolCall { call_id, name, input, .. }]
            if call_id == "c1" && name == "execute" && input["rawInput"]["command"] == "ls"
               && input["locations"][0]["line"] == 2)
        );
        let done = m.update(update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
            "status": "completed", "rawOutput": "a.rs",
            "content": [{"type": "content", "content": {"type": "text", "text": "a.rs"}},
                        {"type": "diff", "path": "/w/a.rs", "oldText": "x", "newText": "y"}]}),
        ));
        assert!(
            matches!(&done[..], [EventBody::ToolResult { call_id, output, is_error: false }]
            if call_id == "c1" && output["text"] == "a.rs" && output["content"][1]["type"] == "diff"
               && output["locations"][0]["path"] == "/w/a.rs")
        );
        let mut tail = m.update(chunk("bye"));
        tail.extend(m.finish());
        assert!(matches!(&tail[1], EventBody::AssistantMessage { text } if text == "bye"));
    }

    #[test]
    fn thoughts_gather_and_failed_calls_are_errors() {
        let mut m = TurnMapper::default();
        let thought = |t: &str| {
            update(json!({"sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": t}}))
        };
        assert!(m.update(thought("a ")).is_empty());
        assert!(m.update(thought("b")).is_empty());
        let events = m.update(update(json!({"sessionUpdate": "tool_call_update",
            "toolCallId": "c9", "status": "failed", "kind": "edit"})));
        assert!(matches!(&events[0], EventBody::Thinking { text } if text == "a b"));
        assert!(matches!(&events[1], EventBody::ToolCall { call_id, .. } if call_id == "c9"));
        assert!(matches!(
            &events[2],
            EventBody::ToolResult { is_error: true, .. }
        ));
        let plan = m.update(update(json!({"sessionUpdate": "plan",
            "entries": [{"content": "step", "status": "pending", "priority": "high"}]})));
        assert!(matches!(&plan[..], [EventBody::Plan { entries }] if entries.len() == 1));
        assert!(m
            .update(update(
                json!({"sessionUpdate": "usage_update", "used": 8, "size": 100})
            ))
            .is_empty());
        let reported = PromptUsage {
            input_tokens: 5,
            ..Default::default()
        };
        let usage = m.usage(Some(reported), None).unwrap();
        assert_eq!(usage.input_tokens, 5);
        assert_eq!(usage.context, Some(ContextUsage { used: 8, size: 100 }));
        assert_eq!(m.cost_usd(), None);
        // A cost: the session's so far; the turn's own is given by the caller.
        m.update(update(
            json!({"sessionUpdate": "usage_update", "used": 9, "size": 100,
            "cost": {"amount": 0.5, "currency": "USD"}}),
        ));
        assert_eq!(m.cost_usd(), Some(0.5));
        let usage = m.usage(None, Some(0.25)).unwrap();
        assert_eq!((usage.input_tokens, usage.cost_usd), (0, Some(0.25)));
        assert_eq!(
            usage.session_cost,
            Some(Cost {
                amount: 0.5,
                currency: "USD".into()
            })
        );
        m.update(update(
            json!({"sessionUpdate": "usage_update", "used": 9, "size": 100,
            "cost": {"amount": 3, "currency": "EUR"}}),
        ));
        assert_eq!(m.cost_usd(), None, "not in USD");
    }

    fn options() -> Vec<PermissionOption> {
        [
            ("allow_always", "Always Allow", "allow_always"),
            ("allow", "Allow", "allow_once"),
            ("reject", "Reject", "reject_once"),
            ("odd", "Something new", "maybe_later"),
        ]
        .iter()
        .map(|(id, name, kind)| PermissionOption {
            option_id: (*id).into(),
            name: (*name).into(),
            kind: (*kind).into(),
        })
        .collect()
    }

    fn picked(outcome: PermissionOutcome) -> Option<String> {
        match outcome {
            PermissionOutcome::Selected { option_id } => Some(option_id),
            PermissionOutcome::Cancelled => None,
        }
    }

    #[test]
    fn answers_map_by_kind_never_by_label() {
        let o = options();
        assert_eq!(picked(answer(&o, true, false)).as_deref(), Some("allow"));
        assert_eq!(
            picked(answer(&o, true, true)).as_deref(),
            Some("allow_always")
        );
        assert_eq!(picked(answer(&o, false, false)).as_deref(), Some("reject"));
        let only_always = vec![o[0].clone()];
        assert_eq!(
            picked(answer(&only_always, true, false)).as_deref(),
            Some("allow_always")
        );
        assert_eq!(picked(answer(&only_always, false, false)), None);
        let offered = choices(&o);
        assert_eq!(offered.len(), 3, "the unknown kind is left out");
        assert_eq!(offered[0].label, "Always Allow");
        assert!(offered[0].allow && offered[0].remember == Some(RememberScope::Session));
        assert!(offered[1].allow && offered[1].remember.is_none());
        assert!(!offered[2].allow);
    }

    #[test]
    fn outcomes_and_modes() {
        assert_eq!(turn_outcome("end_turn").0, TurnStatus::Completed);
        assert_eq!(turn_outcome("cancelled").0, TurnStatus::Interrupted);
        assert_eq!(turn_outcome("refusal").0, TurnStatus::Failed);
        assert!(is_limit_error(
            "Internal error: API Error: 429 rate_limit_error"
        ));
        assert!(is_limit_error("You've hit your usage limit"));
        assert!(!is_limit_error("the model refused"));
        let codex: Vec<Mode> = ["read-only", "auto", "full-access"]
            .iter()
            .map(|id| Mode { id: (*id).into() })
            .collect();
        assert_eq!(
            mode_for(PermissionMode::Plan, &codex).as_deref(),
            Some("read-only")
        );
        assert_eq!(
            mode_for(PermissionMode::Default, &codex).as_deref(),
            Some("read-only"),
            "codex-acp's auto edits and runs commands without asking"
        );
        assert_eq!(
            mode_for(PermissionMode::AcceptEdits, &codex).as_deref(),
            Some("auto")
        );
        let claude: Vec<Mode> = ["default", "acceptEdits", "plan", "bypassPermissions"]
            .iter()
            .map(|id| Mode { id: (*id).into() })
            .collect();
        assert_eq!(
            mode_for(PermissionMode::AcceptEdits, &claude).as_deref(),
            Some("acceptEdits")
        );
        assert_eq!(mode_for(PermissionMode::Plan, &[]), None);
    }
}
