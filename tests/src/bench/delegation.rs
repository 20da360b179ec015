//! `bench delegation`: what a Driver → Worker delegation costs on top of an ordinary
//! turn, with a scripted Worker that answers at once.
//!
//! One run: start a server; create P Driver sessions and a pair for each
//! (`session.create`, then `pair.create {driverId, worker: {vendor: "scripted"}}`,
//! not timed); then every pair delegates once, also not timed (the first delegation
//! starts the Worker's adapter actor, a one-off). Then:
//!
//! 1. *Latency*: on one pair, N sequential WebSocket `tool.call`s of
//!    `send_to_partner {"message": "ok", "wait": true}` as the Driver, each timed from
//!    just before the frame is written to the receipt of its `reply`. The scripted
//!    Worker runs "ok" as its script, so every result must be
//!    `{status: "complete", response: "ok"}`.
//! 2. *Throughput*: all P pairs at once, each on its own connection (connections dealt
//!    round-robin over `--threads` client threads), each doing K sequential
//!    delegations. Rate = P·K over the time from the start signal to the last reply;
//!    the server's CPU (utime + stime from `/proc`) over that window per delegation.
//! 3. *Reference*: N sequential `chat.send` of the one-line message "ok" to an
//!    unpaired scripted session the sending connection subscribes to, each timed from
//!    writing the frame to the receipt of that turn's `turn_completed`.
//!
//! The sequential phases alternate between two connections (and, for `chat.send`,
//! two sessions): one connection may send at most 5,000 requests a second, and a
//! round trip can take less than 200 µs.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::args::Flags;
use super::fanout::{create_session, next_control};
use super::procfs::{cpu_seconds, now_us};
use super::raw_ws::{Incoming, RawWs};
use super::report;
use super::scan;
use super::server::BenchServer;
use super::stats::{median, percentile, round};

/// Longest one phase may take.
const PHASE_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest one answer may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// Sequential delegations on the latency pair before timing starts.
const WARMUP: usize = 20;

/// What the mode measures.
#[derive(Debug, Clone, Copy)]
struct Config {
    /// Pairs.
    pairs: usize,
    /// Sequential delegations on one pair, and `chat.send` round trips.
    calls: usize,
    /// Sequential delegations per pair in the throughput phase.
    per_pair: usize,
    /// Client threads for the throughput phase.
    threads: usize,
    /// Runs, each against a fresh server.
    runs: usize,
}

/// What one run measured (times in µs).
#[derive(Debug, Clone)]
struct Run {
    /// Sequential delegation round trips, sorted.
    seq_us: Vec<u32>,
    /// Server CPU per sequential delegation.
    seq_cpu_us: f64,
    /// Store commits and events appended per sequential delegation.
    seq_commits: f64,
    seq_events: f64,
    /// Throughput window and delegations done in it.
    tput_window_s: f64,
    tput_done: u64,
    /// Server and load-generator CPU over the window.
    tput_server_cpu_s: f64,
    tput_client_cpu_s: f64,
    /// Round trips under load, sorted.
    tput_us: Vec<u32>,
    /// Events not yet committed when the last delegation was answered, and ms until
    /// they were.
    tput_uncommitted: f64,
    tput_catchup_ms: f64,
    /// Server CPU from the start of the window until every event was committed.
    tput_server_cpu_all_s: f64,
    /// `chat.send` round trips, sorted.
    chat_us: Vec<u32>,
    /// Server CPU per `chat.send` turn.
    chat_cpu_us: f64,
    /// Store commits and events appended per `chat.send` turn.
    chat_commits: f64,
    chat_events: f64,
    /// Answers that were not the expected result.
    errors: u64,
}

impl Run {
    fn rate(&self) -> f64 {
        self.tput_done as f64 / self.tput_window_s
    }

    fn tput_cpu_us(&self) -> f64 {
        self.tput_server_cpu_s * 1e6 / self.tput_done.max(1) as f64
    }

    fn tput_cpu_all_us(&self) -> f64 {
        self.tput_server_cpu_all_s * 1e6 / self.tput_done.max(1) as f64
    }

