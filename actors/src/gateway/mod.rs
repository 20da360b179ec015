//! The gateway actor: owns every subscription and fans committed events out to the
//! WebSocket clients that asked for them.
//!
//! Architecture invariant: the gateway never waits for a client. Each client has a
//! bounded byte budget ([`ClientQueue`]); frames go into its actor's mailbox with
//! `try_send`. A live subscription that would overflow the budget is dropped and the
//! client is told `lagged {resumeFrom}`; a client that keeps lagging is closed (1008).
//! Replays (store pages, then the in-memory ring) are flow-controlled instead: the
//! gateway holds the next page back until the client's queue has drained.
//!
//! This file holds the actor's state and its message handlers; the work is in
//! [`fanout`] (live delivery and flow-gate release), [`replay`] (catch-up from ring and
//! store, `lagged`) and [`eviction`] (stalled, ignored-close and over-cap clients).

mod client;
mod eviction;
mod fanout;
pub mod framed;
mod messages;
mod replay;
#[cfg(test)]
mod tests;
mod topic;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytestring::ByteString;
use tandem_protocol::ServerFrame;

pub use client::{ClientQueue, Deliver, Shutdown};
use fanout::Outgoing;
pub use framed::Framed;
pub use messages::{
    Committed, Connect, Disconnect, Drained, SessionChanged, Subscribe, Unsubscribe, Watch,
};
use topic::Topic;

use crate::access::Principal;
use crate::metrics::Metrics;
use crate::store::Store;

/// The gateway's maps: looked up for every subscriber of every commit, keyed by ids the
/// server made (client ids, session ids of sessions the client may see), so a fast
/// hasher instead of SipHash.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Events read from the store per replay page.
const PAGE_EVENTS: usize = 4096;
/// Strikes of one subscription within [`LAG_WINDOW`] after which its client is closed
/// as too slow (see [`Strikes`]).
const LAG_STRIKES: usize = 3;
const LAG_WINDOW: Duration = Duration::from_secs(30);
/// Topics with no live subscriber and no commit for this long drop their ring.
const TOPIC_IDLE: Duration = Duration::from_secs(60);
/// How long a client told to close (1008) may take before its socket is shut.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How often clients are checked for stalls.
const STALL_CHECK: Duration = Duration::from_millis(500);
/// A client above its soft limit for this long no longer holds producers back: it is
/// slow, and will lag if it stays behind, instead of slowing everyone.
const SLOW_AFTER: Duration = Duration::from_millis(50);

/// One client's subscription to one session.
#[derive(Debug)]
struct Sub {
    /// The next `seq` this client should receive.
    next: u64,
    /// Where it stands: replaying, reading a page from the store, or live.
    state: SubState,
    /// Distinguishes this subscription from an earlier one to the same session.
    generation: u64,
}

/// Where a subscription stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubState {
    /// Catching up (from the ring or the store); nothing in flight.
    Replaying,
    /// A store read for it is in flight: its answer continues the replay.
    Reading,
    /// Caught up: it gets each commit as it happens.
    Live,
}

struct Client {
    /// The client's connection, which writes what it is handed.
    sink: Recipient<Deliver>,
    /// Bytes handed to the connection and not yet written: the client's budget.
    queue: Arc<ClientQueue>,
    /// Who the client is; subscriptions and the session list are checked against it.
    principal: Principal,
    /// The client's subscriptions, by session id.
    subs: Map<Arc<str>, Sub>,
    /// Replays waiting for the queue to drain.
    parked: Vec<Arc<str>>,
    /// Gets `session_upserted` frames (it sent `sessions.watch`).
    watching: bool,
    /// Strikes per subscribed session; only sessions that lagged since the client
    /// last wrote anything are kept.
    strikes: Map<Arc<str>, Strikes>,
    /// Since when its queue has been above the soft limit.
    over_soft_since: Option<Instant>,
}

/// The lags of one subscription since its client last wrote a byte.
///
/// Strikes are kept per subscription, not per client: when a client's queue overflows,
/// every busy subscription of it lags in the same delivery round, and those lags say
/// nothing new about the client. A subscription can lag again only after it was taken
/// up again (`chat.subscribe`), and a client that reads got its `lagged` notice
/// written before it resubscribed, so its written-bytes count has moved and its
/// strikes start over. Only a client that resubscribes without reading a byte
/// collects [`LAG_STRIKES`].
#[derive(Debug)]
struct Strikes {
    /// The client's written-bytes count at these strikes.
    written: u64,
    /// When each strike happened, oldest first.
    at: VecDeque<Instant>,
}

/// The two parts of a [`Client`] a delivery needs, borrowed apart from its
/// subscriptions so both can be used at once.
#[derive(Clone, Copy)]
struct Target<'a> {
    sink: &'a Recipient<Deliver>,
    queue: &'a ClientQueue,
}

impl Client {
    fn target(&self) -> Target<'_> {
        Target {
            sink: &self.sink,
            queue: &self.queue,
        }
    }
}

/// Why a delivery did not happen.
enum Refused {
    /// Over budget or mailbox full.
    Full,
    /// The client's actor is gone.
    Gone,
}

