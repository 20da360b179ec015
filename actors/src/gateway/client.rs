//! What the gateway knows of one WebSocket client, and the message it delivers to it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use actix::Message;
use bytestring::ByteString;

use crate::metrics::Metrics;

/// Frames for one client, delivered into its actor's bounded mailbox with `try_send`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Deliver {
    /// Serialized frames, in order.
    pub frames: Vec<ByteString>,
    /// Their total length, accounted in the client's [`ClientQueue`].
    pub bytes: usize,
    /// Close the socket after the frames, with this code and reason.
    pub close: Option<(u16, String)>,
}

/// Byte accounting for one client's undelivered frames, shared between the gateway
/// (which adds) and the client's actor (which subtracts as it writes to the socket).
#[derive(Debug)]
pub struct ClientQueue {
    bytes: AtomicUsize,
    limit: usize,
    /// Set by the gateway when it holds back a replay until the queue drains.
    drain_wanted: AtomicBool,
    /// Set by the gateway when it gave up on the client; its actor then closes.
    evicted: AtomicBool,
    /// Set by the gateway when it holds a producer back until this client has
    /// written most of its queue ([`ClientQueue::soft_limit`]).
    soft_drain_wanted: AtomicBool,
    metrics: Arc<Metrics>,
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
        }
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
    /// back (see [`super::flow`]); far below the bound, so latency stays low.
    pub fn soft_limit(&self) -> usize {
        (self.limit / 2048).clamp(2 << 10, 64 << 10)
    }

    pub(crate) fn want_soft_drain(&self) {
        self.soft_drain_wanted.store(true, Ordering::Release);
    }

    pub(crate) fn add(&self, n: usize) {
        let now = self.bytes.fetch_add(n, Ordering::AcqRel) + n;
        self.metrics
            .client_queued_bytes
            .fetch_add(n, Ordering::Relaxed);
        self.metrics.observe_queue(now);
    }

    pub(crate) fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
    }

    /// True once the gateway has given up on this client (it stayed too far behind);
    /// the client's actor must close the socket with 1008.
    pub fn evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    pub(crate) fn want_drain(&self) {
        self.drain_wanted.store(true, Ordering::Release);
    }

    /// Called by the client's actor once `n` bytes have been handed to the socket.
    /// Returns true when the gateway asked to hear that the queue has drained, in
    /// which case the caller sends it [`super::Drained`].
    pub fn delivered(&self, n: usize) -> bool {
        let before = self.bytes.fetch_sub(n, Ordering::AcqRel);
        self.metrics
            .client_queued_bytes
            .fetch_sub(n, Ordering::Relaxed);
        let now = before.saturating_sub(n);
        let replay = now <= self.limit / 2 && self.drain_wanted.swap(false, Ordering::AcqRel);
        let flow =
            now <= self.soft_limit() / 2 && self.soft_drain_wanted.swap(false, Ordering::AcqRel);
        replay || flow
    }
}
