//! Runtime entry points of workspaces: `session.merge`, `session.discard`.

use tandem_protocol::workspace::{DiscardResult, MergeResult, MergeStrategy};

use crate::access::Principal;
use crate::error::RuntimeError;

use super::Runtime;

impl Runtime {
    /// `session.merge`: commits the worktree's changes and merges its branch into the
    /// base branch in the base checkout.
    pub async fn merge_session(
        &self,
        who: &Principal,
        session_id: &str,
        strategy: MergeStrategy,
        message: Option<String>,
    ) -> Result<MergeResult, RuntimeError> {
        let _ = (who, session_id, strategy, message);
        Err(RuntimeError::Internal("session.merge is not built yet".into()))
    }

    /// `session.discard`: removes the worktree and its branch.
    pub async fn discard_session(
        &self,
        who: &Principal,
        session_id: &str,
    ) -> Result<DiscardResult, RuntimeError> {
        let _ = (who, session_id);
        Err(RuntimeError::Internal("session.discard is not built yet".into()))
    }
}
