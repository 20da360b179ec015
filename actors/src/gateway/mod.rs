//! The gateway actor: owns every subscription and fans committed events out to the
//! WebSocket clients that asked for them.
//!
//! Architecture invariant: the gateway never waits for a client. Each client has a
//! bounded byte budget ([`ClientQueue`]); frames go into its actor's mailbox with
//! `try_send`. A live subscription that would overflow the budget is dropped and the
//! client is told `lagged {resumeFrom}`; a client that keeps lagging is closed (1008).
//! Replays (store pages, then the in-memory ring) are flow-controlled instead: the
//! gateway holds the next page back until the client's queue has drained.

mod client;
mod messages;
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
pub use messages::{
    Committed, Connect, Disconnect, Drained, SessionChanged, Subscribe, Unsubscribe, Watch,
};
use topic::Topic;

use crate::access::Principal;
use crate::error::RuntimeError;
use crate::metrics::Metrics;
use crate::store::{Store, StoredEvent};

/// Events read from the store per replay page.
const PAGE_EVENTS: usize = 4096;
/// Lags within [`LAG_WINDOW`] after which a client is closed as too slow.
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
    /// Receiving live events (else: replaying).
    live: bool,
    /// A store read for this subscription is in flight.
    reading: bool,
    /// Distinguishes this subscription from an earlier one to the same session.
    generation: u64,
}

