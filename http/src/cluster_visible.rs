//! `client.visible` across a cluster: a page connected to this node may show
//! sessions another node runs, and that node decides their pushes. Each such node is
//! told which of its sessions the client shows ([`Call::Visible`], under the client's
//! key `THISNODE:ID`), again at every change (nodes no longer concerned are told
//! "none"), and "none" when the client leaves. The owner keeps the word for a while
//! only ([`tandem_actors::push::REMOTE_SHOWN_FOR`]): the page says it again every
//! minute, so a node that died leaves nothing behind for long.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tandem_protocol::ids::SessionId;

use tandem_actors::cluster::{Cluster, Owner};
use tandem_actors::Principal;

use crate::cluster_wire::{Call, Forward};

/// How long telling a node may take.
const TELL_TIMEOUT: Duration = Duration::from_secs(5);

/// The nodes one client told, with who the client is.
type ToldBy = (Principal, BTreeSet<String>);

/// Which other nodes each of this node's WebSocket clients told, by client id.
#[derive(Debug, Clone, Default)]
pub struct Told(Arc<Mutex<HashMap<u64, ToldBy>>>);

impl Told {
    fn swap(&self, client: u64, who: &Principal, nodes: BTreeSet<String>) -> BTreeSet<String> {
        let mut told = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = if nodes.is_empty() {
            told.remove(&client)
        } else {
            told.insert(client, (who.clone(), nodes))
        };
        before.map(|(_, n)| n).unwrap_or_default()
    }

    fn take(&self, client: u64) -> Option<ToldBy> {
        let mut told = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        told.remove(&client)
    }
}

/// Splits `sessions` into this node's and, by node, the others' (a session no node
/// is known to run stays in this node's list, where it is refused as unknown).
pub fn split(
    cluster: &Cluster,
    sessions: Vec<SessionId>,
) -> (Vec<SessionId>, BTreeMap<String, Vec<SessionId>>) {
    let mut here = Vec::new();
    let mut there: BTreeMap<String, Vec<SessionId>> = BTreeMap::new();
    for id in sessions {
        match cluster.owner(&id) {
            Owner::Remote { node, .. } | Owner::Unavailable { node } => {
                there.entry(node).or_default().push(id)
            }
            _ => here.push(id),
        }
    }
    (here, there)
}

/// Tells each node in `there` what client `client` shows of its sessions, and the
/// nodes told before but not now that it shows none of theirs; resolves once each
/// answered (or could not be reached: visibility only spares pushes).
pub async fn tell(
    cluster: Cluster,
    told: Told,
    client: u64,
    who: Principal,
    there: BTreeMap<String, Vec<SessionId>>,
) {
    let nodes: BTreeSet<String> = there.keys().cloned().collect();
    let before = told.swap(client, &who, nodes);
    let mut calls = there;
    for node in before {
        calls.entry(node).or_default();
    }
    send(cluster, client, who, calls).await;
}

/// Client `client` left: the nodes it told hear that it shows nothing.
pub fn forget(cluster: &Cluster, told: &Told, client: u64) {
    if let Some((who, nodes)) = told.take(client) {
        let calls = nodes.into_iter().map(|n| (n, Vec::new())).collect();
        actix_rt::spawn(send(cluster.clone(), client, who, calls));
    }
}

async fn send(
    cluster: Cluster,
    client: u64,
    who: Principal,
    calls: BTreeMap<String, Vec<SessionId>>,
) {
    let key = format!("{}:{client}", cluster.node());
    for (node, session_ids) in calls {
        let forward = Forward {
            user_id: who.user_id.clone(),
            admin: who.admin,
            call: Call::Visible {
                client: key.clone(),
                session_ids,
            },
        };
        let Ok(payload) = serde_json::to_vec(&forward) else {
            continue;
        };
        if let Err(e) = cluster.request(&node, payload, TELL_TIMEOUT).await {
            tracing::debug!(%node, error = %e, "could not tell a node what a client shows");
        }
    }
}
