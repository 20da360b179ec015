//! The messages between a session actor and its vendor adapter actor.

use actix::Message;
// Defined in leaves (the stored record keeps them, the upload store makes
// `Attachments`) and re-exported so adapters keep naming them here.
pub use crate::attachments::{Attachments, ImageInput};
pub use crate::record::ForkOnOpen;
pub use tandem_protocol::server::PendingPermission;
use tandem_protocol::{BackgroundTask, EventBody, PermissionMode, TurnStatus};

use crate::ids::{RequestId, TurnId};

/// Why an adapter cannot rewind or fork its vendor's conversation (a vendor without
/// the feature, a conversation not started yet), in words for the person who asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CannotBranch(pub String);

impl From<&str> for CannotBranch {
    fn from(why: &str) -> Self {
        CannotBranch(why.to_string())
    }
}

impl From<String> for CannotBranch {
    fn from(why: String) -> Self {
        CannotBranch(why)
    }
}

/// What a session asks of its adapter.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum AdapterCommand {
    /// Run one turn with this user text.
    StartTurn {
        /// The turn's id; every output for it carries this id.
        turn_id: TurnId,
        /// The text the vendor receives as the turn's user message (with inlined text
        /// files and the paths of saved files after the person's own text).
        text: String,
        /// Images sent with the message, after the text; an adapter whose vendor
        /// cannot take them fails the turn rather than drop them.
        images: Vec<ImageInput>,
        /// True when the server wrote the message (a pushed-back result), not a
        /// person or a Driver.
        internal: bool,
        /// Settings in force for the turn.
        settings: TurnSettings,
    },
    /// Stop the turn through the vendor's own mechanism; the adapter then reports
    /// `TurnEnded { status: Interrupted }` (or how the turn really ended, if it won the
    /// race).
    Interrupt {
        /// The turn to stop; a stale id is ignored.
        turn_id: TurnId,
    },
    /// Stop one background task.
    StopTask {
        /// The vendor's own task id, as the adapter reported it in [`AgentItem::BackgroundTasks`].
        task_id: String,
    },
    /// A person answered a permission request this adapter raised with
    /// [`AgentItem::PermissionRequest`].
    PermissionResponse {
        /// The id the adapter gave the request.
        request_id: RequestId,
        /// Allow the tool call once, or deny it.
        allow: bool,
        /// The tool input to use instead of the requested one, when allowed.
        updated_input: Option<serde_json::Value>,
        /// Why it was denied (passed on to the agent).
        message: Option<String>,
        /// Allowed for the rest of the session: the adapter answers later requests for
        /// the same tool itself, and tells the vendor (its "always allow") where it can.
        remember: bool,
        /// The session's permission mode from now on, when the answer changes it (a
        /// plan approved with "accept edits").
        permission_mode: Option<PermissionMode>,
    },
    /// Make the vendor forget the last `drop_turns` turns of its conversation (a
    /// `chat.edit-send` rewind), so that the next `StartTurn` continues from the turn
    /// before them. Sent only between turns. The adapter answers on `done`: `Ok`
    /// once the vendor forgot them, or why it could not (the session then refuses the
    /// edit with `REWIND_NOT_SUPPORTED` and records nothing).
    Rewind {
        /// Live turns to drop, counted from the newest: the anchor's turn and every
        /// later one not already superseded.
        drop_turns: u64,
        /// Live turns before the anchor, which the vendor must keep.
        keep_turns: u64,
        /// Where the adapter answers.
        done: tokio::sync::oneshot::Sender<Result<(), CannotBranch>>,
    },
    /// Fork the vendor's conversation without the last `drop_turns` turns into a new
    /// vendor session, leaving this one as it is (`session.fork`), and answer where
    /// the fork's adapter resumes; or why not (the fork then gets a transcript).
    Fork {
        /// Live turns after the fork point, counted from the newest.
        drop_turns: u64,
        /// Where the adapter answers.
        done: tokio::sync::oneshot::Sender<Result<VendorFork, CannotBranch>>,
    },
    /// Model, effort or permission mode changed between turns. Adapters whose process
    /// outlives a turn apply it to that process at once; others use it from the next
    /// `StartTurn` on (which carries the same settings).
    Configure {
        /// The settings now in force.
        settings: TurnSettings,
    },
}

/// Where a fork's adapter picks up the vendor's own fork of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VendorFork {
    /// The vendor session to open: the fork itself (Codex), or the source's, which
    /// the fork's adapter forks as it opens it (`fork_on_open`).
    pub vendor_session_id: String,
    /// How the fork's adapter forks `vendor_session_id` as it opens it; `None`: it
    /// is the fork already, opened as the adapter reopens any session.
    pub fork_on_open: Option<ForkOnOpen>,
}

/// Model and behaviour for one turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSettings {
    /// Model; empty for the default.
    pub model: String,
    /// Effort; empty for the default.
    pub effort: String,
    /// When a tool call waits for a person's approval (`bypassPermissions`: never).
    pub permission_mode: PermissionMode,
    /// Extra system instruction for the agent (the Driver's pair instruction).
    pub system_prompt: Option<String>,
}

/// What an adapter reports to its session.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AgentOutput {
    /// The turn it belongs to; `None` for things outside turns (background work).
    pub turn_id: Option<TurnId>,
    /// An event to record, a turn end, or state the session keeps (tasks, approvals).
    pub item: AgentItem,
}

/// The things an adapter can report.
#[derive(Debug)]
pub enum AgentItem {
    /// A history event to append as is.
    Event(EventBody),
    /// History events produced together, appended in order as one write: one message
    /// and one store write for the lot instead of one per event (the scripted agent's
    /// `/stream` hands over a pacing window at a time).
    Events(Vec<EventBody>),
    /// The turn ended; exactly one per started turn.
    TurnEnded {
        /// Completed, failed or interrupted; recorded as the turn's end event.
        status: TurnStatus,
        /// Why, when it did not complete.
        error: Option<String>,
    },
    /// The complete set of background tasks now running.
    BackgroundTasks(Vec<BackgroundTask>),
    /// The vendor's usage or rate limit that is ending the turn lifts at this time,
    /// epoch ms (sent before the turn's `TurnEnded {status: Limited}`).
    LimitResets(u64),
    /// The slash commands the agent offers, complete (sent when the vendor lists
    /// them; the session records a change only).
    Commands(Vec<tandem_protocol::session::VendorCommand>),
    /// The vendor's own session id became known; the session persists it as
    /// `vendorSessionId` and hands it back to a new adapter to resume from.
    VendorSessionId(String),
    /// The vendor asks to run a tool. The session records `permission_request` and keeps
    /// it pending until a person answers (forwarded as
    /// [`AdapterCommand::PermissionResponse`]). Adapters answer by themselves in
    /// `bypassPermissions` mode and never raise this then. Its id is unique across the
    /// server (`random_id("perm_", 12)`): clients answer by it alone.
    PermissionRequest(PendingPermission),
    /// A pending request ended without an answer (the turn was interrupted, the process
    /// died); the session records `permission_resolved`.
    PermissionResolved {
        /// The id the adapter gave it; the session drops it from the pending list.
        request_id: RequestId,
    },
    /// Token usage and cost of the current turn, translated from the vendor's report;
    /// kept on the turn's `turn_completed`. Send it before [`AgentItem::TurnEnded`].
    Usage(tandem_protocol::TurnUsage),
}

/// Sent (and awaited) by an adapter that produces fast: answers once the session's
/// events, up to a small window, have been fanned out to clients.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Pace;
