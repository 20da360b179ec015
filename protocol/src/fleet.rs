//! `fleet.get` (`GET /api/v1/fleet`): the vendor CLI processes that serve one session
//! each (Claude Code, ACP agents), the turns waiting for one when
//! `--max-live-processes` are running, and the turns running and waiting under
//! `--max-concurrent-turns`. Admins only.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

/// Fields of `fleet.get`: none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetGetParams {}

/// The server's vendor processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetInfo {
    /// `--max-live-processes`: at most this many run at once; absent without a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The processes, oldest first (one closing to make room still counts).
    pub processes: Vec<FleetProcess>,
    /// Turns waiting for a process to start, oldest first (they start in this order).
    pub waiting: Vec<FleetWaiting>,
    /// `--max-concurrent-turns`: at most this many turns run at once; absent without
    /// a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_limit: Option<u32>,
    /// Turns running now (a Driver's delegations included, which never wait).
    pub turns_running: u32,
    /// Turns waiting for one of those to end, in line order (place 1 first).
    pub waiting_turns: Vec<FleetWaitingTurn>,
}

/// A turn waiting for a turn slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetWaitingTurn {
    /// The session.
    pub session_id: SessionId,
    /// Its place in line, from 1.
    pub place: u32,
    /// Since when, epoch ms.
    pub since: u64,
}

/// One vendor process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetProcess {
    /// The session it serves.
    pub session_id: SessionId,
    /// Its vendor.
    pub vendor: String,
    /// Its process id; absent while it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// A turn or background work runs in it (never closed to make room).
    pub busy: bool,
    /// It was asked to close to make room and has not exited yet.
    pub closing: bool,
    /// Resident memory of the process and the processes it started, bytes.
    pub rss_bytes: u64,
    /// CPU time of the process and the processes it started that are still running,
    /// milliseconds.
    pub cpu_ms: u64,
    /// When it took its place, epoch ms.
    pub since: u64,
}

/// A turn waiting for a process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetWaiting {
    /// The session.
    pub session_id: SessionId,
    /// Its vendor.
    pub vendor: String,
    /// Since when, epoch ms.
    pub since: u64,
}
