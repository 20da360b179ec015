//! WebSocket clients: registration with the gateway, subscriptions, and REST reads
//! of stored events.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use tandem_protocol::ServerFrame;

use super::{SessionAccess, MAX_EVENTS_PAGE};
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::gateway::{
    ClientQueue, Connect, Deliver, Disconnect, Gateway, Subscribe, Unsubscribe, Watch,
};
use crate::ids::SessionId;
use crate::metrics::Metrics;
use crate::push::Push;
use crate::store::Store;

/// The clients service: WebSocket clients of the gateway and what they read.
pub struct ClientService {
    access: SessionAccess,
    gateway: Addr<Gateway>,
    store: Store,
    metrics: Arc<Metrics>,
    /// Told when a client goes, so its user's devices hear of everything again.
    push: Push,
    /// Each client's byte budget (`RuntimeConfig::client_queue_bytes`).
    queue_bytes: usize,
    next_client: AtomicU64,
}

impl ClientService {
    /// Registers clients with `gateway`.
    pub(super) fn new(
        access: SessionAccess,
        gateway: Addr<Gateway>,
        store: Store,
        metrics: Arc<Metrics>,
        push: Push,
        queue_bytes: usize,
    ) -> Self {
        ClientService {
            access,
            gateway,
            store,
            metrics,
            push,
            queue_bytes,
            next_client: AtomicU64::new(1),
        }
    }

    /// A new WebSocket client id.
    pub fn next_id(&self) -> u64 {
        self.next_client.fetch_add(1, Ordering::Relaxed)
    }

    /// A byte budget for a new client.
    pub fn new_queue(&self) -> Arc<ClientQueue> {
        Arc::new(ClientQueue::new(self.queue_bytes, self.metrics.clone()))
    }

    /// Registers a WebSocket client with the gateway.
    pub fn connect(
        &self,
        client_id: u64,
        sink: Recipient<Deliver>,
        queue: Arc<ClientQueue>,
        principal: Principal,
    ) {
        self.metrics.ws_clients.fetch_add(1, Ordering::Relaxed);
        self.gateway.do_send(Connect {
            client_id,
            sink,
            queue,
            principal,
        });
    }

    /// Forgets a WebSocket client.
    pub fn disconnect(&self, client_id: u64) {
        self.metrics.ws_clients.fetch_sub(1, Ordering::Relaxed);
        // A client that left shows nothing: its user's devices hear of everything.
        self.push
            .set_visible(&format!("local:{client_id}"), "", Vec::new());
        self.gateway.do_send(Disconnect { client_id });
    }

    /// Subscribes a client to a session: `chat_subscribed`, then every event after
    /// `last_seq`, then live events.
    pub fn subscribe(
        &self,
        who: &Principal,
        client_id: u64,
        id: &SessionId,
        last_seq: u64,
    ) -> Result<(), RuntimeError> {
        let ack = self.subscription_ack(who, id)?;
        check_position(last_seq)?;
        self.gateway.do_send(Subscribe {
            client_id,
            session_id: id.as_str().into(),
            after: last_seq,
            ack: ack.to_json().into(),
        });
        Ok(())
    }

    /// The `chat_subscribed` frame a new subscriber of a session of this node gets:
    /// its status, newest seq, pending permission requests, remembered rules, queue
    /// and background tasks. (A cluster node asks the owner for it when one of its
    /// clients subscribes to a session that lives here.)
    pub fn subscription_ack(
        &self,
        who: &Principal,
        id: &SessionId,
    ) -> Result<ServerFrame, RuntimeError> {
        let handle = self.access.visible(who, id)?;
        // One snapshot: the status, permissions, rules and queue of one moment.
        let published = handle.shared.snapshot();
        let info = &published.info;
        Ok(ServerFrame::ChatSubscribed {
            session_id: info.id.clone(),
            status: info.status,
            last_seq: handle.shared.last_seq(),
            pending_permissions: published.permissions.clone(),
            permission_rules: published.rules.clone(),
            background_tasks: info.background_tasks.clone(),
            queued: published.queued.clone(),
        })
    }

    /// Stops delivering sessions to a client.
    pub fn unsubscribe(&self, client_id: u64, session_ids: Vec<SessionId>) {
        self.gateway.do_send(Unsubscribe {
            client_id,
            session_ids,
        });
    }

    /// Sends `session_upserted` to this client for every change it may see.
    pub fn watch(&self, client_id: u64) {
        self.gateway.do_send(Watch { client_id });
    }

    /// The gateway's address (for clients that report a drained queue).
    pub fn gateway(&self) -> Addr<Gateway> {
        self.gateway.clone()
    }

    /// Stored events after `after` (at most `limit`), the newest `seq`, and whether
    /// more follow. Frames come back exactly as stored.
    pub async fn events(
        &self,
        who: &Principal,
        id: &SessionId,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<String>, u64, bool), RuntimeError> {
        let handle = self.access.visible(who, id)?;
        check_position(after)?;
        let limit = limit.clamp(1, MAX_EVENTS_PAGE);
        let store = self.store.clone();
        let sid = id.to_string();
        let mut rows =
            actix_rt::task::spawn_blocking(move || store.read_events(&sid, after, limit + 1))
                .await
                .map_err(|e| RuntimeError::Internal(e.to_string()))??;
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        Ok((
            rows.into_iter().map(|(_, frame)| frame).collect(),
            handle.shared.last_seq(),
            has_more,
        ))
    }
}

/// Refuses a position past the largest `seq` a history can hold: positions are never
/// wrapped (`after + 1` on 2^64-1 once replayed everything).
pub(super) fn check_position(after: u64) -> Result<(), RuntimeError> {
    if after > tandem_protocol::MAX_SEQ {
        return Err(RuntimeError::InvalidArgument(format!(
            "position {after} is past the largest possible seq {}",
            tandem_protocol::MAX_SEQ
        )));
    }
    Ok(())
}
