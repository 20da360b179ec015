//! Leases and the session directory, both JetStream KV buckets.
//!
//! - `tandem_nodes`: each node puts its key every lease ÷ 3 (`--lease-secs`, default
//!   10). Every node watches the bucket: a node is available until one lease after
//!   the last renewal it saw (a stale value found at start counts from its
//!   timestamp). When a lease lapses, the node's sessions are announced again with
//!   `nodeUnavailable` set and requests for them are refused with
//!   `NODE_UNAVAILABLE`; when it renews again they come back.
//! - `tandem_sessions`: key = session id, value = [`Entry`] (owner node and the
//!   session as listed). The owner puts what changed every [`SYNC`], and a session a
//!   request created before that request answers ([`Cluster::publish_new_sessions`]);
//!   a session that left (archived) is deleted. Every node watches the bucket and
//!   keeps the other nodes' entries, announcing each change to its `sessions.watch`
//!   clients; `sessions.list` and `GET /sessions` merge them with its own sessions in
//!   one keyset order (`Runtime::session_page_with`). Not covered yet: the owner
//!   compares every local session at each sync (fine for thousands, not measured
//!   beyond).
//!
//! Reads follow writes: a node asked about a session that neither it nor its copy
//! of the directory knows reads the bucket's key before it answers
//! `SESSION_NOT_FOUND` ([`Cluster::lookup`]), and a node that forwarded a
//! `session.create` takes the created session from the answer ([`Cluster::learn`]),
//! so it is listed and can be subscribed to there at once (e2e
//! `cluster::reads_follow_writes_across_nodes`). The lookup and the new sessions' put
//! wait at most [`PUBLISH_WAIT`] for NATS, so NATS being away does not hold answers
//! back.

use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{Operation, Store};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tandem_protocol::SessionInfo;

use super::{Cluster, RemoteSession};
use crate::clock::now_ms;
use crate::ids::SessionId;

/// How often the owner compares its sessions with what it last published.
const SYNC: Duration = Duration::from_millis(250);
/// How long a request waits for the directory (a lookup, its new sessions' put)
/// before it answers without it: NATS being away must not hold answers back.
const PUBLISH_WAIT: Duration = Duration::from_secs(2);
/// How often leases are checked for lapses.
const LEASE_CHECK: Duration = Duration::from_millis(250);

/// One directory value.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    /// The node the session is pinned to.
    node: String,
    /// The session as that node lists it.
    info: SessionInfo,
}

/// One lease value (the time is informative; freshness comes from the KV entry).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lease {
    node: String,
    renewed_at: u64,
}

/// Takes the lease, loads both buckets and starts the tasks that keep them.
pub(super) async fn start(
    cluster: Cluster,
    nodes: Store,
    sessions: Store,
) -> Result<(), async_nats::Error> {
    renew(&cluster, &nodes).await?;
    // Current values first (each bucket keeps one value per key, so its history is
    // the current values), then changes. Lists are complete once those are in.
    let mut node_watch = nodes.watch_with_history(">").await?;
    let mut session_watch = sessions.watch_with_history(">").await?;
    load_initial(&cluster, &mut node_watch, &nodes, on_lease).await?;
    load_initial(&cluster, &mut session_watch, &sessions, on_session).await?;
    let c = cluster.clone();
    actix::spawn(async move {
        while let Some(entry) = node_watch.next().await {
            match entry {
                Ok(e) => on_lease(&c, e),
                Err(e) => tracing::warn!(error = %e, "lease watch"),
            }
        }
    });
    let c = cluster.clone();
    actix::spawn(async move {
        while let Some(entry) = session_watch.next().await {
            match entry {
                Ok(e) => on_session(&c, e),
                Err(e) => tracing::warn!(error = %e, "directory watch"),
            }
        }
    });
    let c = cluster.clone();
    actix::spawn(async move {
        let mut tick = tokio::time::interval(c.inner.config.lease / 3);
        loop {
            tick.tick().await;
            if let Err(e) = renew(&c, &nodes).await {
                tracing::warn!(error = %e, "lease renewal failed");
            }
        }
    });
    actix::spawn(publish_sessions(cluster.clone()));
    actix::spawn(watch_leases(cluster));
    Ok(())
}

