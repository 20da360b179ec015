//! `bench store-floor`: the least CPU committing the fanout bench's events to SQLite
//! can cost, next to what tandem's own store writer costs for the same events.
//!
//! Tandem must do at least the floor server's work (serialize once, frame once, write
//! each socket) plus commit every event to SQLite before delivering it. This mode
//! measures the second part alone, in this process, so `bench fanout --floor 1`'s
//! "floor µs per delivery × deliveries per event" can be set against it: when the
//! cheapest insert already costs more than half the floor's CPU per event, no tandem
//! can be within 1.5× of the floor at that point.
//!
//! The events are the ones a `/stream E` turn produces (`text_delta` frames with a
//! `ses_` id of tandem's length, `turn_1`, a millisecond `ts`), serialized before the
//! clock starts; sessions take turns in windows of 32 events, as the session pacing
//! interleaves them. Each variant writes a fresh database file in WAL mode with
//! `synchronous = NORMAL` and the writer's page-cache and checkpoint pragmas, one
//! transaction per batch. CPU is the inserting thread's on-CPU time (schedstat:
//! user and kernel, so WAL writes count), per event.
//!
//! Variants:
//! - `text_key`: tandem's `events` table (WITHOUT ROWID, key `(session_id TEXT,
//!   seq)`), one prepared single-row `INSERT` per event;
//! - `text_multirow`: the same table with 32-row `INSERT … VALUES` statements (what
//!   tandem's store writer does);
//! - `text_rowid`: an ordinary rowid table (rows appended at its end, the frame out
//!   of the key's B-tree) plus a unique `(session_id, seq)` index, text key;
//! - `int_key`: WITHOUT ROWID with an integer session key;
//! - `rowid`: an ordinary rowid table (rows appended at its end) plus a unique
//!   `(session, seq)` index, integer session key;
//! - `rowid_multirow`: `rowid` with 32-row `INSERT … VALUES` statements;
//! - `writer`: tandem's [`StoreWriter`] itself (its schema, its batching: the batch
//!   flag does not apply), fed one [`WriteOp::Event`] per event from this thread; the
//!   writer thread's CPU;
//! - `writer_windows`: the same, fed one [`WriteOp::Batch`] per session window of 32
//!   events (what a scripted `/stream` session now writes).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{params_from_iter, Connection};
use serde_json::json;
use tandem_actors::flow::FlowGate;
use tandem_actors::metrics::Metrics;
use tandem_actors::store::{Store, StoreWriter, StoredEvent, WriteOp, WriterHooks};
use tandem_protocol::{Event, EventBody};

use super::args::Flags;
use super::report;
use super::stats::{median, round};
use crate::TempDir;

/// Events a session emits between two pacing waits (tandem's `AWAIT_EVERY`).
const WINDOW: usize = 32;
/// Rows per statement in `rowid_multirow`.
const MULTI: usize = 32;

/// `bench store-floor`.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let sessions: usize = flags.num("sessions", 10)?;
    let events: usize = flags.num("events", 2000)?;
    let runs: usize = flags.num("runs", 3)?;
    let batches = flags.list("batch", &[32, 128, 512])?;
    flags.done()?;
    let (ids, frames) = workload(sessions, events)?;
    let bytes: usize = frames.iter().map(|(_, _, f)| f.len()).sum();
    report::note(&format!(
        "{} events, mean frame {} bytes",
        frames.len(),
        bytes / frames.len().max(1)
    ));
    let serialize = serialize_cost(&ids, events)?;
    report::line(&json!({
        "mode": "store-floor",
        "what": "serialize",
        "cpu_us_per_event": round(serialize, 3),
    }));
    let variants = [
        "text_key",
        "text_multirow",
        "text_rowid",
        "int_key",
        "rowid",
        "rowid_multirow",
    ];
    for &batch in &batches {
        for variant in variants {
            let mut samples = Vec::new();
            for _ in 0..runs {
                samples.push(insert_run(variant, &ids, &frames, batch as usize)?);
            }
            report::line(&json!({
                "mode": "store-floor",
                "what": variant,
                "batch": batch,
                "events": frames.len(),
                "cpu_us_per_event": samples.iter().map(|s| round(*s, 3)).collect::<Vec<_>>(),
                "median_cpu_us_per_event": round(median(&samples), 3),
            }));
        }
    }
    for (what, windows) in [("writer", false), ("writer_windows", true)] {
        let mut samples = Vec::new();
        for _ in 0..runs {
            samples.push(writer_run(&ids, &frames, windows)?);
        }
        report::line(&json!({
            "mode": "store-floor",
            "what": what,
            "events": frames.len(),
            "cpu_us_per_event": samples.iter().map(|s| round(*s, 3)).collect::<Vec<_>>(),
            "median_cpu_us_per_event": round(median(&samples), 3),
        }));
    }
    Ok(())
}

