//! Counters the runtime keeps for `/metrics`. Plain atomics: cheap on hot paths.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Process-wide counters and gauges.
#[derive(Debug, Default)]
pub struct Metrics {
    /// History events handed to the store.
    pub events_appended: AtomicU64,
    /// Events committed to SQLite.
    pub events_committed: AtomicU64,
    /// Transactions committed by the store writer.
    pub commits: AtomicU64,
    /// Events the store failed to write (visible nowhere as a result).
    pub store_failures: AtomicU64,
    /// Frames delivered into WebSocket client queues.
    pub frames_delivered: AtomicU64,
    /// Events not delivered to a client because its queue was full.
    pub events_dropped_lag: AtomicU64,
    /// `lagged` notices sent.
    pub lagged_notices: AtomicU64,
    /// Clients closed for staying behind.
    pub clients_closed_slow: AtomicU64,
    /// Connected WebSocket clients.
    pub ws_clients: AtomicUsize,
    /// Bytes queued for all WebSocket clients right now.
    pub client_queued_bytes: AtomicUsize,
    /// The most bytes ever queued for one client.
    pub client_queued_bytes_peak: AtomicUsize,
    /// Delegation results pushed back into a Driver as an internal turn.
    pub pushbacks: AtomicU64,
    /// Bad client frames answered with `protocol_error`.
    pub protocol_errors: AtomicU64,
    /// Session actors started: each new session's, each session loaded at start
    /// with work of its own, and each idle one's at its first request.
    pub session_actors_started: AtomicU64,
}

impl Metrics {
    /// Adds one to a counter.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a client's queue depth for the peak gauge.
    pub fn observe_queue(&self, bytes: usize) {
        self.client_queued_bytes_peak
            .fetch_max(bytes, Ordering::Relaxed);
    }
}
