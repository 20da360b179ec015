//! The agent tools' wire shapes: each tool's arguments (`*Params`) and result
//! (`*Result`), and the definitions `tools/list` serves.
//!
//! The input schema of every tool is generated from its `*Params` type, so the schema an
//! agent sees and the parser that reads its call cannot disagree: a field the type does
//! not have is refused (`deny_unknown_fields`, shown as `additionalProperties: false`).
//! `protocol/schemas/tools.json` holds the generated schemas; a test compares them, so a
//! change to a tool's wire shape is always a visible diff.
//!
//! Values are normalized after parsing, where the tools use them: strings are trimmed
//! and an empty optional string counts as absent; numbers are floored and clamped to
//! the range their description gives (the schema says `number`, which is what is read).

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{PairId, RequestId, SessionId};
use crate::mcp::ToolDef;

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
/// See [`SEND_TO_PARTNER`].
pub const ASK_DRIVER: &str = "ask_driver";
/// See [`SEND_TO_PARTNER`].
pub const ANSWER_WORKER: &str = "answer_worker";
/// See [`SEND_TO_PARTNER`].
pub const APPROVE_WORKER: &str = "approve_worker";

/// Every tool name, in the order `tools/list` offers them.
pub const ALL: [&str; 11] = [
    SEND_TO_PARTNER,
    READ_PARTNER,
    INTERRUPT_PARTNER,
    CLOSE_PARTNER,
    PROPOSE_WORKER,
    SPAWN_SESSIONS,
    CHECK_SPAWNED_SESSIONS,
    READ_HANDOFF_SOURCE,
    ASK_DRIVER,
    ANSWER_WORKER,
    APPROVE_WORKER,
];

/// `send_to_partner` arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendToPartnerParams {
    /// The whole task or question for the Worker.
    pub message: String,
    /// Wait for the Worker's turn to end. Default true.
    pub wait: Option<bool>,
    /// Longest wait, 1 to 900 seconds (clamped). Default 300.
    pub timeout_seconds: Option<f64>,
    /// Vendor for a Worker created by this call.
    pub worker_vendor: Option<String>,
    /// Model for a Worker created by this call.
    pub worker_model: Option<String>,
    /// Reasoning effort for a Worker created by this call.
    pub worker_effort: Option<String>,
    /// Which Worker, by name or session id; may be left out when you have one (or
    /// none: one is created). A name none of your Workers has creates a new Worker
    /// with that name.
    pub worker: Option<String>,
}

/// `ask_driver` arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskDriverParams {
    /// The question, complete enough to answer without your context.
    pub question: String,
    /// Answers to offer, if the question has a few (any answer is taken).
    pub choices: Option<Vec<String>>,
    /// How long to wait, 1 to 3600 seconds (clamped). Default 600.
    pub timeout_seconds: Option<f64>,
}

/// `answer_worker` arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerWorkerParams {
    /// The question's id, as `send_to_partner` or the pushed message gave it.
    pub question_id: String,
    /// The answer; the Worker's `ask_driver` returns it.
    pub answer: String,
    /// The Worker that asked, by name or session id; left out, the Worker whose
    /// question it is.
    pub worker: Option<String>,
}

/// `approve_worker` arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApproveWorkerParams {
    /// The request's id, as `send_to_partner` (status `approval`) or the pushed
    /// message gave it.
    pub request_id: RequestId,
    /// Allow the call, or deny it.
    pub allow: bool,
    /// With `allow`: also allow this tool without asking for the rest of the
    /// Worker's session. Default false.
    pub remember: Option<bool>,
    /// With a denial: why, for the Worker's agent.
    pub message: Option<String>,
    /// The Worker that asked, by name or session id; left out, the Worker whose
    /// request it is.
    pub worker: Option<String>,
}

/// `approve_worker` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApproveWorkerResult {
    /// The request answered.
    pub request_id: RequestId,
    /// The Worker session, which goes on.
    pub partner_id: SessionId,
    /// The Worker's name among its Driver's Workers.
    pub worker_name: String,
    /// What was answered.
    pub allow: bool,
}

/// `ask_driver` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskDriverResult {
    /// The question.
    pub question_id: String,
    /// The answer ("no answer: decide yourself" after the timeout).
    pub answer: String,
    /// Who answered.
    pub answered_by: crate::question::Answerer,
}

/// `answer_worker` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerWorkerResult {
    /// The question answered.
    pub question_id: String,
    /// The Worker session, which goes on with the answer.
    pub partner_id: SessionId,
    /// The Worker's name among its Driver's Workers.
    pub worker_name: String,
}

