//! Tool approvals in the session actor: pending requests are published (for
//! `chat_subscribed`), answered once by `chat.permission-response`, and withdrawn when
//! their turn ends.

use actix::prelude::*;
use tandem_protocol::EventBody;

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
    /// Publishes the pending permission requests for new subscribers.
    pub(super) fn publish_permissions(&self) {
        self.shared.set_permissions(self.permissions.clone());
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
        let pending = self.permissions.remove(pos);
        self.publish_permissions();
        self.emit(
            None,
            EventBody::PermissionResolved {
                request_id: pending.request_id.clone(),
            },
        );
        match &self.adapter {
            Some(adapter) => {
                adapter.do_send(AdapterCommand::PermissionResponse {
                    request_id: pending.request_id,
                    allow: msg.allow,
                    updated_input: msg.updated_input,
                    message: msg.message,
                    remember: msg.remember,
                });
                Ok(())
            }
            None => Err(RuntimeError::NoSuchPermission(pending.request_id)),
        }
    }
}
