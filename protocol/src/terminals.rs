//! A session's terminals (`terminal.open`, `terminal.list`, `terminal.close`): a shell
//! in a pseudo-terminal in the session's working directory, for its owner. Its bytes
//! travel over a WebSocket of their own, `/ws/terminals/{terminalId}`:
//!
//! - server → client: binary frames are the terminal's output; the first one a client
//!   gets is what the terminal kept (its last [`REPLAY_BYTES`]), so a client that
//!   (re)connects sees the screen's history. A text frame [`TerminalControl`]
//!   `{"type":"exit", ...}` says the shell ended, and the close frame follows.
//! - client → server: binary frames are typed input; a text frame is a
//!   [`TerminalControl`] (`resize`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;
use crate::operations::{Refusal, Validate};

/// Output a terminal keeps for clients that connect later, in bytes.
pub const REPLAY_BYTES: usize = 1 << 20;
/// Widest terminal, in columns.
pub const MAX_COLS: u16 = 1000;
/// Tallest terminal, in rows.
pub const MAX_ROWS: u16 = 500;
/// Largest frame a terminal client may send, in bytes (a paste larger than this is
/// sent in several frames).
pub const MAX_INPUT_FRAME: usize = 64 << 10;

/// Fields of `terminal.open`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalOpenParams {
    /// The session whose working directory the shell starts in; its owner's only.
    pub session_id: SessionId,
    /// Columns, 1 to 1000.
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(min = 1, max = 1000))]
    pub cols: u16,
    /// Rows, 1 to 500.
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(min = 1, max = 500))]
    pub rows: u16,
}

/// Body of `POST /sessions/{id}/terminals` (as `terminal.open`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalBody {
    /// See [`TerminalOpenParams::cols`].
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(min = 1, max = 1000))]
    pub cols: u16,
    /// See [`TerminalOpenParams::rows`].
    #[serde(deserialize_with = "crate::strict::whole")]
    #[schemars(range(min = 1, max = 500))]
    pub rows: u16,
}

impl Validate for TerminalOpenParams {
    fn validate(&self) -> Result<(), Refusal> {
        size_refusal(self.cols, self.rows)
    }
}

/// `INVALID_ARGUMENT` for a size outside 1..=[`MAX_COLS`] × 1..=[`MAX_ROWS`].
pub fn size_refusal(cols: u16, rows: u16) -> Result<(), Refusal> {
    if !(1..=MAX_COLS).contains(&cols) || !(1..=MAX_ROWS).contains(&rows) {
        return Err(Refusal::invalid(format!(
            "a terminal is 1 to {MAX_COLS} columns by 1 to {MAX_ROWS} rows, not {cols} × {rows}"
        )));
    }
    Ok(())
}

/// One terminal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalInfo {
    /// Its id (`term_…`): its socket is `/ws/terminals/{terminalId}`.
    pub terminal_id: String,
    /// The session it belongs to.
    pub session_id: SessionId,
    /// The shell it runs.
    pub shell: String,
    /// Where the shell started (the session's working directory).
    pub cwd: String,
    /// Its size now, columns.
    pub cols: u16,
    /// Its size now, rows.
    pub rows: u16,
    /// Clients connected to its socket now.
    pub clients: u32,
    /// When it was opened, epoch ms.
    pub created_at: u64,
}

/// Fields of `terminal.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalListParams {
    /// The session; its owner's only.
    pub session_id: SessionId,
}

/// `terminal.list` reply: the session's terminals, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalListResult {
    /// The session.
    pub session_id: SessionId,
    /// Its terminals.
    pub terminals: Vec<TerminalInfo>,
}

/// Fields of `terminal.close`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalCloseParams {
    /// The session.
    pub session_id: SessionId,
    /// The terminal to end, with every process it started.
    pub terminal_id: String,
}

/// `terminal.close` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalCloseResult {
    /// The session.
    pub session_id: SessionId,
    /// The terminal ended.
    pub terminal_id: String,
}

/// A text frame on a terminal's socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum TerminalControl {
    /// Client → server: the terminal's new size (the last client to resize wins).
    Resize {
        /// Columns, 1 to 1000.
        cols: u16,
        /// Rows, 1 to 500.
        rows: u16,
    },
    /// Server → client: the shell ended (the socket closes next).
    #[serde(rename_all = "camelCase")]
    Exit {
        /// Its exit code (`None`: ended by a signal, or closed by a request).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Why it ended, for a person.
        reason: String,
    },
    /// Server → client: a frame of the client's was refused (the socket stays open).
    Error {
        /// What was wrong.
        message: String,
    },
}
