//! Tool approvals in the session actor: pending requests are published (for
//! `chat_subscribed`), answered once by `chat.permission-response`, and withdrawn when
//! their turn ends.

use actix::prelude::*;
use tandem_protocol::pair::WorkerApprovals;
use tandem_protocol::server::PendingPermission;
use tandem_protocol::{ApprovalAsk, Decider, EventBody, PermissionRule};

use super::actor::SessionActor;
use super::pairing::{ReportTo, WorkerNeedsApproval};
use super::RespondPermission;
use crate::adapter::messages::AdapterCommand;
use crate::cluster_link::ApprovalNeed;
use crate::error::RuntimeError;
use crate::ids::{RequestId, SessionId, TurnId};

impl Handler<RespondPermission> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, msg: RespondPermission, _: &mut Context<Self>) -> Self::Result {
        let result = self.on_permission_response(msg);
        self.flush();
        result
    }
}

impl SessionActor {
    /// Publishes the pending permission requests and the remembered rules for new
    /// subscribers.
    pub(super) fn publish_permissions(&self) {
        self.shared.publish(|p| {
            p.permissions = self.permissions.to_vec();
            p.rules = self.record.permission_rules.clone();
        });
    }

    /// The agent asks for a permission (in turn `turn_id`): pending and published
    /// until answered, and put to the Driver of a delegated turn that approves.
    pub(super) fn permission_requested(
        &mut self,
        turn_id: Option<TurnId>,
        request: PendingPermission,
    ) {
        self.touch();
        self.permissions.add(request.clone());
        self.publish_permissions();
        let request_id = request.request_id.clone();
        self.emit(turn_id, request.into());
        self.route_delegated_permission(&request_id);
    }

    /// The agent withdrew request `request_id` unanswered (in turn `turn_id`): resolved
    /// by no one, if it was still pending.
    pub(super) fn permission_withdrawn(&mut self, turn_id: Option<TurnId>, request_id: RequestId) {
        let was_pending = self.permissions.take(&request_id).is_some();
        self.touch();
        if was_pending {
            self.publish_permissions();
            self.emit(
                turn_id,
                EventBody::PermissionResolved {
                    request_id,
                    decided_by: None,
                },
            );
        }
    }

    /// Withdraws every pending permission request (its turn is over).
    pub(super) fn withdraw_permissions(&mut self) {
        for pending in self.permissions.take_all() {
            self.emit(
                None,
                EventBody::PermissionResolved {
                    request_id: pending.request_id,
                    decided_by: None,
                },
            );
        }
        self.publish_permissions();
        // Attention changes with them.
        self.touch();
    }

    pub(super) fn on_permission_response(
        &mut self,
        msg: RespondPermission,
    ) -> Result<(), RuntimeError> {
        if self.permissions.get(&msg.request_id).is_none() {
            return Err(RuntimeError::NoSuchPermission(msg.request_id));
        }
        let Some(adapter) = self.adapter.clone() else {
            return Err(RuntimeError::NoSuchPermission(msg.request_id));
        };
        // A Driver answers only what was put to it: requests of the turns it
        // delegated, in a pair whose Driver approves.
        let put_to_driver = self
            .turn
            .as_ref()
            .and_then(|t| t.delegation.as_ref())
            .is_some_and(|d| d.approvals == WorkerApprovals::Driver);
        if msg.decided_by == Decider::Driver && !put_to_driver {
            return Err(RuntimeError::NoSuchPermission(msg.request_id));
        }
        let Some(pending) = self.permissions.take(&msg.request_id) else {
            return Err(RuntimeError::NoSuchPermission(msg.request_id));
        };
        self.touch();
        let allow = msg.allow;
        let remember = allow && msg.remember.is_some();
        let permission_mode = msg.permission_mode.filter(|_| allow);
        self.emit(
            None,
            EventBody::PermissionResolved {
                request_id: pending.request_id.clone(),
                decided_by: Some(msg.decided_by),
            },
        );
        if let Some(scope) = msg.remember.filter(|_| allow) {
            self.remember_rule(PermissionRule {
                tool_name: pending.tool_name.clone(),
                scope,
            });
        }
        self.publish_permissions();
        adapter.do_send(AdapterCommand::PermissionResponse {
            request_id: pending.request_id,
            allow,
            updated_input: msg.updated_input,
            message: msg.message,
            remember,
            permission_mode,
        });
        if let Some(mode) = permission_mode {
            // Recorded as any other configuration change; the adapter already switched
            // the vendor's mode with its answer, so the Configure it gets is a no-op.
            self.apply_config(super::Configure {
                permission_mode: Some(mode),
                ..Default::default()
            })?;
        }
        Ok(())
    }

