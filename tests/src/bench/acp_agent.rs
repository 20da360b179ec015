//! `bench acp-agent`: what `tandem acp` (tandem as an ACP agent, `http/src/acp_agent/`)
//! adds to a turn, against the built-in `scripted` vendor (no model).
//!
//! One server ([`BenchServer`], `--auth none`), two sessions of the default (scripted)
//! vendor in the same directory, and two clients:
//!
//! - *direct*: a WebSocket subscribed to its session, each turn timed from writing
//!   `chat.send` to receiving that turn's `turn_completed`;
//! - *acp*: a `tandem acp --url …` child process (this executable as `bench tandem
//!   acp`) driven over its stdio as an editor would: `initialize`, `session/new
//!   {cwd}`, then each turn timed from writing `session/prompt` to reading its answer
//!   (`stopReason: end_turn`), the `session/update`s before it counted.
//!
//! Both send the same prompt (`/stream N`: N `text_delta`s, then the whole text),
//! alternating turn by turn so both see the same machine load, after `WARMUP` untimed
//! turns each; a round's first side alternates too. Overhead = acp − direct for the
//! median and p90 of the two distributions, and the median of the per-turn
//! differences. `tandem acp`'s CPU over a round (utime + stime from
//! `/proc/PID/stat`, in clock ticks, and the threads' on-CPU nanoseconds from
//! `/proc/PID/task/*/schedstat`) is divided by the updates it wrote.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::args::Flags;
use super::codex::{ms, subscribed_session, summary};
use super::procfs::{cpu_seconds, ThreadCpu};
use super::raw_ws::{Incoming, RawWs};
use super::report;
use super::scan;
use super::server::BenchServer;
use super::stats::{median, percentile, round};
use crate::TempDir;