/// `read_partner` arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadPartnerParams {
    /// How many recent turns, 1 to 5 (clamped). Default 1.
    pub last_turns: Option<f64>,
    /// Which Worker, by name or session id; may be left out when the Driver has
    /// only one.
    pub worker: Option<String>,
}

/// Arguments of `interrupt_partner` and `close_partner`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PartnerParams {
    /// Which Worker, by name or session id; may be left out when the Driver has
    /// only one.
    pub worker: Option<String>,
}

/// Arguments of the tools that take none (`check_spawned_sessions`): an empty
/// object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// `propose_worker` arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProposeWorkerParams {
    /// One line: what the Worker would do.
    pub summary: String,
    /// The plan it would follow.
    pub plan: String,
    /// The task sent to the Worker on acceptance.
    pub message: String,
    /// The vendor to suggest (ignored when not installed).
    pub recommended_vendor: Option<String>,
    /// The model to suggest (ignored when the vendor does not list it).
    pub recommended_model: Option<String>,
    /// The effort to suggest (clamped to the vendor's levels). Default medium.
    pub recommended_effort: Option<String>,
}

/// One session `spawn_sessions` starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpawnEntry {
    /// The new session's title.
    pub title: String,
    /// Its first message.
    pub prompt: String,
}

/// `spawn_sessions` arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpawnSessionsParams {
    /// The sessions to start, 1 to 10.
    #[schemars(length(min = 1, max = 10))]
    pub sessions: Vec<SpawnEntry>,
    /// Vendor of the new sessions. Default: yours.
    pub vendor: Option<String>,
}

/// `read_handoff_source` arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadHandoffSourceParams {
    /// Messages to skip, counted back from the newest. Default 0.
    pub offset: Option<f64>,
    /// Messages per page, 1 to 100 (clamped). Default 30.
    pub limit: Option<f64>,
}

/// Where a delegation stands in a `send_to_partner` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DelegationState {
    /// The Worker's turn completed.
    Complete,
    /// The Worker's turn failed.
    Error,
    /// The Worker was stopped; its work is partial.
    Interrupted,
    /// The Worker still works; the result is pushed back later.
    Running,
    /// The Worker asks something (`questionId`, `question`, `choices`): answer with
    /// `answer_worker`; the Worker's result is pushed back later.
    Question,
    /// The Worker's agent asks permission (`approval`): answer with
    /// `approve_worker`; the Worker's result is pushed back later.
    Approval,
}

/// `send_to_partner` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendToPartnerResult {
    /// Where the delegation stands.
    pub status: DelegationState,
    /// The Worker's assistant text of the delegated turn (so far, while running);
    /// absent when the caller did not wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// Why the Worker's turn failed or stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What happens next, for the model (while running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The Worker session.
    pub partner_id: SessionId,
    /// The Worker's name among its Driver's Workers.
    pub worker_name: String,
    /// True when this call created the Worker.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worker_created: bool,
    /// A worktree Worker's branch and what it changed, once its turn ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<crate::workspace::ChangeSummary>,
    /// With status `question`: the question's id, for `answer_worker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_id: Option<String>,
    /// With status `question`: what the Worker asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// With status `question`: the answers it offers, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// With status `approval`: the permission request to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<crate::permission::ApprovalAsk>,
}

/// A Worker's state as `read_partner` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartnerState {
    /// A turn runs.
    Running,
    /// Its last turn was stopped.
    Interrupted,
    /// No turn runs.
    Idle,
}

/// One recent Worker turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartnerTurn {
    /// What it was asked.
    pub user: String,
    /// True when the Driver delegated the turn.
    pub delegated: bool,
    /// What it answered.
    pub response: String,
}

/// `read_partner` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadPartnerResult {
    /// The Worker's state.
    pub status: PartnerState,
    /// The Worker session.
    pub partner_id: SessionId,
    /// The Worker's name among its Driver's Workers.
    pub worker_name: String,
    /// Its title.
    pub title: String,
    /// Its recent turns, oldest first.
    pub turns: Vec<PartnerTurn>,
}

/// What `interrupt_partner` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum InterruptState {
    /// A turn ran and is being stopped.
    Interrupting,
    /// Nothing ran.
    Idle,
}

/// `interrupt_partner` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptPartnerResult {
    /// What the call did.
    pub status: InterruptState,
    /// The Worker session.
    pub partner_id: SessionId,
    /// The Worker's name among its Driver's Workers.
    pub worker_name: String,
    /// Its title.
    pub title: String,
}

/// Always `closed`: the `status` of a `close_partner` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ClosedState {
    /// The pair is dissolved.
    Closed,
}

