//! The durable floor's store (`bench floor-serve --durable PATH`, `bench fanout --floor
//! durable`): the cheapest way `bench store-floor` measured to commit the fanout
//! bench's events to SQLite, on a writer thread of its own, so the floor server can
//! commit every event before it sends it.
//!
//! The shape is `store-floor`'s `rowid_multirow`: an ordinary rowid table with an
//! integer session key and a unique `(session, seq)` index, 32-row `INSERT … VALUES`
//! statements (the rest one row per statement), one transaction per batch, WAL with
//! `synchronous = NORMAL` and the pragmas tandem's writer uses. A batch is everything
//! queued when the writer wakes (each producer's 128-event batch, grouped with the
//! other sessions' that wait), as a group-committing writer does.

use std::sync::mpsc;

use rusqlite::{params_from_iter, types::ToSqlOutput, Connection};
use tokio::sync::oneshot;

/// Rows per multi-row `INSERT` statement (as in `store-floor`).
const MULTI: usize = 32;

/// One event to commit.
#[derive(Debug)]
pub struct Row {
    /// The session's integer key.
    pub session: i64,
    /// The event's sequence number in its session.
    pub seq: u64,
    /// The event's JSON text, as it goes over the wire.
    pub frame: String,
}

/// One producer's rows and who waits for their commit.
struct Commit {
    /// The rows, in order.
    rows: Vec<Row>,
    /// Told once the transaction holding the rows committed (or failed: the error).
    done: oneshot::Sender<Result<(), String>>,
}

/// The handle producers commit through; the writer thread ends when it is dropped.
pub struct FloorStore {
    /// The writer thread's queue.
    tx: mpsc::Sender<Commit>,
}

impl FloorStore {
    /// Creates the database at `path` and starts its writer thread (`floor-store`).
    pub fn open(path: &std::path::Path) -> Result<FloorStore, String> {
        let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (name, value) in [
            ("journal_mode", "WAL"),
            ("synchronous", "NORMAL"),
            ("cache_size", "-65536"),
            ("wal_autocheckpoint", "8192"),
        ] {
            conn.pragma_update(None, name, value)
                .map_err(|e| format!("{name}: {e}"))?;
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS events (session INTEGER NOT NULL, \
             seq INTEGER NOT NULL, frame TEXT NOT NULL); \
             CREATE UNIQUE INDEX IF NOT EXISTS events_key ON events (session, seq);",
        )
        .map_err(|e| format!("schema: {e}"))?;
        let (tx, rx) = mpsc::channel::<Commit>();
        std::thread::Builder::new()
            .name("floor-store".into())
            .spawn(move || write_loop(conn, rx))
            .map_err(|e| format!("spawn floor-store: {e}"))?;
        Ok(FloorStore { tx })
    }

    /// Commits `rows`; returns once they are committed.
    pub async fn commit(&self, rows: Vec<Row>) -> Result<(), String> {
        let (done, committed) = oneshot::channel();
        self.tx
            .send(Commit { rows, done })
            .map_err(|_| "the floor store's writer ended".to_string())?;
        committed
            .await
            .map_err(|_| "the floor store's writer ended".to_string())?
    }
}

/// Events stored in the database at `path` (read after the server is gone, to check
/// that every event was committed).
pub fn count(path: &std::path::Path) -> Result<u64, String> {
    let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    conn.query_row("SELECT COUNT(*) FROM events", [], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The writer thread: waits for a commit, takes every other one queued behind it,
/// writes them all in one transaction, then tells each producer.
fn write_loop(mut conn: Connection, rx: mpsc::Receiver<Commit>) {
    while let Ok(first) = rx.recv() {
        let mut commits = vec![first];
        commits.extend(rx.try_iter());
        let result = write(&mut conn, &commits).map_err(|e| e.to_string());
        if let Err(e) = &result {
            eprintln!("floor-store: commit failed: {e}");
        }
        for commit in commits {
            let _ = commit.done.send(result.clone());
        }
    }
}

/// One transaction holding every row of `commits`.
fn write(conn: &mut Connection, commits: &[Commit]) -> Result<(), rusqlite::Error> {
    let sql = |n: usize| {
        format!(
            "INSERT INTO events (session, seq, frame) VALUES {}",
            vec!["(?, ?, ?)"; n].join(", ")
        )
    };
    let full = sql(MULTI);
    let tx = conn.transaction()?;
    for commit in commits {
        for rows in commit.rows.chunks(MULTI) {
            let mut stmt = if rows.len() == MULTI {
                tx.prepare_cached(&full)?
            } else {
                tx.prepare_cached(&sql(rows.len()))?
            };
            let values = rows.iter().flat_map(|row| {
                [
                    ToSqlOutput::from(row.session),
                    ToSqlOutput::from(row.seq as i64),
                    ToSqlOutput::from(row.frame.as_str()),
                ]
            });
            stmt.execute(params_from_iter(values))?;
        }
    }
    tx.commit()
}
