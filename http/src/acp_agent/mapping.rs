//! tandem → ACP and back, pure: history events as `session/update`s ([`Mapper`]), a
//! turn's status as a stop reason, a `permission_request` as
//! `session/request_permission` and the option picked as tandem's answer, a prompt's
//! content blocks as a message's content, a session as ACP's `SessionInfo`.

use serde_json::{json, Map, Value};

/// Turns one session's history events into ACP `SessionUpdate` objects, in order.
/// It remembers the text streamed since the last `assistant_message`, so a message is
/// said once whether it came as deltas, whole, or both.
#[derive(Debug, Default)]
pub struct Mapper {
    /// Text of the `text_delta`s since the last `assistant_message`.
    streamed: String,
    /// The `messageId` of the assistant message being streamed.
    message_id: Option<String>,
    /// The session's working directory, once known: relative paths of edits are
    /// joined to it.
    cwd: Option<std::path::PathBuf>,
}

impl Mapper {
    /// The session's working directory (from its `SessionInfo`).
    pub fn set_cwd(&mut self, cwd: &str) {
        if !cwd.is_empty() {
            self.cwd = Some(cwd.into());
        }
    }

    /// The session's working directory, where known.
    pub fn cwd(&self) -> Option<String> {
        self.cwd.as_ref().map(|c| c.display().to_string())
    }

