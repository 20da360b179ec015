//! Claude Code's tool approvals (`can_use_tool` control requests) as permission
//! requests, with the choices the CLI supports: once, always for this session, deny;
//! and for `ExitPlanMode`, approving the plan with or without accepting edits.

use serde_json::Value;
use tandem_protocol::{PermissionChoice, PermissionKind, PermissionMode, RememberScope};

use super::actor::ClaudeAgent;
use super::transport::cli_mode;
use super::wire::{
    line, InboundControlRequest, InboundRequest, OutboundControlResponse, OutboundRequest,
    PermissionDecision, PermissionUpdate,
};
use crate::adapter::core::Asked;
use crate::adapter::messages::{AgentItem, PendingPermission};
use crate::ids::{RequestId, TurnId};

/// The tool Claude Code asks to leave plan mode with; its input carries the plan.
const EXIT_PLAN_MODE: &str = "ExitPlanMode";

/// A tool approval the CLI is waiting for.
#[derive(Debug)]
pub struct ClaudeApproval {
    /// The CLI's control request id, echoed in our answer.
    cli_request_id: String,
    /// The tool, named in an "always allow" rule.
    tool_name: String,
    /// The tool input, returned as `updatedInput` when allowed unchanged.
    input: Value,
}

/// A plan approval waiting for the CLI's answer to `get_plan` before it is shown.
#[derive(Debug)]
pub struct PlanLookup {
    /// Our `get_plan` control request id.
    control_id: String,
    /// The pending approval's id.
    request_id: RequestId,
    /// The turn it belongs to.
    turn_id: Option<TurnId>,
    /// `ExitPlanMode`'s input, to which the plan is added as `plan`.
    input: Value,
}

/// What a request is about, and the answers offered for it.
fn kind_and_choices(tool_name: &str) -> (PermissionKind, Vec<PermissionChoice>) {
    let choice = |label: &str,
                  allow: bool,
                  remember: Option<RememberScope>,
                  permission_mode: Option<PermissionMode>| PermissionChoice {
        label: label.into(),
        allow,
        remember,
        permission_mode,
    };
    if tool_name == EXIT_PLAN_MODE {
        return (
            PermissionKind::Plan,
            vec![
                choice(
                    "Approve and accept edits",
                    true,
                    None,
                    Some(PermissionMode::AcceptEdits),
                ),
                choice("Approve", true, None, Some(PermissionMode::Default)),
                choice("Keep planning", false, None, None),
            ],
        );
    }
    (
        PermissionKind::Tool,
        vec![
            choice("Allow once", true, None, None),
            choice(
                "Always allow in this session",
                true,
                Some(RememberScope::Session),
                None,
            ),
            choice("Deny", false, None, None),
        ],
    )
}

impl ClaudeAgent {
    /// A control request from the CLI: tool approvals are asked (or answered at once:
    /// bypassed or remembered), anything else is refused.
    pub(super) fn on_control_request(&mut self, request: InboundControlRequest) {
        let InboundRequest::CanUseTool {
            tool_name, input, ..
        } = request.request
        else {
            let bytes = line(&OutboundControlResponse::error(
                &request.request_id,
                "not supported by tandem",
            ));
            self.write(bytes);
            return;
        };
        let approval = ClaudeApproval {
            cli_request_id: request.request_id,
            tool_name: tool_name.clone(),
            input: input.clone(),
        };
        // A plan is never answered by a rule: leaving plan mode is a person's call.
        let asked = if tool_name == EXIT_PLAN_MODE {
            Asked::Pending(self.approvals.hold(&tool_name, approval))
        } else {
            self.approvals
                .ask(self.settings.permission_mode, &tool_name, approval)
        };
        let request_id = match asked {
            Asked::Allowed(approval) => {
                self.decide(approval, true, None, None, false, None);
                return;
            }
            Asked::Pending(request_id) => request_id,
        };
        let turn_id = self.current_turn();
        if tool_name == EXIT_PLAN_MODE && input.get("plan").is_none() {
            // The plan lives in the CLI's plan file: ask for it, show the request then.
            if let Some(control_id) = self.control(OutboundRequest::GetPlan {}) {
                self.plan_lookup = Some(PlanLookup {
                    control_id,
                    request_id,
                    turn_id,
                    input,
                });
                return;
            }
        }
        self.raise(request_id, turn_id, tool_name, input);
    }