/// Untimed turns on each side before the first round (the first prompt starts the
/// scripted adapter of each session).
const WARMUP: usize = 5;
/// Longest one turn (or one setup request) may take.
const TURN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the server may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the mode.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let rounds: usize = flags.num("rounds", 5)?;
    // Enough turns that `tandem acp`'s CPU in /proc/PID/stat (10 ms ticks) is some
    // ten ticks a round at the default prompt.
    let turns: usize = flags.num("turns", 500)?;
    let events: u64 = flags.num("events", 20)?;
    let extra = flags.all("server-arg");
    flags.done()?;
    if rounds == 0 || turns < 10 {
        return Err("--rounds must be positive and --turns at least 10".into());
    }
    let prompt = format!("/stream {events}");
    let dir = TempDir::new("bench-acp-agent");
    // The data directory outside the workspace root, as the server asks.
    let root = dir.path().join("root");
    let work = root.join("work");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let work = work
        .canonicalize()
        .map_err(|e| format!("{}: {e}", work.display()))?;
    let data = dir.path().join("data");
    let server = BenchServer::start_on(&data, &root, &extra, START_TIMEOUT)?;
    let system = actix_rt::System::new();
    let mut direct = system.block_on(Direct::start(&server.ws_url(), &work, &prompt))?;
    let mut acp = Acp::start(&server.base, &data, &work, &prompt)?;
    report::note(&format!(
        "acp-agent: {rounds} rounds × {turns} turns per side of `{prompt}`, load {}",
        load_average()
    ));
    for i in 0..WARMUP {
        acp.turn()?;
        system.block_on(direct.turn(i))?;
    }

    let mut overheads = Vec::new();
    let mut p90s = Vec::new();
    let mut paired = Vec::new();
    let mut per_update_stat = Vec::new();
    let mut per_update_ns = Vec::new();
    let mut server_per_turn = Vec::new();
    for round_no in 1..=rounds {
        let load = load_average();
        let acp_first = round_no % 2 == 1;
        let mut acp_us = Vec::with_capacity(turns);
        let mut direct_us = Vec::with_capacity(turns);
        let mut diffs = Vec::with_capacity(turns);
        let mut updates = 0u64;
        let mut direct_events = 0u64;
        let cpu0 = cpu_seconds(acp.pid())?;
        let threads0 = ThreadCpu::of(acp.pid())?;
        let server0 = ThreadCpu::of(server.pid())?;
        for t in 0..turns {
            let n = WARMUP + (round_no - 1) * turns + t;
            let (a, d) = if acp_first {
                let a = acp.turn()?;
                (a, system.block_on(direct.turn(n))?)
            } else {
                let d = system.block_on(direct.turn(n))?;
                (acp.turn()?, d)
            };
            updates += a.updates;
            direct_events += d.updates;
            acp_us.push(a.us);
            direct_us.push(d.us);
            diffs.push(ms(a.us) - ms(d.us));
        }
        let cpu_s = cpu_seconds(acp.pid())? - cpu0;
        let threads = ThreadCpu::of(acp.pid())?.since(&threads0);
        let server_cpu = ThreadCpu::of(server.pid())?.since(&server0);
        acp_us.sort_unstable();
        direct_us.sort_unstable();
        let overhead = ms(percentile(&acp_us, 50.0)) - ms(percentile(&direct_us, 50.0));
        let p90 = ms(percentile(&acp_us, 90.0)) - ms(percentile(&direct_us, 90.0));
        let pair = median(&diffs);
        let stat_us = cpu_s * 1e6 / updates.max(1) as f64;
        let ns_us = threads.total_s * 1e6 / updates.max(1) as f64;
        let server_ms = server_cpu.total_s * 1e3 / (2 * turns) as f64;
        report::line(&json!({
            "mode": "acp-agent", "round": round_no, "turns": turns, "prompt": prompt,
            "first": if acp_first { "acp" } else { "direct" },
            "load_avg_1m_at_start": load,
            "direct_ms": summary(&direct_us), "acp_ms": summary(&acp_us),
            "overhead_median_ms": round(overhead, 3),
            "overhead_p90_ms": round(p90, 3),
            "paired_difference_median_ms": round(pair, 3),
            "acp_updates_per_turn": round(updates as f64 / turns as f64, 2),
            "direct_events_per_turn": round(direct_events as f64 / turns as f64, 2),
            "acp_cpu_ticks_s": round(cpu_s, 3),
            "acp_cpu_us_per_update_stat": round(stat_us, 2),
            "acp_cpu_us_per_update_schedstat": round(ns_us, 2),
            "acp_cpu_ms_per_turn": round(threads.total_s * 1e3 / turns as f64, 3),
            "acp_threads_ended": threads.ended,
            "server_cpu_ms_per_turn_both_sides": round(server_ms, 3),
        }));
        overheads.push(overhead);
        p90s.push(p90);
        paired.push(pair);
        per_update_stat.push(stat_us);
        per_update_ns.push(ns_us);
        server_per_turn.push(server_ms);
    }
    acp.stop();
    system.block_on(direct.ws.close());
    report::line(&json!({
        "mode": "acp-agent", "summary": true, "rounds": rounds, "turns": turns,
        "prompt": prompt,
        "overhead_median_ms": round(median(&overheads), 3),
        "overhead_p90_ms": round(median(&p90s), 3),
        "paired_difference_median_ms": round(median(&paired), 3),
        "acp_cpu_us_per_update_stat": round(median(&per_update_stat), 2),
        "acp_cpu_us_per_update_schedstat": round(median(&per_update_ns), 2),
        "server_cpu_ms_per_turn_both_sides": round(median(&server_per_turn), 3),
        "load_avg_1m_at_end": load_average(),
        "server_args": extra,
    }));
    Ok(())
}

/// The 1-minute load average (`/proc/loadavg`), to say how busy the shared machine
/// was; NaN when unreadable.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// What one timed turn took and carried.
struct Turn {
    /// Wall-clock µs from writing the request to reading the turn's end.
    us: u32,
    /// `session/update`s read (acp) or history events received (direct) meanwhile.
    updates: u64,
}

