//! `bench replay`: how long a fresh client takes to receive a session's whole stored
//! history.
//!
//! For each size, one session gets exactly that many events: turns of
//! `/stream N` (N + 4 events each: `turn_started`, `user_message`, N deltas,
//! `assistant_message`, `turn_completed`), queued with `queue: true` so they run back
//! to back. Once every event is committed, each run opens a new connection (not
//! timed), sends `chat.subscribe` with `lastSeq 0` and measures from just before the
//! send to the receipt of the event whose `seq` is the last one.

use std::time::{Duration, Instant};

use serde_json::json;

use super::args::Flags;
use super::fanout::{create_session, next_control};
use super::procfs::now_us;
use super::raw_ws::{Incoming, RawWs};
use super::report;
use super::scan;
use super::server::BenchServer;
use super::stats::{median, round};

/// Longest the history may take to build, and one replay may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);
const REPLAY_TIMEOUT: Duration = Duration::from_secs(120);
/// Turns used to build a history of 100,000 events or more (keeps each turn's
/// closing `assistant_message` a few hundred KB).
const EVENTS_PER_TURN_MAX: u64 = 25_000;

/// `bench replay`.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let sizes = flags.list("sizes", &[5_000, 100_000])?;
    let runs: usize = flags.num("runs", 5)?;
    let extra = flags.all("server-arg");
    flags.done()?;
    let server = BenchServer::start(&extra)?;
    let url = server.ws_url();
    let system = actix_rt::System::new();
    for (i, size) in sizes.into_iter().enumerate() {
        let sid = system.block_on(build(&server, &url, i, size))?;
        let mut times = Vec::new();
        for run in 1..=runs {
            let (ms, bytes) = system.block_on(replay_once(&url, &sid, size))?;
            report::line(&json!({"mode": "replay", "events": size, "run": run,
                "ms": round(ms, 2), "bytes": bytes,
                "events_per_s": (size as f64 / ms * 1e3).round()}));
            times.push(ms);
        }
        report::line(&json!({"mode": "replay", "summary": true, "events": size,
            "runs": runs, "median_ms": round(median(&times), 2),
            "min_ms": round(times.iter().copied().fold(f64::INFINITY, f64::min), 2),
            "max_ms": round(times.iter().copied().fold(0.0, f64::max), 2)}));
    }
    Ok(())
}

/// Creates a session holding exactly `size` events (`size` ≥ 5) and waits until all
/// are committed.
async fn build(server: &BenchServer, url: &str, index: usize, size: u64) -> Result<String, String> {
    if size < 5 {
        return Err("--sizes: each size must be at least 5".into());
    }
    let mut ws = RawWs::connect(url).await?;
    let sid = create_session(&mut ws, index).await?;
    // k turns of n deltas: k·(n + 4) = size, with the fewest turns that keep n ≤ max.
    let turns = (1..=size / 5)
        .find(|k| size.is_multiple_of(*k) && size / k - 4 <= EVENTS_PER_TURN_MAX)
        .ok_or_else(|| format!("cannot split {size} events into turns"))?;
    let per_turn = size / turns - 4;
    for t in 0..turns {
        let frame = json!({"type": "chat.send", "sessionId": sid, "queue": true,
            "content": format!("/stream {per_turn}"), "requestId": format!("b{t}")});
        ws.send_text(frame.to_string()).await?;
        let reply = next_control(&mut ws).await?;
        if reply["kind"] != "reply" {
            return Err(format!("chat.send refused: {reply}"));
        }
    }
    report::note(&format!("building {size} events in {turns} turn(s)"));
    let start = Instant::now();
    loop {
        let info = server.get_text(&format!("/api/v1/sessions/{sid}")).await?;
        let info: serde_json::Value = serde_json::from_str(&info).map_err(|e| e.to_string())?;
        let appended = server.metric("tandem_events_appended_total").await?;
        let committed = server.metric("tandem_events_committed_total").await?;
        if info["lastSeq"] == size && info["status"] == "idle" && appended == committed {
            break;
        }
        if start.elapsed() > BUILD_TIMEOUT {
            return Err(format!("history of {size} not built: {info}"));
        }
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
    ws.close().await;
    Ok(sid)
}

/// One replay from `lastSeq 0`: milliseconds and bytes received.
async fn replay_once(url: &str, sid: &str, size: u64) -> Result<(f64, u64), String> {
    let mut ws = RawWs::connect(url).await?;
    let sub = json!({"type": "chat.subscribe", "sessions": [{"sessionId": sid, "lastSeq": 0}]});
    let t0 = now_us();
    ws.send_text(sub.to_string()).await?;
    let mut next = 1;
    let mut bytes = 0u64;
    loop {
        let (seq, len, at) = match ws
            .next_text(REPLAY_TIMEOUT, |b| (scan::seq(b), b.len(), now_us()))
            .await?
        {
            Incoming::Text(t) => t,
            Incoming::Closed(code) => return Err(format!("replay socket closed ({code:?})")),
        };
        bytes += len as u64;
        let Some(seq) = seq else { continue };
        if seq != next {
            return Err(format!(
                "replay out of sequence: got {seq}, expected {next}"
            ));
        }
        next += 1;
        if seq == size {
            ws.close().await;
            return Ok((at.saturating_sub(t0) as f64 / 1e3, bytes));
        }
    }
}
