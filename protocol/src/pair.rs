//! Driver/Worker pairs and Worker proposals as clients see them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{DelegationId, PairId, SessionId};

/// A Driver/Worker pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairInfo {
    /// The pair's id.
    pub pair_id: PairId,
    /// The session that directs.
    pub driver_id: SessionId,
    /// The session that takes delegated work.
    pub worker_id: SessionId,
    /// The Worker's name among its Driver's Workers (unique there): the agent tools'
    /// `worker` argument names it. `worker` for pairs made before Workers had names.
    #[serde(default = "default_worker_name")]
    pub worker_name: String,
    /// Creation time, epoch ms.
    pub created_at: u64,
    /// The delegation in flight, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<DelegationInfo>,
    /// Where the pair's life stands (`creating` while its sessions are joined).
    #[serde(default)]
    pub state: PairState,
    /// Who answers the permission requests of the Worker's delegated turns (left
    /// out: `user`).
    #[serde(default, skip_serializing_if = "WorkerApprovals::is_user")]
    pub worker_approvals: WorkerApprovals,
}

/// The name of a Worker made before Workers had names.
pub fn default_worker_name() -> String {
    "worker".to_string()
}

/// The longest Worker name.
pub const WORKER_NAME_MAX: usize = 32;

/// True for a usable Worker name: 1 to [`WORKER_NAME_MAX`] ASCII letters, digits,
/// `-`, `_` or `.`, starting with a letter or digit, and not with `ses_` (it appears
/// in tool arguments beside session ids, and in the page's pane titles).
pub fn valid_worker_name(name: &str) -> bool {
    !name.starts_with("ses_")
        && name.len() <= WORKER_NAME_MAX
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// One Worker of a Driver, as the Driver's `SessionInfo.workers` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairedWorker {
    /// The pair that links the Driver to this Worker.
    pub pair_id: PairId,
    /// The Worker session.
    pub worker_id: SessionId,
    /// Its name among the Driver's Workers.
    pub worker_name: String,
}

/// Who answers the permission requests a Worker's agent raises in a turn its Driver
/// delegated. Turns a person starts in the Worker always ask that person.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkerApprovals {
    /// A person, as in any session (the default).
    #[default]
    User,
    /// The Driver: a waiting `send_to_partner` returns the request (status
    /// `approval`), a Driver not waiting gets it as a message, and it answers with
    /// `approve_worker`. A person may still answer first.
    Driver,
    /// Nobody: every request is allowed at once.
    Bypass,
}

impl WorkerApprovals {
    /// True for the default, which the wire leaves out.
    pub fn is_user(&self) -> bool {
        *self == WorkerApprovals::User
    }
}

/// A pair's persisted life cycle: `creating → active → closed`. The pair row is
/// written first (`creating`), then the two memberships, then `active`; closing writes
/// `closed` before the memberships are cleared. Start-up finishes or undoes any pair
/// left between two steps by a crash.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PairState {
    /// The row exists; the sessions are being joined.
    Creating,
    /// Both sessions belong to it. (Rows stored before states existed read as this.)
    #[default]
    Active,
    /// Being dissolved; its memberships are being cleared.
    Closed,
}

/// A delegation in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DelegationInfo {
    /// The delegation's id.
    pub delegation_id: DelegationId,
    /// The delegating (Driver) session.
    pub from: SessionId,
    /// The Worker session.
    pub to: SessionId,
    /// The task.
    pub message: String,
    /// When it started, epoch ms.
    pub started_at: u64,
    /// True when nobody waits for the result: it will be pushed back to the Driver.
    pub detached: bool,
}

/// Where a Worker proposal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ProposalStatus {
    /// Waiting for a person to accept or decline.
    Pending,
    /// Accepted; the Worker is being created.
    Starting,
    /// The Worker runs the task.
    Running,
    /// The Worker finished the task.
    Completed,
    /// The Worker was stopped; its work is partial.
    Interrupted,
    /// The Worker could not start or its turn failed.
    Error,
    /// A person declined the proposal.
    Declined,
}

impl ProposalStatus {
    /// True until the proposal reaches an end state.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            ProposalStatus::Pending | ProposalStatus::Starting | ProposalStatus::Running
        )
    }
}

/// A vendor/model/effort choice for a Worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerChoice {
    /// Vendor id.
    pub vendor: String,
    /// Model; empty for the vendor's default.
    #[serde(default)]
    pub model: String,
    /// Effort (clamped); empty for the default.
    #[serde(default)]
    pub effort: String,
}
