//! SQLite storage: one database file in WAL mode, one writer thread that group-commits
//! ([`writer`]), and a small pool of read connections used from blocking tasks.

pub mod devices;
pub mod mcp_servers;
pub mod push;
mod rewrites;
pub mod tokens;
pub mod writer;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytestring::ByteString;
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::RuntimeError;
use crate::record::{PairRecord, SessionRecord};

pub use writer::{StoreFailure, StoreWriter, WriteOp, WriterHooks};

/// One history event, already serialized exactly as it goes over the wire.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    /// The session it belongs to; the gateway fans events out per session.
    pub session_id: Arc<str>,
    /// Its sequence number in that session.
    pub seq: u64,
    /// The JSON frame (`{kind, sessionId, seq, ts, ...}`), shared by every recipient.
    pub frame: ByteString,
    /// The session's flow gate, advanced once the event is fanned out.
    pub gate: Arc<crate::flow::FlowGate>,
}

/// A session loaded at start, with the newest `seq` its history holds.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// Its stored record; start-up reconciliation may change it before actors start.
    pub record: SessionRecord,
    /// Newest event `seq` (0 when the history is empty).
    pub last_seq: u64,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    admin INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
-- Users removed with `tandem user revoke` (until one of that id is added again): their
-- sessions accept no command until an admin reassigns or archives them.
CREATE TABLE IF NOT EXISTS revoked_users (
    id TEXT PRIMARY KEY,
    revoked_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pairs (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- One-time codes that pair a device (`device.pair-code`), by digest; a code is used
-- once and lives 5 minutes.
CREATE TABLE IF NOT EXISTS pairing_codes (
    code_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
);
-- Paired devices: each has its own token (by digest) and acts as its user.
CREATE TABLE IF NOT EXISTS devices (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT,
    created_at INTEGER NOT NULL
);
-- Devices that get Web Push notifications for a user's sessions (`push.subscribe`).
CREATE TABLE IF NOT EXISTS push_subscriptions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    p256dh BLOB NOT NULL,
    auth BLOB NOT NULL,
    label TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (user_id, endpoint)
);
-- MCP servers a user added (`mcp-servers.add`), theirs alone: the entry as JSON,
-- values of env and headers included (this file is 0600).
CREATE TABLE IF NOT EXISTS mcp_servers (
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    entry TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, name)
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    frame TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

/// Read access to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    path: PathBuf,
    /// Idle read connections; a read takes one and gives it back.
    readers: Mutex<Vec<Connection>>,
}

/// Runs a blocking store call on a blocking thread, off the actor threads; a task
/// that stopped is an internal error.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RuntimeError> + Send + 'static,
) -> Result<T, RuntimeError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RuntimeError::Internal(e.to_string()))?
}

/// Opens a connection with the pragmas every connection needs.
fn connect(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    // WAL lets readers run beside the writer; NORMAL syncs at checkpoints, so a commit
    // survives a crash of this process (not of the machine) without an fsync per commit.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// A real write in a transaction: a database this process can open but not write
/// (another user's file, a read-only mount) must stop the server at start, not fail
/// every write later.
fn prove_writable(conn: &Connection) -> Result<(), rusqlite::Error> {
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('last_open', ?1) \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [crate::clock::now_ms().to_string()],
    )?;
    tx.commit()
}

impl Store {
    /// Opens (creating if needed) `tandem.db` in `data_dir` and proves it can write
    /// there. The directory is made 0700 and the database files 0600: they hold every
    /// conversation.
    pub fn open(data_dir: &Path) -> Result<Store, RuntimeError> {
        private_dir(data_dir)?;
        let path = data_dir.join("tandem.db");
        // Created 0600 before SQLite opens it; SQLite gives its -wal and -shm files
        // the database file's mode. Files of older versions are narrowed.
        for name in ["tandem.db", "tandem.db-wal", "tandem.db-shm"] {
            let file = data_dir.join(name);
            let result = if name == "tandem.db" {
                private_file_keep(&file)
            } else if file.exists() {
                set_mode(&file, 0o600)
            } else {
                Ok(())
            };
            result.map_err(|source| RuntimeError::DataDir { path: file, source })?;
        }
        let unwritable = |e: &dyn std::fmt::Display| RuntimeError::Unwritable {
            path: path.clone(),
            reason: e.to_string(),
        };
        let conn = connect(&path).map_err(|e| unwritable(&e))?;
        conn.execute_batch(SCHEMA).map_err(|e| unwritable(&e))?;
        prove_writable(&conn).map_err(|e| unwritable(&e))?;
        tokens::migrate(&conn, data_dir)?;
        Ok(Store {
            inner: Arc::new(StoreInner {
                path,
                readers: Mutex::new(vec![conn]),
            }),
        })
    }

    /// `tandem.db`; the writer opens its own connection to it, and the admin token lives beside it.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` with a read connection. Blocking: call from a blocking task.
    pub fn with_reader<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, RuntimeError> {
        let pooled = self
            .inner
            .readers
            .lock()
            .map_err(|_| RuntimeError::Internal("reader pool poisoned".into()))?
            .pop();
        let conn = match pooled {
            Some(c) => c,
            None => connect(&self.inner.path)?,
        };
        let result = f(&conn);
        if let Ok(mut pool) = self.inner.readers.lock() {
            if pool.len() < 8 {
                pool.push(conn);
            }
        }
        Ok(result?)
    }

