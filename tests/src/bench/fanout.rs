//! `bench fanout`: S sessions each stream E events to C subscribed clients.
//!
//! One run: start a server; create S sessions; open S×C WebSocket clients spread over
//! worker threads (each its own actix System: awc clients are not `Send`), each
//! subscribed from `lastSeq 0`; then send every session one `chat.send` with the
//! script `/stream E` (or a paced script with `--rate`), and wait until every client
//! has received its session's `turn_completed`.
//!
//! Counted as delivered: every history event frame (a frame with a `"seq":` field) a
//! client received during the window; one turn of `/stream E` is E + 4 events
//! (`turn_started`, `user_message`, E `text_delta`s, `assistant_message`,
//! `turn_completed`). Control frames (`chat_subscribed`, `reply`) are not counted.
//! The window runs from just before the first `chat.send` is written to the receipt
//! of the last client's `turn_completed`. Latency is the client's wall clock at
//! receipt minus the event's `ts` (the server's wall clock in ms when it appended the
//! event, just before its commit), for every delivered event.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::args::Flags;
use super::procfs::{cpu_seconds, now_us, syscalls, ThreadCpu};
use super::raw_ws::{Incoming, RawWs};
use super::report;
use super::scan;
use super::server::BenchServer;
use super::stats::{median, percentile, round};
use super::trace::Tracer;

/// Longest a run may take from the first send; then it fails (a lost event must not
/// hang the benchmark).
const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest the setup (connecting and subscribing every client) may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// What one fanout point is.
#[derive(Debug, Clone)]
pub struct FanoutConfig {
    /// Sessions streaming at once.
    pub sessions: usize,
    /// Clients subscribed to each session.
    pub clients: usize,
    /// `text_delta` events each session streams.
    pub events: u64,
    /// Events per second per session (paced); `None` streams as fast as possible.
    pub rate: Option<f64>,
    /// A paced script sleeps this long between its `/stream` bursts.
    pub tick_ms: u64,
    /// Client threads.
    pub threads: usize,
    /// Runs of the point, each against a fresh server.
    pub runs: usize,
    /// Sample `/metrics` this often during a run (0: never); see [`super::trace`].
    pub trace_ms: u64,
    /// Write every delivery's receipt time, latency and seq to this file (the last
    /// run's), to see when latency builds up.
    pub dump: Option<String>,
    /// Cross-node (`--cross-node 1`): a NATS server and two clustered servers; the
    /// sessions live on node `a`, every client is connected to node `b`. Server CPU
    /// is both nodes' (NATS's is reported apart).
    pub cross_node: bool,
    /// `--subscribe all`: `clients` clients in all, each subscribed to every session
    /// (a dashboard); else (`one`) `clients` clients per session, each subscribed to
    /// that one. Deliveries are sessions × clients × events either way.
    pub subscribe_all: bool,
    /// `--floor 1`: after each tandem run, the same clients against the minimal
    /// fan-out server ([`super::floor`]), and the ratio of CPU per delivery.
    /// `--floor durable`: the floor, then the durable floor (the floor committing
    /// every event to SQLite before it sends it, [`super::floor_store`]), each ratio.
    pub floor: Floor,
}

/// Which reference servers `bench fanout` runs after each tandem run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floor {
    /// None (`--floor 0`, the default).
    None,
    /// The floor server (`--floor 1`).
    Plain,
    /// The floor server and the durable floor (`--floor durable`).
    Durable,
}