/// Feeds the values present now to `apply`, stopping at the first live change.
async fn load_initial(
    cluster: &Cluster,
    watch: &mut async_nats::jetstream::kv::Watch,
    store: &Store,
    apply: impl Fn(&Cluster, async_nats::jetstream::kv::Entry),
) -> Result<(), async_nats::Error> {
    // An empty bucket delivers nothing: know how many values to wait for.
    let status = store.status().await?;
    if status.values() == 0 {
        return Ok(());
    }
    while let Some(entry) = watch.next().await {
        let entry = entry?;
        let done = entry.delta == 0;
        apply(cluster, entry);
        if done {
            break;
        }
    }
    Ok(())
}

async fn renew(cluster: &Cluster, nodes: &Store) -> Result<(), async_nats::Error> {
    let lease = Lease {
        node: cluster.node().to_string(),
        renewed_at: now_ms(),
    };
    nodes
        .put(cluster.node(), serde_json::to_vec(&lease)?.into())
        .await?;
    Ok(())
}

/// A lease value arrived: the node is available for one lease from when it was put.
fn on_lease(cluster: &Cluster, entry: async_nats::jetstream::kv::Entry) {
    if entry.key == cluster.node() || entry.operation != Operation::Put {
        return;
    }
    let age = time::OffsetDateTime::now_utc() - entry.created;
    let age = Duration::try_from(age).unwrap_or(Duration::ZERO);
    let Some(left) = cluster.inner.config.lease.checked_sub(age) else {
        return;
    };
    let was_alive = cluster.alive(&entry.key);
    cluster
        .inner
        .nodes
        .insert(entry.key.clone(), Instant::now() + left);
    if !was_alive {
        tracing::info!(node = %entry.key, "node available");
        announce_node(cluster, &entry.key);
    }
}

/// A directory value arrived.
fn on_session(cluster: &Cluster, entry: async_nats::jetstream::kv::Entry) {
    let inner = &cluster.inner;
    match entry.operation {
        Operation::Put => {
            let parsed: Entry = match serde_json::from_slice(&entry.value) {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!(key = %entry.key, error = %e, "unreadable directory entry");
                    return;
                }
            };
            if parsed.node == cluster.node() {
                return;
            }
            let listed = cluster.listed(&parsed.node, &parsed.info);
            inner.remote.insert(
                SessionId::from(entry.key),
                RemoteSession {
                    node: parsed.node,
                    info: parsed.info,
                },
            );
            inner.runtime.peers().announce(listed);
        }
        Operation::Delete | Operation::Purge => {
            // Archived on its node: announced once with `archivedAt`, then gone.
            if let Some((_, mut gone)) = inner.remote.remove(entry.key.as_str()) {
                gone.info.archived_at.get_or_insert_with(now_ms);
                inner.runtime.peers().announce(gone.info);
            }
        }
    }
}

/// Announces every session of `node` as it is listed now.
fn announce_node(cluster: &Cluster, node: &str) {
    let inner = &cluster.inner;
    let infos: Vec<SessionInfo> = inner
        .remote
        .iter()
        .filter(|r| r.node == node)
        .map(|r| cluster.listed(&r.node, &r.info))
        .collect();
    for info in infos {
        inner.runtime.peers().announce(info);
    }
}

/// Checks leases; a lapse announces the node's sessions with `nodeUnavailable` set.
async fn watch_leases(cluster: Cluster) {
    let mut down: std::collections::HashSet<String> = Default::default();
    let mut tick = tokio::time::interval(LEASE_CHECK);
    loop {
        tick.tick().await;
        let now = Instant::now();
        let nodes: Vec<(String, bool)> = cluster
            .inner
            .nodes
            .iter()
            .map(|n| (n.key().clone(), *n.value() > now))
            .collect();
        for (node, alive) in nodes {
            if alive {
                down.remove(&node);
            } else if down.insert(node.clone()) {
                tracing::warn!(%node, "node lease lapsed; its sessions are unavailable");
                announce_node(&cluster, &node);
            }
        }
    }
}

