//! History events: one frame per event, each with the session's next `seq`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{PairId, RequestId, SessionId, TurnId};
use crate::pair::{PairInfo, ProposalStatus, WorkerChoice};
use crate::permission::{Decider, PermissionChoice, PermissionKind, PermissionRule};
use crate::session::{BackgroundTask, PermissionMode};

/// How a turn ended. `interrupted` and `failed` are never reported as completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    /// The agent finished its answer.
    Completed,
    /// Someone stopped the turn (or the server restarted under it).
    Interrupted,
    /// The turn ended in error.
    Failed,
    /// The vendor's usage or rate limit ended the turn (`resetsAt` on
    /// `turn_completed` when the vendor said when it lifts); the session's `onLimit`
    /// says what happens next.
    Limited,
}

/// The largest `seq` a history can hold, and so the largest position a client may name
/// (`chat.subscribe`'s `lastSeq`, REST `after`): the store keeps positions as SQLite's
/// signed 64-bit integers. Larger positions are refused with `INVALID_ARGUMENT`, never
/// wrapped.
pub const MAX_SEQ: u64 = i64::MAX as u64;

/// One history event as it goes over the wire: `{kind, sessionId, seq, ts, turnId?, ...}`.
///
/// `turn_started` and `turn_completed` carry their turn's id in the envelope's `turnId`
/// (the protocol's `turn_started {turnId}`), so the body never repeats it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The session the event belongs to.
    pub session_id: SessionId,
    /// Gap-free, monotonic per session, starting at 1.
    pub seq: u64,
    /// When the event was appended, epoch milliseconds.
    pub ts: u64,
    /// The turn that produced it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// What happened.
    #[serde(flatten)]
    pub body: EventBody,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The kinds of history events and their payloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EventBody {
    /// A user (or the server on someone's behalf) spoke to the agent.
    UserMessage {
        /// The message text.
        text: String,
        /// True when the server wrote it (a delegation result, a restart notice).
        #[serde(default, skip_serializing_if = "is_false")]
        internal: bool,
        /// The Driver session that delegated this message, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delegated_by: Option<SessionId>,
        /// The message's blocks when it had attachments (images and files by upload
        /// id); absent for a text-only message, whose `text` is all of it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        content: Vec<crate::content::HistoryBlock>,
    },
    /// A piece of assistant text as it streams.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A whole assistant message (also written for partial text of a stopped turn).
    AssistantMessage {
        /// The full text.
        text: String,
    },
    /// Reasoning text the vendor chose to show.
    Thinking {
        /// The text.
        text: String,
    },
    /// The agent called a tool.
    ToolCall {
        /// Pairs the call with its result.
        call_id: String,
        /// Tool name.
        name: String,
        /// Arguments as the agent gave them.
        input: Value,
        /// The files it changes, for a tool that edits files; left out otherwise.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<crate::history::FileChange>,
    },
    /// A tool's answer.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The output.
        output: Value,
        /// True when the tool failed.
        is_error: bool,
    },
    /// A turn began; its id is the envelope's `turnId`.
    TurnStarted {},
    /// A turn ended; its id is the envelope's `turnId`. Exactly one per turn.
    TurnCompleted {
        /// How it ended.
        status: TurnStatus,
        /// Why it failed or was cut off.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Token usage and cost as the vendor reported them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<crate::history::TurnUsage>,
        /// With status `limited`: when the vendor's limit lifts, epoch ms, when it
        /// said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resets_at: Option<u64>,
    },
    /// Something went wrong that the user should see.
    Error {
        /// What went wrong.
        message: String,
    },
    /// A notice from the server.
    Info {
        /// The notice.
        text: String,
    },
    /// The complete live set of background tasks (empty when none remain).
    BackgroundTasks {
        /// Every task still running.
        tasks: Vec<BackgroundTask>,
    },
    /// The vendor asks whether it may use a tool.
    PermissionRequest {
        /// Answer with `chat.permission-response {requestId}`.
        request_id: RequestId,
        /// The tool it wants.
        tool_name: String,
        /// The tool's input.
        input: Value,
        /// The files the tool would change, for a tool that edits files; left out
        /// otherwise.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<crate::history::FileChange>,
        /// A tool call (left out) or a plan to approve (`plan`, text in `input.plan`).
        #[serde(default, skip_serializing_if = "PermissionKind::is_tool")]
        permission_kind: PermissionKind,
        /// The answers the vendor offers, each as the fields of the
        /// `chat.permission-response` that picks it; empty: allow or deny.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        choices: Vec<PermissionChoice>,
    },
    /// A person allowed a tool for the rest of the session: its requests are answered
    /// without asking from now on.
    PermissionRemembered {
        /// The rule now in force.
        rule: PermissionRule,
    },
    /// A permission request was answered (or withdrawn).
    PermissionResolved {
        /// The request that is settled.
        request_id: RequestId,
        /// Who answered it; left out when nobody did (its turn ended, or the vendor
        /// settled it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<Decider>,
    },
    /// The agent's plan, complete each time it changes (ACP `plan` updates).
    Plan {
        /// Its steps, in order.
        entries: Vec<crate::history::PlanEntry>,
    },
    /// A delegation between the sessions of a pair started (`active`) or ended.
    Delegation {
        /// The pair.
        pair_id: PairId,
        /// The Driver.
        from: SessionId,
        /// The Worker.
        to: SessionId,
        /// True while the Worker holds the delegation.
        active: bool,
        /// On the end (`active: false`) of a delegation to a worktree Worker: its
        /// branch and what it changed, so the Driver can review before merging.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changes: Option<crate::workspace::ChangeSummary>,
    },
    /// A Worker asked its Driver (`ask_driver`); recorded in both histories.
    Question {
        /// The question (`q_…`); `answer_worker` and `question.answer` name it.
        question_id: String,
        /// The pair.
        pair_id: PairId,
        /// The Worker that asks.
        from: SessionId,
        /// Its Driver.
        to: SessionId,
        /// What it asks.
        question: String,
        /// The answers it offers, if any (any answer is taken).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        choices: Vec<String>,
        /// Unanswered this long, it returns "no answer: decide yourself".
        timeout_seconds: u64,
    },
    /// A Worker's question was answered (or timed out); recorded in both histories.
    QuestionAnswered {
        /// The question.
        question_id: String,
        /// The pair.
        pair_id: PairId,
        /// The answer the Worker got.
        answer: String,
        /// Who answered.
        by: crate::question::Answerer,
    },
    /// What the session's working directory changed, published after a turn ends
    /// when it differs from the last one published.
    GitState {
        /// The state.
        #[serde(flatten)]
        state: crate::workspace::GitState,
    },
    /// The files as a turn left them were recorded (after its `turn_completed`, in
    /// the envelope's `turnId`): a commit under
    /// `refs/tandem/checkpoints/<sessionId>/<turnId>`.
    Checkpoint {
        /// The checkpoint commit.
        commit: String,
        /// Paths that differ from the session's previous checkpoint (from `HEAD` for
        /// its first), at most 500.
        files: Vec<String>,
        /// How many more paths differ than `files` lists.
        #[serde(default, skip_serializing_if = "is_zero")]
        files_omitted: u64,
    },
    /// `session.restore` put the files back to the checkpoint of the envelope's
    /// `turnId`.
    Restored {
        /// The checkpoint's commit.
        commit: String,
        /// Paths the restore changed, at most 500.
        files: Vec<String>,
        /// How many more it changed than `files` lists.
        #[serde(default, skip_serializing_if = "is_zero")]
        files_omitted: u64,
        /// The checkpoint of the files as they were just before; restoring it undoes
        /// this one.
        undo: TurnId,
    },
    /// `session.push` pushed the session's branch.
    Pushed {
        /// Where.
        #[serde(flatten)]
        to: crate::workspace::PushedBranch,
    },
    /// The slash commands the session's agent offers changed (complete each time).
    Commands {
        /// Every command, as the vendor lists them.
        commands: Vec<crate::session::VendorCommand>,
    },
    /// A loop began (`loop.start`).
    LoopStarted {
        /// The loop.
        loop_id: String,
        /// Its goal.
        goal: String,
        /// How each iteration is checked.
        check: crate::loops::LoopCheck,
        /// Its last iteration.
        max_iterations: u32,
    },
    /// A loop's iteration was checked.
    LoopIteration {
        /// The loop.
        loop_id: String,
        /// The iteration, from 1.
        n: u32,
        /// Its check.
        check: crate::loops::LoopCheckOutcome,
    },
    /// A loop ended.
    LoopEnded {
        /// The loop.
        loop_id: String,
        /// Why.
        reason: crate::loops::LoopEndReason,
        /// Iterations whose turn started.
        iterations: u32,
    },
    /// An occurrence of a recurring schedule came due.
    ScheduleOccurrence {
        /// The schedule.
        schedule_id: String,
        /// Its number (1 for the first).
        number: u32,
        /// When it was due, epoch ms.
        at: u64,
        /// What it did.
        outcome: crate::schedule::OccurrenceOutcome,
    },
    /// A worktree script started, made progress or ended.
    Script {
        /// Which, where it is, and its output so far.
        #[serde(flatten)]
        report: crate::scripts::ScriptReport,
    },
    /// A check of `session.check` ended.
    Check {
        /// Its outcome.
        #[serde(flatten)]
        result: crate::workspace::CheckResult,
    },
    /// `session.rebase` moved the session's branch onto its base's head.
    Rebased {
        /// The session's branch.
        branch: String,
        /// The base branch.
        base: String,
        /// The base's head it is on now.
        onto: String,
        /// The branch's new tip.
        head: String,
    },
    /// `session.merge` merged the session's branch into its base.
    Merged {
        /// The session's branch.
        branch: String,
        /// The branch merged into.
        base: String,
        /// How.
        strategy: crate::workspace::MergeStrategy,
        /// The base's new HEAD commit.
        commit: String,
    },
    /// `session.discard` removed the session's worktree and branch.
    Discarded {
        /// The branch deleted.
        branch: String,
    },
    /// This session joined a pair.
    PairCreated {
        /// The pair.
        pair: PairInfo,
    },
    /// This session's pair was dissolved; both histories stay.
    PairClosed {
        /// The pair that was closed.
        pair_id: PairId,
    },
    /// This conversation continues in another session (written in the source).
    HandoffCreated {
        /// The new session.
        target_session_id: SessionId,
        /// Its vendor.
        target_vendor: String,
        /// Its title.
        target_title: String,
    },
    /// This session continues another one (written in the target, first).
    HandoffContext {
        /// The session continued.
        source_session_id: SessionId,
        /// Its vendor.
        source_vendor: String,
        /// Its title.
        source_title: String,
        /// The latest user request there, verbatim.
        request: String,
    },
    /// The turn's user message is a review (`chat.review`): its comments, written
    /// just after that message so a client can show them as a review.
    Review {
        /// The comments.
        comments: Vec<crate::review::ReviewComment>,
        /// The general remark, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// The agent that wrote it (`session.review-by`); absent for a person's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reviewer: Option<crate::review::Reviewer>,
        /// Why that agent's review gave no usable answer; absent when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<String>,
    },
    /// This worktree session and another of the same owner in the same repository
    /// have both changed these paths since their bases (told to both, when the
    /// shared paths change; none: they no longer share any).
    Overlap {
        /// The other session.
        with_session_id: SessionId,
        /// The paths both changed, sorted.
        paths: Vec<String>,
    },
    /// This session continues a CLI session found on the machine (written first); the
    /// transcript's prompts, answers and tool calls follow as `user_message`,
    /// `assistant_message`, `tool_call` and `tool_result` events outside any turn.
    Imported {
        /// The configured vendor whose CLI wrote it.
        vendor: String,
        /// The CLI's session id, which the session's next turn resumes.
        vendor_session_id: String,
        /// The transcript's messages (prompts, answers, tool calls).
        messages: u64,
        /// Of them, the newest ones written here as events (older ones are left out).
        shown: u64,
        /// Lines of the transcript that could not be read.
        skipped_lines: u64,
    },
    /// This session is a fork of another (written in the fork, first).
    Forked {
        /// The session forked.
        source_session_id: SessionId,
        /// Its title then.
        source_title: String,
        /// The `seq` of its `user_message` whose turn this conversation ends with.
        anchor_seq: u64,
        /// Turns of the source the conversation holds.
        turns: u64,
        /// How the agent has them.
        conversation: crate::session::ForkConversation,
    },
    /// The agent proposes handing a task to a Worker.
    WorkerProposal {
        /// The proposal's id (`proposal.respond` takes it).
        proposal_id: String,
        /// One-line summary.
        summary: String,
        /// The plan the Worker would follow.
        plan: String,
        /// Its status when recorded.
        status: ProposalStatus,
        /// The recommended Worker.
        recommended: WorkerChoice,
        /// True when it was accepted automatically (permissions bypassed).
        #[serde(default, skip_serializing_if = "is_false")]
        auto_approved: bool,
    },
    /// A proposal moved to another status.
    WorkerProposalUpdate {
        /// The proposal.
        proposal_id: String,
        /// Its new status.
        status: ProposalStatus,
        /// The Worker chosen on acceptance.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selected: Option<WorkerChoice>,
        /// The Worker session, once created.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worker_id: Option<SessionId>,
        /// The pair, once created.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pair_id: Option<PairId>,
        /// Why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// True when accepted automatically.
        #[serde(default, skip_serializing_if = "is_false")]
        auto_approved: bool,
    },
    /// `chat.edit-send` rewound the conversation: the events `supersededFrom..=
    /// supersededTo` (from the anchor's turn to the last event before this one) are an
    /// earlier branch the vendor no longer remembers; the next turn replaces it.
    /// The same range is kept in the session's `superseded` list, so a client that
    /// reads a page of older events without this event still knows.
    HistoryRewound {
        /// The `user_message` that was edited.
        anchor_seq: u64,
        /// First `seq` of the superseded branch (the anchor turn's `turn_started`).
        superseded_from: u64,
        /// Last `seq` of the superseded branch.
        superseded_to: u64,
        /// Turns started in the branch that were not already superseded.
        turns: u64,
    },
    /// The session's configuration changed.
    ConfigChanged {
        /// Model after the change.
        model: String,
        /// Effort after the change (clamped).
        effort: String,
        /// Vendor after the change.
        vendor: String,
        /// Permission mode after the change.
        permission_mode: PermissionMode,
    },
}