    /// The updates `event` stands for (none for events ACP has no word for, and for
    /// `permission_request`, which the session handles). `turn_completed` closes any
    /// message being streamed and says the context window, where the vendor told it,
    /// as a `usage_update`.
    pub fn updates(&mut self, event: &Value) -> Vec<Value> {
        let text = || event["text"].as_str().unwrap_or_default().to_string();
        let seq_id = || format!("msg_{}", event["seq"].as_u64().unwrap_or_default());
        match event["kind"].as_str().unwrap_or_default() {
            "text_delta" => {
                let delta = text();
                if delta.is_empty() {
                    return Vec::new();
                }
                let id = self.message_id.get_or_insert_with(seq_id).clone();
                self.streamed.push_str(&delta);
                vec![chunk("agent_message_chunk", &delta, Some(&id))]
            }
            "assistant_message" => {
                let full = text();
                let id = self.message_id.take().unwrap_or_else(seq_id);
                let streamed = std::mem::take(&mut self.streamed);
                let rest = match full.strip_prefix(streamed.as_str()) {
                    Some(rest) => rest.to_string(),
                    // The deltas said something else (a cut-short turn rewrote it):
                    // what was streamed stands.
                    None => String::new(),
                };
                if rest.is_empty() {
                    return Vec::new();
                }
                vec![chunk("agent_message_chunk", &rest, Some(&id))]
            }
            "thinking" => vec![chunk("agent_thought_chunk", &text(), None)],
            "user_message" => vec![chunk("user_message_chunk", &text(), Some(&seq_id()))],
            "tool_call" => vec![tool_call(event, self.cwd.as_deref())],
            "tool_result" => vec![tool_result(event)],
            "plan" => vec![plan(event)],
            "commands" => vec![commands_update(&event["commands"])],
            "turn_completed" => {
                // What a cut-short turn streamed is not continued by the next one.
                self.streamed.clear();
                self.message_id = None;
                serde_json::from_value(event["usage"].clone())
                    .ok()
                    .and_then(|usage| super::usage::context_update(&usage))
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

/// A content chunk update of `kind` holding `text`.
fn chunk(kind: &str, text: &str, message_id: Option<&str>) -> Value {
    let mut update = json!({
        "sessionUpdate": kind,
        "content": {"type": "text", "text": text},
    });
    if let Some(id) = message_id {
        update["messageId"] = json!(id);
    }
    update
}

/// ACP's tool kinds.
const TOOL_KINDS: [&str; 10] = [
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

/// The ACP tool kind of a tandem tool name: an ACP kind stays itself (tools of ACP
/// vendors are named by their kind), others are guessed from their name.
pub fn tool_kind(name: &str) -> &'static str {
    if let Some(kind) = TOOL_KINDS.iter().find(|k| **k == name) {
        return kind;
    }
    let lower = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["bash", "shell", "command", "exec", "terminal"]) {
        "execute"
    } else if has(&["edit", "write", "patch", "filechange"]) {
        "edit"
    } else if has(&["grep", "glob", "search", "find"]) {
        "search"
    } else if has(&["read", "view", "cat"]) {
        "read"
    } else if has(&["fetch", "web"]) {
        "fetch"
    } else {
        "other"
    }
}

/// A `tool_call` event as a `tool_call` update. An ACP vendor's input
/// (`{title, rawInput, locations?, content?}`) gives its parts back; any other input
/// is the raw input, a `command` or path in it goes into the title, and its file
/// edits become `diff` content with their paths as locations ([`super::diffs`]).
fn tool_call(event: &Value, cwd: Option<&std::path::Path>) -> Value {
    let name = event["name"].as_str().unwrap_or("tool");
    let input = &event["input"];
    let mut update = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": event["callId"].as_str().unwrap_or_default(),
        "kind": tool_kind(name),
        "status": "in_progress",
    });
    let from_acp = TOOL_KINDS.contains(&name) && input["title"].is_string();
    if from_acp {
        update["title"] = input["title"].clone();
        update["rawInput"] = input["rawInput"].clone();
        for key in ["locations", "content"] {
            if input[key].is_array() {
                update[key] = input[key].clone();
            }
        }
        return update;
    }
    update["title"] = json!(tool_title(event));
    if !input.is_null() {
        update["rawInput"] = input.clone();
    }
    let diffs = super::diffs::diffs(name, input, cwd);
    if !diffs.is_empty() {
        let mut locations: Vec<Value> = Vec::new();
        for d in &diffs {
            let location = json!({"path": d["path"]});
            if !locations.contains(&location) {
                locations.push(location);
            }
        }
        update["locations"] = Value::Array(locations);
        update["content"] = Value::Array(diffs);
        return update;
    }
    if let Some(path) = ["file_path", "path"]
        .iter()
        .find_map(|k| input[*k].as_str())
        .filter(|p| p.starts_with('/'))
    {
        update["locations"] = json!([{ "path": path }]);
    }
    update
}

/// The title of a `tool_call` event: an ACP vendor's own, else the tool's name with
/// the `command` or path of its input.
pub fn tool_title(event: &Value) -> String {
    let name = event["name"].as_str().unwrap_or("tool");
    let input = &event["input"];
    if TOOL_KINDS.contains(&name) {
        if let Some(title) = input["title"].as_str() {
            return title.to_string();
        }
    }
    let detail = ["command", "file_path", "path", "pattern", "url"]
        .iter()
        .find_map(|k| input[*k].as_str());
    match detail {
        Some(d) => format!("{name}: {d}"),
        None => name.to_string(),
    }
}

/// A `tool_result` event as the closing `tool_call_update`.
fn tool_result(event: &Value) -> Value {
    let output = &event["output"];
    let failed = event["isError"].as_bool().unwrap_or(false);
    let mut update = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": event["callId"].as_str().unwrap_or_default(),
        "status": if failed { "failed" } else { "completed" },
    });
    if !output.is_null() {
        update["rawOutput"] = output.clone();
    }
    // An ACP vendor's output keeps the agent's own content (diffs, terminals).
    if let Some(content) = output["content"].as_array() {
        update["content"] = Value::Array(content.clone());
        return update;
    }
    let text = match output {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(match other["text"].as_str() {
            Some(t) => t.to_string(),
            None => other.to_string(),
        }),
    };
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        update["content"] = json!([{"type": "content", "content": {"type": "text", "text": text}}]);
    }
    update
}

/// A `plan` event as a `plan` update: its entries are in ACP's shape already.
fn plan(event: &Value) -> Value {
    let entries: Vec<tandem_protocol::PlanEntry> =
        serde_json::from_value(event["entries"].clone()).unwrap_or_default();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// The vendor's slash commands (`commands` of a `commands` event or of
/// `session.commands`) as an `available_commands_update` (ACP requires a description:
/// the command's own, else its name).
pub fn commands_update(commands: &Value) -> Value {
    let available: Vec<Value> = commands
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| {
            let name = c["name"].as_str().filter(|n| !n.is_empty())?;
            let description = c["description"]
                .as_str()
                .filter(|d| !d.is_empty())
                .map_or_else(|| format!("/{name}"), str::to_string);
            let mut command = json!({"name": name, "description": description});
            if let Some(hint) = c["inputHint"].as_str() {
                command["input"] = json!({"hint": hint});
            }
            Some(command)
        })
        .collect();
    json!({"sessionUpdate": "available_commands_update", "availableCommands": available})
}

