//! Flow control from fan-out back to producers: each session has a gate that the
//! gateway advances once it has fanned an event out. A producer that runs far ahead
//! (a scripted `/stream`, a chatty vendor) waits at the gate, so queues between the
//! session and the clients stay short and latency stays bounded under load. In a
//! cluster, other nodes that copy the session report how far they delivered it, and
//! the cluster limits the gate by that too ([`FlowGate::limit_remote`]), so a producer
//! also waits for the clients of other nodes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The newest `seq` of one session that the gateway has fanned out.
#[derive(Debug)]
pub struct FlowGate {
    published: AtomicU64,
    /// The highest `seq` a producer may pace past as far as other nodes' delivery
    /// goes (`u64::MAX`: no limit); set by the cluster.
    remote: AtomicU64,
    notify: Notify,
}

impl Default for FlowGate {
    fn default() -> Self {
        FlowGate::new(0)
    }
}

impl FlowGate {
    /// A gate that has published everything up to `seq`.
    pub fn new(seq: u64) -> Self {
        FlowGate {
            published: AtomicU64::new(seq),
            remote: AtomicU64::new(u64::MAX),
            notify: Notify::new(),
        }
    }

    /// The newest `seq` fanned out.
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }

    /// The limit other nodes' delivery sets (`u64::MAX`: none).
    pub fn remote_limit(&self) -> u64 {
        self.remote.load(Ordering::Acquire)
    }

    /// Limits [`FlowGate::pace`] to `seq` (`u64::MAX`: no limit) and wakes producers.
    pub fn limit_remote(&self, seq: u64) {
        if self.remote.swap(seq, Ordering::AcqRel) != seq {
            self.notify.notify_waiters();
        }
    }

    /// Records that `seq` was fanned out.
    pub fn advance(&self, seq: u64) {
        self.published.fetch_max(seq, Ordering::AcqRel);
    }

    /// Wakes producers waiting at the gate.
    pub fn wake(&self) {
        self.notify.notify_waiters();
    }

    /// Waits until `seq` has been fanned out, or `limit` passed (a store failure
    /// loses events, and a producer must never wait on them forever).
    pub async fn wait_for(&self, seq: u64, limit: Duration) {
        self.wait_until(limit, || self.published() >= seq).await;
    }

    /// What a producer waits for: [`FlowGate::wait_for`], and also other nodes'
    /// delivery limit (see [`FlowGate::limit_remote`]), at most `limit` in all.
    pub async fn pace(&self, seq: u64, limit: Duration) {
        self.wait_until(limit, || {
            self.published() >= seq && self.remote_limit() >= seq
        })
        .await;
    }

    async fn wait_until(&self, limit: Duration, ready: impl Fn() -> bool) {
        let wait = async {
            loop {
                let notified = self.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if ready() {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[actix_rt::test]
    async fn waits_until_published() {
        let gate = Arc::new(FlowGate::new(0));
        let g = gate.clone();
        let waiter = actix_rt::spawn(async move { g.wait_for(10, Duration::from_secs(5)).await });
        actix_rt::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        gate.advance(10);
        gate.wake();
        let done = tokio::time::timeout(Duration::from_secs(1), waiter).await;
        assert!(done.is_ok());
    }

    #[actix_rt::test]
    async fn gives_up_after_the_limit() {
        let gate = FlowGate::new(0);
        let started = std::time::Instant::now();
        let limit = Duration::from_millis(50);
        // Nothing ever publishes seq 1: the wait ends only because of its limit...
        let waited = tokio::time::timeout(Duration::from_secs(20), gate.wait_for(1, limit)).await;
        assert!(waited.is_ok(), "wait_for ignored its limit");
        // ...and not before it (timers never fire early).
        assert!(started.elapsed() >= limit, "gave up before the limit");
    }

    #[actix_rt::test]
    async fn pace_waits_for_the_remote_limit_too() {
        let gate = Arc::new(FlowGate::new(10));
        gate.limit_remote(4);
        let g = gate.clone();
        let waiter = actix_rt::spawn(async move { g.pace(8, Duration::from_secs(5)).await });
        actix_rt::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        gate.limit_remote(u64::MAX);
        let done = tokio::time::timeout(Duration::from_secs(1), waiter).await;
        assert!(done.is_ok());
        // wait_for looks at this node's fan-out only.
        gate.limit_remote(0);
        let waited = tokio::time::timeout(
            Duration::from_secs(20),
            gate.wait_for(10, Duration::from_secs(3600)),
        )
        .await;
        assert!(waited.is_ok());
    }

    #[actix_rt::test]
    async fn published_seqs_pass_at_once() {
        let gate = FlowGate::new(5);
        let waited = tokio::time::timeout(
            Duration::from_secs(20),
            gate.wait_for(5, Duration::from_secs(3600)),
        )
        .await;
        assert!(waited.is_ok(), "a published seq must not wait");
        gate.advance(3);
        let waited = tokio::time::timeout(
            Duration::from_secs(20),
            gate.wait_for(4, Duration::from_secs(3600)),
        )
        .await;
        assert!(waited.is_ok(), "advance never moves the gate back");
    }
}
