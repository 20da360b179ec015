//! Who is asking, and what they may do with a session.

use tandem_protocol::{SessionInfo, Visibility};

use crate::ids::UserId;

/// Who a request was authenticated as; every session access check takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The user's id; sessions record it as their owner.
    pub user_id: UserId,
    /// Admins may see and drive every session.
    pub admin: bool,
}

impl Principal {
    /// May this caller see and subscribe to the session?
    pub fn can_see(&self, info: &SessionInfo) -> bool {
        self.admin || info.owner_id == self.user_id || info.visibility == Visibility::Shared
    }

    /// May this caller drive (send, interrupt, configure, stop tasks in) the session?
    pub fn can_drive(&self, info: &SessionInfo) -> bool {
        self.admin || info.owner_id == self.user_id
    }
}

/// The built-in admin user's id: created at first start, never revoked.
pub const ADMIN_USER: &str = "admin";