impl FanoutConfig {
    /// Reads the fanout flags.
    pub fn from_flags(flags: &mut Flags) -> Result<FanoutConfig, String> {
        let cfg = FanoutConfig {
            sessions: flags.num("sessions", 10)?,
            clients: flags.num("clients", 10)?,
            events: flags.num("events", 2000)?,
            rate: flags.opt("rate")?,
            tick_ms: flags.num("tick-ms", 10)?,
            threads: flags.num("threads", 2)?,
            runs: flags.num("runs", 3)?,
            trace_ms: flags.num("trace-ms", 0)?,
            dump: flags.all("dump-latency").pop(),
            cross_node: flags.num::<u8>("cross-node", 0)? == 1,
            subscribe_all: match flags.all("subscribe").pop().as_deref() {
                None | Some("one") => false,
                Some("all") => true,
                Some(other) => return Err(format!("--subscribe one|all, not {other}")),
            },
            floor: match flags.all("floor").pop().as_deref() {
                None | Some("0") => Floor::None,
                Some("1") => Floor::Plain,
                Some("durable") => Floor::Durable,
                Some(other) => return Err(format!("--floor 0|1|durable, not {other}")),
            },
        };
        if [cfg.sessions, cfg.clients, cfg.threads, cfg.runs].contains(&0) || cfg.tick_ms == 0 {
            return Err(
                "--sessions, --clients, --threads, --runs, --tick-ms must be positive".into(),
            );
        }
        Ok(cfg)
    }