/// A turn that failed: ACP has no stop reason for that, so `session/prompt` answers
/// with an error carrying this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the turn failed: {0}")]
pub struct TurnFailed(
    /// The turn's error, or `no reason given` when it has none.
    pub String,
);

/// The ACP error's message is the failure's text.
impl From<TurnFailed> for String {
    fn from(e: TurnFailed) -> String {
        e.to_string()
    }
}

/// How a turn ended, as the answer to `session/prompt`: a stop reason, or the error
/// of a failed turn (ACP has no stop reason for a failure, so the request fails).
pub fn stop_reason(status: &str, error: Option<&str>) -> Result<&'static str, TurnFailed> {
    match status {
        "completed" => Ok("end_turn"),
        "interrupted" => Ok("cancelled"),
        _ => Err(TurnFailed(
            error
                .filter(|e| !e.is_empty())
                .unwrap_or("no reason given")
                .to_string(),
        )),
    }
}

/// A permission request as ACP asks it, and what each option answers.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAsk {
    /// `session/request_permission`'s `toolCall`.
    pub tool_call: Value,
    /// Its `options`.
    pub options: Vec<Value>,
    /// Per option id, the fields of tandem's `chat.permission-response`
    /// (`allow`, `remember?`, `permissionMode?`).
    pub answers: Vec<(String, Value)>,
}

/// The ACP form of a `permission_request` event (or a `chat_subscribed` pending
/// entry, which has the same fields). The vendor's choices become the options, each
/// of the kind its answer is (allow once, allow always, reject); without choices the
/// options are those three.
pub fn permission_ask(request: &Value) -> PermissionAsk {
    let tool = request["toolName"].as_str().unwrap_or("tool");
    let mut tool_call = json!({
        "toolCallId": request["requestId"].as_str().unwrap_or_default(),
        "title": tool,
        "kind": tool_kind(tool),
        "status": "pending",
    });
    if !request["input"].is_null() {
        tool_call["rawInput"] = request["input"].clone();
    }
    let defaults = [
        json!({"label": "Allow once", "allow": true}),
        json!({"label": "Always allow in this session", "allow": true, "remember": "session"}),
        json!({"label": "Reject", "allow": false}),
    ];
    let choices = match request["choices"].as_array() {
        Some(c) if !c.is_empty() => c.as_slice(),
        _ => &defaults[..],
    };
    let mut options = Vec::new();
    let mut answers: Vec<(String, Value)> = Vec::new();
    for (i, choice) in choices.iter().enumerate() {
        let allow = choice["allow"].as_bool().unwrap_or(false);
        let kind = match (allow, choice["remember"].is_string()) {
            (true, true) => "allow_always",
            (true, false) => "allow_once",
            (false, _) => "reject_once",
        };
        let id = if answers.iter().any(|(id, _)| id == kind) {
            format!("{kind}_{i}")
        } else {
            kind.to_string()
        };
        let mut answer = Map::new();
        answer.insert("allow".into(), json!(allow));
        for key in ["remember", "permissionMode"] {
            if let Some(v) = choice.get(key).filter(|v| !v.is_null()) {
                answer.insert(key.into(), v.clone());
            }
        }
        options.push(json!({
            "optionId": id,
            "name": choice["label"].as_str().unwrap_or(kind),
            "kind": kind,
        }));
        answers.push((id, Value::Object(answer)));
    }
    PermissionAsk {
        tool_call,
        options,
        answers,
    }
}

impl PermissionAsk {
    /// tandem's answer for the editor's `session/request_permission` result: the
    /// picked option's fields, or `None` when the editor cancelled (the turn is being
    /// interrupted, which withdraws the request) or named no option of ours.
    pub fn answer(&self, result: &Value) -> Option<Value> {
        let outcome = &result["outcome"];
        if outcome["outcome"] != "selected" {
            return None;
        }
        let picked = outcome["optionId"].as_str()?;
        self.answers
            .iter()
            .find(|(id, _)| id == picked)
            .map(|(_, answer)| answer.clone())
    }
}