    /// A permission request of a delegated turn goes where the pair's
    /// `workerApprovals` says: nowhere else for `user`, allowed at once for `bypass`,
    /// to the pair (which asks the Driver) for `driver`. The request stays pending
    /// here meanwhile, so a person may still answer it first.
    pub(super) fn route_delegated_permission(&mut self, request_id: &RequestId) {
        let Some(delegation) = self.turn.as_ref().and_then(|t| t.delegation.as_ref()) else {
            return;
        };
        let (approvals, pair_id, delegation_id, report_to) = (
            delegation.approvals,
            delegation.pair_id.clone(),
            delegation.delegation_id.clone(),
            delegation.report_to.clone(),
        );
        match approvals {
            WorkerApprovals::User => {}
            WorkerApprovals::Bypass => {
                let allowed = self.on_permission_response(RespondPermission {
                    request_id: request_id.clone(),
                    allow: true,
                    updated_input: None,
                    message: None,
                    remember: None,
                    permission_mode: None,
                    decided_by: Decider::Bypass,
                });
                if let Err(e) = allowed {
                    tracing::warn!(session = %self.id, error = %e, "bypassed permission not answered");
                }
            }
            WorkerApprovals::Driver => {
                let Some(pending) = self.permissions.get(request_id) else {
                    return;
                };
                let need = ApprovalNeed {
                    pair_id,
                    delegation_id,
                    ask: ApprovalAsk {
                        request_id: pending.request_id.clone(),
                        worker_id: SessionId::from(&*self.id),
                        tool_name: pending.tool_name.clone(),
                        input: pending.input.clone(),
                        permission_kind: pending.permission_kind,
                        choices: pending.choices.clone(),
                    },
                };
                match &report_to {
                    ReportTo::Pair(pair) => {
                        match pair.approvals.try_send(WorkerNeedsApproval(need)) {
                            Ok(()) => {}
                            // Never dropped for a full mailbox (one per request).
                            Err(SendError::Full(need)) => pair.approvals.do_send(need),
                            Err(SendError::Closed(_)) => {
                                tracing::debug!(session = %self.id, "pair gone; the permission request waits for a person");
                            }
                        }
                    }
                    ReportTo::Node(node) => {
                        let Some(cluster) = self.services.cluster.get().cloned() else {
                            return;
                        };
                        let (node, id) = (node.clone(), self.id.clone());
                        actix::spawn(async move {
                            if let Err(e) = cluster.ask_approval(&node, need).await {
                                tracing::warn!(session = %id, error = %e, "the Driver could not be asked; the permission request waits for a person");
                            }
                        });
                    }
                }
            }
        }
    }

    /// Records an "always allow" rule once: an event in the history, the record (so
    /// later adapters and restarts keep it) and what subscribers are told.
    fn remember_rule(&mut self, rule: PermissionRule) {
        if self
            .record
            .permission_rules
            .iter()
            .any(|r| r.tool_name == rule.tool_name)
        {
            return;
        }
        self.record.permission_rules.push(rule.clone());
        self.touch();
        self.emit(None, EventBody::PermissionRemembered { rule });
    }
}