/// The fan-out actor: one per server, on its own thread; it never waits for a client.
pub struct Gateway {
    /// Read (off the actor's thread) for replays older than a ring holds.
    store: Store,
    /// Delivery, lag and eviction counters for `/metrics`.
    metrics: Arc<Metrics>,
    /// Events each session's ring keeps for subscribers catching up without the store.
    ring_events: usize,
    /// A client with bytes queued that writes nothing for this long is disconnected.
    stall_limit: Duration,
    /// Bytes all clients together may have queued; past it the clients furthest
    /// behind are evicted first.
    total_cap: usize,
    /// Clients sent a 1008 close, and when: shut if still open after [`CLOSE_GRACE`].
    closing: Vec<(Arc<ClientQueue>, Instant)>,
    /// Each session's ring and live subscribers; dropped when idle.
    topics: Map<Arc<str>, Topic>,
    /// Connected clients, by the id the runtime gave them.
    clients: Map<u64, Client>,
    /// Counter that tells a subscription from an earlier one to the same session, so
    /// a store page read for the old one is not delivered to the new one.
    generation: u64,
}

impl Gateway {
    /// A gateway reading replays from `store`, keeping `ring_events` per session.
    pub fn new(
        store: Store,
        metrics: Arc<Metrics>,
        ring_events: usize,
        stall_limit: Duration,
        total_cap: usize,
    ) -> Self {
        Gateway {
            store,
            metrics,
            ring_events: ring_events.max(1),
            stall_limit,
            total_cap,
            closing: Vec::new(),
            topics: Map::default(),
            clients: Map::default(),
            generation: 0,
        }
    }
}

impl Actor for Gateway {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(STALL_CHECK, |act, _| act.disconnect_stalled());
        ctx.run_interval(TOPIC_IDLE / 2, |act, _| {
            let now = Instant::now();
            act.topics
                .retain(|_, t| !t.live.is_empty() || now.duration_since(t.touched) < TOPIC_IDLE);
        });
    }
}

impl Handler<Connect> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: Connect, _: &mut Context<Self>) {
        self.clients.insert(
            msg.client_id,
            Client {
                sink: msg.sink,
                queue: msg.queue,
                principal: msg.principal,
                subs: Map::default(),
                parked: Vec::new(),
                watching: false,
                strikes: Map::default(),
                over_soft_since: None,
            },
        );
    }
}

impl Handler<Disconnect> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: Disconnect, _: &mut Context<Self>) {
        self.remove_client(msg.client_id);
    }
}

impl Handler<Subscribe> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) {
        self.generation += 1;
        let generation = self.generation;
        let Some(client) = self.clients.get_mut(&msg.client_id) else {
            return;
        };
        if client.subs.remove(&msg.session_id).is_some() {
            if let Some(topic) = self.topics.get_mut(&msg.session_id) {
                topic.remove_live(msg.client_id);
            }
        }
        let len = msg.ack.len();
        if let Err(Refused::Gone) = Self::enqueue(
            client.target(),
            Outgoing::text(vec![msg.ack], len),
            false,
            &self.metrics,
        ) {
            self.remove_client(msg.client_id);
            return;
        }
        client.subs.insert(
            msg.session_id.clone(),
            Sub {
                next: msg.after.saturating_add(1),
                state: SubState::Replaying,
                generation,
            },
        );
        if let Some(topic) = self.topics.get_mut(&msg.session_id) {
            topic.touched = Instant::now();
        }
        self.advance(msg.client_id, &msg.session_id, ctx);
    }
}

impl Handler<Unsubscribe> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: Unsubscribe, _: &mut Context<Self>) {
        let Some(client) = self.clients.get_mut(&msg.client_id) else {
            return;
        };
        for sid in msg.session_ids {
            let sid: Arc<str> = Arc::from(sid.as_str());
            client.subs.remove(&sid);
            client.parked.retain(|p| *p != sid);
            if let Some(topic) = self.topics.get_mut(&sid) {
                topic.remove_live(msg.client_id);
            }
        }
    }
}

impl Handler<Watch> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: Watch, _: &mut Context<Self>) {
        if let Some(client) = self.clients.get_mut(&msg.client_id) {
            client.watching = true;
        }
    }
}

impl Handler<Drained> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: Drained, ctx: &mut Context<Self>) {
        let (parked, live): (Vec<Arc<str>>, Vec<Arc<str>>) =
            match self.clients.get_mut(&msg.client_id) {
                Some(client) => (
                    std::mem::take(&mut client.parked),
                    client
                        .subs
                        .iter()
                        .filter(|(_, sub)| sub.state == SubState::Live)
                        .map(|(sid, _)| sid.clone())
                        .collect(),
                ),
                None => return,
            };
        for sid in parked {
            self.advance(msg.client_id, &sid, ctx);
        }
        for sid in live {
            self.try_release(&sid, ctx);
        }
    }
}

impl Handler<Committed> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: Committed, ctx: &mut Context<Self>) {
        self.on_committed(msg.0, ctx);
    }
}

impl Handler<SessionChanged> for Gateway {
    type Result = ();
    fn handle(&mut self, msg: SessionChanged, _: &mut Context<Self>) {
        let info = msg.0;
        let mut frame: Option<ByteString> = None;
        let mut gone = Vec::new();
        for (cid, client) in &self.clients {
            if !client.watching || !client.principal.can_see(&info) {
                continue;
            }
            let frame = frame
                .get_or_insert_with(|| {
                    ServerFrame::SessionUpserted {
                        session: Box::new(info.clone()),
                    }
                    .to_json()
                    .into()
                })
                .clone();
            let len = frame.len();
            // A watcher that is over budget misses this upsert; the next one carries
            // the whole session again, so nothing is lost for good.
            if let Err(Refused::Gone) = Self::enqueue(
                client.target(),
                Outgoing::text(vec![frame], len),
                true,
                &self.metrics,
            ) {
                gone.push(*cid);
            }
        }
        for cid in gone {
            self.remove_client(cid);
        }
    }
}
