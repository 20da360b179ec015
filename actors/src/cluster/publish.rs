//! Publishing committed events to JetStream, in order and exactly once per seq.
//!
//! The publisher sees every committed batch (the runtime's commit tap). For each
//! local session it knows what it has sent ([`Sent`]: the highest seq JetStream has
//! acknowledged or that is in flight, and the subject's message count). Events next
//! in line are gathered into runs ([`super::batch`]) straight from the batch, one
//! message per run; a session's first event ever (seq 1) starts it at nothing sent.
//! Up to [`IN_FLIGHT`] messages await their acks while the next batches go out (in
//! order, on one connection), so an event does not wait for the round trip of the
//! batch before it. Anything else (a session's first event since start other than
//! seq 1, a gap, a failed publish or ack, an ack that says JetStream took the message
//! for a resend) marks the session *behind*: once no message is in flight it is
//! caught up from SQLite, retried once a second until that succeeds, by asking the
//! stream what it holds for the session's subject rather than remembering what
//! failed.
//!
//! The publisher also hears other nodes' delivery reports for its sessions and limits
//! their flow gates by them ([`super::delivered`]).
//!
//! When a connection breaks, the messages in flight on it are lost while later ones
//! may go out on the next connection, so the stream can hold a hole below its last
//! seq; the node may also crash before it republishes. Every message carries the
//! subject's message count once it is stored (`Tandem-Msgs`), as the publisher counts
//! them from a state it checked. So a catch-up compares the subject's message count
//! with its newest message's: when they are equal nothing was lost, and the stream
//! holds every seq up to that message's `Tandem-High`; when they differ it reads the
//! subject's runs, publishes just the missing seqs (and deletes a message whose every
//! seq another holds), then everything after the highest. Nothing committed is lost by
//! a NATS restart or a node crash, without relying on JetStream's duplicate window (2
//! minutes; the message id `<id>:<first seq>` still guards the race of a resend).
//! Filled holes mean the stream is not always in seq order; readers order by seq (see
//! [`super::mirror`]).

use std::collections::{HashMap, HashSet};
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::context::{PublishAckFuture, PublishError};
use async_nats::jetstream::publish::PublishAck;
use bytes::Bytes;
use futures_util::future::{join_all, LocalBoxFuture};
use futures_util::stream::{FuturesOrdered, StreamExt};
use tokio::sync::mpsc::UnboundedReceiver;

use super::batch::{Run, RunHeader};
use super::delivered::{self, Followers};
use super::{events_subject, Cluster, EVENTS_STREAM};
use crate::store::StoredEvent;

/// How often sessions that are behind are retried.
const RETRY: Duration = Duration::from_secs(1);
/// Events read from the store per republish page.
const PAGE: usize = 1000;
/// Publishes awaiting their ack, at most. async-nats lets a JetStream context have
/// 5,000 in flight and makes the next publish wait for a permit that only a finished
/// (or dropped) ack frees: a publisher that held more unawaited acks than that would
/// wait for itself forever.
const IN_FLIGHT: usize = 1000;
/// How long reading a subject's seqs waits for the next message.
const SCAN_WAIT: Duration = Duration::from_secs(5);

/// What the publisher has sent of one session.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    /// The highest seq acknowledged, or in flight this round.
    seq: u64,
    /// The subject's message count once everything sent is stored.
    msgs: u64,
}

/// A live message's ack as it resolves: the session, the run's last seq and what
/// JetStream answered.
type Acked = (Arc<str>, u64, Result<PublishAck, PublishError>);

/// The publisher's state.
struct Publisher {
    cluster: Cluster,
    /// What was sent per local session that is not behind.
    sent: HashMap<Arc<str>, Sent>,
    /// Sessions to catch up from the store.
    behind: HashSet<Arc<str>>,
    /// Live messages awaiting their ack, oldest first (at most [`IN_FLIGHT`]).
    in_flight: FuturesOrdered<LocalBoxFuture<'static, Acked>>,
    /// Other nodes' copies of local sessions and how far they delivered.
    followers: Followers,
}

