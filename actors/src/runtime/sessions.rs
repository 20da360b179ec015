//! [`SessionService`]: the sessions of this node: found by id, read, listed a page
//! at a time (`listing.rs`), and driven: interrupts, background tasks, approvals,
//! settings, the queue (`queue.rs`), slash commands (`commands.rs`) and usage
//! (`usage.rs`), each after the access check. It also keeps each owner's count of
//! sessions against `--max-sessions-per-user`.

use std::sync::Arc;

use actix::prelude::*;
use dashmap::DashMap;
use tandem_protocol::client::{ChatPermissionResponseParams, SessionConfigureParams};
use tandem_protocol::rest::RunningSession;
use tandem_protocol::{SessionInfo, SessionStatus};

use super::SessionAccess;
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::error::RuntimeError;
use crate::ids::{RequestId, SessionId, UserId};
use crate::session::{
    Abort, Configure, RespondPermission, Services, SessionActor, SessionHandle, StopTask,
};
use crate::store::Store;

/// The sessions service.
pub struct SessionService {
    /// The live sessions through the access rules.
    pub(super) access: SessionAccess,
    /// The live sessions, the vendors, the revoked owners.
    pub(super) services: Arc<Services>,
    /// Stored histories (usage) and users (a new owner must exist).
    pub(super) store: Store,
    /// Sessions per owner, for `max_sessions_per_user`.
    owned: DashMap<UserId, usize>,
    /// `--max-sessions-per-user`.
    max_per_user: usize,
}

impl SessionService {
    /// The sessions `access` finds, each owner allowed `max_per_user` of them.
    pub(super) fn new(
        access: SessionAccess,
        services: Arc<Services>,
        store: Store,
        max_per_user: usize,
    ) -> Self {
        SessionService {
            access,
            services,
            store,
            owned: DashMap::new(),
            max_per_user,
        }
    }

    /// Counts a session loaded at start against its owner's limit.
    pub(super) fn count_owned(&self, owner_id: UserId) {
        *self.owned.entry(owner_id).or_insert(0) += 1;
    }

    /// Takes one of `owner`'s session slots, or says the owner has all of theirs;
    /// `keeps` (the session is the owner's already) takes one past the limit.
    pub(super) fn take_slot(&self, owner: &UserId, keeps: bool) -> Result<(), RuntimeError> {
        let max = self.max_per_user;
        let mut owned = self.owned.entry(owner.clone()).or_insert(0);
        if !keeps && *owned >= max {
            return Err(RuntimeError::LimitExceeded(format!(
                "user `{owner}` already has {max} sessions (--max-sessions-per-user)"
            )));
        }
        *owned += 1;
        Ok(())
    }

    /// Gives back one of `owner`'s session slots.
    pub(super) fn free_slot(&self, owner: &UserId) {
        if let Some(mut owned) = self.owned.get_mut(owner) {
            *owned = owned.saturating_sub(1);
        }
    }

    /// The local session where permission request `request_id` is pending, if any
    /// (`chat.permission-response` without `sessionId` asks the other nodes when
    /// none is).
    pub fn permission_holder(&self, request_id: &RequestId) -> Option<SessionId> {
        let mut found = None;
        self.services.sessions.for_each(|id, h| {
            if found.is_none() && h.shared.has_permission(request_id) {
                found = Some(id.clone());
            }
        });
        found
    }

    /// True when the session has an actor here (it is this node's).
    pub fn hosts(&self, id: &str) -> bool {
        self.services.sessions.get(id).is_some()
    }

    /// Every live (not archived) session of this node, as listed.
    pub fn local_sessions(&self) -> Vec<SessionInfo> {
        let mut out = Vec::new();
        self.services
            .sessions
            .for_each(|_, h| out.push(h.shared.info()));
        out
    }

    /// A live session actor's address; `None` for an unknown or archived id.
    pub fn session_addr(&self, id: &SessionId) -> Option<Addr<SessionActor>> {
        self.access.addr(id)
    }

    /// A live session's handle; `None` for an unknown or archived id.
    pub fn session_handle(&self, id: &SessionId) -> Option<crate::session::SessionHandle> {
        self.services.sessions.get(id)
    }

    /// A live session's published metadata, read without messaging its actor.
    pub fn session_info(&self, id: &SessionId) -> Option<SessionInfo> {
        self.services.sessions.get(id).map(|h| h.shared.info())
    }

    /// Number of sessions in each status, for metrics.
    pub fn status_counts(&self) -> Vec<(SessionStatus, usize)> {
        let mut counts = [0usize; 5];
        self.services.sessions.for_each(|_, h| {
            let status = h.shared.info().status;
            if let Some(i) = SessionStatus::ALL.iter().position(|s| *s == status) {
                counts[i] += 1;
            }
        });
        SessionStatus::ALL.into_iter().zip(counts).collect()
    }

    /// One session, if `who` may see it.
    pub fn session(&self, who: &Principal, id: &SessionId) -> Result<SessionInfo, RuntimeError> {
        Ok(self.access.visible(who, id)?.shared.info())
    }

    /// Sessions with a turn or background work in flight.
    pub fn running(&self, who: &Principal) -> Vec<RunningSession> {
        self.running_with(who, &[])
    }

