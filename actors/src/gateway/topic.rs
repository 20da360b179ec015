//! Per-session fan-out state: recent events for replay and who receives live ones.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::flow::FlowGate;

/// Most frame bytes a session's ring holds; older events are replayed from the store.
const RING_BYTES: usize = 1 << 20;

use crate::store::StoredEvent;

/// One session as the gateway sees it.
#[derive(Debug)]
pub(super) struct Topic {
    /// The most recent committed events, contiguous by `seq`, oldest first.
    pub ring: VecDeque<StoredEvent>,
    /// Bytes of the frames in `ring`.
    ring_bytes: usize,
    /// Newest committed `seq` seen since the server started; 0 when none was seen
    /// (then only the store knows what exists).
    pub last_committed: u64,
    /// Clients receiving this session's events live.
    pub live: Vec<u64>,
    /// Last commit or subscription, for evicting idle topics.
    pub touched: Instant,
    /// A flow-gate advance held back until the live subscribers have written what
    /// they were given: the session's gate and the seq to open it to.
    pub held: Option<(Arc<FlowGate>, u64)>,
    /// A re-check of `held` is scheduled.
    pub recheck: bool,
}

impl Topic {
    pub fn new() -> Self {
        Topic {
            ring: VecDeque::new(),
            ring_bytes: 0,
            last_committed: 0,
            live: Vec::new(),
            touched: Instant::now(),
            held: None,
            recheck: false,
        }
    }

    /// Records a committed event, keeping at most `cap` events and [`RING_BYTES`]
    /// bytes in the ring (a few huge frames must not pin megabytes per session). The
    /// caller marks the topic `touched`, once per run of events.
    pub fn push(&mut self, ev: &StoredEvent, cap: usize) {
        if self.ring.back().is_some_and(|last| last.seq + 1 != ev.seq) {
            // A gap (a batch the store failed to write): the ring must stay contiguous.
            self.ring.clear();
            self.ring_bytes = 0;
        }
        self.ring_bytes += ev.frame.len();
        self.ring.push_back(ev.clone());
        while self.ring.len() > cap || (self.ring_bytes > RING_BYTES && self.ring.len() > 1) {
            if let Some(old) = self.ring.pop_front() {
                self.ring_bytes -= old.frame.len();
            }
        }
        self.last_committed = self.last_committed.max(ev.seq);
    }

    /// Events from `next` on, if the ring still holds `next` (or nothing is newer).
    pub fn ring_from(&self, next: u64) -> Option<impl Iterator<Item = &StoredEvent>> {
        let front = self.ring.front()?.seq;
        if front > next {
            return None;
        }
        let skip = (next - front) as usize;
        Some(self.ring.iter().skip(skip))
    }

    pub fn remove_live(&mut self, client: u64) {
        self.live.retain(|c| *c != client);
    }
}
