//! The `events` table: every session's history, one row per event.
//!
//! It is an ordinary rowid table with a unique `(session_id, seq)` index. Events are
//! appended in commit order, so a row always goes at the table's end, and only the
//! small key goes into the index: about 20 % less writer CPU per event than the
//! WITHOUT ROWID table keyed by `(session_id, seq)` that tandem used up to `addbf75`
//! (`bench store-floor`, BENCHMARKS.md), where every ~120-byte frame sat in the key's
//! B-tree, spread over as many insertion points as there are busy sessions. Reads
//! stay by key: `WHERE session_id = ? AND seq > ? ORDER BY seq` walks the index.
//!
//! A database made by an older version is rebuilt into this shape once, when the
//! store opens it, in one transaction: either every event is copied or nothing
//! changes.

use rusqlite::{Connection, OptionalExtension};

const CREATE: &str = "
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    frame TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_key ON events (session_id, seq);
";

/// Rebuilds a WITHOUT ROWID `events` table (older versions) as the rowid table.
const MIGRATE: &str = "
CREATE TABLE events_rowid (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    frame TEXT NOT NULL
);
INSERT INTO events_rowid (session_id, seq, frame)
    SELECT session_id, seq, frame FROM events ORDER BY session_id, seq;
DROP TABLE events;
ALTER TABLE events_rowid RENAME TO events;
CREATE UNIQUE INDEX events_key ON events (session_id, seq);
";

/// Creates the table, or migrates an older version's table to it.
pub(super) fn create_or_migrate(conn: &Connection) -> Result<(), rusqlite::Error> {
    let existing: Option<String> = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    match existing {
        Some(sql) if sql.to_ascii_uppercase().contains("WITHOUT ROWID") => {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(MIGRATE)?;
            tx.commit()?;
            tracing::info!("events table rebuilt as a rowid table");
            Ok(())
        }
        _ => conn.execute_batch(CREATE),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use crate::testkit::Scratch;

    /// The table of versions up to `addbf75`, exactly.
    const OLD: &str = "CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    frame TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;";

    /// A database written with the old table opens with every event readable, in
    /// order, in the new table; new events append after them; the key still refuses a
    /// duplicate; a second open leaves it as it is.
    #[test]
    fn an_old_events_table_is_migrated_with_its_history() {
        let dir = Scratch::new("events-migrate");
        let path = dir.path().join("tandem.db");
        {
            let conn = rusqlite::Connection::open(&path).expect("create");
            conn.execute_batch(OLD).expect("old schema");
            let mut insert = conn
                .prepare("INSERT INTO events (session_id, seq, frame) VALUES (?1, ?2, ?3)")
                .expect("prepare");
            // Written out of order across sessions, as concurrent sessions commit.
            for seq in 1..=50i64 {
                for sid in ["ses_b", "ses_a"] {
                    insert
                        .execute(rusqlite::params![sid, seq, format!("{{\"{sid}\":{seq}}}")])
                        .expect("insert");
                }
            }
        }
        let store = Store::open(dir.path()).expect("open");
        let table_sql = |store: &Store| -> String {
            store
                .with_reader(|c| {
                    c.query_row(
                        "SELECT sql FROM sqlite_master WHERE name = 'events'",
                        [],
                        |r| r.get(0),
                    )
                })
                .expect("schema")
        };
        assert!(
            !table_sql(&store).contains("WITHOUT ROWID"),
            "{}",
            table_sql(&store)
        );
        for sid in ["ses_a", "ses_b"] {
            let history = store.read_events(sid, 0, usize::MAX).expect("read");
            let expected: Vec<(u64, String)> = (1..=50u64)
                .map(|seq| (seq, format!("{{\"{sid}\":{seq}}}")))
                .collect();
            assert_eq!(history, expected, "{sid}");
            assert_eq!(
                store.read_events(sid, 45, 3).expect("read").len(),
                3,
                "{sid}: a bounded read after a position"
            );
        }
        let duplicate = store
            .with_reader(|c| {
                c.execute(
                    "INSERT INTO events (session_id, seq, frame) VALUES ('ses_a', 51, 'x')",
                    [],
                )?;
                let dup = c.execute(
                    "INSERT INTO events (session_id, seq, frame) VALUES ('ses_a', 51, 'y')",
                    [],
                );
                Ok(dup.map_err(|e| e.to_string()))
            })
            .expect("write");
        assert!(
            duplicate.is_err_and(|e| e.contains("UNIQUE")),
            "a duplicate was stored"
        );
        drop(store);
        let again = Store::open(dir.path()).expect("reopen");
        assert_eq!(
            again
                .read_events("ses_a", 0, usize::MAX)
                .expect("read")
                .len(),
            51
        );
        assert_eq!(
            again
                .read_events("ses_b", 0, usize::MAX)
                .expect("read")
                .len(),
            50
        );
    }

    /// A new database gets the rowid table and its key index.
    #[test]
    fn a_new_database_has_the_rowid_table() {
        let dir = Scratch::new("events-new");
        let store = Store::open(dir.path()).expect("open");
        let names: Vec<String> = store
            .with_reader(|c| {
                let mut stmt = c.prepare(
                    "SELECT name || ':' || sql FROM sqlite_master \
                     WHERE tbl_name = 'events' ORDER BY name",
                )?;
                let rows = stmt.query_map([], |r| r.get(0))?;
                rows.collect()
            })
            .expect("schema");
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[0].starts_with("events:") && !names[0].contains("WITHOUT ROWID"));
        assert!(names[1].starts_with("events_key:") && names[1].contains("UNIQUE"));
    }
}