/// Session ids, and every event as (session index, seq, frame) in the order the
/// sessions' pacing windows interleave them.
#[allow(clippy::type_complexity)]
fn workload(
    sessions: usize,
    events: usize,
) -> Result<(Vec<String>, Vec<(usize, u64, String)>), String> {
    let ids: Vec<String> = (0..sessions).map(|i| format!("ses_{i:012}")).collect();
    let mut out = Vec::with_capacity(sessions * events);
    let mut start = 0;
    while start < events {
        let end = (start + WINDOW).min(events);
        for (s, id) in ids.iter().enumerate() {
            for i in start..end {
                let seq = i as u64 + 3;
                out.push((s, seq, frame(id, seq, i)?));
            }
        }
        start = end;
    }
    Ok((ids, out))
}

/// One `text_delta` frame exactly as a session serializes it.
fn frame(id: &str, seq: u64, i: usize) -> Result<String, String> {
    serde_json::to_string(&Event {
        session_id: id.into(),
        seq,
        ts: 1_764_660_000_000 + i as u64,
        turn_id: Some("turn_1".into()),
        body: EventBody::TextDelta {
            text: format!("chunk {i} "),
        },
    })
    .map_err(|e| e.to_string())
}

/// µs of this thread's CPU per event to serialize the workload's events (the floor
/// does this too; tandem does it once per event).
fn serialize_cost(ids: &[String], events: usize) -> Result<f64, String> {
    let start = thread_cpu_ns()?;
    let mut n = 0u64;
    for id in ids {
        for i in 0..events {
            std::hint::black_box(frame(id, i as u64, i)?);
            n += 1;
        }
    }
    Ok((thread_cpu_ns()? - start) as f64 / 1e3 / n.max(1) as f64)
}

