//! `bench sessions --stored 1 --count 1000000`: what idle sessions cost at scale, in
//! resident memory per session and in the server's start time, with N sessions in
//! its store.
//!
//! Creating a million sessions one request at a time would take hours, so the rows are
//! written directly, in the store's own format: a real server creates one session
//! (`POST /api/v1/sessions`) and is stopped; its `sessions` row (the record JSON the
//! server wrote) and its `events` rows are then copied N − 1 times into the same
//! database with new ids (`ses_` and 24 hex digits, as the server's own ids), the id
//! replaced wherever it occurs in the record and the frames. Nothing else changes, so
//! the server loads them as it loads its own sessions.
//!
//! Then, for each N: an empty server (a fresh data directory) is started and its
//! `VmRSS` read once it is idle; the real server is started on the N-session data
//! directory, timed from `spawn` to its `tandem listening on` line, and its `VmRSS`
//! read once it stops changing. Per idle session = (loaded − empty) ÷ N. Finally
//! `GET /api/v1/sessions` is paged through (1,000 a page) and must list all N.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};
use serde_json::{json, Value};

use super::args::Flags;
use super::procfs::{cpu_seconds, rss_kib};
use super::report;
use super::server::BenchServer;
use super::stats::round;
use crate::TempDir;

/// How long the loaded server may take to print its start line.
const START_TIMEOUT: Duration = Duration::from_secs(600);
/// RSS counts as settled once it moved less than this fraction over [`STEADY`].
const STEADY_FRACTION: f64 = 0.005;
/// How long RSS must hold still to count as settled.
const STEADY: Duration = Duration::from_secs(2);
/// Longest wait for RSS to settle after the start line.
const SETTLE_MAX: Duration = Duration::from_secs(120);
/// Sessions per listing page (the API's largest).
const PAGE: usize = 1000;

/// `bench sessions --stored 1`.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let counts = flags.list("count", &[1_000_000])?;
    let extra = flags.all("server-arg");
    flags.done()?;
    if counts.contains(&0) {
        return Err("--count must be positive".into());
    }
    for &count in &counts {
        one_count(count as usize, &extra)?;
    }
    Ok(())
}

/// Measures one N.
fn one_count(count: usize, extra: &[String]) -> Result<(), String> {
    let dir = TempDir::new("bench-stored");
    let data = dir.path().join("data");
    let template = template_session(&data, dir.path(), extra)?;
    let fill_start = Instant::now();
    let stats = fill(&data, &template, count)?;
    let fill_s = fill_start.elapsed().as_secs_f64();
    report::note(&format!(
        "{count} sessions written in {fill_s:.1} s; tandem.db {} MiB",
        stats.db_bytes >> 20
    ));

    // The empty server: a fresh data directory, nothing stored.
    let empty_dir = TempDir::new("bench-stored-empty");
    let empty = BenchServer::start_on(
        &empty_dir.path().join("data"),
        empty_dir.path(),
        extra,
        START_TIMEOUT,
    )?;
    let (empty_rss, _) = settled_rss(empty.pid())?;
    let empty_status = memory_status(empty.pid())?;
    drop(empty);

    let started = Instant::now();
    let server = BenchServer::start_on(&data, dir.path(), extra, START_TIMEOUT)?;
    let start_s = started.elapsed().as_secs_f64();
    let start_cpu_s = cpu_seconds(server.pid())?;
    let (rss, settle_s) = settled_rss(server.pid())?;
    let status = memory_status(server.pid())?;
    let cpu_settled_s = cpu_seconds(server.pid())?;

    let system = actix_rt::System::new();
    let list_start = Instant::now();
    let (listed, pages) = system.block_on(page_all(&server))?;
    let list_s = list_start.elapsed().as_secs_f64();
    let rss_after_list = rss_kib(server.pid())?;
    let per_session = (rss.saturating_sub(empty_rss) * 1024) as f64 / count as f64;
    report::line(&json!({
        "mode": "sessions",
        "stored": true,
        "count": count,
        "server_args": extra,
        "record_bytes": stats.record_bytes,
        "events_per_session": stats.events_per_session,
        "db_mib": round(stats.db_bytes as f64 / 1048576.0, 1),
        "fill_s": round(fill_s, 1),
        "start_s": round(start_s, 2),
        "start_cpu_s": round(start_cpu_s, 2),
        "settle_s": round(settle_s, 1),
        "cpu_until_settled_s": round(cpu_settled_s, 2),
        "rss_empty_kib": empty_rss,
        "rss_loaded_kib": rss,
        "rss_bytes_per_idle_session": per_session.round(),
        "rss_kib_per_idle_session": round(per_session / 1024.0, 2),
        "empty_status_kib": empty_status,
        "loaded_status_kib": status,
        "listed": listed,
        "list_pages": pages,
        "list_s": round(list_s, 1),
        "rss_after_list_kib": rss_after_list,
        "all_listed": listed == count,
    }));
    if listed != count {
        return Err(format!(
            "GET /api/v1/sessions listed {listed} of {count} sessions"
        ));
    }
    Ok(())
}

/// The session a real server created: its id, its record and its events' frames.
struct Template {
    /// Its id.
    id: String,
    /// Its `sessions.record` JSON.
    record: String,
    /// Its `events` rows: seq and frame.
    events: Vec<(i64, String)>,
}

/// What [`fill`] wrote.
struct FillStats {
    /// Bytes of one record.
    record_bytes: usize,
    /// Events each session has.
    events_per_session: usize,
    /// Size of `tandem.db` after the checkpoint.
    db_bytes: u64,
}

