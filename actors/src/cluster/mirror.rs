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
//! The mirror is the copy's producer, and it is paced as a local session's producer
//! is: it writes at most [`WINDOW`] events past the copy's flow gate (what this node's
//! gateway has fanned out to the clients that keep up), and waits there, at most
//! [`PACE_LIMIT`] at a time, before it reads on. Without that a backlog the consumer
//! gets all at once (a NATS restart, a paused or slow owner) went into the store as
//! fast as it was read, the writer committed it in a few large batches, and a client
//! that kept up was handed more than its byte budget in one go and told it lagged.
//!
//! Every [`SYNC_EVERY`] events, or when the consumer has had nothing for [`IDLE`],
//! the mirror checks that what it wrote was committed (a failed commit restarts the
//! consumer from what the store holds, so the hole is filled again); one check is in
//! flight at a time and the consumer goes on reading meanwhile. As for a local
//! session, the writer drops the copy's writes from a failed commit on until they
//! are resumed, which the mirror does as it restarts, before it reads what the store
//! holds: no write queued after the failure is stored above the hole. As this node's
//! gateway advances the copy's flow gate, the mirror reports how far it got to the
//! session's node ([`super::delivered`]), which paces the session's producer by it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytestring::ByteString;
use futures_util::StreamExt;

use super::batch::{frames, RunHeader};
use super::{events_subject, Cluster, EVENTS_STREAM};
use crate::flow::FlowGate;
use crate::ids::SessionId;
use crate::store::{StoreWriter, StoredEvent, WriteOp};

/// Pause before the consumer is made again after an error.
const RESTART: Duration = Duration::from_secs(1);
/// Events written between two checks that they were committed.
const SYNC_EVERY: u64 = 256;
/// A consumer with nothing more for this long checks what it wrote.
const IDLE: Duration = Duration::from_millis(5);
/// Events that arrived before an earlier one and wait for it, at most.
const MAX_EARLY: usize = 100_000;
/// Events the copy is written ahead of its flow gate, at most: what a local producer
/// may run ahead of its own (it waits every 32 events until all but the last 32 were
/// fanned out, `PACE_WINDOW` in `session/turn.rs`).
const WINDOW: u64 = 64;
/// Longest the mirror waits at its gate before it writes a window more anyway (a
/// local producer's `PACE_LIMIT`): a gate that does not open must not stop the copy.
const PACE_LIMIT: Duration = Duration::from_secs(1);

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
    let writer = cluster.inner.runtime.writer().clone();
    let sid: Arc<str> = Arc::from(session_id);
    // After a failed commit the writer drops the copy's writes until they are resumed
    // here (the runtime leaves that to the mirror): the previous consumer's writes,
    // all queued before this, are stored or dropped by the time the marker after it
    // comes back, so what the store holds is read after them.
    writer.write(WriteOp::Resume(sid.clone()))?;
    let _ = writer.synced_since(writer.epoch()).await;
    let last = stored_last(cluster, session_id).await?;
    let mut messages = ordered_events(cluster, session_id).await?;
    let gate = Arc::new(FlowGate::new(last));
    // How far this node's clients got, told to the session's node as they go.
    let _report = super::delivered::Stop(actix_rt::spawn(super::delivered::report(
        cluster.clone(),
        sid.clone(),
        gate.clone(),
    )));
    let mut window = Window::new(gate, PACE_LIMIT);
    let mut next = last + 1;
    let mut epoch = writer.epoch();
    let mut unsynced = 0u64;
    // The check in flight: answered once the writes before it are committed.
    let mut check: Option<Pin<Box<dyn Future<Output = bool> + '_>>> = None;
    // Frames read and not written yet, by seq: the next ones in line, waiting for the
    // window, and those that came early, waiting for an earlier one.
    let mut unwritten = Unwritten::new();
    loop {
        unsynced += write_in_line(&writer, &sid, &window, &mut next, &mut unwritten)?;
        // The next event is here but the window is full: wait at the gate, and read
        // nothing more meanwhile.
        let paced = unwritten.contains_key(&next);
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
            () = window.wait(next), if paced => continue,
            m = messages.next(), if !paced => m,
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
        keep_frames(&run, &msg.payload, next, &mut unwritten)?;
    }
}

/// Frames read and not written yet, by seq.
type Unwritten = std::collections::BTreeMap<u64, ByteString>;

/// An ordered consumer's messages: the session's events from the stream's start.
async fn ordered_events(
    cluster: &Cluster,
    session_id: &str,
) -> Result<async_nats::jetstream::consumer::pull::Ordered, async_nats::Error> {
    use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
    let stream = cluster.inner.js.get_stream_no_info(EVENTS_STREAM).await?;
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: events_subject(session_id),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await?;
    Ok(consumer.messages().await?)
}

