//! Nodes joined through NATS JetStream (`tandem serve --nats URL --node NAME`).
//!
//! Loaded only with `--nats`: a single node never starts any of it, and its hot path
//! is unchanged (the writer's commit hook looks at one unset `OnceLock`).
//!
//! - Each session is pinned to the node that created it (`node` in its record and
//!   its `SessionInfo`; at start a node stamps its sessions that have none, those it
//!   had before it joined); that node's SQLite stays the source of truth for it.
//!   `session.create` naming another `node` is forwarded there like any request. A
//!   node answers forwarded requests and pair messages before it says it listens:
//!   both subjects go through `Cluster::serve_subject`, which flushes the
//!   subscription to the NATS server.
//! - [`publish`]: every committed event of a local session is also published to
//!   JetStream on `tandem.sessions.<id>.events`, in runs of consecutive events, one
//!   message per run ([`batch`]: message id `<id>:<first seq>`, so JetStream's
//!   duplicate window drops a resent run), in order, acknowledged (a window of
//!   messages awaits its acks, so a batch does not wait for the one before); after
//!   any failure (NATS down, restarted) the session is republished from SQLite: the
//!   holes the stream has, then what follows the highest seq it holds (e2e
//!   `a_restarted_node_fills_the_holes_its_crash_left_in_the_stream`).
//! - [`directory`]: a node's lease is a key in the KV bucket `tandem_nodes` that it
//!   renews; which node owns which session (and the session as listed) is the KV
//!   bucket `tandem_sessions`. Sessions of a node whose lease lapsed are listed with
//!   `nodeUnavailable` set. Reads follow writes: a node asked about a session it has
//!   not heard of yet reads the bucket before it answers that there is none.
//! - [`devices`]: Web Push devices in the KV bucket `tandem_push`, so the node that
//!   runs a session reaches its owner's devices whichever node registered them.
//! - [`mirror`]: a client of this node that subscribes to another node's session is
//!   served from a copy of its events that this node keeps in its own store, read from
//!   JetStream in order; the gateway then replays and follows it exactly as a local
//!   session (no gap, no duplicate, `lagged`: e2e
//!   `cluster_lagged::a_client_of_another_node_that_stops_reading_is_told_it_lagged_and_resumes`).
//!   The mirror writes the copy as a local producer writes its events, at most a
//!   window past what this node's clients took (the copy's flow gate), so a
//!   backlog it reads at once (after a NATS restart) does not lag a client that
//!   keeps up (e2e
//!   `a_backlog_reaches_a_client_of_another_node_that_reads_along_without_a_lag`).
//!   The copy is never published again (the publisher takes only this node's
//!   sessions), and it still serves a session whose node is down, up to what
//!   JetStream holds. Not covered yet: its consumer reads the session's subject
//!   from the start (skipping what the store holds) at every node start.
//! - [`delivered`]: backpressure across nodes. A node that copies a session reports
//!   how far its clients got; the session's node limits the session's flow gate to the
//!   slowest such node that keeps up, plus a slack, so a producer waits for the
//!   clients of other nodes as it does for its own.
//! - `pairs`: pair messages on `tandem.nodes.<node>.pairs`, for a pair whose Worker
//!   is on another node (`pair.create` with `workerNode`; see
//!   [`crate::pair::remote`]), and the delegated turns' ends reported back.
//!
//! Commands for a remote session travel to its owner as NATS request/reply; that part
//! lives in the HTTP crate (`http/src/cluster_rpc.rs`), which runs the owner's own
//! request handling and returns its answer unchanged.

mod batch;
mod delivered;
mod devices;
mod directory;
mod mirror;
mod pairs;
mod publish;

pub use pairs::pairs_subject;

use crate::ids::{PairId, SessionId};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use dashmap::DashMap;
use tandem_protocol::{Role, SessionInfo};

use crate::runtime::Runtime;

/// The stream holding every session's events.
pub const EVENTS_STREAM: &str = "TANDEM_EVENTS";
/// Node leases: key = node name, renewed by its node.
pub const NODES_BUCKET: &str = "tandem_nodes";
/// Session directory: key = session id, value = owner node and the session as listed.
pub const SESSIONS_BUCKET: &str = "tandem_sessions";
/// Header carrying the last `seq` of a message's run (also inside the frame; the
/// header saves parsing).
pub const SEQ_HEADER: &str = "Tandem-Seq";
/// How long JetStream remembers message ids to drop duplicates.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// The subject a session's events are published on.
pub fn events_subject(session_id: &str) -> String {
    format!("tandem.sessions.{session_id}.events")
}

/// The subject a node answers commands on.
pub fn rpc_subject(node: &str) -> String {
    format!("tandem.nodes.{node}.rpc")
}

