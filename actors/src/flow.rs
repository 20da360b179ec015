//! Flow control from fan-out back to producers: each session has a gate that the
//! gateway advances once it has fanned an event out. A producer that runs far ahead
//! (a scripted `/stream`, a chatty vendor) waits at the gate, so queues between the
//! session and the clients stay short and latency stays bounded under load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The newest `seq` of one session that the gateway has fanned out.
#[derive(Debug, Default)]
pub struct FlowGate {
    published: AtomicU64,
    notify: Notify,
}

impl FlowGate {
    /// A gate that has published everything up to `seq`.
    pub fn new(seq: u64) -> Self {
        FlowGate {
            published: AtomicU64::new(seq),
            notify: Notify::new(),
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
        let wait = async {
            loop {
                let notified = self.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.published.load(Ordering::Acquire) >= seq {
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
