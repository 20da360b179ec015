//! The agent-facing side: tools (for MCP, `tool.call` and scripts), MCP tokens,
//! proposals and spawned sessions.

use serde_json::Value;
use tandem_protocol::client::ProposalRespondParams;
use tandem_protocol::mcp::ToolDef;
use tandem_protocol::pair::{ProposalStatus, WorkerChoice};
use tandem_protocol::results::ProposalRespondResult;
use tandem_protocol::SessionInfo;

use super::{NewSession, Runtime};
use crate::access::Principal;
use crate::adapter::VendorSpec;
use crate::error::{ProposalError, RuntimeError, ToolError};
use crate::tools::{accept_proposal, decline_proposal, describe, tools_for};

impl Runtime {
    /// Ids of the vendors sessions can be created for, in catalog order.
    pub fn installed_vendors(&self) -> Vec<&'static str> {
        self.inner.services.catalog.installed()
    }

    /// One vendor's facts.
    pub fn vendor(&self, id: &str) -> Option<VendorSpec> {
        self.inner.services.catalog.get(id)
    }

    /// Sessions spawned by `parent`, oldest first.
    pub fn children_of(&self, parent: &str) -> Vec<SessionInfo> {
        let mut children: Vec<SessionInfo> = self
            .inner
            .sessions
            .iter()
            .map(|h| h.shared.info())
            .filter(|info| info.parent_id.as_deref() == Some(parent))
            .collect();
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
            id: None,
            owner_id: parent.owner_id.clone(),
            visibility: parent.visibility,
            vendor: vendor.to_string(),
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
        })
        .await
    }

    /// `tool.call`: calls a tool as session `id`, which the caller must own. The inner
    /// result is the tool's own success or failure.
    pub async fn call_tool(
        &self,
        who: &Principal,
        id: &str,
        name: &str,
        arguments: Value,
    ) -> Result<Result<Value, ToolError>, RuntimeError> {
        self.drivable(who, id)?;
        Ok(self.inner.services.tools.call(id, name, arguments).await)
    }

    /// Calls a tool as the session an MCP token is bound to.
    pub async fn call_tool_as(
        &self,
        session_id: &str,
        name: &str,
        arguments: Value,
    ) -> Result<Value, ToolError> {
        self.inner
            .services
            .tools
            .call(session_id, name, arguments)
            .await
    }

    /// The tools a session is offered, and the instruction for its role.
    pub async fn tools_for_session(
        &self,
        session_id: &str,
    ) -> Result<(Vec<ToolDef>, Option<String>), RuntimeError> {
        let state = describe(self, session_id).await?;
        let instruction = match (state.info.role, &state.parent_id) {
            (_, Some(_)) | (Some(tandem_protocol::Role::Worker), _) => None,
            (Some(tandem_protocol::Role::Driver), _) => {
                Some(crate::pair::texts::DRIVER.to_string())
            }
            (None, None) => Some(crate::pair::texts::UNPAIRED.to_string()),
        };
        Ok((tools_for(&state), instruction))
    }

    /// A bearer token for `/mcp` bound to session `id` (the same one each time).
    pub fn mcp_token(&self, who: &Principal, id: &str) -> Result<String, RuntimeError> {
        self.drivable(who, id)?;
        Ok(self.inner.services.mcp.token_for(id)?)
    }

    /// The session an MCP token is bound to.
    pub fn mcp_session(&self, token: &str) -> Option<String> {
        self.inner.services.mcp.session_of(token)
    }

    /// `proposal.respond`: accept (with an optional other Worker) or decline.
    pub async fn respond_proposal(
        &self,
        who: &Principal,
        params: ProposalRespondParams,
    ) -> Result<ProposalRespondResult, RuntimeError> {
        self.drivable(who, &params.session_id)?;
        if !params.accepted {
            decline_proposal(self, &params.session_id, &params.proposal_id).await?;
            return Ok(ProposalRespondResult {
                proposal_id: params.proposal_id,
                status: ProposalStatus::Declined,
                worker_id: None,
                pair_id: None,
            });
        }
        let driver = describe(self, &params.session_id).await?;
        let recommended = driver
            .proposal
            .filter(|p| p.proposal_id == params.proposal_id)
            .map(|p| p.recommended)
            .ok_or_else(|| ProposalError::NotFound(params.proposal_id.clone()))?;
        let vendor_changed = params
            .vendor
            .as_ref()
            .is_some_and(|v| *v != recommended.vendor);
        let choice = WorkerChoice {
            vendor: params.vendor.unwrap_or(recommended.vendor),
            // A recommended model belongs to the recommended vendor.
            model: params.model.unwrap_or(if vendor_changed {
                String::new()
            } else {
                recommended.model
            }),
            effort: params.effort.unwrap_or(recommended.effort),
        };
        let started =
            accept_proposal(self, &params.session_id, &params.proposal_id, choice, false).await?;
        Ok(ProposalRespondResult {
            proposal_id: params.proposal_id,
            status: ProposalStatus::Running,
            worker_id: Some(started.worker_id),
            pair_id: Some(started.pair_id),
        })
    }
}