    fn to_json(&self, cfg: &Config, run: usize, extra: &[String]) -> Value {
        let p = |v: &[u32], q: f64| percentile(v, q);
        json!({
            "mode": "delegation", "run": run, "pairs": cfg.pairs, "calls": cfg.calls,
            "per_pair": cfg.per_pair, "server_args": extra,
            "seq_p50_us": p(&self.seq_us, 50.0), "seq_p99_us": p(&self.seq_us, 99.0),
            "seq_max_us": p(&self.seq_us, 100.0),
            "seq_server_cpu_us_per_delegation": round(self.seq_cpu_us, 1),
            "seq_commits_per_delegation": round(self.seq_commits, 2),
            "seq_events_per_delegation": round(self.seq_events, 2),
            "tput_delegations": self.tput_done,
            "tput_window_ms": round(self.tput_window_s * 1e3, 1),
            "tput_delegations_per_s": self.rate().round(),
            "tput_server_cpu_us_per_delegation": round(self.tput_cpu_us(), 1),
            "tput_server_cpu_us_per_delegation_until_committed":
                round(self.tput_cpu_all_us(), 1),
            "tput_client_cpu_s": round(self.tput_client_cpu_s, 2),
            "tput_p50_us": p(&self.tput_us, 50.0), "tput_p99_us": p(&self.tput_us, 99.0),
            "tput_max_us": p(&self.tput_us, 100.0),
            "tput_uncommitted_events_at_end": self.tput_uncommitted,
            "tput_commit_catchup_ms": round(self.tput_catchup_ms, 1),
            "chat_p50_us": p(&self.chat_us, 50.0), "chat_p99_us": p(&self.chat_us, 99.0),
            "chat_max_us": p(&self.chat_us, 100.0),
            "chat_server_cpu_us_per_turn": round(self.chat_cpu_us, 1),
            "chat_commits_per_turn": round(self.chat_commits, 2),
            "chat_events_per_turn": round(self.chat_events, 2),
            "errors": self.errors,
        })
    }
}

/// The medians of several runs, as one JSON line.
fn summary(cfg: &Config, runs: &[Run], extra: &[String]) -> Value {
    let m = |f: &dyn Fn(&Run) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let pm = |f: &dyn Fn(&Run) -> &Vec<u32>, q: f64| m(&|r| f64::from(percentile(f(r), q)));
    let seq_p50 = pm(&|r| &r.seq_us, 50.0);
    let chat_p50 = pm(&|r| &r.chat_us, 50.0);
    json!({
        "mode": "delegation", "summary": true, "runs": runs.len(), "pairs": cfg.pairs,
        "calls": cfg.calls, "per_pair": cfg.per_pair, "server_args": extra,
        "median_seq_p50_us": seq_p50,
        "median_seq_p99_us": pm(&|r| &r.seq_us, 99.0),
        "median_seq_max_us": pm(&|r| &r.seq_us, 100.0),
        "median_seq_server_cpu_us_per_delegation": round(m(&|r| r.seq_cpu_us), 1),
        "median_tput_delegations_per_s": m(&|r| r.rate()).round(),
        "median_tput_server_cpu_us_per_delegation": round(m(&|r| r.tput_cpu_us()), 1),
        "median_tput_server_cpu_us_per_delegation_until_committed":
            round(m(&|r| r.tput_cpu_all_us()), 1),
        "median_tput_p50_us": pm(&|r| &r.tput_us, 50.0),
        "median_tput_p99_us": pm(&|r| &r.tput_us, 99.0),
        "median_tput_uncommitted_events_at_end": m(&|r| r.tput_uncommitted),
        "median_tput_commit_catchup_ms": round(m(&|r| r.tput_catchup_ms), 1),
        "median_chat_p50_us": chat_p50,
        "median_chat_p99_us": pm(&|r| &r.chat_us, 99.0),
        "median_chat_max_us": pm(&|r| &r.chat_us, 100.0),
        "median_chat_server_cpu_us_per_turn": round(m(&|r| r.chat_cpu_us), 1),
        "delegation_over_chat_p50": round(seq_p50 / chat_p50, 2),
        "errors": runs.iter().map(|r| r.errors).sum::<u64>(),
    })
}

/// `bench delegation`.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let cfg = Config {
        pairs: flags.num("pairs", 100)?,
        calls: flags.num("calls", 1000)?,
        per_pair: flags.num("per-pair", 50)?,
        threads: flags.num("threads", 2)?,
        runs: flags.num("runs", 3)?,
    };
    let extra = flags.all("server-arg");
    flags.done()?;
    if [cfg.pairs, cfg.calls, cfg.per_pair, cfg.threads, cfg.runs].contains(&0) {
        return Err("--pairs, --calls, --per-pair, --threads and --runs must be positive".into());
    }
    let mut runs = Vec::new();
    for run in 1..=cfg.runs {
        let r = run_once(&cfg, &extra)?;
        report::line(&r.to_json(&cfg, run, &extra));
        runs.push(r);
    }
    report::line(&summary(&cfg, &runs, &extra));
    match runs.iter().map(|r| r.errors).sum::<u64>() {
        0 => Ok(()),
        n => Err(format!("{n} answers were not the expected result")),
    }
}

