//! Publishing committed events to JetStream, in order and exactly once per seq.
//!
//! The publisher sees every committed batch (the runtime's commit tap). For each
//! local session it knows `sent`, the highest seq JetStream has acknowledged (or that
//! is in flight in the current round). The next event in line is published straight
//! from the batch; anything else (the first event after start, a gap, a failed
//! publish or ack) marks the session *behind*: it is then caught up from SQLite, once
//! a second until that succeeds, by asking the stream what it holds for the session's
//! subject rather than remembering what failed. When a connection breaks, the
//! messages in flight on it are lost while later ones may go out on the next
//! connection, so the stream can hold a hole below its last seq; the node may also
//! crash before it republishes. So a catch-up compares the stream's message count for
//! the subject with its last seq: when they differ it reads the subject's seqs,
//! publishes just the missing ones (and deletes a second copy of a seq, should one
//! ever be stored), then everything after the last. Nothing committed is lost by a
//! NATS restart or a node crash, and no seq is stored twice, without relying on
//! JetStream's duplicate window (2 minutes; the message id `<id>:<seq>` still guards
//! the race of a resend). Filled holes mean the stream is not always in seq order;
//! readers order by seq (see [`super::mirror`]).

use std::collections::{HashMap, HashSet};
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::context::PublishAckFuture;
use async_nats::HeaderMap;
use futures_util::future::join_all;
use tokio::sync::mpsc::UnboundedReceiver;

use super::{events_subject, Cluster, EVENTS_STREAM, SEQ_HEADER};
use crate::store::StoredEvent;

/// How often sessions that are behind are retried.
const RETRY: Duration = Duration::from_secs(1);
/// Events read from the store per republish page.
const PAGE: usize = 1000;
/// Publishes awaiting their ack, at most. async-nats lets a JetStream context have
/// 5,000 in flight and makes the next publish wait for a permit that only a finished
/// (or dropped) ack frees: a publisher that held more unawaited acks than that would
/// wait for itself forever. (It did: a burst of 20,000 events stalled every
/// cross-node delivery.)
const IN_FLIGHT: usize = 1000;
/// How long reading a subject's seqs waits for the next message.
const SCAN_WAIT: Duration = Duration::from_secs(5);

/// The publisher's state.
struct Publisher {
    cluster: Cluster,
    /// Highest seq acknowledged (or in flight this round) per local session.
    sent: HashMap<Arc<str>, u64>,
    /// Sessions to catch up from the store.
    behind: HashSet<Arc<str>>,
}

/// Runs until the runtime's writer stops.
pub(super) async fn run(cluster: Cluster, mut rx: UnboundedReceiver<Vec<StoredEvent>>) {
    let behind = cluster
        .inner
        .runtime
        .local_sessions()
        .into_iter()
        .filter(|s| s.last_seq > 0)
        .map(|s| Arc::from(s.id.as_str()))
        .collect();
    let mut publisher = Publisher {
        cluster,
        sent: HashMap::new(),
        behind,
    };
    let mut retry = tokio::time::interval(RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            batch = rx.recv() => {
                let Some(mut batch) = batch else { return };
                while let Ok(more) = rx.try_recv() {
                    batch.extend(more);
                }
                publisher.publish_committed(batch).await;
            }
            _ = retry.tick() => publisher.catch_up().await,
        }
    }
}

