//! The single writer: a dedicated thread that drains a channel of writes and commits
//! them in batches. An event becomes visible to clients only after the batch holding it
//! has committed: the writer hands committed events to a callback (the gateway).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;

use rusqlite::{params, Connection, Transaction};
use tokio::sync::oneshot;

use super::{connect, Store, StoredEvent};
use crate::error::RuntimeError;
use crate::ids::PairId;
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
    DeletePair(PairId),
    /// Writes that must land together: always in the same transaction.
    Batch(Vec<WriteOp>),
    /// Answered once everything queued before it is committed (dropped unanswered if
    /// that commit fails, or while any session is still recovering from a failed one:
    /// an acknowledgement must never cover a dropped write).
    /// The number is the writer's failure count the caller saw before it made its
    /// writes: a failure since then may have hit them, so the marker is not answered.
    Sync(oneshot::Sender<()>, u64),
    /// The session has reloaded its state from disk after a failed commit; its writes
    /// are taken again from here on (see [`StoreFailure`]).
    Resume(Arc<str>),
}

/// A commit failed. The sessions whose writes were in it must reload their state from
/// disk (their `seq` counter and metadata ran ahead of it); until each sends
/// [`WriteOp::Resume`], the writer drops their writes, so no later event can land
/// after a hole.
#[derive(Debug, Clone)]
pub struct StoreFailure {
    /// Sessions whose writes were lost.
    pub sessions: Vec<Arc<str>>,
    /// What SQLite said; each session quotes it in its history.
    pub error: String,
}

/// Callbacks of the writer thread; they must not block.
pub struct WriterHooks {
    /// Each committed batch's events, in commit order.
    pub on_commit: Box<dyn FnMut(Vec<StoredEvent>) + Send>,
    /// A commit failed: the runtime tells each listed session to reload.
    pub on_failure: Box<dyn FnMut(StoreFailure) + Send>,
    /// Commits have failed without a success for longer than the configured limit:
    /// the store is not coming back; the server must stop.
    pub on_give_up: Box<dyn FnOnce(String) + Send>,
}

impl WriteOp {
    /// Adds the sessions this write touches to `out`.
    fn sessions(&self, out: &mut Vec<Arc<str>>) {
        match self {
            WriteOp::Event(ev) => out.push(ev.session_id.clone()),
            WriteOp::Session(rec) => out.push(rec.id.as_str().into()),
            WriteOp::Batch(ops) => ops.iter().for_each(|op| op.sessions(out)),
            WriteOp::Pair(_) | WriteOp::DeletePair(_) | WriteOp::Sync(..) | WriteOp::Resume(_) => {}
        }
    }

    /// After a successful commit: collects the events this write carried (in order)
    /// and answers its sync markers.
    fn committed(self, out: &mut Vec<StoredEvent>) {
        match self {
            WriteOp::Event(ev) => out.push(ev),
            WriteOp::Batch(ops) => ops.into_iter().for_each(|op| op.committed(out)),
            WriteOp::Session(_)
            | WriteOp::Pair(_)
            | WriteOp::DeletePair(_)
            | WriteOp::Resume(_) => {}
            WriteOp::Sync(done, _) => {
                let _ = done.send(());
            }
        }
    }

    fn event_count(&self) -> usize {
        match self {
            WriteOp::Event(_) => 1,
            WriteOp::Batch(ops) => ops.iter().map(WriteOp::event_count).sum(),
            WriteOp::Session(_)
            | WriteOp::Pair(_)
            | WriteOp::DeletePair(_)
            | WriteOp::Sync(..)
            | WriteOp::Resume(_) => 0,
        }
    }
}

/// The sending side of the writer thread's channel; cheap to clone.
#[derive(Clone)]
pub struct StoreWriter {
    tx: Sender<WriteOp>,
    /// Failed commits and dropped writes so far; see [`StoreWriter::epoch`].
    failures: Arc<AtomicU64>,
}