/// Starts a server on `data`, has it create one session, stops it, and reads that
/// session's rows back.
fn template_session(data: &Path, root: &Path, extra: &[String]) -> Result<Template, String> {
    let server = BenchServer::start_on(data, root, extra, START_TIMEOUT)?;
    let system = actix_rt::System::new();
    let id = system.block_on(async {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(30))
            .finish();
        let mut resp = client
            .post(format!("{}/api/v1/sessions", server.base))
            .insert_header(("Content-Type", "application/json"))
            .send_body(r#"{"title":"idle"}"#)
            .await
            .map_err(|e| format!("POST /api/v1/sessions: {e}"))?;
        let body = resp.body().await.map_err(|e| format!("body: {e}"))?;
        if resp.status().as_u16() != 201 {
            return Err(format!("POST /api/v1/sessions: status {}", resp.status()));
        }
        let info: Value = serde_json::from_slice(&body).map_err(|e| format!("{e}"))?;
        info["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no id in {info}"))
    })?;
    // The 201 comes after the commit; let anything else the creation writes land too.
    std::thread::sleep(Duration::from_millis(500));
    drop(server);
    let conn = open(data)?;
    let e = |e: rusqlite::Error| e.to_string();
    let record: String = conn
        .query_row("SELECT record FROM sessions WHERE id = ?1", [&id], |r| {
            r.get(0)
        })
        .map_err(|err| format!("the created session's row: {}", e(err)))?;
    let mut stmt = conn
        .prepare("SELECT seq, frame FROM events WHERE session_id = ?1 ORDER BY seq")
        .map_err(e)?;
    let events = stmt
        .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(e)?
        .collect::<Result<Vec<(i64, String)>, _>>()
        .map_err(e)?;
    Ok(Template { id, record, events })
}

/// Opens the server's database (the server is stopped).
fn open(data: &Path) -> Result<Connection, String> {
    let path = data.join("tandem.db");
    Connection::open(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Copies the template until the store holds `count` sessions, in one transaction,
/// then checkpoints the WAL into the database file.
fn fill(data: &Path, template: &Template, count: usize) -> Result<FillStats, String> {
    let mut conn = open(data)?;
    let e = |e: rusqlite::Error| e.to_string();
    // A bulk load of a stopped server's database: no sync until the checkpoint.
    conn.pragma_update(None, "synchronous", "OFF").map_err(e)?;
    let tx = conn.transaction().map_err(e)?;
    {
        let mut session = tx
            .prepare("INSERT INTO sessions (id, record) VALUES (?1, ?2)")
            .map_err(e)?;
        let mut event = tx
            .prepare("INSERT INTO events (session_id, seq, frame) VALUES (?1, ?2, ?3)")
            .map_err(e)?;
        for i in 1..count {
            // `ses_` and 24 hex digits, as `random_id("ses_", 12)` makes them.
            let id = format!("ses_{i:024x}");
            session
                .execute(params![id, template.record.replace(&template.id, &id)])
                .map_err(e)?;
            for (seq, frame) in &template.events {
                event
                    .execute(params![id, seq, frame.replace(&template.id, &id)])
                    .map_err(e)?;
            }
        }
    }
    tx.commit().map_err(e)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(e)?;
    let stored: i64 = conn
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .map_err(e)?;
    if stored as usize != count {
        return Err(format!("the store holds {stored} sessions, not {count}"));
    }
    drop(conn);
    let db_bytes = std::fs::metadata(data.join("tandem.db"))
        .map(|m| m.len())
        .map_err(|e| format!("tandem.db: {e}"))?;
    Ok(FillStats {
        record_bytes: template.record.len(),
        events_per_session: template.events.len(),
        db_bytes,
    })
}

/// Waits until the process's `VmRSS` holds still (see [`STEADY_FRACTION`]); returns
/// it in KiB and the seconds waited.
fn settled_rss(pid: u32) -> Result<(u64, f64), String> {
    let start = Instant::now();
    let mut last = rss_kib(pid)?;
    let mut still_since = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let now = rss_kib(pid)?;
        if (now as f64 - last as f64).abs() > last as f64 * STEADY_FRACTION {
            last = now;
            still_since = Instant::now();
        } else if still_since.elapsed() >= STEADY {
            return Ok((now, start.elapsed().as_secs_f64()));
        }
        if start.elapsed() > SETTLE_MAX {
            return Ok((now, start.elapsed().as_secs_f64()));
        }
    }
}

/// The memory lines of `/proc/PID/status` (KiB): resident, anonymous, file-backed,
/// peak and virtual.
fn memory_status(pid: u32) -> Result<Value, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = serde_json::Map::new();
    for name in ["VmRSS", "RssAnon", "RssFile", "VmHWM", "VmSize", "Threads"] {
        let value = status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
        out.insert(name.to_string(), json!(value));
    }
    Ok(Value::Object(out))
}

/// Pages through `GET /api/v1/sessions`; returns the distinct sessions listed and the
/// pages read.
async fn page_all(server: &BenchServer) -> Result<(usize, usize), String> {
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            None => format!("/api/v1/sessions?limit={PAGE}"),
            Some(c) => format!("/api/v1/sessions?limit={PAGE}&cursor={c}"),
        };
        let text = server.get_text(&path).await?;
        let page: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        pages += 1;
        let sessions = page["sessions"]
            .as_array()
            .ok_or_else(|| format!("{path}: no sessions"))?;
        for s in sessions {
            if let Some(id) = s["id"].as_str() {
                seen.insert(id.to_string());
            }
        }
        match page["nextCursor"].as_str() {
            Some(next) if !sessions.is_empty() => cursor = Some(next.to_string()),
            _ => return Ok((seen.len(), pages)),
        }
    }
}