    /// The script each session runs.
    fn script(&self) -> String {
        let Some(rate) = self.rate.filter(|r| *r > 0.0) else {
            return format!("/stream {}", self.events);
        };
        // Bursts of `per_tick` events every `tick_ms`. The achieved rate is lower (a
        // burst takes time, a sleep lasts at least its length); runs report it.
        let per_tick = ((rate * self.tick_ms as f64 / 1000.0).round() as u64).max(1);
        let mut lines = Vec::new();
        let mut left = self.events;
        while left > 0 {
            let n = left.min(per_tick);
            lines.push(format!("/stream {n}"));
            left -= n;
            if left > 0 {
                lines.push(format!("/sleep {}", self.tick_ms));
            }
        }
        lines.join("\n")
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct FanoutRun {
    /// Event frames received by all clients.
    pub delivered: u64,
    /// First send to last `turn_completed` received, seconds.
    pub window_s: f64,
    /// Latency percentiles, microseconds.
    pub p50_us: u32,
    /// 99th percentile.
    pub p99_us: u32,
    /// Largest.
    pub max_us: u32,
    /// Server CPU over the window, seconds: the sum of its threads' on-CPU time
    /// (`/proc/<pid>/task/*/schedstat`, nanoseconds; see [`ThreadCpu`]).
    pub server_cpu_s: f64,
    /// The same from `/proc/<pid>/stat` (utime + stime, 10 ms ticks), as earlier
    /// tables measured it.
    pub server_cpu_ticks_s: f64,
    /// Server CPU seconds per thread name (digits dropped), largest first.
    pub server_threads: Vec<(String, f64)>,
    /// Read-like and write-like system calls the server made over the window (see
    /// [`syscalls`]; tandem alone, also in cross-node runs).
    pub server_syscalls: (u64, u64),
    /// Server threads that ended during the window (their CPU is missing from
    /// `server_cpu_s`, not from `server_cpu_ticks_s`).
    pub server_threads_ended: usize,
    /// This load generator's CPU over the window, seconds.
    pub client_cpu_s: f64,
    /// `lagged` notices clients got; each client then resubscribes from the notice's
    /// `resumeFrom`, as a real client does.
    pub lagged: u64,
    /// Clients the server closed before their session's turn ended (must be 0: these
    /// clients never stop reading).
    pub closes: u64,
    /// Events that arrived out of sequence (must be 0).
    pub gaps: u64,
    /// Cross-node runs: the NATS server's CPU over the window, seconds.
    pub nats_cpu_s: Option<f64>,
}

impl FanoutRun {
    /// Delivered events per second.
    pub fn rate(&self) -> f64 {
        self.delivered as f64 / self.window_s
    }

    /// Server CPU microseconds per delivered event.
    pub fn cpu_us_per_delivery(&self) -> f64 {
        self.server_cpu_s * 1e6 / self.delivered.max(1) as f64
    }

    /// One JSON result line.
    pub fn to_json(&self, cfg: &FanoutConfig, run: usize, extra: &[String]) -> Value {
        let per_session = self.delivered as f64 / (cfg.sessions * cfg.clients) as f64;
        json!({
            "mode": "fanout",
            "run": run,
            "sessions": cfg.sessions,
            "clients": cfg.clients,
            "subscribe": if cfg.subscribe_all { "all" } else { "one" },
            "events": cfg.events,
            "rate_target": cfg.rate,
            "tick_ms": cfg.rate.map(|_| cfg.tick_ms),
            "server_args": extra,
            "delivered": self.delivered,
            "window_ms": round(self.window_s * 1e3, 1),
            "delivered_per_s": self.rate().round(),
            "events_per_s_per_session": round(per_session / self.window_s, 1),
            "p50_ms": round(f64::from(self.p50_us) / 1e3, 3),
            "p99_ms": round(f64::from(self.p99_us) / 1e3, 3),
            "max_ms": round(f64::from(self.max_us) / 1e3, 3),
            "server_cpu_s": round(self.server_cpu_s, 4),
            "server_cpu_us_per_delivery": round(self.cpu_us_per_delivery(), 3),
            "server_cpu_ticks_s": round(self.server_cpu_ticks_s, 2),
            "server_threads_ms": self.server_threads.iter()
                .map(|(name, s)| json!([name, round(s * 1e3, 1)]))
                .collect::<Vec<_>>(),
            "server_threads_ended": self.server_threads_ended,
            "server_syscr": self.server_syscalls.0,
            "server_syscw": self.server_syscalls.1,
            "client_cpu_s": round(self.client_cpu_s, 2),
            "cross_node": cfg.cross_node,
            "nats_cpu_s": self.nats_cpu_s.map(|c| round(c, 2)),
            "lagged": self.lagged,
            "closes": self.closes,
            "gaps": self.gaps,
        })
    }
}

/// The medians of several runs, as one JSON line.
pub fn summary(cfg: &FanoutConfig, runs: &[FanoutRun], extra: &[String]) -> Value {
    let m = |f: &dyn Fn(&FanoutRun) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    json!({
        "mode": "fanout",
        "summary": true,
        "runs": runs.len(),
        "sessions": cfg.sessions,
        "clients": cfg.clients,
        "events": cfg.events,
        "rate_target": cfg.rate,
        "tick_ms": cfg.rate.map(|_| cfg.tick_ms),
        "subscribe": if cfg.subscribe_all { "all" } else { "one" },
        "server_args": extra,
        "median_delivered_per_s": m(&|r| r.rate()).round(),
        "median_events_per_s_per_session": round(
            m(&|r| r.delivered as f64 / (cfg.sessions * cfg.clients) as f64 / r.window_s),
            1
        ),
        "median_p50_ms": round(m(&|r| f64::from(r.p50_us)) / 1e3, 3),
        "median_p99_ms": round(m(&|r| f64::from(r.p99_us)) / 1e3, 3),
        "median_max_ms": round(m(&|r| f64::from(r.max_us)) / 1e3, 3),
        "median_server_cpu_us_per_delivery": round(m(&|r| r.cpu_us_per_delivery()), 3),
        "cross_node": cfg.cross_node,
        "median_nats_cpu_us_per_delivery": cfg.cross_node.then(|| round(
            m(&|r| r.nats_cpu_s.unwrap_or(0.0) * 1e6 / r.delivered.max(1) as f64),
            3
        )),
        "lagged": runs.iter().map(|r| r.lagged).sum::<u64>(),
        "closes": runs.iter().map(|r| r.closes).sum::<u64>(),
        "gaps": runs.iter().map(|r| r.gaps).sum::<u64>(),
    })
}

/// `bench fanout`.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let cfg = FanoutConfig::from_flags(&mut flags)?;
    let extra = flags.all("server-arg");
    flags.done()?;
    let mut runs = Vec::new();
    let mut floors = Vec::new();
    let mut durables = Vec::new();
    for run in 1..=cfg.runs {
        let r = run_once(&cfg, &extra)?;
        report::line(&r.to_json(&cfg, run, &extra));
        if cfg.floor != Floor::None {
            // The same clients and load against the floor, right after.
            let f = run_against(BenchServer::start_floor(None)?, None, None, &cfg)?;
            let mut line = f.to_json(&cfg, run, &[]);
            line["server"] = json!("floor");
            line["cpu_ratio_tandem_vs_floor"] =
                json!(round(r.cpu_us_per_delivery() / f.cpu_us_per_delivery(), 2));
            report::line(&line);
            floors.push(f);
        }
        if cfg.floor == Floor::Durable {
            // And against the durable floor, which must have committed every event.
            let dir = crate::TempDir::new("bench-durable-floor");
            let db = dir.path().join("floor.db");
            let d = run_against(BenchServer::start_floor(Some(&db))?, None, None, &cfg)?;
            let committed = super::floor_store::count(&db)?;
            let produced = cfg.sessions as u64 * (cfg.events + 4);
            if committed != produced {
                return Err(format!(
                    "the durable floor committed {committed} of {produced} events"
                ));
            }
            let mut line = d.to_json(&cfg, run, &[]);
            line["server"] = json!("durable_floor");
            line["events_committed"] = json!(committed);
            line["cpu_ratio_tandem_vs_durable_floor"] =
                json!(round(r.cpu_us_per_delivery() / d.cpu_us_per_delivery(), 2));
            report::line(&line);
            durables.push(d);
        }
        runs.push(r);
    }
    let mut line = summary(&cfg, &runs, &extra);
    for (name, refs) in [("floor", &floors), ("durable_floor", &durables)] {
        if refs.is_empty() {
            continue;
        }
        let cpu = median(
            &refs
                .iter()
                .map(FanoutRun::cpu_us_per_delivery)
                .collect::<Vec<_>>(),
        );
        line[format!("{name}_median_server_cpu_us_per_delivery")] = json!(round(cpu, 3));
        line[format!("{name}_median_p99_ms")] = json!(round(
            median(&refs.iter().map(|f| f64::from(f.p99_us)).collect::<Vec<_>>()) / 1e3,
            3
        ));
        line[format!("{name}_gaps")] = json!(refs.iter().map(|f| f.gaps).sum::<u64>());
        line[format!("median_cpu_ratio_tandem_vs_{name}")] = json!(round(
            median(
                &runs
                    .iter()
                    .zip(refs.iter())
                    .map(|(r, f)| r.cpu_us_per_delivery() / f.cpu_us_per_delivery())
                    .collect::<Vec<_>>()
            ),
            2
        ));
    }
    report::line(&line);
    Ok(())
}

/// What one client thread measured.
#[derive(Debug, Default)]
struct ThreadOut {
    latencies: Vec<u32>,
    /// Client index, receipt time (µs since the epoch), latency (µs), seq and session
    /// of every delivery, kept only for `--dump-latency`.
    samples: Vec<(usize, u64, u32, u64, usize)>,
    delivered: u64,
    last_us: u64,
    lagged: u64,
    closes: u64,
    gaps: u64,
}

/// One run against a fresh server started with `extra` flags.
pub fn run_once(cfg: &FanoutConfig, extra: &[String]) -> Result<FanoutRun, String> {
    let nats = cfg.cross_node.then(crate::NatsServer::start);
    let node_args = |node: &str| {
        let mut args = extra.to_vec();
        if let Some(nats) = &nats {
            args.extend(["--nats".into(), nats.url(), "--node".into(), node.into()]);
        }
        args
    };
    let server = BenchServer::start(&node_args("a"))?;
    // Cross-node: clients on a second node, sessions on the first.
    let remote = match nats {
        Some(_) => Some(BenchServer::start(&node_args("b"))?),
        None => None,
    };
    run_against(server, remote, nats, cfg)
}

/// One run against `server` (tandem, or the floor); with `remote`, the clients connect
/// there instead (cross-node), and `nats`'s CPU is reported apart.
fn run_against(
    server: BenchServer,
    remote: Option<BenchServer>,
    nats: Option<crate::NatsServer>,
    cfg: &FanoutConfig,
) -> Result<FanoutRun, String> {
    let url = remote.as_ref().unwrap_or(&server).ws_url();
    let system = actix_rt::System::new();
    let (mut driver, sessions) = system.block_on(async {
        let mut driver = RawWs::connect(&server.ws_url()).await?;
        let mut sessions = Vec::new();
        for i in 0..cfg.sessions {
            sessions.push(create_session(&mut driver, i).await?);
        }
        if remote.is_some() {
            wait_listed(&url, sessions.len()).await?;
        }
        Ok::<_, String>((driver, sessions))
    })?;

    let deadline = Instant::now() + SETUP_TIMEOUT + RUN_TIMEOUT;
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let expected = (cfg.events + 4) as usize;
    // Each client's sessions: every session (`--subscribe all`), or client j watches
    // session j % S.
    let watched: Vec<Vec<String>> = if cfg.subscribe_all {
        vec![sessions.clone(); cfg.clients]
    } else {
        (0..cfg.sessions * cfg.clients)
            .map(|j| vec![sessions[j % cfg.sessions].clone()])
            .collect()
    };
    let mut workers = Vec::new();
    for t in 0..cfg.threads {
        // Client j lives on thread j % threads.
        let subs: Vec<Vec<String>> = watched
            .iter()
            .enumerate()
            .filter(|(j, _)| j % cfg.threads == t)
            .map(|(_, s)| s.clone())
            .collect();
        let (url, ready, keep) = (url.clone(), ready_tx.clone(), cfg.dump.is_some());
        let cfg_threads = cfg.threads;
        workers.push(
            std::thread::Builder::new()
                .name(format!("bench-clients-{t}"))
                .spawn(move || {
                    let place = (t, cfg_threads);
                    client_thread(&url, subs, expected, keep, place, ready, deadline)
                })
                .map_err(|e| format!("spawn client thread: {e}"))?,
        );
    }
    drop(ready_tx);
    for _ in 0..cfg.threads {
        match ready_rx.recv_timeout(SETUP_TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(format!("client threads not ready: {e}")),
        }
    }

    let script = cfg.script();
    let remote_cpu = |r: &Option<BenchServer>| r.as_ref().map_or(Ok(0.0), |r| cpu_seconds(r.pid()));
    let nats_cpu = |n: &Option<crate::NatsServer>| n.as_ref().map(|n| cpu_seconds(n.pid()));
    let server_cpu0 = cpu_seconds(server.pid())? + remote_cpu(&remote)?;
    let remote_threads =
        |r: &Option<BenchServer>| r.as_ref().map(|r| ThreadCpu::of(r.pid())).transpose();
    let server_threads0 = (ThreadCpu::of(server.pid())?, remote_threads(&remote)?);
    let syscalls0 = syscalls(server.pid())?;
    let nats_cpu0 = nats_cpu(&nats).transpose()?;
    let client_cpu0 = cpu_seconds(std::process::id())?;
    let t0 = now_us();
    let tracer = (cfg.trace_ms > 0)
        .then(|| Tracer::start(&server.base, Duration::from_millis(cfg.trace_ms), t0));
    system.block_on(async {
        for (i, sid) in sessions.iter().enumerate() {
            let frame = json!({"type": "chat.send", "sessionId": sid, "content": script,
                "requestId": format!("send{i}")});
            driver.send_text(frame.to_string()).await?;
        }
        for _ in 0..sessions.len() {
            let reply = next_control(&mut driver).await?;
            if reply["kind"] != "reply" {
                return Err(format!("chat.send refused: {reply}"));
            }
        }
        Ok::<_, String>(())
    })?;

    let mut total = ThreadOut::default();
    for w in workers {
        let out = w
            .join()
            .map_err(|_| "a client thread panicked".to_string())??;
        total.latencies.extend(out.latencies);
        total.samples.extend(out.samples);
        total.delivered += out.delivered;
        total.last_us = total.last_us.max(out.last_us);
        total.lagged += out.lagged;
        total.closes += out.closes;
        total.gaps += out.gaps;
    }
    let server_cpu_ticks_s = cpu_seconds(server.pid())? + remote_cpu(&remote)? - server_cpu0;
    let mut threads = ThreadCpu::of(server.pid())?.since(&server_threads0.0);
    let syscalls1 = syscalls(server.pid())?;
    if let (Some(end), Some(start)) = (remote_threads(&remote)?, &server_threads0.1) {
        // Cross-node: both nodes' threads, the client node's names marked.
        let b = end.since(start);
        threads.total_s += b.total_s;
        threads.ended += b.ended;
        threads
            .by_name
            .extend(b.by_name.into_iter().map(|(n, s)| (format!("b:{n}"), s)));
    }
    let nats_cpu_s = match (nats_cpu(&nats).transpose()?, nats_cpu0) {
        (Some(end), Some(start)) => Some(end - start),
        _ => None,
    };
    if let Some(tracer) = tracer {
        tracer.stop();
    }
    let client_cpu_s = cpu_seconds(std::process::id())? - client_cpu0;
    total.latencies.sort_unstable();
    if let Some(path) = &cfg.dump {
        let mut text = String::from(
            "# client recv_ms_since_first_send latency_us seq session recv_us_since_epoch\n",
        );
        for (client, at, latency, seq, session) in &total.samples {
            let since = at.saturating_sub(t0) as f64 / 1e3;
            let sid = &watched[*client][*session];
            text.push_str(&format!("{client} {since:.3} {latency} {seq} {sid} {at}\n"));
        }
        std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(FanoutRun {
        delivered: total.delivered,
        window_s: total.last_us.saturating_sub(t0).max(1) as f64 / 1e6,
        p50_us: percentile(&total.latencies, 50.0),
        p99_us: percentile(&total.latencies, 99.0),
        max_us: percentile(&total.latencies, 100.0),
        server_cpu_s: threads.total_s,
        server_cpu_ticks_s,
        server_threads: threads.by_name,
        server_threads_ended: threads.ended,
        server_syscalls: (syscalls1.0 - syscalls0.0, syscalls1.1 - syscalls0.1),
        client_cpu_s,
        lagged: total.lagged,
        closes: total.closes,
        gaps: total.gaps,
        nats_cpu_s,
    })
}

/// Waits (at most 10 s) until the node at `url` lists `count` sessions (the other
/// node's, through the cluster directory).
async fn wait_listed(url: &str, count: usize) -> Result<(), String> {
    let mut ws = RawWs::connect(url).await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let frame = json!({"type": "sessions.list", "limit": 1000, "requestId": "list"});
        ws.send_text(frame.to_string()).await?;
        let reply = next_control(&mut ws).await?;
        if reply["sessions"].as_array().map_or(0, Vec::len) >= count {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the client node lists fewer than {count} sessions"));
        }
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates a scripted session over `ws` and returns its id.
pub async fn create_session(ws: &mut RawWs, i: usize) -> Result<String, String> {
    let frame = json!({"type": "session.create", "title": format!("bench {i}"),
        "requestId": format!("create{i}")});
    ws.send_text(frame.to_string()).await?;
    let reply = next_control(ws).await?;
    reply["session"]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("session.create failed: {reply}"))
}

/// The next `reply` or `protocol_error`, parsed (control frames are rare and small).
pub async fn next_control(ws: &mut RawWs) -> Result<Value, String> {
    loop {
        match ws
            .next_text(Duration::from_secs(30), |b| {
                serde_json::from_slice::<Value>(b).unwrap_or(Value::Null)
            })
            .await?
        {
            Incoming::Closed(code) => return Err(format!("socket closed ({code:?})")),
            Incoming::Text(v) if v["kind"] == "reply" || v["kind"] == "protocol_error" => {
                return Ok(v)
            }
            Incoming::Text(_) => {}
        }
    }
}

/// Opens one client per entry of `subs` on this thread, subscribes each, reports ready,
/// then receives until every client has its session's `turn_completed`.
fn client_thread(
    url: &str,
    subs: Vec<Vec<String>>,
    expected: usize,
    keep_samples: bool,
    (thread, threads): (usize, usize),
    ready: mpsc::Sender<Result<(), String>>,
    deadline: Instant,
) -> Result<ThreadOut, String> {
    actix_rt::System::new().block_on(async move {
        let setup = async {
            let mut clients = Vec::with_capacity(subs.len());
            for sids in &subs {
                clients.push(subscribed_client(url, sids).await?);
            }
            Ok::<_, String>(clients)
        };
        let clients = match setup.await {
            Ok(c) => c,
            Err(e) => {
                let _ = ready.send(Err(e.clone()));
                return Err(e);
            }
        };
        let _ = ready.send(Ok(()));
        let tasks: Vec<_> = clients
            .into_iter()
            .zip(subs.iter().cloned())
            .enumerate()
            .map(|(i, (ws, sid))| {
                // Client j of the run is the i-th of thread j % threads.
                let id = keep_samples.then_some(i * threads + thread);
                let reader = Reader {
                    expected_per_session: expected,
                    sample_id: id,
                    deadline,
                    pause: None,
                };
                actix_rt::spawn(async move { reader.receive(ws, &sid).await.map(|c| c.out) })
            })
            .collect();
        let mut out = ThreadOut::default();
        for task in tasks {
            let c = task.await.map_err(|e| format!("client task: {e}"))??;
            out.latencies.extend(c.latencies);
            out.samples.extend(c.samples);
            out.delivered += c.delivered;
            out.last_us = out.last_us.max(c.last_us);
            out.lagged += c.lagged;
            out.closes += c.closes;
            out.gaps += c.gaps;
        }
        Ok(out)
    })
}

/// Connects one client and subscribes it to `sids` from the start of their histories.
pub async fn subscribed_client(url: &str, sids: &[String]) -> Result<RawWs, String> {
    let mut ws = RawWs::connect(url).await?;
    let sessions: Vec<Value> = sids
        .iter()
        .map(|sid| json!({"sessionId": sid, "lastSeq": 0}))
        .collect();
    let sub = json!({"type": "chat.subscribe", "sessions": sessions});
    ws.send_text(sub.to_string()).await?;
    let mut acked = 0;
    while acked < sids.len() {
        match ws
            .next_text(SETUP_TIMEOUT, |b| scan::kind(b) == Some(b"chat_subscribed"))
            .await?
        {
            Incoming::Text(true) => acked += 1,
            Incoming::Text(false) => {}
            Incoming::Closed(code) => {
                return Err(format!("closed ({code:?}) before chat_subscribed"))
            }
        }
    }
    Ok(ws)
}

/// How one client reads: it counts event frames and their latency until it has every
/// watched session's `turn_completed`. Told it lagged, it resubscribes that session
/// from where it was dropped and goes on, as a real client does.
#[derive(Debug, Clone)]
pub struct Reader {
    /// Events expected per session (for the latency buffer's size).
    pub expected_per_session: usize,
    /// Keep per-delivery samples under this client index (`--dump-latency`).
    pub sample_id: Option<usize>,
    /// Give up (an error) at this instant.
    pub deadline: Instant,
    /// After every so many frames, stop reading for this long: a client that keeps
    /// reading, slower than the sessions produce (the e2e tests use it to make lags
    /// happen).
    pub pause: Option<(u64, Duration)>,
}

/// What one client saw.
#[derive(Debug, Default)]
pub struct ClientOut {
    /// Counters and latencies, as the bench sums them.
    out: ThreadOut,
    /// Per watched session: the next `seq` the client expected when it stopped.
    pub next_seq: Vec<(String, u64)>,
}

impl ClientOut {
    /// Event frames received.
    pub fn delivered(&self) -> u64 {
        self.out.delivered
    }
    /// `lagged` notices received.
    pub fn lagged(&self) -> u64 {
        self.out.lagged
    }
    /// 1 when the server closed the socket before every turn ended.
    pub fn closes(&self) -> u64 {
        self.out.closes
    }
    /// Events that arrived out of sequence.
    pub fn gaps(&self) -> u64 {
        self.out.gaps
    }
}

impl Reader {
    /// Reads `ws`, subscribed to every session of `sids`, until each one's
    /// `turn_completed`, or until the server closes it.
    pub async fn receive(&self, mut ws: RawWs, sids: &[String]) -> Result<ClientOut, String> {
        let mut out = ThreadOut {
            latencies: Vec::with_capacity(self.expected_per_session * sids.len()),
            ..ThreadOut::default()
        };
        // Per session (in `sids` order): the next seq expected, and whether its turn
        // has ended.
        let mut next_seq: Vec<u64> = vec![1; sids.len()];
        let mut done: Vec<bool> = vec![false; sids.len()];
        let mut frames: u64 = 0;
        while done.iter().any(|d| !d) {
            if let Some((every, pause)) = self.pause {
                frames += 1;
                if frames.is_multiple_of(every) {
                    actix_rt::time::sleep(pause).await;
                }
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            let frame = ws
                .next_text(left, |b| {
                    let at = now_us();
                    let kind = scan::kind(b);
                    let session = scan::str_after(b, b"\"sessionId\":\"")
                        .and_then(|s| sids.iter().position(|sid| sid.as_bytes() == s));
                    let lagged = (kind == Some(b"lagged"))
                        .then(|| scan::u64_after(b, b"\"resumeFrom\":"))
                        .flatten();
                    let ended = kind == Some(b"turn_completed");
                    (scan::seq(b), scan::ts(b), session, ended, lagged, at)
                })
                .await?;
            let (seq, ts, session, ended, lagged, at) = match frame {
                Incoming::Text(t) => t,
                Incoming::Closed(_) => {
                    out.closes += 1;
                    break;
                }
            };
            let Some(s) = session else { continue };
            if let Some(resume_from) = lagged {
                // The subscription was dropped: take it up again where it stopped.
                out.lagged += 1;
                let sub = json!({"type": "chat.subscribe",
                    "sessions": [{"sessionId": sids[s], "lastSeq": resume_from.saturating_sub(1)}]});
                if ws.send_text(sub.to_string()).await.is_err() {
                    // The server closed the socket after telling it so.
                    out.closes += 1;
                    break;
                }
                next_seq[s] = resume_from;
                continue;
            }
            let Some(seq) = seq else { continue };
            if seq != next_seq[s] {
                out.gaps += 1;
            }
            next_seq[s] = seq + 1;
            out.delivered += 1;
            out.last_us = at;
            if let Some(ts) = ts {
                let latency = at.saturating_sub(ts * 1000).min(u64::from(u32::MAX)) as u32;
                out.latencies.push(latency);
                if let Some(id) = self.sample_id {
                    out.samples.push((id, at, latency, seq, s));
                }
            }
            if ended {
                done[s] = true;
            }
        }
        if out.closes == 0 {
            ws.close().await;
        }
        Ok(ClientOut {
            out,
            next_seq: sids.iter().cloned().zip(next_seq).collect(),
        })
    }
}
