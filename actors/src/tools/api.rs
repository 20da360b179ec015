//! The runtime operations that belong to the agent tools: what a session is offered,
//! and the user's answer to a Worker proposal (which starts the Worker the way
//! `send_to_partner` does). Written here, as `impl Runtime`, because they are built on
//! the tools; the runtime itself does not depend on this module.

use tandem_protocol::client::ProposalRespondParams;
use tandem_protocol::mcp::ToolDef;
use tandem_protocol::pair::{ProposalStatus, WorkerChoice};
use tandem_protocol::results::ProposalRespondResult;

use super::{accept_proposal, decline_proposal, describe, tools_for};
use crate::access::Principal;
use crate::error::{ProposalError, RuntimeError};
use crate::ids::SessionId;
use crate::runtime::Runtime;

impl Runtime {
    /// The tools a session is offered, and the instruction for its role.
    pub async fn tools_for_session(
        &self,
        session_id: &SessionId,
    ) -> Result<(Vec<ToolDef>, Option<String>), RuntimeError> {
        let state = describe(self, session_id).await?;
        let instruction = match (state.info.role, &state.parent_id) {
            (_, Some(_)) | (Some(tandem_protocol::Role::Worker), _) => None,
            (Some(tandem_protocol::Role::Driver), _) => {
                Some(crate::session::prompts::DRIVER.to_string())
            }
            (None, None) => Some(crate::session::prompts::UNPAIRED.to_string()),
        };
        Ok((tools_for(&state), instruction))
    }

    /// `proposal.respond`: accept (with an optional other Worker) or decline.
    pub async fn respond_proposal(
        &self,
        who: &Principal,
        params: ProposalRespondParams,
    ) -> Result<ProposalRespondResult, RuntimeError> {
        self.access().drivable(who, &params.session_id)?;
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