    /// [`SessionService::running`] with `others` too: other cluster nodes' sessions as their
    /// directory lists them (Claude Code processes outside tandem are looked for
    /// on this machine only, so for this node's sessions).
    pub fn running_with(&self, who: &Principal, others: &[SessionInfo]) -> Vec<RunningSession> {
        let mut visible: Vec<SessionInfo> = Vec::new();
        self.services.sessions.for_each(|_, h| {
            let info = h.shared.info();
            if who.can_see(&info) {
                visible.push(info);
            }
        });
        let remote = others
            .iter()
            .filter(|info| who.can_see(info) && !self.hosts(&info.id))
            .cloned();
        let mut out: Vec<RunningSession> = visible
            .iter()
            .cloned()
            .chain(remote)
            .filter_map(|info| {
                if info.status.is_busy() {
                    Some(RunningSession {
                        session_id: info.id,
                        vendor: info.vendor,
                        started_at: info.turn_started_at.unwrap_or(info.last_activity),
                        last_seq: info.last_seq,
                        background: None,
                        can_interrupt: Some(true),
                        status_text: None,
                        tasks: (!info.background_tasks.is_empty()).then_some(info.background_tasks),
                    })
                } else if !info.background_tasks.is_empty() {
                    let started = info
                        .background_tasks
                        .iter()
                        .filter_map(|t| t.started_at)
                        .min()
                        .unwrap_or(info.last_activity);
                    Some(RunningSession {
                        session_id: info.id,
                        vendor: info.vendor,
                        started_at: started,
                        last_seq: info.last_seq,
                        background: Some(true),
                        can_interrupt: Some(false),
                        status_text: None,
                        tasks: Some(info.background_tasks),
                    })
                } else {
                    None
                }
            })
            .collect();
        // Claude Code processes outside tandem working on one of these sessions.
        let external = self.services.vendors.external_runs(&visible, &out);
        out.extend(external);
        out.sort_by_key(|s| s.started_at);
        out
    }

    /// Interrupts the running turn.
    pub async fn abort(&self, who: &Principal, id: &SessionId) -> Result<(), RuntimeError> {
        self.access.drivable(who, id)?.ask(Abort).await?
    }

    /// Stops one background task.
    pub async fn stop_task(
        &self,
        who: &Principal,
        id: &SessionId,
        task_id: String,
    ) -> Result<(), RuntimeError> {
        self.access
            .drivable(who, id)?
            .ask(StopTask { task_id })
            .await?
    }

    /// `chat.permission-response`: answers a pending tool approval. Request ids are
    /// unique across the server, so `session_id` is only a shortcut.
    pub async fn respond_permission(
        &self,
        who: &Principal,
        params: ChatPermissionResponseParams,
    ) -> Result<(), RuntimeError> {
        let id = match params.session_id.filter(|s| !s.is_empty()) {
            Some(id) => id,
            None => self
                .permission_holder(&params.request_id)
                .ok_or_else(|| RuntimeError::NoSuchPermission(params.request_id.clone()))?,
        };
        self.access
            .drivable(who, &id)?
            .ask(RespondPermission {
                request_id: params.request_id,
                allow: params.allow,
                updated_input: params.updated_input,
                message: params.message,
                remember: params.remember,
                permission_mode: params.permission_mode,
                decided_by: tandem_protocol::Decider::User,
            })
            .await?
    }

    /// Changes a session's settings. `ownerId` (an admin's only) reassigns it to
    /// another existing user, e.g. a revoked user's session, which takes commands
    /// again once reassigned.
    pub async fn configure(
        &self,
        who: &Principal,
        params: SessionConfigureParams,
    ) -> Result<SessionInfo, RuntimeError> {
        let handle = self.access.drivable(who, &params.session_id)?;
        let owner_id = match params.owner_id {
            Some(owner) => Some(self.reserve_new_owner(who, &handle, owner)?),
            None => None,
        };
        let configured = handle
            .ask(Configure {
                model: params.model,
                effort: params.effort,
                vendor: params.vendor.map(VendorId::from),
                permission_mode: params.permission_mode,
                title: params.title,
                owner_id: owner_id.as_ref().map(|(new, _)| new.clone()),
                notify: params.notify,
                on_limit: params.on_limit,
            })
            .await
            .and_then(|answer| answer);
        if let Some((new, old)) = owner_id {
            // The slot moves to the new owner, or goes back if nothing changed.
            self.free_slot(if configured.is_ok() { &old } else { &new });
        }
        configured
    }

    /// Checks that `who` may reassign `handle`'s session to `owner` (an admin may, to
    /// an existing user) and takes one of the new owner's session slots; returns the
    /// new and the old owner. The caller gives back the old owner's slot once the
    /// session moved, or the new owner's if it did not.
    fn reserve_new_owner(
        &self,
        who: &Principal,
        handle: &SessionHandle,
        owner: UserId,
    ) -> Result<(UserId, UserId), RuntimeError> {
        if !who.admin {
            return Err(RuntimeError::AccessDenied(format!(
                "{} (only an admin may reassign a session)",
                handle.shared.peek(|i| i.id.clone())
            )));
        }
        let owner = UserId::new(owner.trim());
        if !self.store.user_exists(&owner)? {
            return Err(RuntimeError::unusable(format!(
                "ownerId: no user `{owner:.64}` (tandem user list shows them)"
            )));
        }
        let old = handle.shared.peek(|i| i.owner_id.clone());
        self.take_slot(&owner, owner == old)?;
        Ok((owner, old))
    }

    /// Refuses work for session `id` when its owner was revoked (see
    /// [`crate::owners`]); sessions this node does not run pass.
    pub(crate) fn owner_allowed(&self, id: &str) -> Result<(), RuntimeError> {
        let Some(handle) = self.services.sessions.get(id) else {
            return Ok(());
        };
        let owner = handle.shared.peek(|i| i.owner_id.clone());
        if self.services.owners.revoked(&owner) {
            return Err(RuntimeError::OwnerRevoked {
                session: id.into(),
                owner,
            });
        }
        Ok(())
    }
}