/// Writes the frames next in line from `next` on, as far as `window` goes, moving
/// `next` past them: how many it wrote.
fn write_in_line(
    writer: &StoreWriter,
    sid: &Arc<str>,
    window: &Window,
    next: &mut u64,
    unwritten: &mut Unwritten,
) -> Result<u64, async_nats::Error> {
    let mut written = 0;
    while window.open(*next) {
        let Some(frame) = unwritten.remove(next) else {
            break;
        };
        writer.write(WriteOp::Event(StoredEvent {
            session_id: sid.clone(),
            seq: *next,
            frame,
            gate: window.gate.clone(),
        }))?;
        *next += 1;
        written += 1;
    }
    Ok(written)
}

/// Keeps the frames of `run` (in `payload`) that are neither written (below `next`)
/// nor kept yet; too many waiting for a missing `next` is an error.
fn keep_frames(
    run: &RunHeader,
    payload: &bytes::Bytes,
    next: u64,
    unwritten: &mut Unwritten,
) -> Result<(), async_nats::Error> {
    for (seq, frame) in frames(run, payload)? {
        if seq < next || unwritten.contains_key(&seq) {
            continue;
        }
        if seq > next && unwritten.len() >= MAX_EARLY {
            return Err(format!("seq {next} still missing after {MAX_EARLY} later ones").into());
        }
        let frame = ByteString::try_from(frame).map_err(|_| "an event frame is not UTF-8")?;
        unwritten.insert(seq, frame);
    }
    Ok(())
}

/// How far the copy may be written: [`WINDOW`] events past its flow gate, or as far
/// as a wait at the gate that gave up allowed.
struct Window {
    gate: Arc<FlowGate>,
    /// The most a wait lets the mirror wait at a time.
    limit: Duration,
    /// Writable up to here whatever the gate says: a wait gave up.
    granted: u64,
    /// The seq waited for and since when: a wait cut short by the mirror's other work
    /// (a commit check) goes on with the time it has left.
    waiting: Option<(u64, Instant)>,
}

impl Window {
    fn new(gate: Arc<FlowGate>, limit: Duration) -> Window {
        Window {
            gate,
            limit,
            granted: 0,
            waiting: None,
        }
    }

    /// Whether event `seq` may be written now.
    fn open(&self, seq: u64) -> bool {
        seq <= self.gate.published().saturating_add(WINDOW) || seq <= self.granted
    }

    /// Waits until event `seq` may be written, at most the limit; when the gate has
    /// not opened by then, `seq` and the window after it may be written anyway (a
    /// local producer, too, goes on after `PACE_LIMIT`).
    async fn wait(&mut self, seq: u64) {
        let since = match self.waiting {
            Some((waited, since)) if waited == seq => since,
            _ => self.waiting.insert((seq, Instant::now())).1,
        };
        let left = self.limit.saturating_sub(since.elapsed());
        self.gate.wait_for(seq.saturating_sub(WINDOW), left).await;
        if !self.open(seq) {
            self.granted = seq.saturating_add(WINDOW - 1);
        }
        self.waiting = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn the_copy_is_written_at_most_a_window_past_its_gate() {
        let gate = Arc::new(FlowGate::new(10));
        let mut window = Window::new(gate.clone(), Duration::from_secs(3600));
        assert!(window.open(10 + WINDOW));
        assert!(!window.open(11 + WINDOW));
        // The wait ends once the gateway fanned out enough, not before.
        let advance = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            gate.advance(10);
            gate.wake();
            tokio::time::sleep(Duration::from_millis(20)).await;
            gate.advance(11);
            gate.wake();
        };
        let waited = tokio::time::timeout(
            Duration::from_secs(20),
            futures_util::future::join(window.wait(11 + WINDOW), advance),
        )
        .await;
        assert!(waited.is_ok(), "the wait did not end when the gate opened");
        assert!(window.open(11 + WINDOW));
        assert!(!window.open(12 + WINDOW));
    }

    #[actix_rt::test]
    async fn a_gate_that_stays_shut_holds_the_copy_back_no_longer_than_the_limit() {
        let gate = Arc::new(FlowGate::new(0));
        let limit = Duration::from_millis(50);
        let mut window = Window::new(gate.clone(), limit);
        let started = Instant::now();
        let waited = tokio::time::timeout(Duration::from_secs(20), window.wait(WINDOW + 1)).await;
        assert!(waited.is_ok(), "the wait ignored its limit");
        assert!(started.elapsed() >= limit, "gave up before the limit");
        // That seq and a window more may be written, then it waits again.
        assert!(window.open(WINDOW + 1));
        assert!(window.open(2 * WINDOW));
        assert!(!window.open(2 * WINDOW + 1));

        // A wait cut short (the mirror had a commit check to take) goes on with the
        // time it has left, rather than starting its limit again.
        let limit = Duration::from_secs(1);
        let mut window = Window::new(gate, limit);
        let cut = tokio::time::timeout(Duration::from_millis(10), window.wait(WINDOW + 1)).await;
        assert!(cut.is_err());
        tokio::time::sleep(limit).await;
        let started = Instant::now();
        let waited = tokio::time::timeout(Duration::from_secs(20), window.wait(WINDOW + 1)).await;
        assert!(waited.is_ok());
        assert!(
            started.elapsed() < limit / 2,
            "the wait started its limit again"
        );
        assert!(window.open(WINDOW + 1));
    }
}