impl Publisher {
    /// Publishes the events that are next in line; marks the others' sessions behind.
    async fn publish_committed(&mut self, batch: Vec<StoredEvent>) {
        let mut pending: Vec<(Arc<str>, u64, PublishAckFuture)> = Vec::new();
        let mut local: Option<(Arc<str>, bool)> = None;
        for ev in batch {
            // Batches come in runs of one session: look each run up once.
            let is_local = match &local {
                Some((sid, yes)) if *sid == ev.session_id => *yes,
                _ => {
                    let yes = self.cluster.inner.runtime.hosts(&ev.session_id);
                    local = Some((ev.session_id.clone(), yes));
                    yes
                }
            };
            // A remote session's copy (the mirror's writes) is not ours to publish.
            if !is_local || self.behind.contains(&ev.session_id) {
                continue;
            }
            match self.sent.get(&ev.session_id).copied() {
                Some(sent) if ev.seq <= sent => {}
                Some(sent) if ev.seq == sent + 1 => {
                    match self.send(&ev.session_id, ev.seq, ev.frame.as_bytes()).await {
                        Ok(ack) => {
                            self.sent.insert(ev.session_id.clone(), ev.seq);
                            pending.push((ev.session_id, ev.seq, ack));
                            if pending.len() >= IN_FLIGHT {
                                self.await_acks(std::mem::take(&mut pending)).await;
                            }
                        }
                        Err(e) => self.fell_behind(&ev.session_id, ev.seq, &e),
                    }
                }
                // Not known yet (first event since start) or a gap: from the store.
                _ => {
                    self.behind.insert(ev.session_id);
                }
            }
        }
        self.await_acks(pending).await;
        if !self.behind.is_empty() {
            self.catch_up().await;
        }
    }

    /// Awaits the acks of what was just published; a session whose ack failed falls
    /// behind. Awaited together: each ack's timeout starts when it is first polled,
    /// so awaiting lost acks one by one (NATS went away) would take 5 s each.
    async fn await_acks(&mut self, pending: Vec<(Arc<str>, u64, PublishAckFuture)>) {
        let (keys, acks): (Vec<(Arc<str>, u64)>, Vec<PublishAckFuture>) = pending
            .into_iter()
            .map(|(sid, seq, ack)| ((sid, seq), ack))
            .unzip();
        let results = join_all(acks.into_iter().map(IntoFuture::into_future)).await;
        for ((sid, seq), result) in keys.iter().zip(results) {
            if let Err(e) = result {
                self.fell_behind(sid, *seq, &e);
            }
        }
    }

    /// Publishing `seq` of `sid` failed (or its ack never came). Messages after it
    /// may still have been stored (sent again on a new connection after the one that
    /// lost it broke): the catch-up finds what the stream lacks, so nothing is
    /// remembered here but that the session is behind.
    fn fell_behind(&mut self, sid: &Arc<str>, seq: u64, error: &dyn std::fmt::Display) {
        if self.behind.insert(sid.clone()) {
            tracing::warn!(session = %sid, seq, %error, "publish failed; will republish from the store");
        }
        self.sent.remove(sid);
    }