    /// Shows a pending approval to the session.
    fn raise(
        &mut self,
        request_id: RequestId,
        turn_id: Option<TurnId>,
        tool_name: String,
        input: Value,
    ) {
        let (permission_kind, choices) = kind_and_choices(&tool_name);
        self.emitter.send(
            turn_id,
            AgentItem::PermissionRequest(PendingPermission {
                request_id,
                changes: crate::adapter::edits::claude(&tool_name, &input),
                tool_name,
                input,
                permission_kind,
                choices,
            }),
        );
    }

    /// The CLI answered one of our control requests; only `get_plan` is waited for.
    /// Without a plan (none written, or the CLI refused) the request is shown as is.
    pub(super) fn on_control_response(&mut self, control_id: &str, response: Option<Value>) {
        if self
            .plan_lookup
            .as_ref()
            .is_none_or(|l| l.control_id != control_id)
        {
            return;
        }
        let Some(mut lookup) = self.plan_lookup.take() else {
            return;
        };
        let plan = response
            .as_ref()
            .filter(|r| r["exists"] == Value::Bool(true))
            .and_then(|r| r["content"].as_str());
        if let (Some(plan), Some(input)) = (plan, lookup.input.as_object_mut()) {
            input.insert("plan".into(), Value::String(plan.to_string()));
        }
        self.raise(
            lookup.request_id,
            lookup.turn_id,
            EXIT_PLAN_MODE.to_string(),
            lookup.input,
        );
    }

    /// A person answered `request_id`.
    pub(super) fn answer_permission(
        &mut self,
        request_id: &RequestId,
        allow: bool,
        updated_input: Option<Value>,
        message: Option<String>,
        remember: bool,
        permission_mode: Option<PermissionMode>,
    ) {
        let Some(approval) = self.approvals.answer(request_id, allow && remember) else {
            tracing::debug!(session = %self.session_id, request = %request_id, "answer to a request that is no longer pending");
            return;
        };
        if let Some(mode) = permission_mode.filter(|_| allow) {
            self.settings.permission_mode = mode;
        }
        self.decide(
            approval,
            allow,
            updated_input,
            message,
            remember,
            permission_mode,
        );
    }

    /// Writes the CLI's answer.
    fn decide(
        &mut self,
        approval: ClaudeApproval,
        allow: bool,
        updated_input: Option<Value>,
        message: Option<String>,
        remember: bool,
        permission_mode: Option<PermissionMode>,
    ) {
        let decision = if allow {
            let mut updated_permissions = Vec::new();
            if remember {
                updated_permissions.push(PermissionUpdate::allow_tool(&approval.tool_name));
            }
            if let Some(mode) = permission_mode {
                let mode = cli_mode(mode);
                updated_permissions.push(PermissionUpdate::set_mode(mode));
                // The CLI switches with this answer; no `set_permission_mode` follows.
                if let super::actor::Process::Up(up) = &mut self.live {
                    up.applied.mode = mode;
                }
            }
            PermissionDecision::Allow {
                updated_input: updated_input.unwrap_or(approval.input),
                updated_permissions,
            }
        } else {
            PermissionDecision::Deny {
                message: message
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or_else(|| "The user denied this tool use.".into()),
            }
        };
        let bytes = line(&OutboundControlResponse::decision(
            &approval.cli_request_id,
            decision,
        ));
        self.write(bytes);
    }

    /// The CLI withdrew a request (its turn was interrupted).
    pub(super) fn on_cancel(&mut self, cli_request_id: &str) {
        if let Some((request_id, _)) = self
            .approvals
            .withdraw(|a| a.cli_request_id == cli_request_id)
        {
            let turn_id = self.current_turn();
            self.emitter
                .send(turn_id, AgentItem::PermissionResolved { request_id });
        }
    }
}
