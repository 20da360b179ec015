//! The messages between a session actor and its vendor adapter actor.

use actix::Message;
use tandem_protocol::{BackgroundTask, EventBody, PermissionMode, TurnStatus};

/// What a session asks of its adapter.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum AdapterCommand {
    /// Run one turn with this user text.
    StartTurn {
        /// The turn's id; every output for it carries this id.
        turn_id: String,
        /// The user's message.
        text: String,
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
        turn_id: String,
    },
    /// Stop one background task.
    StopTask {
        /// The vendor's task id.
        task_id: String,
    },
}

/// Model and behaviour for one turn.
#[derive(Debug, Clone, Default)]
pub struct TurnSettings {
    /// Model; empty for the default.
    pub model: String,
    /// Effort; empty for the default.
    pub effort: String,
    /// Tool approval mode.
    pub permission_mode: PermissionMode,
    /// Extra system instruction for the agent (the Driver's pair instruction).
    pub system_prompt: Option<String>,
}

/// What an adapter reports to its session.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AgentOutput {
    /// The turn it belongs to; `None` for things outside turns (background work).
    pub turn_id: Option<String>,
    /// What happened.
    pub item: AgentItem,
}

/// The things an adapter can report.
#[derive(Debug)]
pub enum AgentItem {
    /// A history event to append as is.
    Event(EventBody),
    /// The turn ended; exactly one per started turn.
    TurnEnded {
        /// How it ended.
        status: TurnStatus,
        /// Why, when it did not complete.
        error: Option<String>,
    },
    /// The complete set of background tasks now running.
    BackgroundTasks(Vec<BackgroundTask>),
    /// The vendor's own session id became known.
    VendorSessionId(String),
}