struct Client {
    sink: Recipient<Deliver>,
    queue: Arc<ClientQueue>,
    principal: Principal,
    subs: HashMap<Arc<str>, Sub>,
    /// Replays waiting for the queue to drain.
    parked: Vec<Arc<str>>,
    watching: bool,
    /// Recent lags, with the bytes the client had written by then.
    lags: VecDeque<(Instant, u64)>,
    /// Since when its queue has been above the soft limit.
    over_soft_since: Option<Instant>,
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

/// The fan-out actor.
pub struct Gateway {
    store: Store,
    metrics: Arc<Metrics>,
    ring_events: usize,
    /// A client with bytes queued that writes nothing for this long is disconnected.
    stall_limit: Duration,
    /// Bytes all clients together may have queued; past it the clients furthest
    /// behind are evicted first.
    total_cap: usize,
    /// Clients sent a 1008 close, and when: shut if still open after [`CLOSE_GRACE`].
    closing: Vec<(Arc<ClientQueue>, Instant)>,
    topics: HashMap<Arc<str>, Topic>,
    clients: HashMap<u64, Client>,
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
            topics: HashMap::new(),
            clients: HashMap::new(),
            generation: 0,
        }
    }

    /// Puts frames into a client's mailbox. `bounded` deliveries respect the byte
    /// budget; control frames (acks, lag notices) do not, they are small and rare.
    fn enqueue(
        client: Target<'_>,
        frames: Vec<ByteString>,
        bytes: usize,
        bounded: bool,
        metrics: &Metrics,
    ) -> Result<(), Refused> {
        if frames.is_empty() {
            return Ok(());
        }
        // An empty queue takes any one delivery, so an event larger than the whole
        // budget (a big tool output) still reaches a client that keeps up.
        let queued = client.queue.queued();
        if bounded && queued > 0 && queued + bytes > client.queue.limit() {
            return Err(Refused::Full);
        }
        let count = frames.len() as u64;
        client.queue.add(bytes);
        match client.sink.try_send(Deliver {
            frames,
            bytes,
            close: None,
        }) {
            Ok(()) => {
                metrics
                    .frames_delivered
                    .fetch_add(count, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                client.queue.release(bytes);
                match e {
                    SendError::Full(_) => Err(Refused::Full),
                    SendError::Closed(_) => Err(Refused::Gone),
                }
            }
        }
    }

    /// Disconnects clients that have had bytes queued and written none for the stall
    /// limit, and shuts the sockets of clients that ignored a close. Their queued
    /// bytes are released at once.
    fn disconnect_stalled(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        let limit = self.stall_limit;
        let stalled: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| c.queue.stalled_for().is_some_and(|d| d >= limit))
            .map(|(id, _)| *id)
            .collect();
        for id in stalled {
            if let Some(client) = self.clients.get(&id) {
                tracing::info!(
                    client = id,
                    "disconnecting a client that wrote nothing for {limit:?}"
                );
                client.queue.evict();
                self.metrics.clients_closed_slow.fetch_add(1, Relaxed);
            }
            self.remove_client(id);
        }
        let now = Instant::now();
        self.closing.retain(|(queue, since)| {
            if queue.closed() {
                return false;
            }
            if now.duration_since(*since) < CLOSE_GRACE {
                return true;
            }
            queue.evict();
            false
        });
    }

    /// Keeps all clients' queued bytes under the server-wide cap by evicting the
    /// clients furthest behind (most bytes queued) first.
    fn enforce_total_cap(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        let total = self.metrics.client_queued_bytes.load(Relaxed);
        if total <= self.total_cap {
            return;
        }
        let mut behind: Vec<(usize, u64)> = self
            .clients
            .iter()
            .map(|(id, c)| (c.queue.queued(), *id))
            .filter(|(q, _)| *q > 0)
            .collect();
        behind.sort_unstable_by(|a, b| b.cmp(a));
        let mut over = total - self.total_cap;
        for (queued, id) in behind {
            if over == 0 {
                break;
            }
            if let Some(client) = self.clients.get(&id) {
                tracing::info!(client = id, queued, "evicting the client furthest behind: all clients' queues are over the server-wide cap");
                client.queue.evict();
                self.metrics.clients_closed_slow.fetch_add(1, Relaxed);
            }
            self.remove_client(id);
            over = over.saturating_sub(queued);
        }
    }

    fn remove_client(&mut self, client_id: u64) {
        if let Some(client) = self.clients.remove(&client_id) {
            for sid in client.subs.keys() {
                if let Some(topic) = self.topics.get_mut(sid) {
                    topic.remove_live(client_id);
                }
            }
        }
    }

    /// Drops a subscription that could not keep up and tells the client where to
    /// resume. Closes the client when it keeps lagging.
    fn lag(&mut self, client_id: u64, sid: &Arc<str>, resume_from: u64, dropped: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.metrics.events_dropped_lag.fetch_add(dropped, Relaxed);
        if let Some(topic) = self.topics.get_mut(sid) {
            topic.remove_live(client_id);
        }
        let Some(client) = self.clients.get_mut(&client_id) else {
            return;
        };
        client.subs.remove(sid);
        let now = Instant::now();
        let written = client.queue.written();
        // A client that wrote anything since its last lag is reading: falling behind
        // costs it a replay, never the connection.
        if client.lags.back().is_some_and(|(_, w)| *w != written) {
            client.lags.clear();
        }
        client.lags.push_back((now, written));
        while client
            .lags
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > LAG_WINDOW)
        {
            client.lags.pop_front();
        }
        if client.lags.len() >= LAG_STRIKES {
            self.metrics.clients_closed_slow.fetch_add(1, Relaxed);
            tracing::info!(
                client = client_id,
                "closing a client that lags without reading"
            );
            let _ = client.sink.try_send(Deliver {
                frames: Vec::new(),
                bytes: 0,
                close: Some((1008, "client too slow".into())),
            });
            // A client that does not read never sees the close frame: its socket is
            // shut if it is still open after a grace period.
            self.closing.push((client.queue.clone(), now));
            self.remove_client(client_id);
            return;
        }
        self.metrics.lagged_notices.fetch_add(1, Relaxed);
        let notice: ByteString = ServerFrame::Lagged {
            session_id: sid.to_string(),
            resume_from,
        }
        .to_json()
        .into();
        let len = notice.len();
        match Self::enqueue(client.target(), vec![notice], len, false, &self.metrics) {
            Ok(()) => {}
            Err(Refused::Gone) => self.remove_client(client_id),
            Err(Refused::Full) => {
                // Its mailbox is full: it cannot even be told. Its socket is shut.
                client.queue.evict();
                self.metrics.clients_closed_slow.fetch_add(1, Relaxed);
                self.remove_client(client_id);
            }
        }
    }

    /// Moves a replaying subscription forward: from the ring when it still holds what
    /// the client needs, else one store page at a time; live once caught up.
    fn advance(&mut self, client_id: u64, sid: &Arc<str>, ctx: &mut Context<Self>) {
        let Some(client) = self.clients.get_mut(&client_id) else {
            return;
        };
        let target = Target {
            sink: &client.sink,
            queue: &client.queue,
        };
        let Some(sub) = client.subs.get_mut(sid) else {
            return;
        };
        if sub.live || sub.reading {
            return;
        }
        if let Some(topic) = self.topics.get_mut(sid).filter(|t| t.last_committed > 0) {
            if sub.next > topic.last_committed {
                sub.live = true;
                topic.live.push(client_id);
                return;
            }
            // Catch up from the ring in pieces that fit the client's room (at least one
            // event, so one larger than the whole budget still goes to an empty queue).
            let room = client.queue.limit().saturating_sub(client.queue.queued());
            let piece = topic.ring_from(sub.next).map(|events| {
                let (mut frames, mut bytes, mut last, mut whole) = (Vec::new(), 0, 0, true);
                for e in events {
                    if !frames.is_empty() && bytes + e.frame.len() > room {
                        whole = false;
                        break;
                    }
                    bytes += e.frame.len();
                    frames.push(e.frame.clone());
                    last = e.seq;
                }
                (frames, bytes, last, whole)
            });
            if let Some((frames, bytes, last, whole)) = piece {
                match Self::enqueue(target, frames, bytes, true, &self.metrics) {
                    Ok(()) if whole => {
                        sub.next = topic.last_committed + 1;
                        sub.live = true;
                        topic.live.push(client_id);
                    }
                    Ok(()) => {
                        sub.next = last + 1;
                        client.queue.want_drain();
                        client.parked.push(sid.clone());
                    }
                    Err(Refused::Full) => {
                        client.queue.want_drain();
                        client.parked.push(sid.clone());
                    }
                    Err(Refused::Gone) => self.remove_client(client_id),
                }
                return;
            }
        }
        // The store has what we need. Hold the read back while the client is busy.
        if client.queue.queued() > client.queue.limit() / 2 {
            client.queue.want_drain();
            client.parked.push(sid.clone());
            return;
        }
        sub.reading = true;
        let (after, generation) = (sub.next - 1, sub.generation);
        let max_bytes = client.queue.limit() / 2;
        let store = self.store.clone();
        let session = sid.clone();
        let read = actix_rt::task::spawn_blocking(move || {
            store.read_events_bounded(&session, after, PAGE_EVENTS, max_bytes)
        });
        let sid = sid.clone();
        ctx.spawn(
            actix::fut::wrap_future(read).map(move |res, act: &mut Gateway, ctx| {
                let res = res.unwrap_or_else(|e| Err(RuntimeError::Internal(e.to_string())));
                act.on_page(client_id, &sid, generation, res, ctx);
            }),
        );
    }

    fn on_page(
        &mut self,
        client_id: u64,
        sid: &Arc<str>,
        generation: u64,
        page: Result<(Vec<(u64, String)>, bool), RuntimeError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(client) = self.clients.get_mut(&client_id) else {
            return;
        };
        let target = Target {
            sink: &client.sink,
            queue: &client.queue,
        };
        let Some(sub) = client
            .subs
            .get_mut(sid)
            .filter(|s| s.generation == generation)
        else {
            return;
        };
        sub.reading = false;
        let (rows, exhausted) = match page {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(session = %sid, error = %e, "replay read failed");
                let next = sub.next;
                self.lag(client_id, sid, next, 0);
                return;
            }
        };
        let start = sub.next;
        let mut bytes = 0;
        let frames: Vec<ByteString> = rows
            .into_iter()
            .filter(|(seq, _)| *seq >= start)
            .map(|(seq, frame)| {
                sub.next = seq + 1;
                bytes += frame.len();
                ByteString::from(frame)
            })
            .collect();
        if let Err(refused) = Self::enqueue(target, frames, bytes, false, &self.metrics) {
            match refused {
                Refused::Gone => self.remove_client(client_id),
                Refused::Full => self.lag(client_id, sid, start, 0),
            }
            return;
        }
        if exhausted {
            let topic = self.topics.entry(sid.clone()).or_insert_with(Topic::new);
            let front = topic.ring.front().map(|e| e.seq);
            if topic.last_committed < sub.next {
                // Everything committed so far was delivered; later commits reach the
                // gateway after this point and go out live.
                sub.live = true;
                topic.live.push(client_id);
                return;
            }
            if let Some(front) = front.filter(|f| *f > sub.next) {
                // The store lacks events the ring starts after (a failed batch):
                // nothing can fill the hole, so continue from the ring.
                tracing::warn!(session = %sid, from = sub.next, to = front, "history gap");
                sub.next = front;
            }
        }
        self.advance(client_id, sid, ctx);
    }

    fn on_committed(&mut self, events: Vec<StoredEvent>, ctx: &mut Context<Self>) {
        /// What one client gets from this batch.
        #[derive(Default)]
        struct Outgoing {
            frames: Vec<ByteString>,
            bytes: usize,
            /// Per session: first seq in this delivery and how many events.
            sessions: Vec<(Arc<str>, u64, u64)>,
        }
        let cap = self.ring_events;
        let mut out: HashMap<u64, Outgoing> = HashMap::new();
        let mut gaps: Vec<(u64, Arc<str>, u64)> = Vec::new();
        let mut released: Vec<Arc<str>> = Vec::new();
        // A batch is made of runs of one session's events (in seq order). Handling a
        // run at a time pays the per-subscriber lookups once per run, not per event.
        let mut start = 0;
        while start < events.len() {
            let sid = &events[start].session_id;
            let end = events[start..]
                .iter()
                .position(|e| e.session_id != *sid)
                .map_or(events.len(), |n| start + n);
            let run = &events[start..end];
            start = end;
            let topic = self.topics.entry(sid.clone()).or_insert_with(Topic::new);
            for ev in run {
                topic.push(ev, cap);
            }
            for &cid in &topic.live {
                let Some(sub) = self.clients.get_mut(&cid).and_then(|c| c.subs.get_mut(sid)) else {
                    continue;
                };
                let next = sub.next;
                let mut fresh = run.iter().filter(|e| e.seq >= next).peekable();
                match fresh.peek() {
                    None => continue,
                    Some(first) if first.seq > next => {
                        gaps.push((cid, sid.clone(), next));
                        continue;
                    }
                    Some(_) => {}
                }
                let o = out.entry(cid).or_default();
                let (first, mut count) = (next, 0);
                for ev in fresh {
                    o.frames.push(ev.frame.clone());
                    o.bytes += ev.frame.len();
                    sub.next = ev.seq + 1;
                    count += 1;
                }
                match o.sessions.iter_mut().find(|(s, _, _)| s == sid) {
                    Some(entry) => entry.2 += count,
                    None => o.sessions.push((sid.clone(), first, count)),
                }
            }
            if let Some(last) = run.last() {
                topic.held = Some((last.gate.clone(), last.seq));
                if !released.contains(sid) {
                    released.push(sid.clone());
                }
            }
        }
        for (cid, o) in out {
            let Some(client) = self.clients.get(&cid) else {
                continue;
            };
            match Self::enqueue(client.target(), o.frames, o.bytes, true, &self.metrics) {
                Ok(()) => {}
                Err(Refused::Gone) => self.remove_client(cid),
                Err(Refused::Full) => {
                    for (sid, first, count) in o.sessions {
                        self.lag(cid, &sid, first, count);
                    }
                }
            }
        }
        for (cid, sid, resume) in gaps {
            self.lag(cid, &sid, resume, 0);
        }
        self.enforce_total_cap();
        // Fanned out: producers waiting on these sessions may go on, once the
        // subscribers that keep up have written most of it.
        for sid in released {
            self.try_release(&sid, ctx);
        }
    }

    /// Opens a topic's held flow gate unless a subscriber that keeps up still has more
    /// than its soft limit queued; then it re-checks when that client drains (or when
    /// the client has been behind long enough to count as slow and be ignored).
    fn try_release(&mut self, sid: &Arc<str>, ctx: &mut Context<Self>) {
        let Some(topic) = self.topics.get_mut(sid) else {
            return;
        };
        let Some((gate, seq)) = topic.held.clone() else {
            return;
        };
        let now = Instant::now();
        let mut wait: Option<Duration> = None;
        for cid in &topic.live {
            let Some(client) = self.clients.get_mut(cid) else {
                continue;
            };
            if client.queue.queued() <= client.queue.soft_limit() {
                client.over_soft_since = None;
                continue;
            }
            let since = *client.over_soft_since.get_or_insert(now);
            let left = SLOW_AFTER.saturating_sub(now.duration_since(since));
            if left.is_zero() {
                continue;
            }
            client.queue.want_soft_drain();
            if client.queue.queued() <= client.queue.soft_limit() {
                // It drained between the check and the flag: it will not report.
                continue;
            }
            wait = Some(wait.map_or(left, |w| w.min(left)));
        }
        match wait {
            None => {
                topic.held = None;
                gate.advance(seq);
                gate.wake();
            }
            Some(left) if !topic.recheck => {
                topic.recheck = true;
                let sid = sid.clone();
                ctx.run_later(left, move |act, ctx| {
                    if let Some(topic) = act.topics.get_mut(&sid) {
                        topic.recheck = false;
                    }
                    act.try_release(&sid, ctx);
                });
            }
            Some(_) => {}
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
                subs: HashMap::new(),
                parked: Vec::new(),
                watching: false,
                lags: VecDeque::new(),
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
        if let Err(Refused::Gone) =
            Self::enqueue(client.target(), vec![msg.ack], len, false, &self.metrics)
        {
            self.remove_client(msg.client_id);
            return;
        }
        client.subs.insert(
            msg.session_id.clone(),
            Sub {
                next: msg.after.saturating_add(1),
                live: false,
                reading: false,
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
            let sid: Arc<str> = sid.into();
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
                        .filter(|(_, sub)| sub.live)
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
            if let Err(Refused::Gone) =
                Self::enqueue(client.target(), vec![frame], len, true, &self.metrics)
            {
                gone.push(*cid);
            }
        }
        for cid in gone {
            self.remove_client(cid);
        }
    }
}
