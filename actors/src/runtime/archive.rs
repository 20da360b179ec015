//! `DELETE /api/v1/sessions/{id}`: archive a session and forget its actor.

use tandem_protocol::SessionInfo;

use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::session::Archive;

impl Runtime {
    /// Archives a session `who` may drive: it must be idle, unpaired, with no
    /// background work, children, queue or pending schedule. It then leaves every
    /// list, frees its owner's slot, and is not loaded again after a restart.
    pub async fn archive(&self, who: &Principal, id: &str) -> Result<SessionInfo, RuntimeError> {
        let handle = self.drivable(who, id)?;
        let info = handle.addr.send(Archive).await??;
        if self.inner.services.sessions.remove(id) {
            if let Some(mut owned) = self.inner.owned.get_mut(&info.owner_id) {
                *owned = owned.saturating_sub(1);
            }
        }
        Ok(info)
    }
}