/// Why a prompt's content blocks cannot be sent as a message (`session/prompt`
/// answers `INVALID_PARAMS` with this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptRefused {
    /// An image block lacks its `mimeType` or its `data`.
    #[error("prompt block {0}: an image needs mimeType and data")]
    ImageIncomplete(
        /// The block's index.
        usize,
    ),
    /// An embedded resource's `blob` is not base64.
    #[error("prompt block {block}: the blob is not base64: {source}")]
    NotBase64 {
        /// The block's index.
        block: usize,
        /// Why it does not decode.
        source: base64::DecodeError,
    },
    /// An embedded resource has neither `text` nor `blob`.
    #[error("prompt block {0}: a resource needs text or a blob")]
    ResourceEmpty(
        /// The block's index.
        usize,
    ),
    /// A block of a type tandem does not take (audio, say).
    #[error("prompt block {block}: `{kind}` content is not supported")]
    Unsupported {
        /// The block's index.
        block: usize,
        /// Its `type`.
        kind: String,
    },
    /// No block gave anything to send.
    #[error("the prompt is empty")]
    Empty,
}

/// The ACP error's message is the refusal's text.
impl From<PromptRefused> for String {
    fn from(e: PromptRefused) -> String {
        e.to_string()
    }
}

/// A prompt's content, with the files it embeds still to be uploaded.
#[derive(Debug, PartialEq)]
pub struct PromptContent {
    /// The message's blocks in order; each embedded file is a `file` block whose
    /// `uploadId` is filled in by [`PromptContent::with_uploads`].
    blocks: Vec<Value>,
    /// The embedded files, in the order of their blocks.
    pub files: Vec<EmbeddedFile>,
}

/// An embedded resource of a prompt, sent to the server as an upload.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedFile {
    /// Its name: the last segment of its URI.
    pub name: String,
    /// Its media type: the resource's own, else `text/plain` for a text.
    pub mime: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl PromptContent {
    /// The message's `content` once each file's upload id is known (`ids` in the
    /// order of [`PromptContent::files`]): one string when it is all text.
    pub fn with_uploads(self, ids: &[String]) -> Value {
        let mut ids = ids.iter();
        let blocks: Vec<Value> = self
            .blocks
            .into_iter()
            .map(|mut block| {
                if block["type"] == "file" {
                    block["uploadId"] = json!(ids.next().cloned().unwrap_or_default());
                }
                block
            })
            .collect();
        match blocks.as_slice() {
            [only] if only["type"] == "text" => only["text"].clone(),
            _ => Value::Array(blocks),
        }
    }
}

/// A prompt's ACP content blocks as a tandem message: texts (and a linked
/// resource's URI) joined as they come; images (and embedded image blobs) as image
/// blocks; other embedded resources, text or blob, as attachments (`file` blocks of
/// uploads: the server inlines a text file and saves any other in the session's
/// directory).
pub fn prompt_content(blocks: &[Value]) -> Result<PromptContent, PromptRefused> {
    let mut out: Vec<Value> = Vec::new();
    let mut files = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<Value>| {
        if !text.is_empty() {
            out.push(json!({"type": "text", "text": std::mem::take(text)}));
        }
    };
    for (i, block) in blocks.iter().enumerate() {
        match block["type"].as_str().unwrap_or_default() {
            "text" => text.push_str(block["text"].as_str().unwrap_or_default()),
            "resource_link" => text.push_str(block["uri"].as_str().unwrap_or_default()),
            "image" => {
                let (Some(mime), Some(data)) = (block["mimeType"].as_str(), block["data"].as_str())
                else {
                    return Err(PromptRefused::ImageIncomplete(i));
                };
                flush(&mut text, &mut out);
                out.push(json!({"type": "image", "mimeType": mime, "data": data}));
            }
            "resource" => {
                let res = &block["resource"];
                let name = resource_name(res["uri"].as_str().unwrap_or_default());
                let mime = res["mimeType"].as_str().filter(|m| !m.is_empty());
                let bytes = if let Some(body) = res["text"].as_str() {
                    body.as_bytes().to_vec()
                } else if let Some(blob) = res["blob"].as_str() {
                    if let Some(image) = mime.filter(|m| m.starts_with("image/")) {
                        flush(&mut text, &mut out);
                        out.push(json!({"type": "image", "mimeType": image, "data": blob}));
                        continue;
                    }
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD
                        .decode(blob)
                        .map_err(|source| PromptRefused::NotBase64 { block: i, source })?
                } else {
                    return Err(PromptRefused::ResourceEmpty(i));
                };
                let mime = match (mime, res["text"].is_string()) {
                    (Some(m), _) => m.to_string(),
                    (None, true) => "text/plain".to_string(),
                    (None, false) => "application/octet-stream".to_string(),
                };
                flush(&mut text, &mut out);
                out.push(json!({"type": "file", "uploadId": ""}));
                files.push(EmbeddedFile { name, mime, bytes });
            }
            other => {
                return Err(PromptRefused::Unsupported {
                    block: i,
                    kind: other.to_string(),
                })
            }
        }
    }
    flush(&mut text, &mut out);
    if out.is_empty() {
        return Err(PromptRefused::Empty);
    }
    Ok(PromptContent { blocks: out, files })
}