/// `close_partner` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClosePartnerResult {
    /// Always `closed`.
    pub status: ClosedState,
    /// The former Worker.
    pub partner_id: SessionId,
    /// The Worker's name among its Driver's Workers.
    pub worker_name: String,
    /// True when the Worker was running and was stopped.
    pub interrupted: bool,
    /// Always true: both histories are kept.
    pub history_preserved: bool,
}

/// Where a proposal stands right after `propose_worker`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProposeState {
    /// Waiting for a person.
    Posted,
    /// Accepted at once (permissions bypassed); the Worker runs.
    Running,
}

/// `propose_worker` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposeWorkerResult {
    /// Where the proposal stands.
    pub status: ProposeState,
    /// The proposal.
    pub proposal_id: String,
    /// True when it was accepted without asking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto_approved: bool,
    /// The Worker started for it (auto-approved only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<SessionId>,
    /// The pair created for it (auto-approved only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_id: Option<PairId>,
    /// What happens next, for the model.
    pub hint: String,
}

/// A session `spawn_sessions` created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnedSession {
    /// The new session.
    pub session_id: SessionId,
    /// Its title.
    pub title: String,
}

/// Always `started`: the `status` of a `spawn_sessions` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StartedState {
    /// The sessions were created and queued to run.
    Started,
}

/// `spawn_sessions` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnSessionsResult {
    /// Always `started`.
    pub status: StartedState,
    /// The sessions created, in the order asked.
    pub sessions: Vec<SpawnedSession>,
    /// What happens next, for the model.
    pub hint: String,
}

/// A spawned session's state as `check_spawned_sessions` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChildState {
    /// Running, or waiting for a free slot.
    Running,
    /// Its last turn was stopped.
    Interrupted,
    /// Its last turn failed.
    Error,
    /// It finished.
    Done,
}

/// One spawned session in `check_spawned_sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildSummary {
    /// The session.
    pub session_id: SessionId,
    /// Its title.
    pub title: String,
    /// Where it stands.
    pub status: ChildState,
    /// Turns it ran.
    pub turn_count: u64,
    /// Its last activity, epoch ms.
    pub last_activity: u64,
}

/// `check_spawned_sessions` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSpawnedSessionsResult {
    /// The caller's spawned sessions, oldest first.
    pub sessions: Vec<ChildSummary>,
}

/// Who spoke a message of a handoff source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Speaker {
    /// The person (or the server on their behalf).
    User,
    /// The agent.
    Assistant,
}

impl Speaker {
    /// `user` or `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        }
    }
}

/// One message of a handoff source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffEntry {
    /// The session it was said in (the source or an earlier one).
    pub session_id: SessionId,
    /// Its event's position.
    pub seq: u64,
    /// Who said it.
    pub role: Speaker,
    /// What was said.
    pub text: String,
}

/// `read_handoff_source` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadHandoffSourceResult {
    /// The session this one continues.
    pub source_session_id: Option<SessionId>,
    /// Messages in all.
    pub total: usize,
    /// Messages skipped from the newest.
    pub offset: usize,
    /// Page size.
    pub limit: usize,
    /// True when older messages precede this page.
    pub has_more: bool,
    /// The page, oldest first.
    pub entries: Vec<HandoffEntry>,
}

/// The settings every tool schema is generated with: JSON Schema 2020-12, subschemas
/// inlined (some agents' tool parsers do not follow `$ref`), no `$schema` key.
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    })
}

