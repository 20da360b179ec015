//! The persisted form of a session's metadata.

use serde::{Deserialize, Serialize};
use tandem_protocol::{
    BackgroundTask, PermissionMode, Role, SessionInfo, SessionStatus, Visibility,
};

/// Everything about a session that survives a restart, except its events. Stored as
/// one JSON document per session so that adding a field needs no schema migration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// Our stable id.
    pub id: String,
    /// Human title.
    pub title: String,
    /// Vendor id.
    pub vendor: String,
    /// Model; empty for the vendor's default.
    pub model: String,
    /// Clamped effort; empty for the default.
    pub effort: String,
    /// Tool approval mode.
    pub permission_mode: PermissionMode,
    /// Where the last turn stands.
    pub status: SessionStatus,
    /// Turns started so far; the next turn is `turn_{turn_count + 1}`.
    pub turn_count: u64,
    /// Creation time, epoch ms.
    pub created_at: u64,
    /// Last change, epoch ms.
    pub last_activity: u64,
    /// Owning user.
    pub owner_id: String,
    /// Private or shared.
    pub visibility: Visibility,
    /// The vendor's session/thread id, once known.
    #[serde(default)]
    pub vendor_session_id: Option<String>,
    /// Working directory.
    pub cwd: String,
    /// The turn in flight, so a restart can close it as interrupted.
    #[serde(default)]
    pub current_turn_id: Option<String>,
    /// Pair membership.
    #[serde(default)]
    pub pair_id: Option<String>,
    /// Role in the pair.
    #[serde(default)]
    pub role: Option<Role>,
    /// Messages waiting for the session to be idle with no background work.
    #[serde(default)]
    pub queued: Vec<String>,
}

impl SessionRecord {
    /// The client-facing view, given the parts that live outside the record.
    pub fn to_info(&self, last_seq: u64, background_tasks: &[BackgroundTask]) -> SessionInfo {
        SessionInfo {
            id: self.id.clone(),
            title: self.title.clone(),
            vendor: self.vendor.clone(),
            model: self.model.clone(),
            effort: self.effort.clone(),
            permission_mode: self.permission_mode,
            status: self.status,
            turn_count: self.turn_count,
            last_seq,
            created_at: self.created_at,
            last_activity: self.last_activity,
            owner_id: self.owner_id.clone(),
            visibility: self.visibility,
            vendor_session_id: self.vendor_session_id.clone(),
            pair_id: self.pair_id.clone(),
            role: self.role,
            background_tasks: background_tasks.to_vec(),
            cwd: self.cwd.clone(),
        }
    }
}