/// The `tool.call` frame of one delegation.
fn delegate_frame(driver: &str, i: usize) -> String {
    json!({"type": "tool.call", "sessionId": driver, "name": "send_to_partner",
        "arguments": {"message": "ok", "wait": true}, "requestId": format!("d{i}")})
    .to_string()
}

/// Whether a `tool.call` answer is the scripted Worker's immediate "ok".
fn is_ok_delegation(answer: &Value) -> bool {
    answer["kind"] == "reply"
        && answer["isError"] == false
        && answer["result"]["status"] == "complete"
        && answer["result"]["response"] == "ok"
}

/// One delegation: writes the frame, waits for the answer; returns the round trip in
/// µs and whether the answer was the expected one (the first bad answer is printed).
async fn delegate_once(ws: &mut RawWs, driver: &str, i: usize) -> Result<(u32, bool), String> {
    let frame = delegate_frame(driver, i);
    let t0 = Instant::now();
    ws.send_text(frame).await?;
    loop {
        let got = ws
            .next_text(ANSWER_TIMEOUT, |b| {
                let at = t0.elapsed();
                match scan::kind(b) {
                    Some(b"reply" | b"protocol_error") => Some((at, b.to_vec())),
                    _ => None,
                }
            })
            .await?;
        match got {
            Incoming::Closed(code) => return Err(format!("socket closed ({code:?})")),
            Incoming::Text(None) => {}
            Incoming::Text(Some((at, bytes))) => {
                let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let ok = is_ok_delegation(&answer);
                if !ok {
                    report::note(&format!("unexpected delegation answer: {answer}"));
                }
                let us = at.as_micros().min(u128::from(u32::MAX)) as u32;
                return Ok((us, ok));
            }
        }
    }
}

/// Server counters that say how much work a phase did: store commits, events
/// appended, events committed.
async fn counters(server: &BenchServer) -> Result<(f64, f64, f64), String> {
    let text = server.get_text("/metrics").await?;
    let get = |n| super::server::metric_value(&text, n).unwrap_or(0.0);
    Ok((
        get("tandem_store_commits_total"),
        get("tandem_events_appended_total"),
        get("tandem_events_committed_total"),
    ))
}