    /// Catches up every session that is behind, from the store.
    async fn catch_up(&mut self) {
        let sessions: Vec<Arc<str>> = self.behind.iter().cloned().collect();
        for sid in sessions {
            match self.republish(&sid).await {
                Ok(last) => {
                    self.behind.remove(&sid);
                    self.sent.insert(sid, last);
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
    /// holds, then what the store has after that; returns the last seq published.
    ///
    /// When the subject's newest message is seq `n` and it holds `n` messages, it
    /// holds exactly `1..=n`: holes are filled in ascending order, so a filled hole
    /// stored last has every seq below it, and a second copy is deleted when found.
    /// Otherwise (a hole, a filled hole stored after later seqs, a copy) the subject
    /// is read once to find what is missing.
    async fn republish(&mut self, sid: &Arc<str>) -> Result<u64, async_nats::Error> {
        let newest = self.last_in_stream(sid).await?;
        let mut highest = newest;
        if newest > 0 && self.count_in_stream(sid).await? != newest {
            let (max, holes) = self.scan(sid).await?;
            if !holes.is_empty() {
                tracing::warn!(session = %sid, holes = holes.len(), "filling holes in the stream");
            }
            for (first, end) in runs(&holes) {
                self.publish_stored(sid, first - 1, end).await?;
            }
            highest = max;
        }
        self.publish_stored(sid, highest, u64::MAX).await
    }

    /// Publishes the stored events of `sid` after seq `after`, up to seq `upto`;
    /// returns the last seq published (`after` when there was none).
    async fn publish_stored(
        &mut self,
        sid: &Arc<str>,
        mut after: u64,
        upto: u64,
    ) -> Result<u64, async_nats::Error> {
        while after < upto {
            let store = self.cluster.inner.runtime.store().clone();
            let id = sid.to_string();
            let limit = usize::try_from(upto - after).map_or(PAGE, |n| n.min(PAGE));
            let rows = actix_rt::task::spawn_blocking(move || store.read_events(&id, after, limit))
                .await??;
            if rows.is_empty() {
                break;
            }
            let mut acks = Vec::with_capacity(rows.len());
            let mut seqs = Vec::with_capacity(rows.len());
            for (seq, frame) in rows {
                match self.send(sid, seq, frame.as_bytes()).await {
                    Ok(ack) => acks.push(ack),
                    Err(e) => {
                        self.fell_behind(sid, seq, &e);
                        return Err(e);
                    }
                }
                seqs.push(seq);
                after = seq;
            }
            let results = join_all(acks.into_iter().map(IntoFuture::into_future)).await;
            for (seq, result) in seqs.into_iter().zip(results) {
                if let Err(e) = result {
                    self.fell_behind(sid, seq, &e);
                    return Err(e.into());
                }
            }
            tracing::debug!(session = %sid, upto = after, "republished");
        }
        Ok(after)
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

    /// Reads `sid`'s subject once: the highest seq it holds and the seqs below that
    /// it lacks, ascending. A second copy of a seq is deleted from the stream.
    async fn scan(&self, sid: &str) -> Result<(u64, Vec<u64>), async_nats::Error> {
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
        loop {
            let msg = tokio::time::timeout(SCAN_WAIT, messages.next())
                .await
                .map_err(|_| "the stream stopped answering while its seqs were read")?;
            let Some(msg) = msg else { break };
            let msg = msg?;
            let info = msg.info()?;
            let (stream_seq, pending) = (info.stream_sequence, info.pending);
            if let Some(seq) = msg.headers.as_ref().and_then(seq_of) {
                if !held.insert(seq) {
                    tracing::warn!(session = %sid, seq, "a second copy in the stream; deleted");
                    stream.delete_message(stream_seq).await?;
                }
            }
            if pending == 0 {
                break;
            }
        }
        let max = held.iter().copied().max().unwrap_or(0);
        let holes = (1..max).filter(|seq| !held.contains(seq)).collect();
        Ok((max, holes))
    }

    /// The seq of the newest message JetStream holds for `sid` (0 when none); not
    /// the highest seq when a filled hole was stored last.
    async fn last_in_stream(&self, sid: &str) -> Result<u64, async_nats::Error> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        let stream = self.events_stream().await?;
        match stream
            .get_last_raw_message_by_subject(&events_subject(sid))
            .await
        {
            Ok(msg) => Ok(seq_of(&msg.headers).unwrap_or(0)),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Hands one event to NATS; the returned future resolves with JetStream's ack.
    async fn send(
        &self,
        sid: &str,
        seq: u64,
        frame: &[u8],
    ) -> Result<PublishAckFuture, async_nats::Error> {
        let mut headers = HeaderMap::new();
        headers.insert(
            async_nats::header::NATS_MESSAGE_ID,
            format!("{sid}:{seq}").as_str(),
        );
        headers.insert(SEQ_HEADER, seq.to_string().as_str());
        Ok(self
            .cluster
            .inner
            .events_js
            .publish_with_headers(
                events_subject(sid),
                headers,
                bytes::Bytes::copy_from_slice(frame),
            )
            .await?)
    }
}

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

/// The event seq a published message carries.
pub(super) fn seq_of(headers: &HeaderMap) -> Option<u64> {
    headers.get(SEQ_HEADER)?.as_str().parse().ok()
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