/// What joining needs.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// `nats://HOST:PORT` of a NATS server with JetStream.
    pub url: String,
    /// This node's name: unique in the cluster, stable across restarts (its sessions
    /// are pinned to it).
    pub node: String,
    /// A node not heard from for this long is unavailable; it renews three times per
    /// lease.
    pub lease: Duration,
}

/// Why a node could not join.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// `--node` is not usable as a NATS subject token and KV key.
    #[error("--node `{0}` is not a valid node name: 1 to 64 letters, digits, '-' or '_'")]
    BadNodeName(String),
    /// The NATS server could not be reached.
    #[error("cannot reach NATS at {url}: {reason}")]
    Connect {
        /// The `--nats` URL, named in the message.
        url: String,
        /// What the client said.
        reason: String,
    },
    /// The stream or a KV bucket could not be created or opened (JetStream off?).
    #[error(
        "JetStream setup at {url} failed ({what}): {reason}; is nats-server running with -js?"
    )]
    Setup {
        /// The `--nats` URL.
        url: String,
        /// Which stream or bucket.
        what: &'static str,
        /// What the server said.
        reason: String,
    },
}

/// Where a session lives, seen from this node.
#[derive(Debug, Clone)]
pub enum Owner {
    /// Here.
    Local,
    /// On another node whose lease holds.
    Remote {
        /// Its node.
        node: String,
        /// The session as its node last published it.
        info: Box<SessionInfo>,
    },
    /// On another node whose lease has lapsed.
    Unavailable {
        /// Its node.
        node: String,
    },
    /// No node has it (or its owner has not published it yet).
    Unknown,
}

/// One session of another node, as the directory says.
#[derive(Debug, Clone)]
struct RemoteSession {
    node: String,
    info: SessionInfo,
}

/// This node's membership in the cluster; cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClusterConfig,
    client: async_nats::Client,
    /// Stream and KV operations, leases included.
    js: jetstream::Context,
    /// The publisher's own context: a JetStream context limits the publishes awaiting
    /// an ack (5,000 by default) and makes the next one wait, so event publishing on
    /// the context the leases use could hold a lease renewal back until the lease
    /// lapsed (e2e `a_burst_of_events_reaches_other_nodes_and_the_lease_holds`).
    events_js: jetstream::Context,
    runtime: Runtime,
    /// Other nodes' sessions, by id.
    remote: DashMap<SessionId, RemoteSession>,
    /// Other nodes and until when their lease holds.
    nodes: DashMap<String, Instant>,
    /// Remote sessions whose events this node copies (see [`mirror`]).
    mirrors: Mutex<HashSet<String>>,
    /// The `tandem_sessions` bucket (see [`directory`]).
    directory: jetstream::kv::Store,
    /// This node's sessions as last put into the directory; held across the puts,
    /// so the periodic sync and a request's sync never interleave.
    published: tokio::sync::Mutex<std::collections::HashMap<SessionId, SessionInfo>>,
}

/// True for a usable node name: 1 to 64 ASCII letters, digits, `-` or `_` (it is
/// part of NATS subjects and keys).
fn valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// What setting up `what` on the NATS server at `url` failed with.
fn setup_error(url: &str, what: &'static str, e: &dyn std::fmt::Display) -> ClusterError {
    ClusterError::Setup {
        url: url.to_string(),
        what,
        reason: e.to_string(),
    }
}

/// Makes sure the events stream and the buckets exist: the nodes', the sessions'
/// (the directory) and the push devices'.
async fn provision(
    js: &jetstream::Context,
    url: &str,
) -> Result<
    (
        jetstream::kv::Store,
        jetstream::kv::Store,
        jetstream::kv::Store,
    ),
    ClusterError,
> {
    js.get_or_create_stream(jetstream::stream::Config {
        name: EVENTS_STREAM.into(),
        subjects: vec!["tandem.sessions.*.events".into()],
        storage: jetstream::stream::StorageType::File,
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    })
    .await
    .map_err(|e| setup_error(url, "stream TANDEM_EVENTS", &e))?;
    let nodes = bucket(js, NODES_BUCKET)
        .await
        .map_err(|e| setup_error(url, "bucket tandem_nodes", &e))?;
    let sessions = bucket(js, SESSIONS_BUCKET)
        .await
        .map_err(|e| setup_error(url, "bucket tandem_sessions", &e))?;
    let push = bucket(js, devices::BUCKET)
        .await
        .map_err(|e| setup_error(url, "bucket tandem_push", &e))?;
    Ok((nodes, sessions, push))
}

