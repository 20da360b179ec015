//! [`AcpAgent`]'s permission requests: `session/request_permission` through the core's
//! approval table (bypass and remembered rules answer by themselves), answers mapped
//! back onto the agent's options by kind, and withdrawal when the turn ends.

use super::*;
use crate::ids::{RequestId, TurnId};

impl AcpAgent {
    /// Answers every pending permission request `cancelled` and tells the session.
    pub(super) fn withdraw_approvals(&mut self, turn_id: Option<&TurnId>) {
        for (request_id, approval) in self.approvals.drain() {
            self.respond(
                approval.rpc_id,
                PermissionAnswer {
                    outcome: PermissionOutcome::Cancelled,
                },
            );
            self.emitter.send(
                turn_id.cloned(),
                AgentItem::PermissionResolved { request_id },
            );
        }
    }

    pub(super) fn answer_permission(
        &mut self,
        request_id: RequestId,
        allow: bool,
        remember: bool,
        permission_mode: Option<PermissionMode>,
    ) {
        let Some(approval) = self.approvals.answer(&request_id, allow && remember) else {
            tracing::debug!(session = %self.session_id, request = %request_id, "answer to a request that is no longer pending");
            return;
        };
        let outcome = mapping::answer(&approval.options, allow, remember);
        self.respond(approval.rpc_id, PermissionAnswer { outcome });
        if let Some(mode) = permission_mode.filter(|_| allow) {
            self.settings.permission_mode = mode;
            self.apply_mode();
        }
    }

    pub(super) fn on_permission(&mut self, rpc_id: Value, params: Value) {
        let request = match serde_json::from_value::<RequestPermissionParams>(params) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(session = %self.session_id, error = %e, "unreadable permission request refused");
                return self.refuse(rpc_id, INVALID_PARAMS, "unreadable permission request");
            }
        };
        let live = self.slot.phase() == Some(&Phase::Live);
        let Some(turn) = self.slot.get_mut().filter(|_| live) else {
            // No turn to ask in (or it is being stopped): nobody could answer.
            return self.respond(
                rpc_id,
                PermissionAnswer {
                    outcome: PermissionOutcome::Cancelled,
                },
            );
        };
        let turn_id = turn.id.clone();
        let (events, call) = turn.data.mapper.announce(request.tool_call);
        self.emit_events(&turn_id, events);
        let tool_name = mapping::tool_name(&call);
        let input = mapping::tool_input(&call);
        let changes = mapping::tool_changes(&call);
        let choices = mapping::choices(&request.options);
        let approval = AcpApproval {
            rpc_id,
            options: request.options,
        };
        match self
            .approvals
            .ask(self.settings.permission_mode, &tool_name, approval)
        {
            Asked::Allowed(approval) => {
                let outcome = mapping::answer(&approval.options, true, false);
                self.respond(approval.rpc_id, PermissionAnswer { outcome });
            }
            Asked::Pending(request_id) => {
                self.emitter.send(
                    Some(turn_id),
                    AgentItem::PermissionRequest(crate::adapter::messages::PendingPermission {
                        request_id,
                        tool_name,
                        input,
                        changes,
                        permission_kind: PermissionKind::Tool,
                        choices,
                    }),
                );
            }
        }
    }
}