impl EventBody {
    /// The wire name of the kind, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::UserMessage { .. } => "user_message",
            EventBody::TextDelta { .. } => "text_delta",
            EventBody::AssistantMessage { .. } => "assistant_message",
            EventBody::Thinking { .. } => "thinking",
            EventBody::ToolCall { .. } => "tool_call",
            EventBody::ToolResult { .. } => "tool_result",
            EventBody::TurnStarted {} => "turn_started",
            EventBody::TurnCompleted { .. } => "turn_completed",
            EventBody::Error { .. } => "error",
            EventBody::Info { .. } => "info",
            EventBody::BackgroundTasks { .. } => "background_tasks",
            EventBody::PermissionRequest { .. } => "permission_request",
            EventBody::PermissionResolved { .. } => "permission_resolved",
            EventBody::Plan { .. } => "plan",
            EventBody::PermissionRemembered { .. } => "permission_remembered",
            EventBody::ConfigChanged { .. } => "config_changed",
            EventBody::Delegation { .. } => "delegation",
            EventBody::Question { .. } => "question",
            EventBody::QuestionAnswered { .. } => "question_answered",
            EventBody::PairCreated { .. } => "pair_created",
            EventBody::PairClosed { .. } => "pair_closed",
            EventBody::WorkerProposal { .. } => "worker_proposal",
            EventBody::HandoffCreated { .. } => "handoff_created",
            EventBody::HandoffContext { .. } => "handoff_context",
            EventBody::Forked { .. } => "forked",
            EventBody::Imported { .. } => "imported",
            EventBody::Review { .. } => "review",
            EventBody::Overlap { .. } => "overlap",
            EventBody::WorkerProposalUpdate { .. } => "worker_proposal_update",
            EventBody::HistoryRewound { .. } => "history_rewound",
            EventBody::GitState { .. } => "git_state",
            EventBody::Checkpoint { .. } => "checkpoint",
            EventBody::Restored { .. } => "restored",
            EventBody::Rebased { .. } => "rebased",
            EventBody::Check { .. } => "check",
            EventBody::Script { .. } => "script",
            EventBody::ScheduleOccurrence { .. } => "schedule_occurrence",
            EventBody::Commands { .. } => "commands",
            EventBody::LoopStarted { .. } => "loop_started",
            EventBody::LoopIteration { .. } => "loop_iteration",
            EventBody::LoopEnded { .. } => "loop_ended",
            EventBody::Pushed { .. } => "pushed",
            EventBody::Merged { .. } => "merged",
            EventBody::Discarded { .. } => "discarded",
        }
    }
}

impl From<crate::server::PendingPermission> for EventBody {
    /// The `permission_request` event that shows a pending request: the same fields.
    fn from(p: crate::server::PendingPermission) -> Self {
        EventBody::PermissionRequest {
            request_id: p.request_id,
            tool_name: p.tool_name,
            input: p.input,
            changes: p.changes,
            permission_kind: p.permission_kind,
            choices: p.choices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_serializes_flat_with_kind() {
        let ev = Event {
            session_id: "s1".into(),
            seq: 3,
            ts: 10,
            turn_id: Some("t1".into()),
            body: EventBody::TurnCompleted {
                status: TurnStatus::Interrupted,
                error: None,
                usage: None,
                resets_at: None,
            },
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"sessionId":"s1","seq":3,"ts":10,"turnId":"t1",
                "kind":"turn_completed","status":"interrupted"})
        );
        let back: Event = serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, ev);
    }

    #[test]
    fn user_message_omits_defaults() {
        let body = EventBody::UserMessage {
            text: "hi".into(),
            internal: false,
            delegated_by: None,
            content: Vec::new(),
        };
        let v = serde_json::to_value(&body).unwrap();
        assert_eq!(v, serde_json::json!({"kind":"user_message","text":"hi"}));
    }
}