impl Cluster {
    /// Connects, makes sure the stream and buckets exist, takes this node's lease,
    /// loads the directory and starts publishing. Call inside the actix system.
    pub async fn join(config: ClusterConfig, runtime: Runtime) -> Result<Cluster, ClusterError> {
        if !valid_node_name(&config.node) {
            return Err(ClusterError::BadNodeName(config.node));
        }
        let client = async_nats::ConnectOptions::new()
            .name(format!("tandem-{}", config.node))
            .connect(config.url.as_str())
            .await
            .map_err(|e| ClusterError::Connect {
                url: config.url.clone(),
                reason: e.to_string(),
            })?;
        let js = jetstream::new(client.clone());
        let url = config.url.clone();
        let (nodes_kv, sessions_kv, push_kv) = provision(&js, &config.url).await?;
        let cluster = Cluster {
            inner: Arc::new(Inner {
                config,
                events_js: jetstream::new(client.clone()),
                client,
                js,
                runtime: runtime.clone(),
                remote: DashMap::new(),
                nodes: DashMap::new(),
                mirrors: Mutex::new(HashSet::new()),
                directory: sessions_kv.clone(),
                published: tokio::sync::Mutex::default(),
            }),
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        runtime.peers().set_commit_tap(Box::new(move |events| {
            let _ = tx.send(events.to_vec());
        }));
        actix::spawn(publish::run(cluster.clone(), rx));
        directory::start(cluster.clone(), nodes_kv, sessions_kv)
            .await
            .map_err(|e| setup_error(&url, "directory", &e))?;
        // Pairs with a Worker on another node: their messages, and the reports of
        // delegated turns this node's Workers ran for pairs elsewhere.
        pairs::serve(cluster.clone()).await?;
        // Push devices: every node's, in one bucket (see [`devices`]).
        runtime
            .push()
            .share_devices(Arc::new(devices::KvDevices { kv: push_kv }))
            .await
            .map_err(|e| setup_error(&url, "push devices", &e))?;
        runtime.peers().set_cluster(Arc::new(cluster.clone()));
        actix::spawn(pairs::report(cluster.clone()));
        actix::spawn(pairs::recheck(cluster.clone()));
        tracing::info!(node = %cluster.node(), url = %cluster.inner.config.url, "joined the cluster");
        Ok(cluster)
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.inner.config.node
    }

    /// The NATS connection (the HTTP crate's command forwarding uses it).
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }

    /// Where a session lives.
    pub fn owner(&self, session_id: &str) -> Owner {
        if self.inner.runtime.sessions().hosts(session_id) {
            return Owner::Local;
        }
        let Some(remote) = self.inner.remote.get(session_id) else {
            return Owner::Unknown;
        };
        if self.alive(&remote.node) {
            Owner::Remote {
                node: remote.node.clone(),
                info: Box::new(remote.info.clone()),
            }
        } else {
            Owner::Unavailable {
                node: remote.node.clone(),
            }
        }
    }

    /// Where pair `pair_id` runs, when it is not here: a pair's actor lives on its
    /// Driver's node, so this is the node of the session the directory lists as
    /// that pair's Driver.
    pub fn pair_owner(&self, pair_id: &PairId) -> Owner {
        let driver = self.inner.remote.iter().find_map(|r| {
            (r.info.role == Some(Role::Driver) && r.info.in_pair(pair_id))
                .then(|| (r.node.clone(), r.info.clone()))
        });
        match driver {
            None => Owner::Unknown,
            Some((node, _)) if !self.alive(&node) => Owner::Unavailable { node },
            Some((node, info)) => Owner::Remote {
                node,
                info: Box::new(info),
            },
        }
    }

    /// The other nodes whose lease holds, by name.
    pub fn other_nodes(&self) -> Vec<String> {
        let now = Instant::now();
        let mut nodes: Vec<String> = self
            .inner
            .nodes
            .iter()
            .filter(|n| *n.value() > now && n.key() != self.node())
            .map(|n| n.key().clone())
            .collect();
        nodes.sort();
        nodes
    }

    /// Whether a node's lease holds (this node's always does).
    pub fn alive(&self, node: &str) -> bool {
        node == self.node()
            || self
                .inner
                .nodes
                .get(node)
                .is_some_and(|until| *until > Instant::now())
    }

    /// Whether a node has ever been seen in this cluster (alive or not).
    pub fn known(&self, node: &str) -> bool {
        node == self.node() || self.inner.nodes.contains_key(node)
    }

    /// Another node's session as listed now, if the directory has it.
    pub fn remote_session(&self, session_id: &str) -> Option<SessionInfo> {
        self.inner
            .remote
            .get(session_id)
            .map(|r| self.listed(&r.node, &r.info))
    }