impl StoreWriter {
    /// Starts the writer thread. Commits that keep failing for `give_up_after` (with
    /// no success in between) end in `hooks.on_give_up`.
    pub fn start(
        store: &Store,
        max_batch: usize,
        give_up_after: std::time::Duration,
        metrics: Arc<Metrics>,
        hooks: WriterHooks,
    ) -> Result<StoreWriter, RuntimeError> {
        let conn = connect(store.path())?;
        // A large page cache keeps the events index hot while many sessions append at
        // once; a larger checkpoint threshold makes the (writer-thread) checkpoints
        // rarer and longer-running instead of frequent.
        conn.pragma_update(None, "cache_size", -65536)?;
        conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
        let (tx, rx) = mpsc::channel();
        let failures = Arc::new(AtomicU64::new(0));
        let counted = failures.clone();
        std::thread::Builder::new()
            .name("tandem-store-writer".into())
            .spawn(move || {
                Writer {
                    conn,
                    metrics,
                    hooks: Some(hooks),
                    recovering: HashSet::new(),
                    failing_since: None,
                    give_up_after,
                    failures: counted,
                }
                .run(rx, max_batch.max(1))
            })?;
        Ok(StoreWriter { tx, failures })
    }

    /// The writer's failure count now. Take it before making writes and pass it to
    /// [`StoreWriter::synced_since`]: a write may fail before the sync is queued.
    pub fn epoch(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    /// Resolves true once every write queued before this call is committed and no
    /// commit failed (nor any write was dropped) since `epoch`; false otherwise. False
    /// can mean "maybe stored": it never acknowledges what is not on disk.
    pub fn synced_since(&self, epoch: u64) -> impl std::future::Future<Output = bool> {
        let (tx, rx) = oneshot::channel();
        let queued = self.tx.send(WriteOp::Sync(tx, epoch)).is_ok();
        async move { queued && rx.await.is_ok() }
    }

    /// Queues a write. Fails only when the writer thread has died.
    pub fn write(&self, op: WriteOp) -> Result<(), RuntimeError> {
        self.tx
            .send(op)
            .map_err(|_| RuntimeError::Internal("store writer stopped".into()))
    }
}

/// Stores one history event.
pub(super) const INSERT_EVENT: &str =
    "INSERT INTO events (session_id, seq, frame) VALUES (?1, ?2, ?3)";

/// Events stored by one multi-row statement ([`insert_many_sql`]).
const ROWS_PER_INSERT: usize = 32;

/// `INSERT` of [`ROWS_PER_INSERT`] events in one statement: one statement run (one
/// VDBE start, one reset) per 32 events instead of per event.
fn insert_many_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        let rows = vec!["(?, ?, ?)"; ROWS_PER_INSERT].join(", ");
        format!("INSERT INTO events (session_id, seq, frame) VALUES {rows}")
    })
}

/// Applies writes inside a transaction, in order. Runs of consecutive events (a busy
/// server queues hundreds per commit) go through one [`ROWS_PER_INSERT`]-row
/// statement per full group of that many and the single-row [`INSERT_EVENT`] for the
/// rest; both are prepared once per call. Other writes go one by one.
pub(super) fn apply_all(tx: &Transaction<'_>, ops: &[WriteOp]) -> Result<(), rusqlite::Error> {
    let mut events = EventRows {
        one: tx.prepare_cached(INSERT_EVENT)?,
        many: None,
        run: Vec::with_capacity(ROWS_PER_INSERT),
    };
    for op in ops {
        apply(tx, &mut events, op)?;
    }
    events.flush()
}

/// Events waiting to be inserted as a group, and the statements that insert them.
struct EventRows<'c, 'e> {
    /// [`INSERT_EVENT`].
    one: rusqlite::CachedStatement<'c>,
    /// The [`ROWS_PER_INSERT`]-row statement, prepared at the first full group.
    many: Option<rusqlite::CachedStatement<'c>>,
    /// Consecutive events not inserted yet (fewer than [`ROWS_PER_INSERT`]).
    run: Vec<&'e StoredEvent>,
}