/// The input schema of one argument type.
pub fn input_schema<T: JsonSchema>() -> Value {
    settings()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The definition of a tool: its description for the model and its generated input
/// schema (generated once per process).
pub fn def(name: &str) -> Option<ToolDef> {
    static DEFS: std::sync::OnceLock<Vec<ToolDef>> = std::sync::OnceLock::new();
    DEFS.get_or_init(|| ALL.iter().filter_map(|n| generate(n)).collect())
        .iter()
        .find(|d| d.name == name)
        .cloned()
}

/// Builds a tool's definition.
fn generate(name: &str) -> Option<ToolDef> {
    let (description, input_schema) = match name {
        SEND_TO_PARTNER => (
            "Give your Worker one concrete, bounded task. If you have no Worker yet, one is created and paired with you first (workerCreated: true). wait=true (default) returns the Worker's answer when its turn ends, or status 'running' with the text so far after timeoutSeconds; wait=false returns at once and the result arrives later as a new message. Delegation is one level deep. You may have several Workers, each with a name: `worker` names the one to use (required once you have more than one), and a name none of them has creates another Worker; tasks to different Workers run at once.",
            input_schema::<SendToPartnerParams>(),
        ),
        READ_PARTNER => (
            "Check on your Worker (`worker`: which one, when you have several): its status (running, interrupted, idle) and its last turns (what it was asked and what it answered).",
            input_schema::<ReadPartnerParams>(),
        ),
        INTERRUPT_PARTNER => (
            "Stop the Worker's current task (`worker`: which one, when you have several) but keep the pair. Its partial work comes back to you to review.",
            input_schema::<PartnerParams>(),
        ),
        CLOSE_PARTNER => (
            "End the pair with a Worker (`worker`: which one, when you have several): stops it if it is running and dissolves the pairing; your other Workers stay. Both session histories are kept.",
            input_schema::<PartnerParams>(),
        ),
        PROPOSE_WORKER => (
            "Propose handing a task to a new Worker; the user accepts (possibly choosing another vendor, model or effort) or declines, and you are resumed with the outcome. One proposal at a time.",
            input_schema::<ProposeWorkerParams>(),
        ),
        SPAWN_SESSIONS => (
            "Start independent sessions for side tasks (1 to 10 per call, at most 20 per session; 3 run at once, the rest wait). They do not report back: check them with check_spawned_sessions.",
            input_schema::<SpawnSessionsParams>(),
        ),
        CHECK_SPAWNED_SESSIONS => (
            "List the sessions you spawned with their status (running, interrupted, error, done), turn count and last activity.",
            input_schema::<NoParams>(),
        ),
        READ_HANDOFF_SOURCE => (
            "Read the conversation this session continues (after a handoff), including earlier handoffs up to 5 levels back: user and assistant messages, newest page first (offset 0 is the latest `limit` messages).",
            input_schema::<ReadHandoffSourceParams>(),
        ),
        ASK_DRIVER => (
            "Ask your Driver a question when you need a decision you cannot make yourself, and wait for its answer (returned as `answer`). Unanswered after timeoutSeconds, the answer is 'no answer: decide yourself'. One question at a time.",
            input_schema::<AskDriverParams>(),
        ),
        ANSWER_WORKER => (
            "Answer your Worker's question (send_to_partner status 'question', or a '[Question from your Worker]' message) by its questionId; the Worker goes on with your answer and its result comes to you as a new message.",
            input_schema::<AnswerWorkerParams>(),
        ),
        APPROVE_WORKER => (
            "Answer a permission request of your Worker's agent (send_to_partner status 'approval', or a '[Permission request from your Worker]' message) by its requestId: allow (remember: true also allows that tool for the rest of the Worker's session) or deny with a message. The Worker goes on and its result comes to you as a new message.",
            input_schema::<ApproveWorkerParams>(),
        ),
        _ => return None,
    };
    Some(ToolDef {
        name: name.to_string(),
        description: description.to_string(),
        input_schema,
    })
}

/// Every tool's definition, as `protocol/schemas/tools.json` holds them.
pub fn all_defs() -> Vec<ToolDef> {
    ALL.iter().filter_map(|n| def(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated schemas are checked in (`protocol/schemas/tools.json`); any change
    /// to a tool's wire shape shows as a diff of that file. `UPDATE_SNAPSHOTS=1`
    /// rewrites it.
    #[test]
    fn tool_schemas_match_the_snapshot() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/tools.json");
        let generated = serde_json::to_string_pretty(&all_defs()).unwrap() + "\n";
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("{e}"));
        }
        let stored = std::fs::read_to_string(&path).unwrap();
        assert!(
            stored == generated,
            "the tool schemas changed; if that is meant, run with UPDATE_SNAPSHOTS=1 and \
             commit protocol/schemas/tools.json\n--- generated ---\n{generated}"
        );
    }

    #[test]
    fn schemas_refuse_what_the_parser_refuses() {
        for d in all_defs() {
            assert_eq!(
                d.input_schema["additionalProperties"], false,
                "{}: {}",
                d.name, d.input_schema
            );
            assert_eq!(d.input_schema["type"], "object", "{}", d.name);
        }
        let err = serde_json::from_value::<SendToPartnerParams>(
            serde_json::json!({"message": "x", "wiat": false}),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap();
        assert!(err.contains("unknown field `wiat`"), "{err}");
        let err = serde_json::from_value::<SpawnSessionsParams>(
            serde_json::json!({"sessions": [{"title": "a", "prompt": "b", "extra": 1}]}),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap();
        assert!(err.contains("unknown field `extra`"), "{err}");
        let spawn = input_schema::<SpawnSessionsParams>();
        assert_eq!(spawn["properties"]["sessions"]["minItems"], 1);
        assert_eq!(spawn["properties"]["sessions"]["maxItems"], 10);
        assert_eq!(
            spawn["properties"]["sessions"]["items"]["additionalProperties"],
            false
        );
    }
}
