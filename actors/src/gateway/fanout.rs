//! Live fan-out: a committed batch goes into every live subscriber's queue within its
//! byte budget, and the session's flow gate opens again once the subscribers that keep
//! up have room.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytestring::ByteString;

use super::framed::{Framed, FramedRun};
use super::topic::Topic;
use super::{Deliver, Gateway, Map, Refused, Target, SLOW_AFTER};
use crate::metrics::Metrics;
use crate::store::StoredEvent;

/// What one delivery hands a client: frames serialized for it alone (replays, acks,
/// notices), then live events framed once for every client.
#[derive(Default)]
pub(super) struct Outgoing {
    frames: Vec<ByteString>,
    framed: Vec<Framed>,
    /// Events in `framed`.
    events: u64,
    /// Payload bytes of both, charged to the client's budget.
    bytes: usize,
}

impl Outgoing {
    /// Frames of `bytes` bytes in all.
    pub(super) fn text(frames: Vec<ByteString>, bytes: usize) -> Outgoing {
        Outgoing {
            frames,
            bytes,
            ..Outgoing::default()
        }
    }
}

impl Gateway {
    /// Puts frames into a client's mailbox. `bounded` deliveries respect the byte
    /// budget; control frames (acks, lag notices) do not, they are small and rare.
    pub(super) fn enqueue(
        client: Target<'_>,
        out: Outgoing,
        bounded: bool,
        metrics: &Metrics,
    ) -> Result<(), Refused> {
        if out.frames.is_empty() && out.framed.is_empty() {
            return Ok(());
        }
        let bytes = out.bytes;
        // An empty queue takes any one delivery, so an event larger than the whole
        // budget (a big tool output) still reaches a client that keeps up.
        let queued = client.queue.queued();
        if bounded && queued > 0 && queued + bytes > client.queue.limit() {
            return Err(Refused::Full);
        }
        let count = out.frames.len() as u64 + out.events;
        client.queue.add(bytes);
        match client.sink.try_send(Deliver {
            frames: out.frames,
            framed: out.framed,
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

    pub(super) fn on_committed(&mut self, events: Vec<StoredEvent>, ctx: &mut Context<Self>) {
        /// What one client gets from this batch.
        #[derive(Default)]
        struct ToClient {
            out: Outgoing,
            /// Per session: first seq in this delivery and how many events.
            sessions: Vec<(Arc<str>, u64, u64)>,
        }
        let cap = self.ring_events;
        let mut out: Map<u64, ToClient> = Map::default();
        let mut gaps: Vec<(u64, Arc<str>, u64)> = Vec::new();
        let mut released: Vec<Arc<str>> = Vec::new();
        // A batch is made of runs of one session's events (in seq order). Handling a
        // run at a time pays the per-subscriber lookups once per run, not per event,
        // and frames the run once for all its subscribers.
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
            topic.touched = Instant::now();
            let mut framed: Option<FramedRun> = None;
            for &cid in &topic.live {
                let Some(sub) = self.clients.get_mut(&cid).and_then(|c| c.subs.get_mut(sid)) else {
                    continue;
                };
                let next = sub.next;
                let Some(first) = run.iter().position(|e| e.seq >= next) else {
                    continue;
                };
                if run[first].seq > next {
                    gaps.push((cid, sid.clone(), next));
                    continue;
                }
                let framed = framed.get_or_insert_with(|| FramedRun::new(run));
                let o = out.entry(cid).or_default();
                let count = (run.len() - first) as u64;
                o.out.bytes += framed.from(first, &mut o.out.framed);
                o.out.events += count;
                sub.next = run[run.len() - 1].seq + 1;
                match o.sessions.iter_mut().find(|(s, _, _)| s == sid) {
                    Some(entry) => entry.2 += count,
                    None => o.sessions.push((sid.clone(), next, count)),
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
            match Self::enqueue(client.target(), o.out, true, &self.metrics) {
                Ok(()) => {}
                Err(Refused::Gone) => self.remove_client(cid),
                Err(Refused::Full) => self.lag_many(cid, o.sessions),
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
    ///
    /// Only one of the clients holding the gate is asked to report its drain: the one
    /// with the most queued, likely the last to drain. Asking every one of them made
    /// each commit cost a report and a scan of all subscribers per subscriber (with
    /// 100 clients, 100 `Drained` messages and 10,000 checks per commit).
    pub(super) fn try_release(&mut self, sid: &Arc<str>, ctx: &mut Context<Self>) {
        let Some(topic) = self.topics.get_mut(sid) else {
            return;
        };
        let Some((gate, seq)) = topic.held.clone() else {
            return;
        };
        let now = Instant::now();
        let wait = loop {
            let mut wait: Option<Duration> = None;
            // The holder to ask: its id and what it had queued.
            let mut holder: Option<(u64, usize)> = None;
            for cid in &topic.live {
                let Some(client) = self.clients.get_mut(cid) else {
                    continue;
                };
                let queued = client.queue.queued();
                if queued <= client.queue.soft_limit() {
                    client.over_soft_since = None;
                    continue;
                }
                let since = *client.over_soft_since.get_or_insert(now);
                let left = SLOW_AFTER.saturating_sub(now.duration_since(since));
                if left.is_zero() {
                    continue;
                }
                wait = Some(wait.map_or(left, |w| w.min(left)));
                if holder.is_none_or(|(_, most)| queued > most) {
                    holder = Some((*cid, queued));
                }
            }
            let Some(queue) = holder.and_then(|(cid, _)| self.clients.get(&cid)) else {
                break wait;
            };
            let queue = &queue.queue;
            queue.want_soft_drain();
            if queue.queued() > queue.soft_limit() {
                break wait;
            }
            // It drained between the check and the flag, so it will not report: look
            // again.
        };
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