impl<'c, 'e> EventRows<'c, 'e> {
    /// Queues one event; a full group is inserted at once.
    fn push(
        &mut self,
        tx: &'c Transaction<'_>,
        ev: &'e StoredEvent,
    ) -> Result<(), rusqlite::Error> {
        self.run.push(ev);
        if self.run.len() < ROWS_PER_INSERT {
            return Ok(());
        }
        let many = match &mut self.many {
            Some(stmt) => stmt,
            None => self.many.insert(tx.prepare_cached(insert_many_sql())?),
        };
        for (i, ev) in self.run.drain(..).enumerate() {
            many.raw_bind_parameter(3 * i + 1, &*ev.session_id)?;
            many.raw_bind_parameter(3 * i + 2, ev.seq as i64)?;
            many.raw_bind_parameter(3 * i + 3, &*ev.frame)?;
        }
        many.raw_execute()?;
        Ok(())
    }

    /// Inserts the queued events one by one (before a write that is not an event, and
    /// at the end).
    fn flush(&mut self) -> Result<(), rusqlite::Error> {
        for ev in self.run.drain(..) {
            self.one
                .execute(params![&*ev.session_id, ev.seq as i64, &*ev.frame])?;
        }
        Ok(())
    }
}

/// Applies one write inside a transaction; events are queued in `events` (see
/// [`apply_all`]), everything else is written at once, after the queued events.
fn apply<'c, 'e>(
    tx: &'c Transaction<'_>,
    events: &mut EventRows<'c, 'e>,
    op: &'e WriteOp,
) -> Result<(), rusqlite::Error> {
    match op {
        WriteOp::Event(ev) => return events.push(tx, ev),
        WriteOp::Batch(ops) => {
            for op in ops {
                apply(tx, events, op)?;
            }
            return Ok(());
        }
        WriteOp::Sync(..) | WriteOp::Resume(_) => return Ok(()),
        WriteOp::Session(_) | WriteOp::Pair(_) | WriteOp::DeletePair(_) => {}
    }
    events.flush()?;
    match op {
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
                .execute([id.as_str()])?;
        }
        WriteOp::Event(_) | WriteOp::Batch(_) | WriteOp::Sync(..) | WriteOp::Resume(_) => {}
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

/// The writer thread's state.
struct Writer {
    conn: Connection,
    metrics: Arc<Metrics>,
    /// `None` once the writer gave up.
    hooks: Option<WriterHooks>,
    /// Sessions told of a failed commit that have not reloaded yet; their writes are
    /// dropped.
    recovering: HashSet<Arc<str>>,
    /// When the current run of failed commits began.
    failing_since: Option<Instant>,
    give_up_after: std::time::Duration,
    /// Failed commits so far, shared with [`StoreWriter::epoch`] so acks can spot a failure.
    failures: Arc<AtomicU64>,
}

impl Writer {
    fn run(mut self, rx: Receiver<WriteOp>, max_batch: usize) {
        let mut batch: Vec<WriteOp> = Vec::with_capacity(max_batch.min(4096));
        // Block for the first write, then take whatever else is already waiting: under
        // load batches grow by themselves, and an idle server still commits each write
        // at once.
        while let Ok(first) = rx.recv() {
            batch.push(first);
            while batch.len() < max_batch {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(_) => break,
                }
            }
            self.take(&mut batch);
            if self.hooks.is_none() {
                break;
            }
        }
        tracing::debug!("store writer stopped");
    }

    /// Commits one batch and reports the outcome.
    fn take(&mut self, batch: &mut Vec<WriteOp>) {
        self.drop_stale(batch);
        match commit(&mut self.conn, batch) {
            Ok(()) => {
                self.failing_since = None;
                Metrics::inc(&self.metrics.commits);
                let failures = self.failures.load(Ordering::Acquire);
                let mut events = Vec::new();
                for op in batch.drain(..) {
                    match op {
                        // A failed commit or a dropped write since the caller took its
                        // epoch may have hit the writes this marker stands for.
                        WriteOp::Sync(_, epoch) if epoch != failures => {}
                        op => op.committed(&mut events),
                    }
                }
                self.metrics
                    .events_committed
                    .fetch_add(events.len() as u64, Ordering::Relaxed);
                if let (false, Some(hooks)) = (events.is_empty(), self.hooks.as_mut()) {
                    (hooks.on_commit)(events);
                }
            }
            Err(e) => {
                // Nothing of a failed batch is published or acknowledged: clients never
                // see an event that is not on disk.
                self.failures.fetch_add(1, Ordering::AcqRel);
                let lost: usize = batch.iter().map(WriteOp::event_count).sum();
                self.metrics
                    .store_failures
                    .fetch_add(lost as u64, Ordering::Relaxed);
                tracing::error!(error = %e, events = lost, "store commit failed");
                let mut sessions = Vec::new();
                batch.iter().for_each(|op| op.sessions(&mut sessions));
                batch.clear();
                sessions.sort();
                sessions.dedup();
                self.recovering.extend(sessions.iter().cloned());
                let since = *self.failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= self.give_up_after {
                    if let Some(hooks) = self.hooks.take() {
                        (hooks.on_give_up)(e.to_string());
                    }
                    return;
                }
                if let (false, Some(hooks)) = (sessions.is_empty(), self.hooks.as_mut()) {
                    (hooks.on_failure)(StoreFailure {
                        sessions,
                        error: e.to_string(),
                    });
                }
            }
        }
    }

    /// Drops the writes of sessions that have not reloaded since a failed commit, and
    /// takes their `Resume` markers.
    fn drop_stale(&mut self, batch: &mut Vec<WriteOp>) {
        if self.recovering.is_empty() {
            batch.retain(|op| !matches!(op, WriteOp::Resume(_)));
            return;
        }
        let mut kept = Vec::with_capacity(batch.len());
        for op in batch.drain(..) {
            if let WriteOp::Resume(id) = &op {
                self.recovering.remove(id);
                continue;
            }
            let mut touched = Vec::new();
            op.sessions(&mut touched);
            if touched.iter().any(|id| self.recovering.contains(id)) {
                self.failures.fetch_add(1, Ordering::AcqRel);
                let lost = op.event_count() as u64;
                self.metrics
                    .store_failures
                    .fetch_add(lost, Ordering::Relaxed);
                tracing::debug!(sessions = ?touched, "write dropped: its session is reloading");
                continue;
            }
            kept.push(op);
        }
        *batch = kept;
    }
}

