//! The agent-facing side: tools (for MCP, `tool.call` and scripts), MCP tokens,
//! proposals and spawned sessions.

use serde_json::Value;
use tandem_protocol::SessionInfo;

use super::{NewSession, Runtime};
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::error::{RuntimeError, ToolError};
use crate::ids::SessionId;

impl Runtime {
    /// Sessions spawned by `parent`, oldest first.
    pub fn children_of(&self, parent: &str) -> Vec<SessionInfo> {
        let mut children: Vec<SessionInfo> = Vec::new();
        self.inner.services.sessions.for_each(|_, h| {
            let info = h.shared.info();
            if info.parent_id.as_deref() == Some(parent) {
                children.push(info);
            }
        });
        children.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        children
    }

    /// Creates a spawned session that holds `prompt` until its parent starts it. It
    /// inherits the parent's owner, visibility and working directory.
    pub async fn create_child(
        &self,
        parent: &SessionInfo,
        vendor: &str,
        title: String,
        prompt: String,
    ) -> Result<SessionInfo, RuntimeError> {
        self.new_session(NewSession {
            mcp_servers: self.chosen_mcp_servers(&parent.id),
            resume: None,
            id: None,
            owner_id: parent.owner_id.clone(),
            visibility: parent.visibility,
            vendor: VendorId::from(vendor),
            model: if vendor == parent.vendor {
                parent.model.clone()
            } else {
                String::new()
            },
            effort: String::new(),
            title: Some(title),
            cwd: parent.cwd.clone(),
            permission_mode: parent.permission_mode,
            parent_id: Some(parent.id.clone()),
            pending_prompt: Some(prompt),
            handoff_from: None,
            fork: None,
            // A worktree session's children each get their own, off its branch.
            worktree: parent
                .workspace
                .as_ref()
                .filter(|w| w.state == tandem_protocol::workspace::WorktreeState::Active)
                .map(|_| super::create::WorktreeRequest {
                    base_ref: None,
                    files_from: None,
                }),
        })
        .await
    }

    /// `tool.call`: calls a tool as session `id`, which the caller must own. The inner
    /// result is the tool's own success or failure.
    pub async fn call_tool(
        &self,
        who: &Principal,
        id: &SessionId,
        name: &str,
        arguments: Value,
    ) -> Result<Result<Value, ToolError>, RuntimeError> {
        self.access().drivable(who, id)?;
        Ok(self.inner.services.tools.call(id, name, arguments).await)
    }

    /// A bearer token for `/mcp` bound to session `id` (the same one each time).
    pub fn mcp_token(&self, who: &Principal, id: &SessionId) -> Result<String, RuntimeError> {
        self.access().drivable(who, id)?;
        Ok(self.inner.services.mcp.token_for(id)?)
    }

    /// This server's `/mcp` endpoint as its own agents reach it, once it is bound.
    pub fn mcp_url(&self) -> Option<String> {
        self.inner.services.mcp.url()
    }

    /// The session an MCP token is bound to; `None` (refused like an unknown token)
    /// also while the session's owner is revoked.
    pub fn mcp_session(&self, token: &str) -> Option<SessionId> {
        let session = SessionId::from(self.inner.services.mcp.session_of(token)?);
        self.sessions().owner_allowed(&session).ok()?;
        Some(session)
    }

    /// Who an MCP token's calls act as: the owner of the session it is bound to (the
    /// user it was issued to), never as an admin; `None` as for [`Runtime::mcp_session`].
    pub fn mcp_caller(&self, token: &str) -> Option<(SessionId, Principal)> {
        let session = self.mcp_session(token)?;
        let handle = self.inner.services.sessions.get(&session)?;
        let user_id = handle.shared.peek(|i| i.owner_id.clone());
        Some((
            session,
            Principal {
                user_id,
                admin: false,
            },
        ))
    }
}
