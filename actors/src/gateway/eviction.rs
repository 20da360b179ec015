//! Letting go of clients: those that stalled (bytes queued, none written for the
//! stall limit), ignored a close, or sit furthest behind when all queues together
//! exceed the server-wide cap are disconnected from outside their actors, and their
//! queued bytes released.

use std::time::Instant;

use super::{Gateway, CLOSE_GRACE};

impl Gateway {
    /// Disconnects clients that have had bytes queued and written none for the stall
    /// limit, and shuts the sockets of clients that ignored a close. Their queued
    /// bytes are released at once.
    pub(super) fn disconnect_stalled(&mut self) {
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
    pub(super) fn enforce_total_cap(&mut self) {
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

    pub(super) fn remove_client(&mut self, client_id: u64) {
        if let Some(client) = self.clients.remove(&client_id) {
            for sid in client.subs.keys() {
                if let Some(topic) = self.topics.get_mut(sid) {
                    topic.remove_live(client_id);
                }
            }
        }
    }
}
