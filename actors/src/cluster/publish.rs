//! Publishing committed events to JetStream, in order and exactly once per seq.
//!
//! The publisher sees every committed batch (the runtime's commit tap). For each
//! local session it knows `sent`, the highest seq JetStream has acknowledged (or that
//! is in flight in the current round). The next event in line is published straight
//! from the batch; anything else (the first event after start, a gap, a failed
//! publish or ack) marks the session *behind*: it is then republished from SQLite,
//! starting after the last seq the stream holds for its subject, or at the first seq
//! whose publish failed if that is earlier, once a second until it catches up. (When a
//! connection breaks, the messages in flight on it are lost while later ones may be
//! sent on the next connection, so the stream can hold a hole below its last seq.)
//! So a NATS restart or a node restart loses no committed event, and none is stored
//! twice: the restart point comes from the stream itself or from the failed ack, and
//! the message id `<id>:<seq>` lets JetStream's duplicate window (2 minutes) drop a
//! resend it already holds. Filled holes mean the stream is not always in seq order;
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

/// The publisher's state.
struct Publisher {
    cluster: Cluster,
    /// Highest seq acknowledged (or in flight this round) per local session.
    sent: HashMap<Arc<str>, u64>,
    /// Sessions to republish from the store.
    behind: HashSet<Arc<str>>,
    /// The first seq whose publish failed, per session behind: republished from
    /// there even when the stream holds later ones.
    resume: HashMap<Arc<str>, u64>,
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
        resume: HashMap::new(),
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
    /// lost it broke), so the republish starts at `seq` itself, not after the
    /// stream's last: JetStream drops the resends it already has by message id.
    fn fell_behind(&mut self, sid: &Arc<str>, seq: u64, error: &dyn std::fmt::Display) {
        if self.behind.insert(sid.clone()) {
            tracing::warn!(session = %sid, seq, %error, "publish failed; will republish from the store");
        }
        self.sent.remove(sid);
        let from = self.resume.entry(sid.clone()).or_insert(seq);
        *from = (*from).min(seq);
    }

    /// Republishes every session that is behind, from the store.
    async fn catch_up(&mut self) {
        let sessions: Vec<Arc<str>> = self.behind.iter().cloned().collect();
        for sid in sessions {
            match self.republish(&sid).await {
                Ok(last) => {
                    self.behind.remove(&sid);
                    self.resume.remove(&sid);
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

    /// Publishes what the store has after the stream's last seq for `sid`; returns
    /// the last seq published.
    async fn republish(&mut self, sid: &Arc<str>) -> Result<u64, async_nats::Error> {
        let mut after = self.last_in_stream(sid).await?;
        if let Some(failed) = self.resume.get(sid) {
            after = after.min(failed.saturating_sub(1));
        }
        loop {
            let store = self.cluster.inner.runtime.store().clone();
            let id = sid.to_string();
            let rows = actix_rt::task::spawn_blocking(move || store.read_events(&id, after, PAGE))
                .await??;
            if rows.is_empty() {
                return Ok(after);
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
    }

    /// The seq of the newest event JetStream holds for `sid` (0 when none).
    async fn last_in_stream(&self, sid: &str) -> Result<u64, async_nats::Error> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        let stream = self
            .cluster
            .inner
            .js
            .get_stream_no_info(EVENTS_STREAM)
            .await?;
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

/// The event seq a published message carries.
pub(super) fn seq_of(headers: &HeaderMap) -> Option<u64> {
    headers.get(SEQ_HEADER)?.as_str().parse().ok()
}
