//! Tool approvals in the session actor: pending requests are published (for
//! `chat_subscribed`), answered once by `chat.permission-response`, and withdrawn when
//! their turn ends.

use actix::prelude::*;
use tandem_protocol::{EventBody, PermissionRule};

use super::actor::SessionActor;
use super::RespondPermission;
use crate::adapter::messages::AdapterCommand;
use crate::error::RuntimeError;

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
        self.shared.set_permissions(self.permissions.clone());
        self.shared
            .set_permission_rules(self.record.permission_rules.clone());
    }

    /// Withdraws every pending permission request (its turn is over).
    pub(super) fn withdraw_permissions(&mut self) {
        for pending in std::mem::take(&mut self.permissions) {
            self.emit(
                None,
                EventBody::PermissionResolved {
                    request_id: pending.request_id,
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
        let Some(pos) = self
            .permissions
            .iter()
            .position(|p| p.request_id == msg.request_id)
        else {
            return Err(RuntimeError::NoSuchPermission(msg.request_id));
        };
        let Some(adapter) = self.adapter.clone() else {
            return Err(RuntimeError::NoSuchPermission(msg.request_id));
        };
        let pending = self.permissions.remove(pos);
        self.touch();
        let allow = msg.allow;
        let remember = allow && msg.remember.is_some();
        let permission_mode = msg.permission_mode.filter(|_| allow);
        self.emit(
            None,
            EventBody::PermissionResolved {
                request_id: pending.request_id.clone(),
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