/// The direct client: one subscribed WebSocket, one session.
struct Direct {
    ws: RawWs,
    session: String,
    prompt: String,
}

impl Direct {
    /// Creates a session in `cwd` and subscribes to it.
    async fn start(url: &str, cwd: &Path, prompt: &str) -> Result<Direct, String> {
        let frame = json!({"type": "session.create", "cwd": cwd.display().to_string(),
            "title": "bench direct", "requestId": "create"});
        let (ws, session) = subscribed_session(url, frame).await?;
        Ok(Direct {
            ws,
            session,
            prompt: prompt.to_string(),
        })
    }

    /// One timed turn.
    async fn turn(&mut self, i: usize) -> Result<Turn, String> {
        let frame = json!({"type": "chat.send", "sessionId": self.session,
            "content": self.prompt, "requestId": format!("t{i}")});
        let t0 = Instant::now();
        self.ws.send_text(frame.to_string()).await?;
        let mut events = 0u64;
        loop {
            let got = self
                .ws
                .next_text(TURN_TIMEOUT, |b| {
                    let at = t0.elapsed();
                    match scan::kind(b) {
                        Some(b"turn_completed") => Some((
                            at,
                            scan::str_after(b, b"\"status\":\"") == Some(b"completed"),
                        )),
                        Some(b"protocol_error") => Some((at, false)),
                        _ => {
                            events += u64::from(scan::seq(b).is_some());
                            None
                        }
                    }
                })
                .await?;
            match got {
                Incoming::Closed(code) => return Err(format!("socket closed ({code:?})")),
                Incoming::Text(None) => {}
                Incoming::Text(Some((at, true))) => {
                    return Ok(Turn {
                        us: micros(at),
                        // turn_completed is an event too.
                        updates: events + 1,
                    });
                }
                Incoming::Text(Some((_, false))) => {
                    return Err(format!("direct turn {i} did not complete"))
                }
            }
        }
    }
}

/// A duration in whole µs, saturating at `u32::MAX` (some 71 minutes).
fn micros(d: Duration) -> u32 {
    d.as_micros().min(u128::from(u32::MAX)) as u32
}

/// `tandem acp` as a child process, driven over its stdio. Its stdout is read on
/// this thread (no hop through another thread in the timed path); a watchdog kills
/// the process when a read waits longer than [`TURN_TIMEOUT`], which ends the read.
struct Acp {
    child: Arc<Mutex<Child>>,
    pid: u32,
    /// `None` once [`Acp::stop`] closed it.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    session: String,
    prompt: String,
    next_id: u64,
    /// Milliseconds since `epoch` when the current read began; 0 when not reading.
    busy_since: Arc<AtomicU64>,
    epoch: Instant,
    /// Tells the watchdog to end.
    stopped: Arc<AtomicBool>,
}

impl Acp {
    /// Starts `tandem acp` against `base` (the admin token of `data`, if any), then
    /// `initialize` and `session/new` in `cwd`.
    fn start(base: &str, data: &Path, cwd: &Path, prompt: &str) -> Result<Acp, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(&exe)
            .args(["tandem", "acp", "--no-embed", "--url", base, "--data-dir"])
            .arg(data)
            .env(
                "TANDEM_LOG",
                std::env::var("TANDEM_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .env_remove("TANDEM_TOKEN")
            .env_remove("TANDEM_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {} tandem acp: {e}", exe.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("tandem acp's stdio not piped".into());
        };
        let pid = child.id();
        let child = Arc::new(Mutex::new(child));
        let busy_since = Arc::new(AtomicU64::new(0));
        let stopped = Arc::new(AtomicBool::new(false));
        let epoch = Instant::now();
        watchdog(
            Arc::clone(&child),
            Arc::clone(&busy_since),
            Arc::clone(&stopped),
            epoch,
        );
        let mut acp = Acp {
            child,
            pid,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            session: String::new(),
            prompt: prompt.to_string(),
            next_id: 1,
            busy_since,
            epoch,
            stopped,
        };
        acp.call(
            "initialize",
            json!({"protocolVersion": 1,
                   "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false},
                                          "terminal": false},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        )?;
        let opened = acp.call(
            "session/new",
            json!({"cwd": cwd.display().to_string(), "mcpServers": []}),
        )?;
        acp.session = opened
            .0
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("session/new: {}", opened.0))?
            .to_string();
        Ok(acp)
    }

    /// The `tandem acp` process id (for `/proc`).
    fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends a request and reads until its answer: the result and how many
    /// `session/update`s came before it. Updates are counted by a substring, not
    /// parsed, so the bench spends little CPU on them; a request of the agent (none is
    /// expected for `/stream`) is refused.
    fn call(&mut self, method: &str, params: Value) -> Result<(Value, u64), String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.write(&line)?;
        let started = self.epoch.elapsed().as_millis().max(1) as u64;
        self.busy_since.store(started, Ordering::Relaxed);
        let answer = self.read_answer(id, method);
        self.busy_since.store(0, Ordering::Relaxed);
        answer
    }