/// Opens a fresh database with the pragmas tandem's writer uses.
fn open(dir: &TempDir) -> Result<Connection, String> {
    let conn = Connection::open(dir.path().join("floor.db")).map_err(|e| e.to_string())?;
    for (name, value) in [
        ("journal_mode", json!("WAL")),
        ("synchronous", json!("NORMAL")),
        ("cache_size", json!(-65536)),
        ("wal_autocheckpoint", json!(8192)),
    ] {
        let value = match value {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        conn.pragma_update(None, name, &value)
            .map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(conn)
}

/// One variant over the whole workload; µs of CPU per event.
fn insert_run(
    variant: &str,
    ids: &[String],
    frames: &[(usize, u64, String)],
    batch: usize,
) -> Result<f64, String> {
    let dir = TempDir::new("store-floor");
    let mut conn = open(&dir)?;
    let schema = match variant {
        "text_key" | "text_multirow" => {
            "CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, \
             frame TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;"
        }
        "text_rowid" => {
            "CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, \
             frame TEXT NOT NULL); \
             CREATE UNIQUE INDEX events_key ON events (session_id, seq);"
        }
        "int_key" => {
            "CREATE TABLE events (session INTEGER NOT NULL, seq INTEGER NOT NULL, \
             frame TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;"
        }
        _ => {
            "CREATE TABLE events (session INTEGER NOT NULL, seq INTEGER NOT NULL, \
             frame TEXT NOT NULL); \
             CREATE UNIQUE INDEX events_key ON events (session, seq);"
        }
    };
    conn.execute_batch(schema).map_err(|e| e.to_string())?;
    let e = |e: rusqlite::Error| e.to_string();
    let start = thread_cpu_ns()?;
    for chunk in frames.chunks(batch.max(1)) {
        let tx = conn.transaction().map_err(e)?;
        match variant {
            "text_key" | "text_rowid" => {
                let mut stmt = tx
                    .prepare_cached(
                        "INSERT INTO events (session_id, seq, frame) VALUES (?1, ?2, ?3)",
                    )
                    .map_err(e)?;
                for (s, seq, f) in chunk {
                    stmt.execute(rusqlite::params![ids[*s], *seq as i64, f])
                        .map_err(e)?;
                }
            }
            "rowid_multirow" | "text_multirow" => {
                let column = if variant == "text_multirow" {
                    "session_id"
                } else {
                    "session"
                };
                for rows in chunk.chunks(MULTI) {
                    let sql = format!(
                        "INSERT INTO events ({column}, seq, frame) VALUES {}",
                        vec!["(?, ?, ?)"; rows.len()].join(", ")
                    );
                    let mut stmt = tx.prepare_cached(&sql).map_err(e)?;
                    let values = rows.iter().flat_map(|(s, seq, f)| {
                        [
                            if variant == "text_multirow" {
                                rusqlite::types::ToSqlOutput::from(ids[*s].as_str())
                            } else {
                                rusqlite::types::ToSqlOutput::from(*s as i64)
                            },
                            rusqlite::types::ToSqlOutput::from(*seq as i64),
                            rusqlite::types::ToSqlOutput::from(f.as_str()),
                        ]
                    });
                    stmt.execute(params_from_iter(values)).map_err(e)?;
                }
            }
            _ => {
                let mut stmt = tx
                    .prepare_cached("INSERT INTO events (session, seq, frame) VALUES (?1, ?2, ?3)")
                    .map_err(e)?;
                for (s, seq, f) in chunk {
                    stmt.execute(rusqlite::params![*s as i64, *seq as i64, f])
                        .map_err(e)?;
                }
            }
        }
        tx.commit().map_err(e)?;
    }
    let used = thread_cpu_ns()? - start;
    let stored: i64 = conn
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .map_err(e)?;
    if stored as usize != frames.len() {
        return Err(format!(
            "{variant}: stored {stored} of {} events",
            frames.len()
        ));
    }
    Ok(used as f64 / 1e3 / frames.len().max(1) as f64)
}

/// Tandem's store writer over the workload; µs of its thread's CPU per event.
fn writer_run(
    ids: &[String],
    frames: &[(usize, u64, String)],
    windows: bool,
) -> Result<f64, String> {
    let dir = TempDir::new("store-floor-writer");
    let store = Store::open(dir.path()).map_err(|e| e.to_string())?;
    let committed = Arc::new(AtomicU64::new(0));
    let counted = committed.clone();
    let hooks = WriterHooks {
        on_commit: Box::new(move |events: Vec<StoredEvent>| {
            counted.fetch_add(events.len() as u64, Ordering::Release);
        }),
        on_failure: Box::new(|f| eprintln!("bench store-floor: commit failed: {}", f.error)),
        on_give_up: Box::new(|e| eprintln!("bench store-floor: writer gave up: {e}")),
    };
    let writer = StoreWriter::start(
        &store,
        4096,
        Duration::from_secs(5),
        Arc::new(Metrics::default()),
        hooks,
    )
    .map_err(|e| e.to_string())?;
    let sessions: Vec<Arc<str>> = ids.iter().map(|id| Arc::from(id.as_str())).collect();
    let gate = Arc::new(FlowGate::new(0));
    // Built before the clock starts: the sessions do this, not the writer.
    let event = |(s, seq, f): &(usize, u64, String)| {
        WriteOp::Event(StoredEvent {
            session_id: sessions[*s].clone(),
            seq: *seq,
            frame: f.clone().into(),
            gate: gate.clone(),
        })
    };
    let ops: Vec<WriteOp> = if windows {
        // The workload is already in windows: consecutive events of one session.
        frames
            .chunk_by(|a, b| a.0 == b.0)
            .map(|run| WriteOp::Batch(run.iter().map(event).collect()))
            .collect()
    } else {
        frames.iter().map(event).collect()
    };
    let before = writer_threads()?;
    for op in ops {
        writer.write(op).map_err(|e| e.to_string())?;
    }
    let total = frames.len() as u64;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while committed.load(Ordering::Acquire) < total {
        if std::time::Instant::now() > deadline {
            return Err("the writer did not commit every event in 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let used = writer_cpu_since(&before)?;
    Ok(used as f64 / 1e3 / total.max(1) as f64)
}

/// This thread's on-CPU nanoseconds.
fn thread_cpu_ns() -> Result<u64, String> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")
        .map_err(|e| format!("/proc/thread-self/schedstat: {e}"))?;
    stat.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| "unreadable schedstat".to_string())
}

/// On-CPU nanoseconds of each of this process's `tandem-store-writer` threads, by
/// thread id (a thread that appears between two snapshots counts from 0).
fn writer_threads() -> Result<std::collections::BTreeMap<u64, u64>, String> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/task").map_err(|e| e.to_string())? {
        let Ok(entry) = entry else { continue };
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if !name.trim().starts_with("tandem-store-wr") {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        if let Some(ns) = stat.split_whitespace().next().and_then(|n| n.parse().ok()) {
            out.insert(tid, ns);
        }
    }
    Ok(out)
}

/// CPU nanoseconds the writer threads used since `before`.
fn writer_cpu_since(before: &std::collections::BTreeMap<u64, u64>) -> Result<u64, String> {
    let now = writer_threads()?;
    if now.is_empty() {
        return Err("no tandem-store-writer thread".into());
    }
    Ok(now
        .iter()
        .map(|(tid, ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum())
}
