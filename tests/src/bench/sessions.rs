//! `bench sessions`: how fast sessions are created over WebSocket (`session.create`)
//! and over REST (`POST /api/v1/sessions`), and what an idle session costs in memory.
//!
//! A run starts a fresh server and lets it settle, reads its `VmRSS`, creates N
//! sessions over WebSocket, settles and reads `VmRSS` again (per session = delta / N),
//! then creates N more over REST. Creations are spread over `--threads` threads.
//! Over WebSocket, `--clients` connections in all each keep `--window` requests in
//! flight (one connection may send at most 5,000 requests a second, so the load is
//! split). Over REST, each thread keeps `--window` requests in flight, each on its
//! own keep-alive connection. The rate is N over the time from the first request to the last answer.
//!
//! `--stored 1` measures N sessions already in the store instead (RSS per idle session
//! and start time at scale, [`super::stored_sessions`]).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;

use super::args::Flags;
use super::procfs::{now_us, rss_kib};
use super::raw_ws::{Incoming, RawWs};
use super::report;
use super::scan;
use super::server::BenchServer;
use super::stats::{median, round};

/// Longest one creation phase may take.
const PHASE_TIMEOUT: Duration = Duration::from_secs(300);
/// Pause before reading RSS, so the store writer has committed and the server is idle.
const SETTLE: Duration = Duration::from_millis(1000);

/// How to create sessions.
#[derive(Debug, Clone, Copy)]
enum Via {
    Ws,
    Rest,
}

/// One phase's load shape.
#[derive(Debug, Clone, Copy)]
struct Load {
    count: usize,
    clients: usize,
    window: usize,
    threads: usize,
}

/// `bench sessions` (with `--stored 1`, [`super::stored_sessions`]).
pub fn main(mut flags: Flags) -> Result<(), String> {
    if flags.num::<u8>("stored", 0)? == 1 {
        return super::stored_sessions::main(flags);
    }
    let load = Load {
        count: flags.num("count", 10_000)?,
        clients: flags.num("clients", 8)?,
        window: flags.num("window", 32)?,
        threads: flags.num("threads", 2)?,
    };
    let runs: usize = flags.num("runs", 3)?;
    let extra = flags.all("server-arg");
    flags.done()?;
    if load.count == 0 || load.clients == 0 || load.window == 0 || load.threads == 0 {
        return Err("--count, --clients, --window and --threads must be positive".into());
    }
    let (mut ws_rates, mut rest_rates, mut per_session) = (Vec::new(), Vec::new(), Vec::new());
    for run in 1..=runs {
        let server = BenchServer::start(&extra)?;
        std::thread::sleep(SETTLE);
        let rss0 = rss_kib(server.pid())?;
        let (ws_rate, ws_errors) = create_all(&server, load, Via::Ws)?;
        std::thread::sleep(SETTLE);
        let rss1 = rss_kib(server.pid())?;
        let (rest_rate, rest_errors) = create_all(&server, load, Via::Rest)?;
        std::thread::sleep(SETTLE);
        let rss2 = rss_kib(server.pid())?;
        let per = (rss1.saturating_sub(rss0) * 1024) as f64 / load.count as f64;
        let per_rest = (rss2.saturating_sub(rss1) * 1024) as f64 / load.count as f64;
        report::line(&json!({"mode": "sessions", "run": run, "count": load.count,
            "ws_creations_per_s": ws_rate.round(), "ws_errors": ws_errors,
            "rest_creations_per_s": rest_rate.round(), "rest_errors": rest_errors,
            "rss_start_kib": rss0, "rss_after_ws_kib": rss1, "rss_after_rest_kib": rss2,
            "rss_bytes_per_idle_session": per.round(),
            "rss_bytes_per_idle_session_second_batch": per_rest.round()}));
        ws_rates.push(ws_rate);
        rest_rates.push(rest_rate);
        per_session.push(per);
    }
    report::line(&json!({"mode": "sessions", "summary": true, "runs": runs,
        "count": load.count,
        "median_ws_creations_per_s": median(&ws_rates).round(),
        "median_rest_creations_per_s": median(&rest_rates).round(),
        "median_rss_bytes_per_idle_session": median(&per_session).round(),
        "median_rss_kib_per_idle_session": round(median(&per_session) / 1024.0, 2)}));
    Ok(())
}

