//! What the cluster (`crate::cluster`, loaded only with `--nats`) needs from the
//! runtime: a tap on committed batches, the local sessions, and subscriptions to
//! sessions that live on other nodes. A single node never calls any of it.

use std::sync::{Arc, OnceLock};

use bytestring::ByteString;
use tandem_protocol::{ServerFrame, SessionInfo};

use super::clients::check_position;
use crate::access::Principal;
use crate::cluster_link::{NodeLink, Outbox};
use crate::error::RuntimeError;
use crate::gateway::{SessionChanged, Subscribe};
use crate::ids::SessionId;
use crate::session::Services;
use crate::store::StoredEvent;

/// Sees every committed batch on the writer's thread, after the commit and before
/// the gateway gets it. Must not block.
pub type CommitTap = Box<dyn Fn(&[StoredEvent]) + Send + Sync>;

/// The peers service: the runtime as the cluster sees it.
pub struct PeerService {
    /// The live sessions, the gateway, the cluster link and the outbox.
    services: Arc<Services>,
    /// Set once the node joins a cluster (`--nats`).
    commit_tap: Arc<OnceLock<CommitTap>>,
}

impl PeerService {
    /// Serves the cluster this node's sessions (`services`); batches reach
    /// `commit_tap` once it is set.
    pub(super) fn new(services: Arc<Services>, commit_tap: Arc<OnceLock<CommitTap>>) -> Self {
        PeerService {
            services,
            commit_tap,
        }
    }

    /// This node's cluster, once it joined one.
    pub(crate) fn cluster_link(&self) -> Option<std::sync::Arc<dyn crate::cluster_link::NodeLink>> {
        self.services.cluster.get().cloned()
    }

    /// The cluster, to reach `node` about `session`; `NODE_UNAVAILABLE` when this
    /// server has not joined one.
    pub(crate) fn link_to(
        &self,
        node: &str,
        session: &SessionId,
    ) -> Result<std::sync::Arc<dyn crate::cluster_link::NodeLink>, RuntimeError> {
        self.cluster_link()
            .ok_or_else(|| RuntimeError::NodeUnavailable {
                session: session.clone(),
                node: node.to_string(),
            })
    }

    /// The ends of delegated turns this node's Workers ran for pairs on other nodes,
    /// until acknowledged.
    pub(crate) fn outbox(&self) -> &Outbox {
        &self.services.outbox
    }

    /// Records this node's cluster membership (once it joined), so pairs reach
    /// Workers on other nodes.
    pub(crate) fn set_cluster(&self, cluster: std::sync::Arc<dyn NodeLink>) {
        let _ = self.services.cluster.set(cluster);
    }

    /// Installs the commit tap; only the first call takes effect (one cluster per
    /// runtime). Batches committed before it was set are not shown to it.
    pub fn set_commit_tap(&self, tap: CommitTap) -> bool {
        self.commit_tap.set(tap).is_ok()
    }

    /// Tells `sessions.watch` clients that a session changed (a remote one).
    pub fn announce(&self, info: SessionInfo) {
        self.services.gateway.do_send(SessionChanged(info));
    }

    /// Subscribes a client to a session of another node, described by `info`. Its
    /// events reach the gateway as this node's copy of them is committed (the
    /// cluster's mirror writes them), so replay, live delivery and `lagged` are the
    /// gateway's, exactly as for a local session. `owner_ack` is the `chat_subscribed`
    /// frame the owner made for this caller (pending permission requests, rules and
    /// queue live there); without it (the owner is away) the ack is made from the
    /// directory's `info`, with none of those.
    pub fn subscribe_remote(
        &self,
        who: &Principal,
        client_id: u64,
        info: &SessionInfo,
        last_seq: u64,
        owner_ack: Option<ByteString>,
    ) -> Result<(), RuntimeError> {
        self.check_remote_subscription(who, info, last_seq)?;
        let ack = owner_ack.unwrap_or_else(|| {
            ServerFrame::ChatSubscribed {
                session_id: info.id.clone(),
                status: info.status,
                last_seq: info.last_seq,
                pending_permissions: Vec::new(),
                permission_rules: Vec::new(),
                queued: Vec::new(),
                background_tasks: info.background_tasks.clone(),
            }
            .to_json()
            .into()
        });
        self.services.gateway.do_send(Subscribe {
            client_id,
            session_id: Arc::from(info.id.as_str()),
            after: last_seq,
            ack,
        });
        Ok(())
    }

    /// What `chat.subscribe` checks before subscribing to another node's session:
    /// the caller may see it (by the directory's `info`) and `last_seq` is usable.
    pub fn check_remote_subscription(
        &self,
        who: &Principal,
        info: &SessionInfo,
        last_seq: u64,
    ) -> Result<(), RuntimeError> {
        if !who.can_see(info) {
            return Err(RuntimeError::SessionNotFound(info.id.clone()));
        }
        check_position(last_seq)
    }
}
