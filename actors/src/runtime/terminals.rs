//! `terminal.open`, `terminal.list`, `terminal.close`, and the terminal sockets'
//! attach: a session's terminals are its owner's alone.

use tandem_protocol::terminals::{
    TerminalCloseParams, TerminalCloseResult, TerminalInfo, TerminalListParams, TerminalListResult,
    TerminalOpenParams,
};
use tandem_protocol::SessionInfo;

use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::terminals::{Attachment, Opening};

impl Runtime {
    /// The session `id`, when `who` owns it. Someone else's session is missing for
    /// terminals, whether or not they may see it.
    fn owned_for_terminals(&self, who: &Principal, id: &str) -> Result<SessionInfo, RuntimeError> {
        let info = self.visible(who, id)?.shared.info();
        if info.owner_id != who.user_id {
            return Err(RuntimeError::Missing(format!(
                "session {id}'s terminals are its owner's only"
            )));
        }
        Ok(info)
    }

    /// `terminal.open`: the owner's shell in the session's working directory.
    pub fn open_terminal(
        &self,
        who: &Principal,
        p: TerminalOpenParams,
    ) -> Result<TerminalInfo, RuntimeError> {
        let info = self.owned_for_terminals(who, &p.session_id)?;
        let cwd = std::path::PathBuf::from(&info.cwd);
        if !cwd.is_dir() {
            return Err(RuntimeError::Conflict(format!(
                "session {}'s working directory {} is gone (a discarded worktree?)",
                info.id, info.cwd
            )));
        }
        self.inner.terminals.open(Opening {
            session_id: info.id,
            owner: info.owner_id,
            cwd,
            cols: p.cols,
            rows: p.rows,
        })
    }

    /// `terminal.list`: the session's terminals, oldest first.
    pub fn list_terminals(
        &self,
        who: &Principal,
        p: TerminalListParams,
    ) -> Result<TerminalListResult, RuntimeError> {
        let info = self.owned_for_terminals(who, &p.session_id)?;
        Ok(TerminalListResult {
            terminals: self.inner.terminals.list(&info.id),
            session_id: info.id,
        })
    }

    /// `terminal.close`: ends the terminal and every process it started.
    pub async fn close_terminal(
        &self,
        who: &Principal,
        p: TerminalCloseParams,
    ) -> Result<TerminalCloseResult, RuntimeError> {
        let info = self.owned_for_terminals(who, &p.session_id)?;
        self.inner
            .terminals
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

    /// Ends every terminal with all it started: the server is stopping (again, harmless,
    /// in [`Runtime::stop_vendor_processes`]).
    pub fn stop_terminals(&self) {
        self.inner.terminals.shutdown();
    }

    /// A new client of terminal `terminal_id`, for its session's owner; `None` for
    /// anyone else, an unknown id or one that ended.
    pub fn attach_terminal(&self, who: &Principal, terminal_id: &str) -> Option<Attachment> {
        self.inner.terminals.attach(&who.user_id, terminal_id)
    }
}
