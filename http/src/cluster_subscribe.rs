//! `chat.subscribe` to another cluster node's session (`--nats`): followed from this
//! node's copy of its events, with the owner's `chat_subscribed` asked for over NATS
//! (`Call::Subscription`, answered by `ClientService::subscription_ack` there): pending
//! permission requests, remembered rules and the queue live only on the owner. When
//! the owner is away the ack is made from the directory, with those three empty.
//! Not covered yet: the subscription starts once that answer came (at most 5 s), so
//! a `chat.unsubscribe` sent before it does not cancel it.

use std::time::Duration;
use tandem_protocol::ids::SessionId;

use bytestring::ByteString;
use tandem_actors::cluster::{Cluster, Owner};
use tandem_actors::{Principal, Runtime, RuntimeError};

use crate::cluster_wire::{Call, Forward};

/// `chat.subscribe` in a cluster: a local session as usual; another node's session
/// from this node's copy of its events, which the cluster keeps from JetStream (also
/// while that node is away: what JetStream holds is still served). Its
/// `chat_subscribed` is the owner's, asked for over NATS (pending permission
/// requests, rules and queue live there), so the subscription starts once that
/// answer came (or did not: a node that is away or does not answer within
/// [`ACK_TIMEOUT`] leaves the ack made from the directory, without them).
pub fn subscribe(
    cluster: &Cluster,
    rt: &Runtime,
    who: &Principal,
    client_id: u64,
    session_id: &SessionId,
    last_seq: u64,
) -> Result<(), RuntimeError> {
    let info = match cluster.remote_session(session_id) {
        Some(info) if !rt.sessions().hosts(session_id) => info,
        _ => return rt.clients().subscribe(who, client_id, session_id, last_seq),
    };
    rt.peers().check_remote_subscription(who, &info, last_seq)?;
    cluster.follow(session_id);
    let (cluster, rt, who) = (cluster.clone(), rt.clone(), who.clone());
    actix::spawn(async move {
        let ack = owner_ack(&cluster, &who, &info.id).await;
        if let Err(e) = rt
            .peers()
            .subscribe_remote(&who, client_id, &info, last_seq, ack)
        {
            tracing::warn!(session = %info.id, error = %e, "remote subscription failed");
        }
    });
    Ok(())
}

/// How long a subscription waits for the owner's `chat_subscribed`.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);

/// The owner's `chat_subscribed` for this caller, if it answers with one.
async fn owner_ack(
    cluster: &Cluster,
    who: &Principal,
    session_id: &SessionId,
) -> Option<ByteString> {
    let Owner::Remote { node, .. } = cluster.owner(session_id) else {
        return None;
    };
    let forward = Forward {
        user_id: who.user_id.clone(),
        admin: who.admin,
        call: Call::Subscription {
            session_id: session_id.into(),
        },
    };
    let payload = serde_json::to_vec(&forward).ok()?;
    let answer = match cluster.request(&node, payload, ACK_TIMEOUT).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(%node, session = %session_id, error = %e, "no chat_subscribed from the owner");
            return None;
        }
    };
    let is_ack = serde_json::from_slice::<serde_json::Value>(&answer)
        .is_ok_and(|v| v["kind"] == "chat_subscribed" && v["sessionId"] == session_id.as_str());
    if !is_ack {
        tracing::warn!(%node, session = %session_id, "the owner answered no chat_subscribed");
        return None;
    }
    ByteString::try_from(answer).ok()
}