/// Creates `load.count` sessions; returns creations per second and failed requests.
fn create_all(server: &BenchServer, load: Load, via: Via) -> Result<(f64, u64), String> {
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let mut go = Vec::new();
    let mut workers = Vec::new();
    for t in 0..load.threads {
        // Connections and sessions dealt round-robin over threads.
        let clients: Vec<usize> = (0..load.clients)
            .filter(|c| c % load.threads == t)
            .map(|c| load.count / load.clients + usize::from(c < load.count % load.clients))
            .collect();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        go.push(go_tx);
        let (base, ws_url, ready) = (server.base.clone(), server.ws_url(), ready_tx.clone());
        let window = load.window;
        workers.push(
            std::thread::Builder::new()
                .name(format!("bench-create-{t}"))
                .spawn(move || {
                    actix_rt::System::new().block_on(async move {
                        match via {
                            Via::Ws => ws_thread(&ws_url, clients, window, ready, go_rx).await,
                            Via::Rest => rest_thread(&base, clients, window, ready, go_rx).await,
                        }
                    })
                })
                .map_err(|e| format!("spawn: {e}"))?,
        );
    }
    drop(ready_tx);
    for _ in 0..load.threads {
        match ready_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(format!("creation threads not ready: {e}")),
        }
    }
    let t0 = now_us();
    for g in go {
        let _ = g.send(());
    }
    let (mut last, mut errors) = (t0, 0);
    for w in workers {
        let (end, errs) = w.join().map_err(|_| "a creation thread panicked")??;
        last = last.max(end);
        errors += errs;
    }
    let secs = last.saturating_sub(t0).max(1) as f64 / 1e6;
    Ok(((load.count as u64 - errors) as f64 / secs, errors))
}

/// WebSocket creations: one connection per entry of `clients` (how many it creates),
/// each pipelining `window` requests. Returns when the last answer arrived and how
/// many requests failed.
async fn ws_thread(
    url: &str,
    clients: Vec<usize>,
    window: usize,
    ready: mpsc::Sender<Result<(), String>>,
    go: mpsc::Receiver<()>,
) -> Result<(u64, u64), String> {
    let conns = RawWs::connect_all(url, clients.len(), &ready, &go).await?;
    let deadline = Instant::now() + PHASE_TIMEOUT;
    let tasks: Vec<_> = conns
        .into_iter()
        .zip(clients)
        .map(|(ws, n)| actix_rt::spawn(ws_creator(ws, n, window, deadline)))
        .collect();
    let (mut last, mut errors) = (0, 0);
    for t in tasks {
        let (end, errs) = t.await.map_err(|e| format!("creator task: {e}"))??;
        last = last.max(end);
        errors += errs;
    }
    Ok((last, errors))
}

/// One connection creating `n` sessions with up to `window` requests outstanding.
async fn ws_creator(
    mut ws: RawWs,
    n: usize,
    window: usize,
    deadline: Instant,
) -> Result<(u64, u64), String> {
    let request = r#"{"type":"session.create","title":"idle","requestId":"c"}"#;
    let (mut sent, mut answered, mut errors, mut last) = (0, 0, 0, now_us());
    while answered < n {
        while sent < n && sent - answered < window {
            ws.send_text(request.to_string()).await?;
            sent += 1;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match ws
            .next_text(left, |b| (scan::kind(b).map(<[u8]>::to_vec), now_us()))
            .await?
        {
            Incoming::Closed(code) => return Err(format!("creator closed ({code:?})")),
            Incoming::Text((kind, at)) => match kind.as_deref() {
                Some(b"reply") => {
                    answered += 1;
                    last = at;
                }
                Some(b"protocol_error") => {
                    answered += 1;
                    errors += 1;
                    last = at;
                }
                _ => {}
            },
        }
    }
    ws.close().await;
    Ok((last, errors))
}

/// REST creations: this thread's share (the sum of `clients`), `window` requests in
/// flight at a time.
async fn rest_thread(
    base: &str,
    clients: Vec<usize>,
    window: usize,
    ready: mpsc::Sender<Result<(), String>>,
    go: mpsc::Receiver<()>,
) -> Result<(u64, u64), String> {
    let http = awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish();
    let url = format!("{base}/api/v1/sessions");
    let _ = ready.send(Ok(()));
    go.recv_timeout(Duration::from_secs(60))
        .map_err(|e| format!("no start signal: {e}"))?;
    let total: usize = clients.iter().sum();
    // HTTP/1.1 does not pipeline: `window` requests in flight means `window`
    // keep-alive connections from this thread.
    let in_flight = window.max(1);
    let results: Vec<(bool, u64)> = futures_util::stream::iter(0..total)
        .map(|_| {
            let req = http
                .post(url.as_str())
                .insert_header(("Content-Type", "application/json"));
            async move {
                match req.send_body(r#"{"title":"idle"}"#).await {
                    Ok(mut resp) => {
                        let ok = resp.status().as_u16() == 201;
                        let _ = resp.body().await;
                        (ok, now_us())
                    }
                    Err(_) => (false, now_us()),
                }
            }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let last = results.iter().map(|r| r.1).max().unwrap_or(0);
    let errors = results.iter().filter(|r| !r.0).count() as u64;
    Ok((last, errors))
}