/// A resource's file name: the last segment of its URI's path, else `resource`.
fn resource_name(uri: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or_default();
    let last = path.rsplit('/').next().unwrap_or_default();
    match last.is_empty() {
        true => "resource".into(),
        false => last.to_string(),
    }
}

/// A tandem `SessionInfo` as ACP's `SessionInfo`.
pub fn session_info(session: &Value) -> Value {
    let mut info = json!({
        "sessionId": session["id"].as_str().unwrap_or_default(),
        "cwd": session["cwd"].as_str().unwrap_or_default(),
    });
    if let Some(title) = session["title"].as_str() {
        info["title"] = json!(title);
    }
    if let Some(ms) = session["lastActivity"].as_u64() {
        info["updatedAt"] = json!(iso8601(ms));
    }
    info
}

/// Milliseconds since the Unix epoch as ISO 8601 in UTC (`2026-12-06T11:08:30.123Z`).
pub fn iso8601(ms: u64) -> String {
    let ts = i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .unwrap_or(jiff::Timestamp::MAX);
    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: &str, seq: u64, fields: Value) -> Value {
        let mut e = json!({"kind": kind, "seq": seq, "sessionId": "ses_1"});
        if let (Some(e), Value::Object(f)) = (e.as_object_mut(), fields) {
            e.extend(f);
        }
        e
    }

    #[test]
    fn streamed_text_is_said_once_and_whole_messages_too() {
        let mut m = Mapper::default();
        let mut said = Vec::new();
        for e in [
            ev("text_delta", 3, json!({"text": "hel"})),
            ev("text_delta", 4, json!({"text": "lo"})),
            ev("assistant_message", 5, json!({"text": "hello"})),
            ev("assistant_message", 6, json!({"text": "whole"})),
            ev("text_delta", 7, json!({"text": "cut"})),
            ev("assistant_message", 8, json!({"text": "cut short"})),
        ] {
            said.extend(m.updates(&e));
        }
        let texts: Vec<(&str, &str)> = said
            .iter()
            .map(|u| {
                (
                    u["content"]["text"].as_str().unwrap(),
                    u["messageId"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            texts,
            [
                ("hel", "msg_3"),
                ("lo", "msg_3"),
                ("whole", "msg_6"),
                ("cut", "msg_7"),
                (" short", "msg_7")
            ]
        );
        assert!(said
            .iter()
            .all(|u| u["sessionUpdate"] == "agent_message_chunk"));
    }

    #[test]
    fn thinking_user_messages_and_plans() {
        let mut m = Mapper::default();
        assert_eq!(
            m.updates(&ev("thinking", 1, json!({"text": "hmm"}))),
            [
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
            ]
        );
        assert_eq!(
            m.updates(&ev("user_message", 2, json!({"text": "hi"})))[0],
            json!({"sessionUpdate": "user_message_chunk", "messageId": "msg_2",
                "content": {"type": "text", "text": "hi"}})
        );
        let plan = m.updates(&ev(
            "plan",
            3,
            json!({"entries": [
                {"content": "a", "status": "in_progress", "priority": "high"},
                {"content": "b", "status": "completed", "priority": "medium"},
                {"content": "c", "status": "pending", "priority": "medium"}
            ]}),
        ));
        assert_eq!(
            plan,
            [json!({"sessionUpdate": "plan", "entries": [
                {"content": "a", "priority": "high", "status": "in_progress"},
                {"content": "b", "priority": "medium", "status": "completed"},
                {"content": "c", "priority": "medium", "status": "pending"}
            ]})]
        );
        assert!(m
            .updates(&ev("turn_completed", 4, json!({"status": "completed"})))
            .is_empty());
    }

    #[test]
    fn tool_calls_and_results() {
        let mut m = Mapper::default();
        let call = m.updates(&ev(
            "tool_call",
            1,
            json!({"callId": "c1", "name": "Read", "input": {"file_path": "/w/a.txt"}}),
        ));
        assert_eq!(
            call,
            [
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "kind": "read",
                "status": "in_progress", "title": "Read: /w/a.txt",
                "rawInput": {"file_path": "/w/a.txt"}, "locations": [{"path": "/w/a.txt"}]})
            ]
        );
        let ok = m.updates(&ev(
            "tool_result",
            2,
            json!({"callId": "c1", "output": "fine", "isError": false}),
        ));
        assert_eq!(
            ok,
            [
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                "status": "completed", "rawOutput": "fine",
                "content": [{"type": "content", "content": {"type": "text", "text": "fine"}}]})
            ]
        );
        let failed = m.updates(&ev(
            "tool_result",
            3,
            json!({"callId": "c2", "output": {"error": "x"}, "isError": true}),
        ));
        assert_eq!(failed[0]["status"], "failed");
        assert_eq!(
            failed[0]["content"][0]["content"]["text"],
            r#"{"error":"x"}"#
        );
        // A Claude Code edit shows as a diff at its file.
        let edit = m.updates(&ev(
            "tool_call",
            4,
            json!({"callId": "c4", "name": "Edit", "input": {"file_path": "/w/a.txt",
                "old_string": "x", "new_string": "y"}}),
        ));
        assert_eq!(edit[0]["kind"], "edit");
        assert_eq!(edit[0]["locations"], json!([{"path": "/w/a.txt"}]));
        assert_eq!(
            edit[0]["content"],
            json!([{"type": "diff", "path": "/w/a.txt", "oldText": "x", "newText": "y"}])
        );
        // An ACP vendor's call keeps its title, input and content.
        let acp = m.updates(&ev(
            "tool_call",
            4,
            json!({"callId": "c3", "name": "edit", "input": {"title": "Edit a", "rawInput": {"p": 1},
                "content": [{"type": "diff", "path": "/a", "oldText": "x", "newText": "y"}]}}),
        ));
        assert_eq!(acp[0]["title"], "Edit a");
        assert_eq!(acp[0]["kind"], "edit");
        assert_eq!(acp[0]["rawInput"], json!({"p": 1}));
        assert_eq!(acp[0]["content"][0]["type"], "diff");
    }

    #[test]
    fn tool_kinds_from_names() {
        for (name, kind) in [
            ("execute", "execute"),
            ("Bash", "execute"),
            ("commandExecution", "execute"),
            ("Write", "edit"),
            ("fileChange", "edit"),
            ("Grep", "search"),
            ("Read", "read"),
            ("WebFetch", "fetch"),
            ("close_partner", "other"),
        ] {
            assert_eq!(tool_kind(name), kind, "{name}");
        }
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason("completed", None), Ok("end_turn"));
        assert_eq!(stop_reason("interrupted", Some("x")), Ok("cancelled"));
        assert_eq!(
            stop_reason("failed", Some("boom")).map_err(String::from),
            Err("the turn failed: boom".into())
        );
        assert_eq!(
            stop_reason("failed", None).map_err(String::from),
            Err("the turn failed: no reason given".into())
        );
    }

    #[test]
    fn permission_requests_and_answers() {
        let ask = permission_ask(&json!({
            "requestId": "perm_1", "toolName": "Bash", "input": {"command": "ls"},
            "choices": [
                {"label": "Allow once", "allow": true},
                {"label": "Always", "allow": true, "remember": "session"},
                {"label": "Yes, and accept edits", "allow": true, "permissionMode": "acceptEdits"},
                {"label": "Deny", "allow": false}
            ]
        }));
        assert_eq!(
            ask.tool_call,
            json!({"toolCallId": "perm_1", "title": "Bash", "kind": "execute",
                "status": "pending", "rawInput": {"command": "ls"}})
        );
        let ids: Vec<_> = ask.options.iter().map(|o| o["optionId"].clone()).collect();
        assert_eq!(
            ids,
            ["allow_once", "allow_always", "allow_once_2", "reject_once"]
        );
        assert_eq!(ask.options[1]["name"], "Always");
        let pick = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(
            ask.answer(&pick("allow_once")),
            Some(json!({"allow": true}))
        );
        assert_eq!(
            ask.answer(&pick("allow_always")),
            Some(json!({"allow": true, "remember": "session"}))
        );
        assert_eq!(
            ask.answer(&pick("allow_once_2")),
            Some(json!({"allow": true, "permissionMode": "acceptEdits"}))
        );
        assert_eq!(
            ask.answer(&pick("reject_once")),
            Some(json!({"allow": false}))
        );
        assert_eq!(ask.answer(&pick("nope")), None);
        assert_eq!(
            ask.answer(&json!({"outcome": {"outcome": "cancelled"}})),
            None
        );
        // Without choices: allow once, allow always, reject.
        let plain = permission_ask(&json!({"requestId": "perm_2", "toolName": "x"}));
        let kinds: Vec<_> = plain.options.iter().map(|o| o["kind"].clone()).collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    }

    #[test]
    fn prompt_blocks_become_content() {
        let content = |blocks: &[Value]| prompt_content(blocks).map(|c| c.with_uploads(&[]));
        assert_eq!(
            content(&[
                json!({"type": "text", "text": "look at "}),
                json!({"type": "resource_link", "uri": "file:///a.rs", "name": "a.rs"})
            ]),
            Ok(json!("look at file:///a.rs"))
        );
        assert_eq!(
            content(&[
                json!({"type": "text", "text": "pic"}),
                json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})
            ]),
            Ok(json!([{"type": "text", "text": "pic"},
                {"type": "image", "mimeType": "image/png", "data": "AAAA"}]))
        );
        assert!(prompt_content(&[]).is_err());
        assert!(prompt_content(&[json!({"type": "audio", "data": "x"})]).is_err());
        assert!(prompt_content(&[json!({"type": "image", "data": "x"})]).is_err());
        let not_base64 = json!({"type": "resource", "resource": {"uri": "file:///x.pdf",
            "mimeType": "application/pdf", "blob": "%%%"}});
        assert!(prompt_content(&[not_base64]).is_err());
    }

    #[test]
    fn embedded_resources_are_attachments() {
        let prompt = prompt_content(&[
            json!({"type": "text", "text": "see"}),
            json!({"type": "resource", "resource": {"uri": "file:///w/notes.md?x=1", "text": "B"}}),
            json!({"type": "resource", "resource": {"uri": "file:///w/spec.pdf",
                "mimeType": "application/pdf", "blob": "JVBERg=="}}),
            json!({"type": "resource", "resource": {"uri": "file:///w/p.png",
                "mimeType": "image/png", "blob": "AAAA"}}),
        ])
        .unwrap();
        assert_eq!(
            prompt.files,
            [
                EmbeddedFile {
                    name: "notes.md".into(),
                    mime: "text/plain".into(),
                    bytes: b"B".to_vec()
                },
                EmbeddedFile {
                    name: "spec.pdf".into(),
                    mime: "application/pdf".into(),
                    bytes: b"%PDF".to_vec()
                },
            ]
        );
        assert_eq!(
            prompt.with_uploads(&["up_1".into(), "up_2".into()]),
            json!([{"type": "text", "text": "see"},
                {"type": "file", "uploadId": "up_1"},
                {"type": "file", "uploadId": "up_2"},
                {"type": "image", "mimeType": "image/png", "data": "AAAA"}])
        );
        assert_eq!(resource_name("untitled:"), "untitled:");
        assert_eq!(resource_name("file:///w/dir/"), "resource");
    }

    #[test]
    fn sessions_and_times() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_796_554_110_123), "2026-12-06T10:48:30.123Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(
            session_info(
                &json!({"id": "ses_1", "cwd": "/w", "title": "t", "lastActivity": 0,
                "vendor": "scripted"})
            ),
            json!({"sessionId": "ses_1", "cwd": "/w", "title": "t",
                "updatedAt": "1970-01-01T00:00:00.000Z"})
        );
    }
}