    /// Writes one line to `tandem acp`'s stdin.
    fn write(&mut self, line: &str) -> Result<(), String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| "tandem acp's stdin is closed".to_string())?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("tandem acp stdin: {e}"))
    }

    /// Reads lines until the answer to request `id`, counting the updates before it.
    fn read_answer(&mut self, id: u64, method: &str) -> Result<(Value, u64), String> {
        let mut updates = 0u64;
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("tandem acp stdout: {e}"))?;
            if n == 0 {
                return Err(format!("{method}: tandem acp closed its stdout"));
            }
            if line.contains("\"method\":\"session/update\"") {
                updates += 1;
                continue;
            }
            let v: Value = serde_json::from_str(&line)
                .map_err(|e| format!("not JSON from tandem acp: {e}: {line}"))?;
            if v.get("method").is_some() {
                if let Some(their) = v.get("id") {
                    let mut refusal = json!({"jsonrpc": "2.0", "id": their,
                        "error": {"code": -32601, "message": "not served by the bench"}})
                    .to_string();
                    refusal.push('\n');
                    self.write(&refusal)?;
                }
                continue;
            }
            if v["id"] == json!(id) {
                return match v.get("result") {
                    Some(r) => Ok((r.clone(), updates)),
                    None => Err(format!("{method} failed: {line}")),
                };
            }
        }
    }

    /// One timed turn.
    fn turn(&mut self) -> Result<Turn, String> {
        let params = json!({"sessionId": self.session,
            "prompt": [{"type": "text", "text": self.prompt}]});
        let t0 = Instant::now();
        let (answer, updates) = self.call("session/prompt", params)?;
        let at = t0.elapsed();
        if answer["stopReason"] != "end_turn" {
            return Err(format!("acp turn did not complete: {answer}"));
        }
        Ok(Turn {
            us: micros(at),
            updates,
        })
    }

    /// Closes stdin (the editor going away) and waits for the process.
    fn stop(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
        self.stdin = None;
        if let Ok(mut child) = self.child.lock() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Ok(mut child) = self.child.lock() {
            if !matches!(child.try_wait(), Ok(Some(_))) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Kills `child` when a read has waited longer than [`TURN_TIMEOUT`] (its stdout then
/// ends, and the read with it); ends when `stopped` is set.
fn watchdog(
    child: Arc<Mutex<Child>>,
    busy_since: Arc<AtomicU64>,
    stopped: Arc<AtomicBool>,
    epoch: Instant,
) {
    std::thread::spawn(move || {
        while !stopped.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(500));
            let since = busy_since.load(Ordering::Relaxed);
            let now = epoch.elapsed().as_millis() as u64;
            if since != 0 && now.saturating_sub(since) > TURN_TIMEOUT.as_millis() as u64 {
                report::note("acp-agent: tandem acp did not answer in time; killing it");
                if let Ok(mut child) = child.lock() {
                    let _ = child.kill();
                }
                return;
            }
        }
    });
}