/// Runs until the runtime's writer stops.
pub(super) async fn run(cluster: Cluster, mut rx: UnboundedReceiver<Vec<StoredEvent>>) {
    let behind = cluster
        .inner
        .runtime
        .sessions()
        .local_sessions()
        .into_iter()
        .filter(|s| s.last_seq > 0)
        .map(|s| Arc::from(s.id.as_str()))
        .collect();
    let mut publisher = Publisher {
        cluster,
        sent: HashMap::new(),
        behind,
        in_flight: FuturesOrdered::new(),
        followers: Followers::default(),
    };
    let reports = publisher
        .cluster
        .inner
        .client
        .subscribe(delivered::subject(publisher.cluster.node()))
        .await;
    let mut reports = match reports {
        Ok(sub) => Some(sub),
        Err(e) => {
            tracing::warn!(error = %e, "delivery reports unavailable: other nodes' clients will not pace this node's sessions");
            None
        }
    };
    let mut retry = tokio::time::interval(RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sweep = tokio::time::interval(delivered::SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Committed batches are taken while earlier messages await their acks (a
        // window of at most IN_FLIGHT messages), so a batch's events are not held
        // back by the round trip of the one before.
        tokio::select! {
            batch = rx.recv(), if publisher.in_flight.len() < IN_FLIGHT => {
                let Some(mut batch) = batch else {
                    publisher.settle().await;
                    return;
                };
                while let Ok(more) = rx.try_recv() {
                    batch.extend(more);
                }
                publisher.publish_committed(batch).await;
            }
            Some(acked) = publisher.in_flight.next() => publisher.acked(acked),
            Some(report) = async { reports.as_mut()?.next().await } => {
                let sent = &publisher.sent;
                publisher.followers.heard(&report.payload, |sid| sent.get(sid).map(|s| s.seq));
            }
            _ = sweep.tick() => {
                let sent = &publisher.sent;
                publisher.followers.sweep(|sid| sent.get(sid).map(|s| s.seq));
            }
            _ = retry.tick() => {}
        }
        if !publisher.behind.is_empty() {
            publisher.catch_up().await;
        }
    }
}

impl Publisher {
    /// Publishes the events that are next in line, in runs; marks the others'
    /// sessions behind.
    async fn publish_committed(&mut self, batch: Vec<StoredEvent>) {
        let mut runs: HashMap<Arc<str>, Run> = HashMap::new();
        let mut local: Option<(Arc<str>, bool)> = None;
        for ev in batch {
            // Batches come in runs of one session: look each run up once.
            let is_local = match &local {
                Some((sid, yes)) if *sid == ev.session_id => *yes,
                _ => {
                    let yes = self.cluster.inner.runtime.sessions().hosts(&ev.session_id);
                    local = Some((ev.session_id.clone(), yes));
                    if yes {
                        self.followers.gate(&ev.session_id, &ev.gate);
                    }
                    yes
                }
            };
            // A remote session's copy (the mirror's writes) is not ours to publish.
            if !is_local || self.behind.contains(&ev.session_id) {
                continue;
            }
            if ev.seq == 1 && !self.sent.contains_key(&ev.session_id) {
                // A session's first event ever: the stream holds nothing of it (a
                // session with events at start is behind until caught up, and every
                // commit since passed here), so it goes out live at once.
                self.sent.insert(ev.session_id.clone(), Sent::default());
            }
            let Some(sent) = self.sent.get_mut(&ev.session_id) else {
                // Not known yet (first event since start): from the store.
                self.behind.insert(ev.session_id);
                continue;
            };
            if ev.seq <= sent.seq {
                continue;
            }
            if ev.seq != sent.seq + 1 {
                // A gap: from the store.
                self.sent.remove(&ev.session_id);
                self.behind.insert(ev.session_id);
                continue;
            }
            sent.seq = ev.seq;
            let run = runs.entry(ev.session_id.clone()).or_default();
            if !run.push(ev.seq, ev.frame.as_bytes()) {
                let full = std::mem::take(run);
                run.push(ev.seq, ev.frame.as_bytes());
                self.send_live(&ev.session_id, full).await;
            }
        }
        for (sid, run) in runs {
            if !self.behind.contains(&sid) {
                self.send_live(&sid, run).await;
            }
        }
    }

    /// Sends a run gathered from committed events (nothing when the session fell
    /// behind meanwhile); with [`IN_FLIGHT`] messages awaiting their ack, first awaits
    /// the oldest.
    async fn send_live(&mut self, sid: &Arc<str>, mut run: Run) {
        let Some(sent) = self.sent.get_mut(sid) else {
            return;
        };
        if run.is_empty() {
            return;
        }
        sent.msgs += 1;
        let (first, last, payload) = run.take();
        let header = RunHeader {
            first,
            last,
            msgs: sent.msgs,
            high: last,
        };
        match self.send(sid, &header, payload).await {
            Ok(ack) => {
                if self.in_flight.len() >= IN_FLIGHT {
                    if let Some(acked) = self.in_flight.next().await {
                        self.acked(acked);
                    }
                }
                let sid = sid.clone();
                self.in_flight.push_back(Box::pin(async move {
                    let result = ack.into_future().await;
                    (sid, last, result)
                }));
            }
            Err(e) => self.fell_behind(sid, first, &e),
        }
    }

    /// Takes a live message's ack: a session whose ack failed, or whose message
    /// JetStream took for a resend, falls behind. Acks in flight are polled together,
    /// so their timeouts run at once: lost acks (NATS went away) cost one timeout, not
    /// one each.
    fn acked(&mut self, (sid, seq, result): Acked) {
        match result {
            Ok(ack) if ack.duplicate => self.fell_behind(&sid, seq, &RESENT),
            Ok(_) => {}
            Err(e) => self.fell_behind(&sid, seq, &e),
        }
    }

    /// Awaits every live message still in flight.
    async fn settle(&mut self) {
        while let Some(acked) = self.in_flight.next().await {
            self.acked(acked);
        }
    }

    /// Publishing the run ending at `seq` of `sid` failed (or its ack never came, or
    /// JetStream dropped it as a resend: a run may start where an earlier one did and
    /// hold more). Messages after it may still have been stored (sent again on a new
    /// connection after the one that lost it broke): the catch-up finds what the
    /// stream lacks, so nothing is remembered here but that the session is behind.
    fn fell_behind(&mut self, sid: &Arc<str>, seq: u64, error: &dyn std::fmt::Display) {
        if self.behind.insert(sid.clone()) {
            tracing::warn!(session = %sid, seq, %error, "publish failed; will republish from the store");
        }
        self.sent.remove(sid);
    }

    /// Catches up every session that is behind, from the store, once no live message
    /// is in flight (a catch-up reads what the stream holds: a message still on its
    /// way would look like a hole).
    async fn catch_up(&mut self) {
        self.settle().await;
        let sessions: Vec<Arc<str>> = self.behind.iter().cloned().collect();
        for sid in sessions {
            match self.republish(&sid).await {
                Ok(sent) => {
                    self.behind.remove(&sid);
                    self.sent.insert(sid, sent);
                }
                Err(e) => {
                    tracing::debug!(session = %sid, error = %e, "republish failed; retrying");
                    // One failure (NATS away) is enough to know the others would fail.
                    return;
                }
            }
        }
    }

    /// Publishes what the stream lacks of `sid`: the holes below the highest seq it
    /// holds, then what the store has after that; returns what is then sent.
    ///
    /// When the subject's message count equals the count its newest message carries,
    /// no message was lost since a check, and it holds every seq up to the newest's
    /// `high`. Otherwise (a hole, a copy, a message without our headers) the subject
    /// is read once to find what is missing.
    async fn republish(&mut self, sid: &Arc<str>) -> Result<Sent, async_nats::Error> {
        let mut sent = Sent::default();
        if let Some(newest) = self.newest_in_stream(sid).await? {
            let count = self.count_in_stream(sid).await?;
            sent = Sent {
                seq: newest.map_or(0, |n| n.high),
                msgs: count,
            };
            if newest.is_none_or(|n| n.msgs != count) {
                let (held, kept) = self.scan(sid).await?;
                let max = held.iter().copied().max().unwrap_or(0);
                let holes: Vec<u64> = (1..max).filter(|seq| !held.contains(seq)).collect();
                if !holes.is_empty() {
                    tracing::warn!(session = %sid, holes = holes.len(), "filling holes in the stream");
                }
                sent = Sent {
                    seq: max,
                    msgs: kept,
                };
                for (first, end) in runs(&holes) {
                    self.publish_stored(sid, &mut sent, first - 1, end, true)
                        .await?;
                }
            }
        }
        let after = sent.seq;
        self.publish_stored(sid, &mut sent, after, u64::MAX, false)
            .await?;
        Ok(sent)
    }

    /// Publishes the stored events of `sid` after seq `after`, up to seq `upto`, in
    /// runs. A `fill` is below `sent.seq` (a hole), so its messages say the subject's
    /// highest seq is still `sent.seq`; otherwise `sent.seq` advances with each run.
    async fn publish_stored(
        &mut self,
        sid: &Arc<str>,
        sent: &mut Sent,
        mut after: u64,
        upto: u64,
        fill: bool,
    ) -> Result<(), async_nats::Error> {
        while after < upto {
            let store = self.cluster.inner.runtime.store().clone();
            let id = sid.to_string();
            let limit = usize::try_from(upto - after).map_or(PAGE, |n| n.min(PAGE));
            let rows = actix_rt::task::spawn_blocking(move || store.read_events(&id, after, limit))
                .await??;
            let Some((last_read, _)) = rows.last() else {
                break;
            };
            after = *last_read;
            let mut gathered = Vec::new();
            let mut run = Run::default();
            for (seq, frame) in &rows {
                if !run.push(*seq, frame.as_bytes()) {
                    gathered.push(std::mem::take(&mut run));
                    run.push(*seq, frame.as_bytes());
                }
            }
            gathered.push(run);
            let mut acks = Vec::with_capacity(gathered.len());
            for mut run in gathered {
                let (first, last, payload) = run.take();
                sent.msgs += 1;
                if !fill {
                    sent.seq = last;
                }
                let header = RunHeader {
                    first,
                    last,
                    msgs: sent.msgs,
                    high: sent.seq.max(last),
                };
                match self.send(sid, &header, payload).await {
                    Ok(ack) => acks.push((last, ack)),
                    Err(e) => {
                        self.fell_behind(sid, first, &e);
                        return Err(e);
                    }
                }
            }
            let (lasts, acks): (Vec<u64>, Vec<PublishAckFuture>) = acks.into_iter().unzip();
            let results = join_all(acks.into_iter().map(IntoFuture::into_future)).await;
            for (seq, result) in lasts.into_iter().zip(results) {
                let error: async_nats::Error = match result {
                    Ok(ack) if ack.duplicate => RESENT.into(),
                    Ok(_) => continue,
                    Err(e) => e.into(),
                };
                self.fell_behind(sid, seq, &error);
                return Err(error);
            }
            tracing::debug!(session = %sid, upto = after, "republished");
        }
        Ok(())
    }

    /// The events stream, without asking for its info.
    async fn events_stream(
        &self,
    ) -> Result<async_nats::jetstream::stream::Stream<()>, async_nats::Error> {
        Ok(self
            .cluster
            .inner
            .js
            .get_stream_no_info(EVENTS_STREAM)
            .await?)
    }

    /// How many messages the stream holds on `sid`'s subject.
    async fn count_in_stream(&self, sid: &str) -> Result<u64, async_nats::Error> {
        use futures_util::TryStreamExt;
        let stream = self.events_stream().await?;
        let subject = events_subject(sid);
        let mut subjects = stream.info_with_subjects(&subject).await?;
        while let Some((name, count)) = subjects.try_next().await? {
            if name == subject {
                return Ok(count as u64);
            }
        }
        Ok(0)
    }

    /// Reads `sid`'s subject once: every seq it holds, and how many messages it keeps.
    /// A message whose every seq an earlier one holds (a second copy) is deleted.
    async fn scan(&self, sid: &str) -> Result<(HashSet<u64>, u64), async_nats::Error> {
        use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
        use futures_util::StreamExt;
        let stream = self.events_stream().await?;
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: events_subject(sid),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await?;
        let mut messages = consumer.messages().await?;
        let mut held = HashSet::new();
        let mut kept = 0;
        loop {
            let msg = tokio::time::timeout(SCAN_WAIT, messages.next())
                .await
                .map_err(|_| "the stream stopped answering while its seqs were read")?;
            let Some(msg) = msg else { break };
            let msg = msg?;
            let info = msg.info()?;
            let (stream_seq, pending) = (info.stream_sequence, info.pending);
            match msg.headers.as_ref().and_then(RunHeader::decode) {
                Some(run) if (run.first..=run.last).all(|seq| held.contains(&seq)) => {
                    tracing::warn!(session = %sid, first = run.first, last = run.last, "a second copy in the stream; deleted");
                    stream.delete_message(stream_seq).await?;
                }
                Some(run) => {
                    held.extend(run.first..=run.last);
                    kept += 1;
                }
                None => kept += 1,
            }
            if pending == 0 {
                break;
            }
        }
        Ok((held, kept))
    }

    /// The headers of the newest message JetStream holds for `sid`: `None` when it
    /// holds none, `Some(None)` when the newest lacks our headers.
    async fn newest_in_stream(
        &self,
        sid: &str,
    ) -> Result<Option<Option<RunHeader>>, async_nats::Error> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        let stream = self.events_stream().await?;
        match stream
            .get_last_raw_message_by_subject(&events_subject(sid))
            .await
        {
            Ok(msg) => Ok(Some(RunHeader::decode(&msg.headers))),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Hands one run to NATS; the returned future resolves with JetStream's ack.
    async fn send(
        &self,
        sid: &str,
        run: &RunHeader,
        payload: Bytes,
    ) -> Result<PublishAckFuture, async_nats::Error> {
        Ok(self
            .cluster
            .inner
            .events_js
            .publish_with_headers(events_subject(sid), run.encode(sid), payload)
            .await?)
    }
}

/// Why an acknowledged message still puts its session behind.
const RESENT: &str = "JetStream took the message for a resend and dropped it";

/// Ascending seqs as runs `(first, last)` of consecutive ones.
fn runs(seqs: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &seq in seqs {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == seq => *end = seq,
            _ => out.push((seq, seq)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn holes_are_published_as_runs() {
        assert_eq!(super::runs(&[]), vec![]);
        assert_eq!(super::runs(&[3]), vec![(3, 3)]);
        assert_eq!(
            super::runs(&[1, 2, 3, 7, 9, 10]),
            vec![(1, 3), (7, 7), (9, 10)]
        );
    }
}