fn commit(conn: &mut Connection, batch: &[WriteOp]) -> Result<(), rusqlite::Error> {
    #[cfg(feature = "failpoints")]
    {
        // Test builds: `store.commit` set to `return` fails every commit as a full
        // disk would.
        fail::fail_point!("store.commit", |_| Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("failpoint store.commit".into()),
        )));
        apply_page_limit(conn)?;
    }
    let tx = conn.transaction()?;
    apply_all(&tx, batch)?;
    tx.commit()
}

/// Test builds: failpoint `store.page-limit` with `return(N)` caps the database at N
/// pages (`PRAGMA max_page_count`), so commits fail as on a full disk; `off` lifts it.
#[cfg(feature = "failpoints")]
fn apply_page_limit(conn: &Connection) -> Result<(), rusqlite::Error> {
    /// SQLite's own default maximum.
    const NO_LIMIT: u64 = 4_294_967_294;
    let limit = (|| {
        fail::fail_point!("store.page-limit", |pages| pages
            .and_then(|p| p.parse::<u64>().ok()));
        None
    })();
    let pages = match limit {
        Some(0) => conn.query_row("PRAGMA page_count", [], |r| r.get::<_, u64>(0))?,
        Some(n) => n,
        None => NO_LIMIT,
    };
    conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
}
