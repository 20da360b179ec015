//! Stored histories rewritten once, in place: when what a kind of event holds
//! changes shape, the events stored before are brought to the new shape when the
//! server starts (the rewrite itself is the adapters', who know the old shapes: see
//! `adapter::old_history`). Each rewrite runs once per database: a `meta` key
//! records it.

use rusqlite::{params, OptionalExtension};

use super::Store;
use crate::error::RuntimeError;

/// Events read per page while rewriting.
const PAGE: i64 = 1000;

impl Store {
    /// Runs `rewrite` over every stored event whose frame contains one of `marks`
    /// (`"kind":"plan"`, say: a cheap filter; `rewrite` decides) and stores what it
    /// returns in place of the frame, in one transaction, unless the `meta` key `key`
    /// says it ran already; returns how many events changed. Call before anything
    /// else writes (at start).
    pub fn rewrite_history_once(
        &self,
        key: &str,
        marks: &[&str],
        rewrite: impl Fn(&str) -> Option<String>,
    ) -> Result<usize, RuntimeError> {
        self.with_reader(|conn| {
            let done = conn
                .query_row("SELECT 1 FROM meta WHERE key = ?1", [key], |_| Ok(()))
                .optional()?
                .is_some();
            if done {
                return Ok(0);
            }
            let tx = conn.unchecked_transaction()?;
            let mut rewritten = 0usize;
            {
                let filter = marks
                    .iter()
                    .enumerate()
                    .map(|(i, _)| format!("instr(frame, ?{}) > 0", i + 4))
                    .collect::<Vec<_>>()
                    .join(" OR ");
                let mut select = tx.prepare(&format!(
                    "SELECT session_id, seq, frame FROM events \
                     WHERE (session_id, seq) > (?1, ?2) AND ({filter}) \
                     ORDER BY session_id, seq LIMIT ?3"
                ))?;
                let mut update =
                    tx.prepare("UPDATE events SET frame = ?1 WHERE session_id = ?2 AND seq = ?3")?;
                let mut after = (String::new(), 0i64);
                loop {
                    let mut args: Vec<&dyn rusqlite::ToSql> = vec![&after.0, &after.1, &PAGE];
                    args.extend(marks.iter().map(|m| m as &dyn rusqlite::ToSql));
                    let rows: Vec<(String, i64, String)> = select
                        .query_map(args.as_slice(), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                        .collect::<Result<_, _>>()?;
                    let Some((sid, seq, _)) = rows.last() else {
                        break;
                    };
                    let next = (sid.clone(), *seq);
                    for (sid, seq, frame) in &rows {
                        if let Some(new) = rewrite(frame) {
                            update.execute(params![new, sid, seq])?;
                            rewritten += 1;
                        }
                    }
                    after = next;
                }
            }
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, '1') \
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [key],
            )?;
            tx.commit()?;
            Ok(rewritten)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::store::Store;

    #[test]
    fn a_rewrite_runs_once_and_touches_only_what_it_changes() {
        let dir = crate::testkit::Scratch::new("rewrite-once");
        let store = Store::open(dir.path()).unwrap();
        store
            .with_reader(|c| {
                c.execute_batch(
                    "INSERT INTO events VALUES ('s', 1, '{\"kind\":\"plan\",\"n\":1}'); \
                     INSERT INTO events VALUES ('s', 2, '{\"kind\":\"text_delta\"}'); \
                     INSERT INTO events VALUES ('t', 1, '{\"kind\":\"plan\",\"n\":2}');",
                )
            })
            .unwrap();
        let rewrite = |f: &str| {
            f.contains("\"n\":1")
                .then(|| "{\"kind\":\"plan\",\"n\":9}".to_string())
        };
        assert_eq!(
            store
                .rewrite_history_once("k", &["\"kind\":\"plan\""], rewrite)
                .unwrap(),
            1
        );
        assert_eq!(
            store.read_events("s", 0, 10).unwrap()[0].1,
            "{\"kind\":\"plan\",\"n\":9}"
        );
        assert_eq!(
            store.read_events("t", 0, 10).unwrap()[0].1,
            "{\"kind\":\"plan\",\"n\":2}"
        );
        let again = |_: &str| Some("x".to_string());
        assert_eq!(
            store.rewrite_history_once("k", &["plan"], again).unwrap(),
            0,
            "once"
        );
    }
}
