//! `session.commands`: the slash commands a session's agent offers.

use tandem_protocol::session::SessionCommandsResult;

use super::SessionService;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;

impl SessionService {
    /// `session.commands`: the slash commands the session's agent offers.
    pub async fn session_commands(
        &self,
        who: &Principal,
        session_id: &SessionId,
    ) -> Result<SessionCommandsResult, RuntimeError> {
        let commands = self
            .access
            .visible(who, session_id)?
            .ask(crate::session::ListCommands)
            .await?;
        Ok(SessionCommandsResult {
            session_id: session_id.into(),
            commands,
        })
    }
}
