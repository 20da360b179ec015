//! This node's copy of a remote session's events, for its own subscribers.
//!
//! An ordered JetStream consumer on the session's subject delivers its messages (runs
//! of events, see [`super::batch`]) in stream order; the mirror writes each event
//! whose seq is the next it lacks into this node's store through the ordinary writer. The gateway sees those commits like any
//! other, so subscribers of the remote session get the same replay (ring, then
//! store pages), live delivery and `lagged` handling as for a local one: never a gap,
//! never a duplicate. Events are written only in seq order: the stream may hold a
//! session's events out of order (a hole the publisher filled after a broken
//! connection), so events that arrive early wait in a bounded buffer until the
//! missing ones come; more than [`MAX_EARLY`] waiting restarts the consumer.
//!
//! Every [`SYNC_EVERY`] events, or when the consumer has had nothing for [`IDLE`],
//! the mirror checks that what it wrote was committed (a failed commit restarts the
//! consumer from what the store holds, so the hole is filled again); one check is in
//! flight at a time and the consumer goes on reading meanwhile. As this node's
//! gateway advances the copy's flow gate, the mirror reports how far it got to the
//! session's node ([`super::delivered`]), which paces the session's producer by it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytestring::ByteString;
use futures_util::StreamExt;

use super::batch::{frames, RunHeader};
use super::{events_subject, Cluster, EVENTS_STREAM};
use crate::flow::FlowGate;
use crate::ids::SessionId;
use crate::store::{StoredEvent, WriteOp};

/// Pause before the consumer is made again after an error.
const RESTART: Duration = Duration::from_secs(1);
/// Events written between two checks that they were committed.
const SYNC_EVERY: u64 = 256;
/// A consumer with nothing more for this long checks what it wrote.
const IDLE: Duration = Duration::from_millis(5);
/// Events that arrived before an earlier one and wait for it, at most.
const MAX_EARLY: usize = 100_000;

/// Follows one remote session for the life of the node.
pub(super) async fn run(cluster: Cluster, session_id: SessionId) {
    loop {
        match follow(&cluster, &session_id).await {
            Ok(()) => tracing::debug!(session = %session_id, "mirror consumer ended"),
            Err(e) => {
                tracing::warn!(session = %session_id, error = %e, "mirror failed; restarting")
            }
        }
        tokio::time::sleep(RESTART).await;
    }
}

/// The newest seq this node's store holds for a session.
async fn stored_last(cluster: &Cluster, session_id: &str) -> Result<u64, async_nats::Error> {
    let store = cluster.inner.runtime.store().clone();
    let id = session_id.to_string();
    let last = actix_rt::task::spawn_blocking(move || {
        store.with_reader(|conn| {
            conn.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?1",
                [&id],
                |row| row.get::<_, i64>(0),
            )
        })
    })
    .await??;
    Ok(u64::try_from(last).unwrap_or(0))
}

/// One consumer's life: from what the store has to the end of the stream, then live.
async fn follow(cluster: &Cluster, session_id: &str) -> Result<(), async_nats::Error> {
    use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
    let last = stored_last(cluster, session_id).await?;
    let stream = cluster.inner.js.get_stream_no_info(EVENTS_STREAM).await?;
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: events_subject(session_id),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await?;
    let mut messages = consumer.messages().await?;
    let writer = cluster.inner.runtime.writer().clone();
    let sid: Arc<str> = Arc::from(session_id);
    let gate = Arc::new(FlowGate::new(last));
    // How far this node's clients got, told to the session's node as they go.
    let _report = super::delivered::Stop(actix_rt::spawn(super::delivered::report(
        cluster.clone(),
        sid.clone(),
        gate.clone(),
    )));
    let mut next = last + 1;
    let mut epoch = writer.epoch();
    let mut unsynced = 0u64;
    // The check in flight: answered once the writes before it are committed.
    let mut check: Option<Pin<Box<dyn Future<Output = bool> + '_>>> = None;
    let mut early: std::collections::BTreeMap<u64, ByteString> = Default::default();
    loop {
        // Check the commits every SYNC_EVERY events, or when the consumer has nothing
        // more at once: a failed commit would leave a hole to fill again. One check is
        // in flight at a time, and the consumer goes on reading meanwhile.
        if check.is_none() && unsynced >= SYNC_EVERY {
            check = Some(Box::pin(writer.synced_since(epoch)));
            epoch = writer.epoch();
            unsynced = 0;
        }
        let idle = check.is_none() && unsynced > 0;
        let msg = tokio::select! {
            committed = async {
                match check.as_mut() {
                    Some(c) => c.await,
                    None => std::future::pending().await,
                }
            } => {
                if !committed {
                    return Err("a copied event was not committed".into());
                }
                check = None;
                continue;
            }
            m = messages.next() => m,
            () = tokio::time::sleep(IDLE), if idle => {
                check = Some(Box::pin(writer.synced_since(epoch)));
                epoch = writer.epoch();
                unsynced = 0;
                continue;
            }
        };
        let Some(msg) = msg else { return Ok(()) };
        let msg = msg?;
        let Some(run) = msg.headers.as_ref().and_then(RunHeader::decode) else {
            tracing::warn!(session = %session_id, "a message without a seq header skipped");
            continue;
        };
        if run.last < next {
            continue;
        }
        for (seq, frame) in frames(&run, &msg.payload)? {
            if seq < next || early.contains_key(&seq) {
                continue;
            }
            let frame = ByteString::try_from(frame).map_err(|_| "an event frame is not UTF-8")?;
            if seq > next {
                if early.len() >= MAX_EARLY {
                    return Err(
                        format!("seq {next} still missing after {MAX_EARLY} later ones").into(),
                    );
                }
                early.insert(seq, frame);
                continue;
            }
            let mut frame = Some(frame);
            while let Some(f) = frame.take().or_else(|| early.remove(&next)) {
                writer.write(WriteOp::Event(StoredEvent {
                    session_id: sid.clone(),
                    seq: next,
                    frame: f,
                    gate: gate.clone(),
                }))?;
                next += 1;
                unsynced += 1;
            }
        }
    }
}