    /// Sends a request to `node` and waits for its answer, at most `timeout`.
    pub async fn request(
        &self,
        node: &str,
        payload: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, String> {
        let asked = self.inner.client.send_request(
            rpc_subject(node),
            async_nats::Request::new()
                .payload(payload.into())
                .timeout(Some(timeout)),
        );
        match asked.await {
            Ok(reply) => Ok(reply.payload.to_vec()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Answers requests sent to this node with `handler`, each in its own task on the
    /// current arbiter, for the life of the server.
    pub async fn serve_requests<F, Fut>(&self, handler: F) -> Result<(), ClusterError>
    where
        F: Fn(Vec<u8>) -> Fut + 'static,
        Fut: std::future::Future<Output = String> + 'static,
    {
        let handler = std::rc::Rc::new(handler);
        self.serve_subject(
            rpc_subject(self.node()),
            "command subject",
            move |payload| {
                let handler = handler.clone();
                async move { handler(payload).await.into_bytes() }
            },
        )
        .await
    }

    /// Answers the requests on `subject` (`what` names it in errors) with `handler`,
    /// each in its own task on the current arbiter, for the life of the server. Ready
    /// once the NATS server has the subscription.
    pub(crate) async fn serve_subject<F, Fut>(
        &self,
        subject: String,
        what: &'static str,
        handler: F,
    ) -> Result<(), ClusterError>
    where
        F: Fn(Vec<u8>) -> Fut + 'static,
        Fut: std::future::Future<Output = Vec<u8>> + 'static,
    {
        use futures_util::StreamExt;
        let client = self.inner.client.clone();
        let setup = |e: &dyn std::fmt::Display| ClusterError::Setup {
            url: self.inner.config.url.clone(),
            what,
            reason: e.to_string(),
        };
        let mut requests = client.subscribe(subject).await.map_err(|e| setup(&e))?;
        // The server has the subscription once it answered the flush's ping: from
        // then on a request sent here finds a responder (the other nodes may see
        // this node's lease, put when it joined, a moment earlier).
        client.flush().await.map_err(|e| setup(&e))?;
        let handler = std::rc::Rc::new(handler);
        actix::spawn(async move {
            while let Some(msg) = requests.next().await {
                let Some(reply_to) = msg.reply else { continue };
                let (client, handler) = (client.clone(), handler.clone());
                actix::spawn(async move {
                    let answer = handler(msg.payload.to_vec()).await;
                    if let Err(e) = client.publish(reply_to, answer.into()).await {
                        tracing::warn!(error = %e, what, "could not answer a request");
                    }
                });
            }
        });
        Ok(())
    }

    /// Every other node's sessions, as listed: those of a node whose lease lapsed
    /// marked `nodeUnavailable`.
    pub fn remote_sessions(&self) -> Vec<SessionInfo> {
        self.inner
            .remote
            .iter()
            .map(|r| self.listed(&r.node, &r.info))
            .collect()
    }

    /// A remote session as listed now.
    fn listed(&self, node: &str, info: &SessionInfo) -> SessionInfo {
        let mut info = info.clone();
        if !self.alive(node) {
            info.node_unavailable = true;
        }
        info
    }

    /// Whether this node copies `session_id`'s events (see [`mirror`]).
    pub fn copies(&self, session_id: &str) -> bool {
        self.inner
            .mirrors
            .lock()
            .is_ok_and(|set| set.contains(session_id))
    }

    /// Makes sure this node copies a remote session's events into its store, so its
    /// gateway can serve subscribers; idempotent.
    pub fn follow(&self, session_id: &str) {
        let fresh = match self.inner.mirrors.lock() {
            Ok(mut set) => set.insert(session_id.to_string()),
            Err(_) => false,
        };
        if fresh {
            actix::spawn(mirror::run(self.clone(), session_id.into()));
        }
    }
}

/// Creates a KV bucket (one value per key, file storage), or opens it when it exists.
/// The bucket's stream is made here as the KV API defines it (`KV_<bucket>` on
/// `$KV.<bucket>.>`): async-nats's own `create_key_value` first reads the account
/// info, whose shape nats-server 2.9 answers in a form the client does not parse.
async fn bucket(
    js: &jetstream::Context,
    name: &str,
) -> Result<jetstream::kv::Store, async_nats::Error> {
    use jetstream::stream::{Config, DiscardPolicy, StorageType};
    if let Ok(store) = js.get_key_value(name).await {
        return Ok(store);
    }
    js.get_or_create_stream(Config {
        name: format!("KV_{name}"),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: 1,
        storage: StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: DiscardPolicy::New,
        num_replicas: 1,
        ..Default::default()
    })
    .await?;
    Ok(js.get_key_value(name).await?)
}