/// How far the store writer is behind when a phase ends: events appended but not yet
/// committed at `end_us` (read just after), and ms from `end_us` until they all are.
async fn commit_lag(server: &BenchServer, end_us: u64) -> Result<(f64, f64), String> {
    let (_, appended, committed) = counters(server).await?;
    let deadline = Instant::now() + PHASE_TIMEOUT;
    loop {
        let (_, _, now_committed) = counters(server).await?;
        if now_committed >= appended {
            let ms = now_us().saturating_sub(end_us) as f64 / 1e3;
            return Ok((appended - committed, ms));
        }
        if Instant::now() > deadline {
            return Err("the store writer did not catch up".into());
        }
        actix_rt::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One run against a fresh server started with `extra` flags.
fn run_once(cfg: &Config, extra: &[String]) -> Result<Run, String> {
    let server = BenchServer::start(extra)?;
    let url = server.ws_url();
    let pid = server.pid();
    let system = actix_rt::System::new();

    // Setup: drivers, pairs, one warm-up delegation per pair.
    let (ws, drivers) = system.block_on(async {
        let mut ws = RawWs::connect(&url).await?;
        let mut drivers = Vec::with_capacity(cfg.pairs);
        for i in 0..cfg.pairs {
            drivers.push(create_session(&mut ws, i).await?);
        }
        for (i, d) in drivers.iter().enumerate() {
            let frame = json!({"type": "pair.create", "driverId": d,
                "worker": {"vendor": "scripted"}, "requestId": format!("pair{i}")});
            ws.send_text(frame.to_string()).await?;
            let reply = next_control(&mut ws).await?;
            if reply["kind"] != "reply" || reply["pair"]["workerId"].as_str().is_none() {
                return Err(format!("pair.create failed: {reply}"));
            }
        }
        for (i, d) in drivers.iter().enumerate() {
            let (_, ok) = delegate_once(&mut ws, d, i).await?;
            if !ok {
                return Err("the warm-up delegation failed".into());
            }
        }
        Ok::<_, String>((ws, drivers))
    })?;
    let mut errors = 0;

    // 1. Sequential latency on one pair. Calls alternate between two connections:
    // one connection may send at most 5,000 requests a second, and a round trip can
    // take less than 200 µs.
    let (seq_us, seq_cpu_us, seq_commits, seq_events) = system.block_on(async {
        let mut conns = [RawWs::connect(&url).await?, RawWs::connect(&url).await?];
        for i in 0..WARMUP {
            delegate_once(&mut conns[i % 2], &drivers[0], i).await?;
        }
        let (commits0, events0, _) = counters(&server).await?;
        let cpu0 = cpu_seconds(pid)?;
        let mut times = Vec::with_capacity(cfg.calls);
        for i in 0..cfg.calls {
            let (us, ok) = delegate_once(&mut conns[i % 2], &drivers[0], i).await?;
            errors += u64::from(!ok);
            times.push(us);
        }
        let cpu = cpu_seconds(pid)? - cpu0;
        let (commits1, events1, _) = counters(&server).await?;
        for ws in conns {
            ws.close().await;
        }
        times.sort_unstable();
        let n = cfg.calls as f64;
        Ok::<_, String>((
            times,
            cpu * 1e6 / n,
            (commits1 - commits0) / n,
            (events1 - events0) / n,
        ))
    })?;

    // 2. Throughput over all pairs.
    let tput = throughput(cfg, &url, &drivers, pid)?;
    errors += tput.errors;
    let (tput_uncommitted, tput_catchup_ms) = system.block_on(commit_lag(&server, tput.end_us))?;
    let tput_server_cpu_all_s = cpu_seconds(pid)? - tput.server_cpu0;

    // 3. Reference: plain `chat.send` round trips.
    let (chat_us, chat_cpu_us, chat_commits, chat_events, chat_errors) =
        system.block_on(chat_round_trips(&server, &url, cfg.calls))?;
    errors += chat_errors;
    system.block_on(ws.close());

    Ok(Run {
        seq_us,
        seq_cpu_us,
        seq_commits,
        seq_events,
        tput_window_s: tput.window_s,
        tput_done: tput.done,
        tput_server_cpu_s: tput.server_cpu_s,
        tput_client_cpu_s: tput.client_cpu_s,
        tput_us: tput.latencies,
        tput_uncommitted,
        tput_catchup_ms,
        tput_server_cpu_all_s,
        chat_us,
        chat_cpu_us,
        chat_commits,
        chat_events,
        errors,
    })
}

/// What the throughput phase measured.
#[derive(Debug, Default)]
struct Tput {
    window_s: f64,
    /// When the last delegation was answered (µs since the epoch).
    end_us: u64,
    /// The server's CPU seconds at the start of the window.
    server_cpu0: f64,
    done: u64,
    server_cpu_s: f64,
    client_cpu_s: f64,
    latencies: Vec<u32>,
    errors: u64,
}

/// What one client thread of the throughput phase measured.
#[derive(Debug, Default)]
struct ThreadOut {
    latencies: Vec<u32>,
    done: u64,
    errors: u64,
    last_us: u64,
}

/// All pairs delegating `per_pair` times each, concurrently.
fn throughput(cfg: &Config, url: &str, drivers: &[String], pid: u32) -> Result<Tput, String> {
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let mut go = Vec::new();
    let mut workers = Vec::new();
    for t in 0..cfg.threads {
        let mine: Vec<String> = drivers
            .iter()
            .enumerate()
            .filter(|(j, _)| j % cfg.threads == t)
            .map(|(_, d)| d.clone())
            .collect();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        go.push(go_tx);
        let (url, ready, per_pair) = (url.to_string(), ready_tx.clone(), cfg.per_pair);
        workers.push(
            std::thread::Builder::new()
                .name(format!("bench-pairs-{t}"))
                .spawn(move || {
                    actix_rt::System::new()
                        .block_on(pair_thread(&url, mine, per_pair, ready, go_rx))
                })
                .map_err(|e| format!("spawn: {e}"))?,
        );
    }
    drop(ready_tx);
    for _ in 0..cfg.threads {
        match ready_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(format!("client threads not ready: {e}")),
        }
    }
    let server_cpu0 = cpu_seconds(pid)?;
    let client_cpu0 = cpu_seconds(std::process::id())?;
    let t0 = now_us();
    for g in go {
        let _ = g.send(());
    }
    let mut out = Tput::default();
    let mut last = t0;
    for w in workers {
        let r = w.join().map_err(|_| "a client thread panicked")??;
        out.latencies.extend(r.latencies);
        out.done += r.done;
        out.errors += r.errors;
        last = last.max(r.last_us);
    }
    out.server_cpu_s = cpu_seconds(pid)? - server_cpu0;
    out.server_cpu0 = server_cpu0;
    out.client_cpu_s = cpu_seconds(std::process::id())? - client_cpu0;
    out.window_s = last.saturating_sub(t0).max(1) as f64 / 1e6;
    out.end_us = last;
    out.latencies.sort_unstable();
    Ok(out)
}

/// One connection per driver on this thread; after the start signal each does
/// `per_pair` sequential delegations.
async fn pair_thread(
    url: &str,
    drivers: Vec<String>,
    per_pair: usize,
    ready: mpsc::Sender<Result<(), String>>,
    go: mpsc::Receiver<()>,
) -> Result<ThreadOut, String> {
    let conns = RawWs::connect_all(url, drivers.len(), &ready, &go).await?;
    let deadline = Instant::now() + PHASE_TIMEOUT;
    let tasks: Vec<_> = conns
        .into_iter()
        .zip(drivers)
        .map(|(mut ws, d)| {
            actix_rt::spawn(async move {
                let mut out = ThreadOut::default();
                for i in 0..per_pair {
                    if Instant::now() > deadline {
                        return Err(format!("throughput phase over {PHASE_TIMEOUT:?}"));
                    }
                    let (us, ok) = delegate_once(&mut ws, &d, i).await?;
                    out.latencies.push(us);
                    out.done += u64::from(ok);
                    out.errors += u64::from(!ok);
                    out.last_us = now_us();
                }
                ws.close().await;
                Ok::<_, String>(out)
            })
        })
        .collect();
    let mut out = ThreadOut::default();
    for t in tasks {
        let r = t.await.map_err(|e| format!("pair task: {e}"))??;
        out.latencies.extend(r.latencies);
        out.done += r.done;
        out.errors += r.errors;
        out.last_us = out.last_us.max(r.last_us);
    }
    Ok(out)
}

/// `n` sequential `chat.send "ok"` turns, each timed to its `turn_completed`. Turns
/// alternate between two unpaired sessions, each on its own connection that is
/// subscribed to it alone (the per-connection request limit, as above). Returns the
/// sorted round trips, the server's CPU µs, commits and events per turn, and how many
/// turns did not complete.
async fn chat_round_trips(
    server: &BenchServer,
    url: &str,
    n: usize,
) -> Result<(Vec<u32>, f64, f64, f64, u64), String> {
    let mut conns = Vec::new();
    for c in 0..2 {
        let mut ws = RawWs::connect(url).await?;
        let sid = create_session(&mut ws, usize::MAX - c).await?;
        let sub = json!({"type": "chat.subscribe", "sessions": [{"sessionId": sid, "lastSeq": 0}]});
        ws.send_text(sub.to_string()).await?;
        match ws
            .next_text(ANSWER_TIMEOUT, |b| {
                scan::kind(b) == Some(b"chat_subscribed")
            })
            .await?
        {
            Incoming::Text(true) => conns.push((ws, sid)),
            _ => return Err(format!("no chat_subscribed for {sid}")),
        }
    }
    let mut errors = 0;
    let mut times = Vec::with_capacity(n);
    let (mut commits0, mut events0, mut cpu0) = (0.0, 0.0, 0.0);
    for i in 0..WARMUP + n {
        if i == WARMUP {
            (commits0, events0, _) = counters(server).await?;
            cpu0 = cpu_seconds(server.pid())?;
        }
        let (ws, sid) = &mut conns[i % 2];
        let frame = json!({"type": "chat.send", "sessionId": sid, "content": "ok",
            "requestId": format!("c{i}")});
        let t0 = Instant::now();
        ws.send_text(frame.to_string()).await?;
        let (at, completed) = loop {
            let got = ws
                .next_text(ANSWER_TIMEOUT, |b| {
                    let at = t0.elapsed();
                    match scan::kind(b) {
                        Some(b"turn_completed") => Some((
                            at,
                            scan::str_after(b, b"\"status\":\"") == Some(b"completed"),
                        )),
                        Some(b"protocol_error") => Some((at, false)),
                        _ => None,
                    }
                })
                .await?;
            match got {
                Incoming::Closed(code) => return Err(format!("socket closed ({code:?})")),
                Incoming::Text(None) => {}
                Incoming::Text(Some(r)) => break r,
            }
        };
        if i >= WARMUP {
            errors += u64::from(!completed);
            times.push(at.as_micros().min(u128::from(u32::MAX)) as u32);
        }
    }
    let cpu = cpu_seconds(server.pid())? - cpu0;
    let (commits1, events1, _) = counters(server).await?;
    for (ws, _) in conns {
        ws.close().await;
    }
    times.sort_unstable();
    let k = n as f64;
    Ok((
        times,
        cpu * 1e6 / k,
        (commits1 - commits0) / k,
        (events1 - events0) / k,
        errors,
    ))
}
