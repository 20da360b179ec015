//! What the gateway knows of one WebSocket client, and the message it delivers to it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use actix::Message;
use bytestring::ByteString;

use super::framed::Framed;
use crate::metrics::Metrics;

/// Frames for one client, delivered into its connection actor's bounded mailbox with
/// `try_send`; their bytes are charged to its [`ClientQueue`] until the socket takes
/// them.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Deliver {
    /// Serialized frames (replays, acks, notices), in order, written before `framed`.
    pub frames: Vec<ByteString>,
    /// Live events already framed for the socket, shared with every other client
    /// that receives them (see [`super::framed`]), in order.
    pub framed: Vec<Framed>,
    /// The payload bytes of both, accounted in the client's [`ClientQueue`].
    pub bytes: usize,
    /// Close the socket after the frames, with this code and reason.
    pub close: Option<(u16, String)>,
}

/// Shuts a client's socket from outside its actor, and drops what is queued for it.
/// The HTTP layer stops writing to a client whose socket buffer is full, so only
/// shutting the socket itself ends such a connection at once.
#[derive(Clone)]
pub struct Shutdown(Arc<dyn Fn() + Send + Sync>);

impl Shutdown {
    /// Wraps the function that shuts the socket.
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Self {
        Shutdown(Arc::new(f))
    }

    /// Shuts the socket (nothing once the connection is gone).
    pub fn run(&self) {
        (self.0)()
    }
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shutdown")
    }
}

/// Byte accounting for one client's unwritten frames, shared between the gateway and
/// the client's connection (which add) and the connection's response body (which
/// subtracts as the HTTP layer takes bytes for the socket).
#[derive(Debug)]
pub struct ClientQueue {
    bytes: AtomicUsize,
    limit: usize,
    /// Set by the gateway when it holds back a replay until the queue drains.
    drain_wanted: AtomicBool,
    /// Set by the gateway when it gave up on the client; its connection then closes.
    evicted: AtomicBool,
    /// Set by the gateway when it holds a producer back until this client has
    /// written most of its queue ([`ClientQueue::soft_limit`]).
    soft_drain_wanted: AtomicBool,
    metrics: Arc<Metrics>,
    /// When this queue was made; progress times count from here.
    born: Instant,
    /// Milliseconds after `born` of the last progress: bytes written to the socket, or
    /// the queue becoming non-empty (a stall is measured from there).
    progress_ms: AtomicU64,
    /// Bytes written in all, so the gateway can tell a client that lags but keeps
    /// reading from one that makes no progress.
    written: AtomicU64,
    /// Set by the client's actor when it has stopped.
    closed: AtomicBool,
    /// Shuts the socket (set by the HTTP layer once it has one).
    shutdown: OnceLock<Shutdown>,
}

impl ClientQueue {
    /// An empty queue bounded at `limit` bytes.
    pub fn new(limit: usize, metrics: Arc<Metrics>) -> Self {
        ClientQueue {
            bytes: AtomicUsize::new(0),
            limit,
            drain_wanted: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            soft_drain_wanted: AtomicBool::new(false),
            metrics,
            born: Instant::now(),
            progress_ms: AtomicU64::new(0),
            written: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            shutdown: OnceLock::new(),
        }
    }

    /// Sets how to shut this client's socket from outside its actor.
    pub fn set_shutdown(&self, shutdown: Shutdown) {
        let _ = self.shutdown.set(shutdown);
    }

    fn touch(&self) {
        let ms = self.born.elapsed().as_millis() as u64;
        self.progress_ms.store(ms, Ordering::Release);
    }

    /// How long the client has had bytes queued without writing any; `None` while its
    /// queue is empty.
    pub fn stalled_for(&self) -> Option<Duration> {
        if self.queued() == 0 || self.evicted() {
            return None;
        }
        let since = Duration::from_millis(self.progress_ms.load(Ordering::Acquire));
        Some(self.born.elapsed().saturating_sub(since))
    }

    /// Bytes written to the socket so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Called by the client's actor when it stops.
    pub fn mark_closed(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// True once the client's actor has stopped.
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Subtracts up to `n` bytes that will never be written (dropped with their
    /// connection); returns what was really subtracted (an evicted queue was already
    /// emptied).
    pub fn release(&self, n: usize) -> usize {
        let before = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some(b.saturating_sub(n))
            })
            .unwrap_or(0);
        let taken = before.min(n);
        self.metrics
            .client_queued_bytes
            .fetch_sub(taken, Ordering::Relaxed);
        taken
    }

    /// Bytes queued now.
    pub fn queued(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// The bound.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Queued bytes above which a keeping-up client holds its sessions' producers
    /// back (see [`crate::flow`]); far below the bound, so latency stays low.
    pub fn soft_limit(&self) -> usize {
        (self.limit / 2048).clamp(2 << 10, 64 << 10)
    }

    pub(crate) fn want_soft_drain(&self) {
        self.soft_drain_wanted.store(true, Ordering::Release);
    }

    /// Charges `n` bytes queued for the client: the gateway's deliveries, and the
    /// connection's own frames (replies, errors, pings), so that everything the
    /// server holds for a client counts against one budget.
    pub fn add(&self, n: usize) {
        let before = self.bytes.fetch_add(n, Ordering::AcqRel);
        if before == 0 {
            // The stall clock starts when there is something to write.
            self.touch();
        }
        let now = before + n;
        self.metrics
            .client_queued_bytes
            .fetch_add(n, Ordering::Relaxed);
        self.metrics.observe_queue(now);
    }

    /// Gives up on the client: its queued bytes are released at once, its socket is
    /// shut from outside its actor, and whatever it sends afterwards is refused.
    pub(crate) fn evict(&self) {
        if self.evicted.swap(true, Ordering::AcqRel) {
            return;
        }
        self.release(usize::MAX);
        if let Some(shutdown) = self.shutdown.get() {
            shutdown.run();
        }
    }

    /// True once the gateway has given up on this client (it made no progress); its
    /// socket is being shut and nothing more is read from or written to it.
    pub fn evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    pub(crate) fn want_drain(&self) {
        self.drain_wanted.store(true, Ordering::Release);
    }

    /// After [`ClientQueue::want_drain`]: true when the queue is at most half full
    /// already and the wish was still unanswered, which it then takes back. The queue
    /// can drain between the gateway's look at it and the wish, and then its writer,
    /// which looked for the wish before it was made, never reports; the caller goes on
    /// itself. Exactly one of the two (this, or the writer's [`ClientQueue::delivered`])
    /// takes the wish.
    pub(crate) fn drained_already(&self) -> bool {
        self.queued() <= self.limit / 2 && self.drain_wanted.swap(false, Ordering::AcqRel)
    }

    /// Called by the client's response body once the HTTP layer has taken `n` bytes
    /// for the socket (it asks only while its write buffer has room).
    /// Returns true when the gateway asked to hear that the queue has drained, in
    /// which case the caller sends it [`super::Drained`].
    pub fn delivered(&self, n: usize) -> bool {
        if self.evicted() {
            return false;
        }
        let taken = self.release(n);
        self.written.fetch_add(taken as u64, Ordering::AcqRel);
        self.touch();
        let now = self.queued();
        let replay = now <= self.limit / 2 && self.drain_wanted.swap(false, Ordering::AcqRel);
        let flow =
            now <= self.soft_limit() / 2 && self.soft_drain_wanted.swap(false, Ordering::AcqRel);
        replay || flow
    }
}
