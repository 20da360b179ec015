//! `terminal.open`, `terminal.list`, `terminal.close`, and the terminal sockets'
//! attach: a session's terminals are its owner's alone.

use tandem_protocol::terminals::{
    TerminalCloseParams, TerminalCloseResult, TerminalInfo, TerminalListParams, TerminalListResult,
    TerminalOpenParams,
};
use tandem_protocol::SessionInfo;

use super::SessionAccess;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::terminals::{Attachment, Opening, Terminals};

/// The terminals service: sessions' shells, each reachable by its session's owner
/// only.
pub struct TerminalService {
    access: SessionAccess,
    terminals: Terminals,
}

impl TerminalService {
    /// Serves `terminals` to the owners of the sessions `access` finds.
    pub(super) fn new(access: SessionAccess, terminals: Terminals) -> Self {
        TerminalService { access, terminals }
    }

    /// The session `id`, when `who` owns it.
    fn owned(&self, who: &Principal, id: &str) -> Result<SessionInfo, RuntimeError> {
        Ok(self.access.owned(who, id, "terminals")?.shared.info())
    }

    /// `terminal.open`: the owner's shell in the session's working directory.
    pub fn open(
        &self,
        who: &Principal,
        p: TerminalOpenParams,
    ) -> Result<TerminalInfo, RuntimeError> {
        let info = self.owned(who, &p.session_id)?;
        let cwd = std::path::PathBuf::from(&info.cwd);
        if !cwd.is_dir() {
            return Err(RuntimeError::Conflict(format!(
                "session {}'s working directory {} is gone (a discarded worktree?)",
                info.id, info.cwd
            )));
        }
        self.terminals.open(Opening {
            session_id: info.id,
            owner: info.owner_id,
            cwd,
            cols: p.cols,
            rows: p.rows,
        })
    }

    /// `terminal.list`: the session's terminals, oldest first.
    pub fn list(
        &self,
        who: &Principal,
        p: TerminalListParams,
    ) -> Result<TerminalListResult, RuntimeError> {
        let info = self.owned(who, &p.session_id)?;
        Ok(TerminalListResult {
            terminals: self.terminals.list(&info.id),
            session_id: info.id,
        })
    }

    /// `terminal.close`: ends the terminal and every process it started.
    pub async fn close(
        &self,
        who: &Principal,
        p: TerminalCloseParams,
    ) -> Result<TerminalCloseResult, RuntimeError> {
        let info = self.owned(who, &p.session_id)?;
        self.terminals
            .close(&info.id, &p.terminal_id, "closed by a request")
            .await
            .ok_or_else(|| {
                RuntimeError::Missing(format!(
                    "session {} has no terminal {}",
                    info.id, p.terminal_id
                ))
            })?;
        Ok(TerminalCloseResult {
            session_id: info.id,
            terminal_id: p.terminal_id,
        })
    }

    /// Ends session `id`'s terminals with all they started (`why`: what happened to
    /// the session).
    pub(super) async fn end_session(&self, id: &crate::ids::SessionId, why: &str) {
        self.terminals.end_session(id, why).await;
    }

    /// Ends every terminal with all it started: the server is stopping (again, harmless,
    /// in [`super::Runtime::stop_vendor_processes`]).
    pub fn stop_all(&self) {
        self.terminals.shutdown();
    }

    /// A new client of terminal `terminal_id`, for its session's owner; `None` for
    /// anyone else, an unknown id or one that ended.
    pub fn attach(&self, who: &Principal, terminal_id: &str) -> Option<Attachment> {
        self.terminals.attach(&who.user_id, terminal_id)
    }
}