    /// Events of `session_id` with `seq > after`, oldest first, at most `limit`.
    pub fn read_events(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>, RuntimeError> {
        self.read_events_bounded(session_id, after, limit, usize::MAX)
            .map(|(rows, _)| rows)
    }

    /// Like [`Store::read_events`], but stops once `max_bytes` of frames are read (at
    /// least one row is returned). The flag is true when the store has nothing after
    /// the last row returned (at the time of the read).
    pub fn read_events_bounded(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<(Vec<(u64, String)>, bool), RuntimeError> {
        // SQLite holds positions as i64: a larger `after` is refused, never wrapped
        // (wrapped, 2^63 would read as negative and return the whole history).
        let after = i64::try_from(after).map_err(|_| {
            RuntimeError::InvalidArgument(format!(
                "position {after} is past the largest possible seq {}",
                tandem_protocol::MAX_SEQ
            ))
        })?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_reader(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT seq, frame FROM events WHERE session_id = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3",
            )?;
            let mut rows = stmt.query(params![session_id, after, limit])?;
            let mut out = Vec::new();
            let mut bytes = 0;
            while let Some(row) = rows.next()? {
                let frame: String = row.get(1)?;
                bytes += frame.len();
                out.push((row.get::<_, i64>(0)? as u64, frame));
                if bytes >= max_bytes {
                    return Ok((out, false));
                }
            }
            let exhausted = (out.len() as i64) < limit;
            Ok((out, exhausted))
        })
    }

    /// Hands every stored session with its newest `seq` to `each`, one row at a
    /// time (a million records are not held at once). An unreadable record is
    /// logged and skipped: one bad row must not keep every other session from
    /// loading.
    pub fn each_session(&self, mut each: impl FnMut(LoadedSession)) -> Result<(), RuntimeError> {
        self.with_reader(|conn| {
            let mut stmt = conn.prepare(
                "SELECT s.id, s.record, (SELECT MAX(seq) FROM events e WHERE e.session_id = s.id) \
                 FROM sessions s",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let json = row.get_ref(1)?.as_str()?;
                match serde_json::from_str::<SessionRecord>(json) {
                    Ok(record) => each(LoadedSession {
                        record,
                        last_seq: row.get::<_, Option<i64>>(2)?.unwrap_or(0).max(0) as u64,
                    }),
                    Err(e) => {
                        let id: String = row.get(0)?;
                        tracing::error!(session = %id, error = %e, "skipping unreadable session record")
                    }
                }
            }
            Ok(())
        })
    }

    /// One stored session with its newest `seq`; `None` when it was never committed.
    pub fn load_session(&self, id: &str) -> Result<Option<LoadedSession>, RuntimeError> {
        let row: Option<(String, Option<i64>)> = self.with_reader(|conn| {
            conn.query_row(
                "SELECT s.record, (SELECT MAX(seq) FROM events e WHERE e.session_id = s.id) \
                 FROM sessions s WHERE s.id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        let Some((json, last)) = row else {
            return Ok(None);
        };
        let record = serde_json::from_str::<SessionRecord>(&json)
            .map_err(|e| RuntimeError::Internal(format!("unreadable session record {id}: {e}")))?;
        Ok(Some(LoadedSession {
            record,
            last_seq: last.unwrap_or(0).max(0) as u64,
        }))
    }

    /// One stored pair, in any state; `None` when there is no such row.
    pub fn load_pair(&self, id: &str) -> Result<Option<PairRecord>, RuntimeError> {
        let json: Option<String> = self.with_reader(|conn| {
            conn.query_row("SELECT record FROM pairs WHERE id = ?1", [id], |r| r.get(0))
                .optional()
        })?;
        json.map(|json| {
            serde_json::from_str(&json)
                .map_err(|e| RuntimeError::Internal(format!("unreadable pair record {id}: {e}")))
        })
        .transpose()
    }

    /// Every stored pair, in any state (start-up decides what to do with each).
    pub fn load_pairs(&self) -> Result<Vec<PairRecord>, RuntimeError> {
        let rows: Vec<(String, String)> = self.with_reader(|conn| {
            let mut stmt = conn.prepare("SELECT id, record FROM pairs")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, json)| match serde_json::from_str(&json) {
                Ok(rec) => Some(rec),
                Err(e) => {
                    tracing::error!(pair = %id, error = %e, "skipping unreadable pair record");
                    None
                }
            })
            .collect())
    }

    /// Writes events and records in one transaction, synchronously. Used at start-up
    /// (before the writer thread exists) to close turns a crash left open.
    pub fn write_now(&self, ops: &[WriteOp]) -> Result<(), RuntimeError> {
        self.with_reader(|conn| {
            let tx = conn.unchecked_transaction()?;
            writer::apply_all(&tx, ops)?;
            tx.commit()
        })
    }
}

/// Creates `dir` (and missing parents) 0700; warns when an existing one is open to
/// other users. Errors name the path.
pub(crate) fn private_dir(dir: &Path) -> Result<(), RuntimeError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let fail = |source| RuntimeError::DataDir {
        path: dir.to_path_buf(),
        source,
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(fail)?;
    }
    let meta = std::fs::metadata(dir).map_err(fail)?;
    if !meta.is_dir() {
        return Err(fail(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(
            dir = %dir.display(),
            mode = format!("{:o}", meta.permissions().mode() & 0o777),
            "the data directory is open to other users; `chmod 700` it"
        );
    }
    Ok(())
}

/// Opens `path` for writing, created (or truncated) with mode 0600.
pub(crate) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    set_mode(path, 0o600)?;
    Ok(file)
}

/// Creates `path` empty with mode 0600 unless it exists; either way leaves it 0600.
fn private_file_keep(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    set_mode(path, 0o600)
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}
