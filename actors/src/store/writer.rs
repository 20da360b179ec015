//! The single writer: a dedicated thread that drains a channel of writes and commits
//! them in batches. An event becomes visible to clients only after the batch holding it
//! has committed: the writer hands committed events to a callback (the gateway).

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;

use rusqlite::{params, Connection, Transaction};
use tokio::sync::oneshot;

use super::{connect, Store, StoredEvent};
use crate::error::RuntimeError;
use crate::metrics::Metrics;
use crate::record::{PairRecord, SessionRecord};

/// One write for the store.
#[derive(Debug)]
pub enum WriteOp {
    /// Append a history event.
    Event(StoredEvent),
    /// Insert or replace a session's metadata.
    Session(Box<SessionRecord>),
    /// Insert or replace a pair.
    Pair(Box<PairRecord>),
    /// Remove a dissolved pair.
    DeletePair(String),
    /// Writes that must land together: always in the same transaction.
    Batch(Vec<WriteOp>),
    /// Answered once everything queued before it is committed (dropped unanswered if
    /// that commit fails).
    Sync(oneshot::Sender<()>),
}

impl WriteOp {
    /// After a successful commit: collects the events this write carried (in order)
    /// and answers its sync markers.
    fn committed(self, out: &mut Vec<StoredEvent>) {
        match self {
            WriteOp::Event(ev) => out.push(ev),
            WriteOp::Batch(ops) => ops.into_iter().for_each(|op| op.committed(out)),
            WriteOp::Session(_) | WriteOp::Pair(_) | WriteOp::DeletePair(_) => {}
            WriteOp::Sync(done) => {
                let _ = done.send(());
            }
        }
    }

    fn event_count(&self) -> usize {
        match self {
            WriteOp::Event(_) => 1,
            WriteOp::Batch(ops) => ops.iter().map(WriteOp::event_count).sum(),
            WriteOp::Session(_) | WriteOp::Pair(_) | WriteOp::DeletePair(_) | WriteOp::Sync(_) => 0,
        }
    }
}

/// The sending side of the writer thread's channel; cheap to clone.
#[derive(Clone)]
pub struct StoreWriter {
    tx: Sender<WriteOp>,
}

impl StoreWriter {
    /// Starts the writer thread. `on_commit` receives each committed batch's events in
    /// commit order; it must not block.
    pub fn start(
        store: &Store,
        max_batch: usize,
        metrics: Arc<Metrics>,
        on_commit: Box<dyn FnMut(Vec<StoredEvent>) + Send>,
    ) -> Result<StoreWriter, RuntimeError> {
        let conn = connect(store.path())?;
        // A large page cache keeps the events index hot while many sessions append at
        // once; a larger checkpoint threshold makes the (writer-thread) checkpoints
        // rarer and longer-running instead of frequent.
        conn.pragma_update(None, "cache_size", -65536)?;
        conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("tandem-store-writer".into())
            .spawn(move || run(conn, rx, max_batch.max(1), metrics, on_commit))?;
        Ok(StoreWriter { tx })
    }

    /// Resolves once every write queued before this call is committed; false if that
    /// commit failed or the writer is gone.
    pub fn synced(&self) -> impl std::future::Future<Output = bool> {
        let (tx, rx) = oneshot::channel();
        let queued = self.tx.send(WriteOp::Sync(tx)).is_ok();
        async move { queued && rx.await.is_ok() }
    }

    /// Queues a write. Fails only when the writer thread has died.
    pub fn write(&self, op: WriteOp) -> Result<(), RuntimeError> {
        self.tx
            .send(op)
            .map_err(|_| RuntimeError::Internal("store writer stopped".into()))
    }
}

/// Applies one write inside a transaction.
pub(super) fn apply(tx: &Transaction<'_>, op: &WriteOp) -> Result<(), rusqlite::Error> {
    match op {
        WriteOp::Event(ev) => {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO events (session_id, seq, frame) VALUES (?1, ?2, ?3)",
            )?;
            stmt.execute(params![&*ev.session_id, ev.seq as i64, &*ev.frame])?;
        }
        WriteOp::Session(rec) => upsert_record(
            tx,
            "INSERT INTO sessions (id, record) VALUES (?1, ?2) \
             ON CONFLICT(id) DO UPDATE SET record = excluded.record",
            &rec.id,
            rec,
        )?,
        WriteOp::Pair(rec) => upsert_record(
            tx,
            "INSERT INTO pairs (id, record) VALUES (?1, ?2) \
             ON CONFLICT(id) DO UPDATE SET record = excluded.record",
            &rec.pair_id,
            rec,
        )?,
        WriteOp::DeletePair(id) => {
            tx.prepare_cached("DELETE FROM pairs WHERE id = ?1")?
                .execute([id])?;
        }
        WriteOp::Batch(ops) => {
            for op in ops {
                apply(tx, op)?;
            }
        }
        WriteOp::Sync(_) => {}
    }
    Ok(())
}

/// Stores `record` as JSON under `id` with an upsert statement.
fn upsert_record<T: serde::Serialize>(
    tx: &Transaction<'_>,
    sql: &str,
    id: &str,
    record: &T,
) -> Result<(), rusqlite::Error> {
    let json = serde_json::to_string(record)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    tx.prepare_cached(sql)?.execute(params![id, json])?;
    Ok(())
}

fn run(
    mut conn: Connection,
    rx: Receiver<WriteOp>,
    max_batch: usize,
    metrics: Arc<Metrics>,
    mut on_commit: Box<dyn FnMut(Vec<StoredEvent>) + Send>,
) {
    let mut batch: Vec<WriteOp> = Vec::with_capacity(max_batch.min(4096));
    // Block for the first write, then take whatever else is already waiting: under load
    // batches grow by themselves, and an idle server still commits each write at once.
    while let Ok(first) = rx.recv() {
        batch.push(first);
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        match commit(&mut conn, &batch) {
            Ok(()) => {
                Metrics::inc(&metrics.commits);
                let mut events = Vec::new();
                batch.drain(..).for_each(|op| op.committed(&mut events));
                metrics
                    .events_committed
                    .fetch_add(events.len() as u64, Ordering::Relaxed);
                if !events.is_empty() {
                    on_commit(events);
                }
            }
            Err(e) => {
                // Nothing of a failed batch is published: clients never see an event
                // that is not on disk.
                let lost: usize = batch.iter().map(WriteOp::event_count).sum();
                metrics
                    .store_failures
                    .fetch_add(lost as u64, Ordering::Relaxed);
                tracing::error!(error = %e, events = lost, "store commit failed");
                batch.clear();
            }
        }
    }
    tracing::debug!("store writer stopped");
}

fn commit(conn: &mut Connection, batch: &[WriteOp]) -> Result<(), rusqlite::Error> {
    let tx = conn.transaction()?;
    for op in batch {
        apply(&tx, op)?;
    }
    tx.commit()
}
