//! [`SessionAccess`]: the access check every service makes before it touches a
//! session: the live session an id names, and whether a principal may see or drive it.

use crate::access::Principal;
use crate::error::{RuntimeError, MAX_ID_BYTES};
use crate::ids::SessionId;
use crate::registry::Registry;
use crate::session::{SessionActor, SessionHandle};

/// Live sessions by id, seen through the access rules; cheap to clone (clones share
/// the registry the runtime adds sessions to).
#[derive(Clone)]
pub struct SessionAccess {
    sessions: Registry<SessionId, SessionHandle>,
}

impl SessionAccess {
    /// Checks access to the sessions of `sessions`.
    pub(crate) fn new(sessions: Registry<SessionId, SessionHandle>) -> Self {
        SessionAccess { sessions }
    }

    /// A live session actor's address, whoever asks; `None` for an unknown or
    /// archived id, or an actor that could not start (logged).
    pub(crate) fn addr(&self, id: &SessionId) -> Option<actix::Addr<SessionActor>> {
        let handle = self.sessions.get(id)?;
        match handle.addr() {
            Ok(addr) => Some(addr),
            Err(e) => {
                tracing::error!(session = %id, error = %e, "the session's actor could not start");
                None
            }
        }
    }

    /// The live session `id`, whoever asks.
    pub(crate) fn lookup(&self, id: &str) -> Result<SessionHandle, RuntimeError> {
        if id.len() > MAX_ID_BYTES {
            // No session has such an id. Not echoed: an error must not be as large as
            // the garbage it answers.
            return Err(RuntimeError::IdTooLong(id.len()));
        }
        let handle = self
            .sessions
            .get(id)
            .ok_or_else(|| RuntimeError::SessionNotFound(id.into()))?;
        // Archived and about to leave the registry: its actor has stopped, so a
        // message sent to it would fail as an internal error.
        if handle.shared.peek(|i| i.archived_at.is_some()) {
            return Err(RuntimeError::SessionNotFound(id.into()));
        }
        Ok(handle)
    }

    /// The session `id`, if `who` may see it.
    pub(crate) fn visible(&self, who: &Principal, id: &str) -> Result<SessionHandle, RuntimeError> {
        let handle = self.lookup(id)?;
        if !who.can_see(&handle.shared.info()) {
            // Someone else's private session is reported as missing, not as
            // forbidden: its existence is not the caller's business.
            return Err(RuntimeError::SessionNotFound(id.into()));
        }
        Ok(handle)
    }

    /// The session `id`, if `who` may send it commands (and see it).
    pub(crate) fn drivable(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<SessionHandle, RuntimeError> {
        let handle = self.lookup(id)?;
        let info = handle.shared.info();
        if !who.can_see(&info) {
            return Err(RuntimeError::SessionNotFound(id.into()));
        }
        if !who.can_drive(&info) {
            return Err(RuntimeError::AccessDenied(id.to_string()));
        }
        Ok(handle)
    }

    /// The session `id`, if `who` owns it: what only a session's owner may reach
    /// (`what`: its terminals). Someone else's is missing, whether or not they may
    /// see it.
    pub(crate) fn owned(
        &self,
        who: &Principal,
        id: &str,
        what: &str,
    ) -> Result<SessionHandle, RuntimeError> {
        let handle = self.visible(who, id)?;
        if handle.shared.peek(|i| i.owner_id != who.user_id) {
            return Err(RuntimeError::Missing(format!(
                "session {id}'s {what} are its owner's only"
            )));
        }
        Ok(handle)
    }
}