/// Puts this node's changed sessions into the directory every [`SYNC`].
async fn publish_sessions(cluster: Cluster) {
    let mut tick = tokio::time::interval(SYNC);
    loop {
        tick.tick().await;
        cluster.sync_directory().await;
    }
}

/// Whether `id` can be a key of the directory bucket (session ids are
/// `ses_` and letters and digits; anything else is no session of the cluster).
fn valid_key(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && !id.starts_with('.')
        && !id.ends_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | '.'))
}

impl Cluster {
    /// Puts this node's changed sessions into the directory now and deletes those
    /// that left; what a request changed is then what every node finds when it looks
    /// a session up ([`Cluster::lookup`]).
    async fn sync_directory(&self) {
        let sessions = &self.inner.directory;
        let mut published = self.inner.published.lock().await;
        let now = self.inner.runtime.sessions().local_sessions();
        let mut present = std::collections::HashSet::with_capacity(now.len());
        for info in now {
            present.insert(info.id.clone());
            if published.get(&info.id) == Some(&info) {
                continue;
            }
            let entry = Entry {
                node: self.node().to_string(),
                info,
            };
            let Ok(value) = serde_json::to_vec(&entry) else {
                continue;
            };
            match sessions.put(&entry.info.id, value.into()).await {
                Ok(_) => {
                    published.insert(entry.info.id.clone(), entry.info);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "directory update failed; retrying");
                    return;
                }
            }
        }
        let gone: Vec<SessionId> = published
            .keys()
            .filter(|id| !present.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            if sessions.delete(&id).await.is_ok() {
                published.remove(&id);
            }
        }
    }

    /// Puts this node's sessions the directory does not have yet, now: a session a
    /// request created is found by every node once the request answers. Bounded by
    /// [`PUBLISH_WAIT`]: while NATS is away the answer is not held back longer (the
    /// periodic sync puts it once NATS is back). Touches NATS only when there is a
    /// new session.
    pub async fn publish_new_sessions(&self) {
        let put = async {
            let mut published = self.inner.published.lock().await;
            let fresh: Vec<SessionInfo> = self
                .inner
                .runtime
                .sessions()
                .local_sessions()
                .into_iter()
                .filter(|info| !published.contains_key(&info.id))
                .collect();
            for info in fresh {
                let entry = Entry {
                    node: self.node().to_string(),
                    info,
                };
                let Ok(value) = serde_json::to_vec(&entry) else {
                    continue;
                };
                if self
                    .inner
                    .directory
                    .put(&entry.info.id, value.into())
                    .await
                    .is_err()
                {
                    return;
                }
                published.insert(entry.info.id.clone(), entry.info);
            }
        };
        if tokio::time::timeout(PUBLISH_WAIT, put).await.is_err() {
            tracing::debug!("new sessions not in the directory yet; the next sync puts them");
        }
    }

    /// Where a session lives, asking the directory itself when this node's copy
    /// does not have it yet (it follows the bucket a moment behind): a session another
    /// node just created is found, not refused as unknown.
    pub async fn lookup(&self, session_id: &str) -> super::Owner {
        let owner = self.owner(session_id);
        if !matches!(owner, super::Owner::Unknown) || !valid_key(session_id) {
            return owner;
        }
        let entry =
            match tokio::time::timeout(PUBLISH_WAIT, self.inner.directory.get(session_id)).await {
                Ok(Ok(Some(value))) => serde_json::from_slice::<Entry>(&value).ok(),
                Ok(Ok(None)) => None,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "directory lookup failed");
                    None
                }
                Err(_) => {
                    tracing::debug!("directory lookup timed out");
                    None
                }
            };
        if let Some(entry) = entry {
            self.learn(&entry.node, entry.info);
        }
        self.owner(session_id)
    }

    /// Takes note of another node's session as that node answered it (a session
    /// created there for a caller of this node), before the directory brings it: it
    /// is listed and can be subscribed to here at once.
    pub fn learn(&self, node: &str, info: SessionInfo) {
        if node == self.node() || self.inner.remote.contains_key(&info.id) {
            return;
        }
        let listed = self.listed(node, &info);
        self.inner.remote.insert(
            info.id.clone(),
            RemoteSession {
                node: node.to_string(),
                info,
            },
        );
        self.inner.runtime.peers().announce(listed);
    }
}
