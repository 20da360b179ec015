//! Catching a subscriber up: from the in-memory ring when it still holds what the
//! client needs, else from the store one page at a time, each page sent only once the
//! client's queue has drained; and the `lagged` path that sends a live subscriber
//! back to replay when it falls behind.
//!
//! Why there is no gap and no repeat: each subscription keeps `next`, the next `seq`
//! its client must get. A new subscription replays until caught up: if the session's
//! ring still holds `next`, the rest of the ring is sent and it goes live; otherwise a
//! page is read from SQLite (on a blocking thread), sent, and the check repeated. Live
//! delivery sends an event only when its `seq` is `next`. An event committed while a
//! page was being read is either in that page (skipped later as below `next`) or in
//! the ring (sent next).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use bytestring::ByteString;
use tandem_protocol::ServerFrame;

use super::fanout::Outgoing;
use super::topic::Topic;
use super::{
    Client, Deliver, Drained, Gateway, Refused, Strikes, SubState, Target, LAG_STRIKES, LAG_WINDOW,
    PAGE_EVENTS,
};
use crate::error::RuntimeError;
use crate::ids::SessionId;

impl Gateway {
    /// Drops a subscription that could not keep up and tells the client where to
    /// resume. Closes the client when it keeps lagging.
    pub(super) fn lag(&mut self, client_id: u64, sid: &Arc<str>, resume_from: u64, dropped: u64) {
        self.lag_many(client_id, vec![(sid.clone(), resume_from, dropped)]);
    }

    /// Drops the subscriptions of one client that could not keep up in one delivery
    /// round (session, `seq` to resume from, events dropped) and tells the client
    /// where to resume each, in one delivery. Closes the client when one subscription
    /// keeps lagging while the client writes nothing (see [`super::Strikes`]).
    pub(super) fn lag_many(&mut self, client_id: u64, lags: Vec<(Arc<str>, u64, u64)>) {
        use std::sync::atomic::Ordering::Relaxed;
        for (sid, _, dropped) in &lags {
            self.metrics.events_dropped_lag.fetch_add(*dropped, Relaxed);
            if let Some(topic) = self.topics.get_mut(sid) {
                topic.remove_live(client_id);
            }
        }
        let Some(client) = self.clients.get_mut(&client_id) else {
            return;
        };
        let now = Instant::now();
        let written = client.queue.written();
        // A client that wrote anything since a subscription's last strike is reading:
        // falling behind costs it a replay, never the connection.
        client.strikes.retain(|_, s| s.written == written);
        let mut struck_out = false;
        for (sid, _, _) in &lags {
            client.subs.remove(sid);
            let strikes = client
                .strikes
                .entry(sid.clone())
                .or_insert_with(|| Strikes {
                    written,
                    at: VecDeque::new(),
                });
            struck_out |= strikes.strike(now);
        }
        if struck_out {
            self.metrics.clients_closed_slow.fetch_add(1, Relaxed);
            tracing::info!(
                client = client_id,
                "closing a client that lags without reading"
            );
            let _ = client.sink.try_send(Deliver {
                frames: Vec::new(),
                framed: Vec::new(),
                bytes: 0,
                close: Some((1008, "client too slow".into())),
            });
            // A client that does not read never sees the close frame: its socket is
            // shut if it is still open after a grace period.
            self.closing.push((client.queue.clone(), now));
            self.remove_client(client_id);
            return;
        }
        self.metrics
            .lagged_notices
            .fetch_add(lags.len() as u64, Relaxed);
        let notices = lagged_notices(lags);
        let len = notices.iter().map(|n| n.len()).sum();
        match Self::enqueue(
            client.target(),
            Outgoing::text(notices, len),
            false,
            &self.metrics,
        ) {
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
    pub(super) fn advance(&mut self, client_id: u64, sid: &Arc<str>, ctx: &mut Context<Self>) {
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
        if sub.state != SubState::Replaying {
            return;
        }
        if let Some(topic) = self.topics.get_mut(sid).filter(|t| t.last_committed > 0) {
            if sub.next > topic.last_committed {
                sub.state = SubState::Live;
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
                match Self::enqueue(target, Outgoing::text(frames, bytes), true, &self.metrics) {
                    Ok(()) if whole => {
                        sub.next = topic.last_committed + 1;
                        sub.state = SubState::Live;
                        topic.live.push(client_id);
                    }
                    Ok(()) => {
                        sub.next = last + 1;
                        park(client, client_id, sid, ctx);
                    }
                    Err(Refused::Full) => park(client, client_id, sid, ctx),
                    Err(Refused::Gone) => self.remove_client(client_id),
                }
                return;
            }
        }
        // The store has what we need. Hold the read back while the client is busy.
        if client.queue.queued() > client.queue.limit() / 2 {
            park(client, client_id, sid, ctx);
            return;
        }
        sub.state = SubState::Reading;
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

    pub(super) fn on_page(
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
        sub.state = SubState::Replaying;
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
        if let Err(refused) =
            Self::enqueue(target, Outgoing::text(frames, bytes), false, &self.metrics)
        {
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
                sub.state = SubState::Live;
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
}

/// Holds `sid`'s replay back until the client's queue is at most half full, which
/// its connection reports ([`super::Drained`]) once asked. When the queue drained
/// before the asking (its writer then never reports), the replay goes on at once:
/// a replay left parked would wait for the next frame the connection writes for any
/// other reason, such as its next ping.
fn park(client: &mut Client, client_id: u64, sid: &Arc<str>, ctx: &mut Context<Gateway>) {
    client.queue.want_drain();
    client.parked.push(sid.clone());
    if client.queue.drained_already() {
        ctx.notify(Drained { client_id });
    }
}

impl Strikes {
    /// Counts a lag at `now`, forgetting those older than [`LAG_WINDOW`]; true once
    /// the subscription has [`LAG_STRIKES`] in the window.
    fn strike(&mut self, now: Instant) -> bool {
        self.at.push_back(now);
        while self
            .at
            .front()
            .is_some_and(|t| now.duration_since(*t) > LAG_WINDOW)
        {
            self.at.pop_front();
        }
        self.at.len() >= LAG_STRIKES
    }
}

/// The `lagged {resumeFrom}` frames telling a client where to resume each session
/// of `lags` (session, `seq` to resume from, events dropped).
fn lagged_notices(lags: Vec<(Arc<str>, u64, u64)>) -> Vec<ByteString> {
    lags.into_iter()
        .map(|(sid, resume_from, _)| {
            ServerFrame::Lagged {
                session_id: SessionId::from(&*sid),
                resume_from,
            }
            .to_json()
            .into()
        })
        .collect()
}
