//! `bench fleet`: a fleet of real agents on one server (issue 38, point 5).
//!
//! Setup (not timed): a mock Messages API ([`MockAnthropic`]) and a mock Responses API
//! ([`MockOpenAi`]); a server whose `--config` runs the pinned `claude`
//! (`TANDEM_TEST_CLAUDE_BIN`, else `.vendor-clis`; `--claude-bin`) and the pinned
//! `codex` (`TANDEM_TEST_CODEX_BIN`, else `.vendor-clis`; `--codex-bin`) against them,
//! each with a private `HOME` (and `CODEX_HOME`) under the bench's temporary
//! directory, with `--max-live-processes N` (`--max-live N`; `0`: no limit) and
//! Claude Code's idle close at an hour (so only the limit closes a process). Then
//! `--claude` Claude Code and `--codex` Codex sessions are created over one WebSocket,
//! all in one working directory (`--cwd shared`, the default) or each in one of its
//! own (`--cwd own`), and all are subscribed on it. The working directory matters for
//! Codex: a confined app-server (`--confine-agents on`, the default) may use only
//! its working directory, so the server runs one app-server per owner and working
//! directory; with `--cwd own` every Codex session has an app-server of its own, and
//! those take no place under `--max-live-processes`.
//!
//! Load: turns are sent round-robin over the sessions (interleaved, Claude Code then
//! Codex), strictly in that order (a session whose turn still runs is waited for, so
//! every session gets as many turns), with at most `--in-flight` turns running at
//! once, for `--seconds` (or `--rounds` full rounds), then the turns in flight are
//! awaited. Every turn is the text `say pong` (both mocks answer `pong`, streamed).
//! Each session's first turn starts its Claude Code process (or its Codex thread),
//! and is counted; under a limit smaller than the Claude Code sessions, most Claude
//! Code turns find their process closed (the least recently used idle one makes
//! room) and resume it (`claude --resume`).
//!
//! Per turn, on the client's clock, from writing the `chat.send` frame:
//! - **turn start**: to the first event of that session that shows its agent at work
//!   (`text_delta`, `assistant_message`, `thinking` or `tool_call`). It includes any
//!   wait for a process seat, the CLI's start and, for a closed process, its resume;
//! - the turn's end: to its `turn_completed`; a status other than `completed`, a
//!   `protocol_error` for the `chat.send`, or no end within [`TURN_TIMEOUT`] is a
//!   **failed** turn;
//! - whether it **resumed**: an `info` event whose text starts `resumed:` arrived in
//!   that turn (the server's note for a process closed to make room and started again
//!   with `--resume`); whether it **waited**: an `info` starting `waiting to start`.
//!   Other `info` texts and `error` events are counted by their first words.
//!
//! Memory, sampled every 500 ms on a thread of its own from `/proc`: the server's
//! process tree (the server and every descendant, found through each process's parent
//! in `/proc/PID/stat`), `VmRSS` summed: **total** (peak and median over the samples of
//! the load phase), the server alone, each Claude Code process of a session (a child
//! of the server named `claude` with `--input-format` among its arguments) with its
//! descendants (`VmRSS` and `RssAnon`; every fourth sample also `Pss` from
//! `smaps_rollup`, which splits pages shared between processes, such as the `claude`
//! executable's, among them), and each Codex app-server (a `codex … app-server`
//! child; those present in 20 samples, 10 s, or more of the load phase serve
//! sessions, shorter ones are the server's probes of the vendor) with its
//! descendants, each and all together. A sum of `VmRSS` counts a page shared by
//! several processes (the executables' pages above all) once per process, so every
//! fourth sample also sums `Pss` over the whole tree. `/proc/meminfo`'s
//! `MemAvailable` is read at the same times: its drop from before the server started
//! to the lowest sample is the machine's view of what the run used, the bench's own
//! memory included (its mocks keep every request: `bench_rss_mib` at the end), and
//! other processes on the machine move it too. Every second the bench also reads
//! `GET /api/v1/fleet` (the server's own view: each process's `rssBytes`, processes
//! closing, turns waiting for a seat).
//!
//! CPU over the load phase: the server's (utime + stime), each Claude Code process's
//! and Codex app-server's (with the children it reaped, as last sampled before it
//! ended, so up to 500 ms of a process's end is missed), and the machine's busy share
//! (`/proc/stat`, all of it, not only this run's).
//!
//! CLI restarts: the `resumed:` notes (each is a Claude Code process started again
//! for a session whose process was closed), the distinct Claude Code pids the
//! sampler saw, and the distinct Codex app-server pids, with how many served
//! sessions (more than one per working directory would be a restart). `restarted:`
//! notes (a process over `--max-process-rss`) are counted apart.
//!
//! One JSON line at the end; progress on stderr every 30 s. The load averages of
//! `/proc/loadavg` are printed at the start and at the end. Everything the bench
//! started is stopped when it ends, also on an error: the server is killed (its CLIs
//! see their stdin close and exit), then the bench waits up to 10 s for every process
//! whose environment names its temporary directory to be gone, kills (by pid) any
//! that is not, and reports how many there were.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::args::Flags;
use super::fanout::next_control;
use super::raw_ws::{Incoming, RawWs};
use super::report;
use super::server::BenchServer;
use super::stats::{median, percentile, round};
use crate::mock_anthropic::MockAnthropic;
use crate::mock_openai::MockOpenAi;
use crate::TempDir;

/// Longest one turn may take, from its `chat.send` to its `turn_completed`.
const TURN_TIMEOUT: Duration = Duration::from_secs(180);
/// The text of every turn.
const PROMPT: &str = "say pong";
/// Between two memory samples.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// `Pss` is read at every this many samples (it walks the page tables).
const PSS_EVERY: usize = 4;
/// Between two reads of `GET /api/v1/fleet`.
const FLEET_EVERY: Duration = Duration::from_secs(1);
/// Between two progress notes.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);
/// Kinds of events that show the agent at work.
const WORK_KINDS: [&str; 4] = ["text_delta", "assistant_message", "thinking", "tool_call"];

/// The two vendors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vendor {
    Claude,
    Codex,
}

impl Vendor {
    fn name(self) -> &'static str {
        match self {
            Vendor::Claude => "claude",
            Vendor::Codex => "codex",
        }
    }
}

/// Runs the mode.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let claude_n: usize = flags.num("claude", 50)?;
    let codex_n: usize = flags.num("codex", 50)?;
    let max_live: u32 = flags.num("max-live", 8)?;
    let seconds: u64 = flags.num("seconds", 180)?;
    let rounds: Option<usize> = flags.opt("rounds")?;
    let in_flight: usize = flags.num("in-flight", 8)?;
    let own_cwd = match flags.all("cwd").pop().as_deref() {
        None | Some("shared") => false,
        Some("own") => true,
        Some(other) => return Err(format!("--cwd: {other} is neither shared nor own")),
    };
    let claude_bin = flags.all("claude-bin").pop().map(PathBuf::from);
    let codex_bin = flags.all("codex-bin").pop().map(PathBuf::from);
    let extra = flags.all("server-arg");
    flags.done()?;
    if claude_n + codex_n == 0 || in_flight == 0 {
        return Err("--claude plus --codex and --in-flight must be at least 1".into());
    }
    let claude_bin = match claude_bin.or_else(crate::vendor_clis::claude_bin) {
        Some(b) => b,
        None if claude_n == 0 => PathBuf::from("claude"),
        None => return Err("no claude binary: pass --claude-bin or run .ci/run".into()),
    };
    let codex_bin = match codex_bin.or_else(crate::vendor_clis::codex_bin) {
        Some(b) => b,
        None if codex_n == 0 => PathBuf::from("codex"),
        None => return Err("no codex binary: pass --codex-bin or run .ci/run".into()),
    };
    let load_start = loadavg();
    let mem_available_start = mem_available_kib();
    let wall = Instant::now();

    // Dropped last (declared first): checks that nothing the server started outlives it.
    let dir = TempDir::new("bench-fleet");
    let reaper = Reaper {
        needle: dir.path().display().to_string(),
    };
    let anthropic = MockAnthropic::start();
    let openai = MockOpenAi::start();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let config = write_config(dir.path(), &claude_bin, &codex_bin, &anthropic, &openai)?;
    let mut args = vec![
        "--config".to_string(),
        config.display().to_string(),
        "--workspace-root".into(),
        work.display().to_string(),
    ];
    if max_live > 0 {
        args.extend(["--max-live-processes".into(), max_live.to_string()]);
    }
    args.extend(extra.iter().cloned());
    let server = BenchServer::start(&args)?;
    report::note(&format!(
        "fleet: {claude_n} Claude Code + {codex_n} Codex sessions, --max-live-processes {}, \
         {in_flight} turns in flight, working directories: {}, {}",
        if max_live == 0 {
            "none".to_string()
        } else {
            max_live.to_string()
        },
        if own_cwd { "one each" } else { "one for all" },
        match rounds {
            Some(r) => format!("{r} rounds"),
            None => format!("{seconds} s"),
        }
    ));

    let sampler = Sampler::start(server.pid());
    let plan = Plan {
        claude: claude_n,
        codex: codex_n,
        in_flight,
        send_for: Duration::from_secs(seconds),
        rounds,
        work: work.clone(),
        own_cwd,
    };
    let outcome = actix_rt::System::new().block_on(drive(&server, &plan, &sampler));
    let samples = sampler.stop();
    let load_end = loadavg();
    let driven = outcome?;
    drop(server);
    let leftovers = reaper.reap();

    let out = summarize(&plan, max_live, &driven, &samples);
    let mut line = out;
    line["mem_available_drop_mib"] = match (mem_available_start, samples.min_available_kib) {
        (Some(before), Some(low)) => json!(round((before as f64 - low as f64) / 1024.0, 0)),
        _ => Value::Null,
    };
    line["load_start"] = json!(load_start);
    line["load_end"] = json!(load_end);
    line["wall_s"] = json!(round(wall.elapsed().as_secs_f64(), 1));
    line["leftover_processes"] = json!(leftovers);
    // The bench's own memory (the mocks keep every request they answered): part of
    // the drop in `MemAvailable`.
    line["bench_rss_mib"] = json!(super::procfs::rss_kib(std::process::id())
        .map(|k| round(k as f64 / 1024.0, 0))
        .ok());
    line["server_args"] = json!(args[4..]);
    report::line(&line);
    Ok(())
}

/// What to run.
struct Plan {
    claude: usize,
    codex: usize,
    in_flight: usize,
    /// How long new turns are sent (unless `rounds`).
    send_for: Duration,
    /// Full rounds over every session instead of a time.
    rounds: Option<usize>,
    /// Where the sessions' working directories go.
    work: PathBuf,
    /// Each session in a directory of its own (else all in one).
    own_cwd: bool,
}

/// The `--config` file: both vendors against their mocks, private homes.
fn write_config(
    dir: &Path,
    claude_bin: &Path,
    codex_bin: &Path,
    anthropic: &MockAnthropic,
    openai: &MockOpenAi,
) -> Result<PathBuf, String> {
    let claude_home = dir.join("claude-home");
    let codex_home = dir.join("codex-home");
    let codex_user_home = dir.join("codex-user-home");
    for d in [&claude_home, &codex_home, &codex_user_home] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let s = |v: &str| json!(v).to_string();
    let mut claude_env: Vec<(String, String)> = anthropic.cli_env();
    claude_env.push(("HOME".into(), claude_home.display().to_string()));
    let claude_env = claude_env
        .iter()
        .map(|(k, v)| format!("{k} = {}", s(v)))
        .collect::<Vec<_>>()
        .join(", ");
    let codex_args = openai
        .codex_args()
        .iter()
        .map(|a| s(a))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "[vendors.claude]\nbin = {}\nidle_secs = 3600\nenv = {{ {claude_env} }}\n\n\
         [vendors.codex]\nbin = {}\nargs = [{codex_args}]\nenv = {{ CODEX_HOME = {}, HOME = {} }}\n",
        s(&claude_bin.display().to_string()),
        s(&codex_bin.display().to_string()),
        s(&codex_home.display().to_string()),
        s(&codex_user_home.display().to_string()),
    );
    let path = dir.join("tandem.toml");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// One finished (or failed) turn.
#[derive(Debug, Clone)]
struct TurnRecord {
    vendor: Vendor,
    /// The session's first turn (its process or thread started for it).
    first: bool,
    resumed: bool,
    waited: bool,
    /// To the first event showing the agent at work, µs.
    start_us: Option<u32>,
    /// To `turn_completed`, µs.
    end_us: u32,
    ok: bool,
}

/// A turn in flight.
#[derive(Debug)]
struct Flying {
    session: usize,
    request: String,
    t0: Instant,
    start_us: Option<u32>,
    resumed: bool,
    waited: bool,
}

/// What the load phase saw.
#[derive(Debug, Default)]
struct Driven {
    turns: Vec<TurnRecord>,
    /// Why turns failed (the first few).
    failures: Vec<String>,
    /// `info` texts other than `resumed:`/`waiting to start`, by their first words.
    other_info: BTreeMap<String, u64>,
    /// `error` events, by their first words.
    errors: BTreeMap<String, u64>,
    restarted_notes: u64,
    /// Session creation, seconds.
    setup_s: f64,
    /// The load phase (first send to last turn end), seconds.
    load_s: f64,
    fleet: FleetSeen,
    /// Events that arrived for a session with no turn in flight, by kind.
    stray: BTreeMap<String, u64>,
    /// The server process's CPU seconds over the load phase.
    server_cpu_s: f64,
    /// The machine's busy share of its CPU time over the load phase (0..1).
    machine_busy: f64,
}

/// What `GET /api/v1/fleet` showed over the load phase.
#[derive(Debug, Default, Clone)]
struct FleetSeen {
    reads: u64,
    /// `rssBytes` of every live (not closing) Claude Code process at every read.
    claude_rss: Vec<f64>,
    /// Most processes listed at once.
    max_processes: usize,
    /// Most turns waiting for a seat at once.
    max_waiting: usize,
    /// Reads that showed a process closing.
    closing_seen: u64,
    /// Distinct pids listed.
    pids: BTreeSet<u32>,
}

/// Creates and subscribes the sessions, runs the load, and collects the turns.
async fn drive(server: &BenchServer, plan: &Plan, sampler: &Sampler) -> Result<Driven, String> {
    let mut out = Driven::default();
    let setup = Instant::now();
    let mut ws = RawWs::connect(&server.ws_url()).await?;
    // Interleaved: c0, x0, c1, x1, …, then the rest of the larger group.
    let mut vendors = Vec::new();
    for i in 0..plan.claude.max(plan.codex) {
        if i < plan.claude {
            vendors.push(Vendor::Claude);
        }
        if i < plan.codex {
            vendors.push(Vendor::Codex);
        }
    }
    let mut ids = Vec::with_capacity(vendors.len());
    for (i, vendor) in vendors.iter().enumerate() {
        let cwd = if plan.own_cwd {
            plan.work.join(format!("s{i}"))
        } else {
            plan.work.join("shared")
        };
        std::fs::create_dir_all(&cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
        let frame = json!({"type": "session.create", "vendor": vendor.name(),
            "title": format!("fleet {i}"), "cwd": cwd.display().to_string(),
            "requestId": format!("create-{i}")});
        ws.send_text(frame.to_string()).await?;
        let reply = next_control(&mut ws).await?;
        let id = reply["session"]["id"]
            .as_str()
            .ok_or_else(|| format!("session.create {}: {reply}", vendor.name()))?
            .to_string();
        ids.push(id);
    }
    let index: HashMap<String, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i))
        .collect();
    let subs: Vec<Value> = ids
        .iter()
        .map(|id| json!({"sessionId": id, "lastSeq": 0}))
        .collect();
    ws.send_text(json!({"type": "chat.subscribe", "sessions": subs}).to_string())
        .await?;
    let mut subscribed = 0;
    while subscribed < ids.len() {
        match ws
            .next_text(Duration::from_secs(30), |b| {
                serde_json::from_slice::<Value>(b).unwrap_or(Value::Null)
            })
            .await?
        {
            Incoming::Closed(code) => return Err(format!("socket closed ({code:?})")),
            Incoming::Text(v) if v["kind"] == "chat_subscribed" => subscribed += 1,
            Incoming::Text(v) if v["kind"] == "protocol_error" => {
                return Err(format!("chat.subscribe: {v}"))
            }
            Incoming::Text(_) => {}
        }
    }
    out.setup_s = setup.elapsed().as_secs_f64();
    report::note(&format!(
        "fleet: {} sessions created and subscribed in {:.1} s",
        ids.len(),
        out.setup_s
    ));

    // The server's own view, read every second beside the load.
    let fleet_stop = Rc::new(std::cell::Cell::new(false));
    let fleet_seen = Rc::new(std::cell::RefCell::new(FleetSeen::default()));
    let fleet_task = actix_rt::spawn(read_fleet(
        server.base.clone(),
        fleet_stop.clone(),
        fleet_seen.clone(),
    ));

    sampler.begin_load();
    let server_cpu0 = super::procfs::cpu_seconds(server.pid())?;
    let machine0 = machine_ticks();
    let n = ids.len();
    let load = Instant::now();
    let mut busy = vec![false; n];
    let mut dead = vec![false; n];
    let mut turns_of = vec![0usize; n];
    let mut flying: Vec<Flying> = Vec::new();
    let mut next = 0usize;
    let mut sent = 0usize;
    let mut stopping = false;
    let mut last_note = Instant::now();
    loop {
        while !stopping && flying.len() < plan.in_flight {
            let done = match plan.rounds {
                Some(r) => sent >= r * n,
                None => load.elapsed() >= plan.send_for,
            };
            if done {
                stopping = true;
                break;
            }
            // Strictly in order: a session whose turn still runs is waited for (with
            // many sessions it rarely is), so every session gets as many turns.
            let mut pick = None;
            for _ in 0..n {
                let i = next % n;
                if dead[i] {
                    next += 1;
                    continue;
                }
                if !busy[i] {
                    pick = Some(i);
                    next += 1;
                }
                break;
            }
            let Some(i) = pick else { break };
            let request = format!("t{sent}");
            let frame = json!({"type": "chat.send", "sessionId": ids[i], "content": PROMPT,
                "requestId": request});
            let t0 = Instant::now();
            ws.send_text(frame.to_string()).await?;
            busy[i] = true;
            sent += 1;
            flying.push(Flying {
                session: i,
                request,
                t0,
                start_us: None,
                resumed: false,
                waited: false,
            });
        }
        if stopping && flying.is_empty() {
            break;
        }
        // Turns that never end count as failed; their session gets no more turns.
        let mut k = 0;
        while k < flying.len() {
            if flying[k].t0.elapsed() > TURN_TIMEOUT {
                let f = flying.swap_remove(k);
                busy[f.session] = false;
                dead[f.session] = true;
                out.failures.push(format!(
                    "{} session {}: no turn_completed within {TURN_TIMEOUT:?}",
                    vendors[f.session].name(),
                    ids[f.session]
                ));
                out.turns.push(TurnRecord {
                    vendor: vendors[f.session],
                    first: turns_of[f.session] == 0,
                    resumed: f.resumed,
                    waited: f.waited,
                    start_us: f.start_us,
                    end_us: micros(f.t0.elapsed()),
                    ok: false,
                });
                turns_of[f.session] += 1;
            } else {
                k += 1;
            }
        }
        if last_note.elapsed() >= PROGRESS_EVERY {
            last_note = Instant::now();
            let failed = out.turns.iter().filter(|t| !t.ok).count();
            let resumed = out.turns.iter().filter(|t| t.resumed).count();
            report::note(&format!(
                "fleet: {:.0} s: {} turns done, {failed} failed, {resumed} resumed, {} in flight, \
                 tree RSS now {} MiB, load {}",
                load.elapsed().as_secs_f64(),
                out.turns.len(),
                flying.len(),
                sampler.last_total_kib() / 1024,
                loadavg().first().copied().unwrap_or(f64::NAN),
            ));
        }
        let got = ws
            .next_text(Duration::from_millis(200), |b| {
                serde_json::from_slice::<Value>(b).ok()
            })
            .await;
        let v = match got {
            Err(e) if e.starts_with("no frame within") => continue,
            Err(e) => return Err(e),
            Ok(Incoming::Closed(code)) => return Err(format!("socket closed ({code:?})")),
            Ok(Incoming::Text(None)) => continue,
            Ok(Incoming::Text(Some(v))) => v,
        };
        let kind = v["kind"].as_str().unwrap_or_default();
        match kind {
            "reply" | "chat_subscribed" | "session_upserted" => continue,
            "lagged" => return Err(format!("the server dropped events for this socket: {v}")),
            "protocol_error" => {
                let request = v["requestId"].as_str().unwrap_or_default();
                let Some(k) = flying.iter().position(|f| f.request == request) else {
                    return Err(format!("protocol_error: {v}"));
                };
                let f = flying.swap_remove(k);
                busy[f.session] = false;
                out.failures.push(format!("chat.send refused: {v}"));
                out.turns.push(TurnRecord {
                    vendor: vendors[f.session],
                    first: turns_of[f.session] == 0,
                    resumed: false,
                    waited: false,
                    start_us: None,
                    end_us: micros(f.t0.elapsed()),
                    ok: false,
                });
                turns_of[f.session] += 1;
                continue;
            }
            _ => {}
        }
        let Some(&session) = v["sessionId"].as_str().and_then(|s| index.get(s)) else {
            continue;
        };
        let Some(k) = flying.iter().position(|f| f.session == session) else {
            *out.stray.entry(kind.to_string()).or_default() += 1;
            continue;
        };
        let at = micros(flying[k].t0.elapsed());
        match kind {
            k2 if WORK_KINDS.contains(&k2) => {
                flying[k].start_us.get_or_insert(at);
            }
            "info" => {
                let text = v["text"].as_str().unwrap_or_default();
                if text.starts_with("resumed:") {
                    flying[k].resumed = true;
                } else if text.starts_with("waiting to start") {
                    flying[k].waited = true;
                } else {
                    if text.starts_with("restarted:") {
                        out.restarted_notes += 1;
                    }
                    *out.other_info.entry(first_words(text)).or_default() += 1;
                }
            }
            "error" => {
                let text = v["message"].as_str().unwrap_or_default();
                *out.errors.entry(first_words(text)).or_default() += 1;
            }
            "turn_completed" => {
                let f = flying.swap_remove(k);
                busy[session] = false;
                let ok = v["status"] == "completed";
                if !ok && out.failures.len() < 20 {
                    out.failures.push(format!(
                        "{} session {}: {}",
                        vendors[session].name(),
                        ids[session],
                        v
                    ));
                }
                out.turns.push(TurnRecord {
                    vendor: vendors[session],
                    first: turns_of[session] == 0,
                    resumed: f.resumed,
                    waited: f.waited,
                    start_us: f.start_us,
                    end_us: at,
                    ok,
                });
                turns_of[session] += 1;
            }
            _ => {}
        }
    }
    out.load_s = load.elapsed().as_secs_f64();
    sampler.end_load();
    out.server_cpu_s = super::procfs::cpu_seconds(server.pid())? - server_cpu0;
    let machine1 = machine_ticks();
    out.machine_busy = (machine1.0 - machine0.0) as f64 / (machine1.1 - machine0.1).max(1) as f64;
    fleet_stop.set(true);
    let _ = fleet_task.await;
    out.fleet = fleet_seen.borrow().clone();
    ws.close().await;
    Ok(out)
}

/// Reads `GET /api/v1/fleet` every [`FLEET_EVERY`] until `stop`.
async fn read_fleet(
    base: String,
    stop: Rc<std::cell::Cell<bool>>,
    seen: Rc<std::cell::RefCell<FleetSeen>>,
) {
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(10))
        .finish();
    while !stop.get() {
        let next = Instant::now() + FLEET_EVERY;
        let body = async {
            let mut resp = client
                .get(format!("{base}/api/v1/fleet"))
                .send()
                .await
                .ok()?;
            resp.json::<Value>().limit(16 << 20).await.ok()
        }
        .await;
        if let Some(fleet) = body {
            let mut seen = seen.borrow_mut();
            seen.reads += 1;
            let procs = fleet["processes"].as_array().cloned().unwrap_or_default();
            seen.max_processes = seen.max_processes.max(procs.len());
            let waiting = fleet["waiting"].as_array().map_or(0, Vec::len);
            seen.max_waiting = seen.max_waiting.max(waiting);
            if procs.iter().any(|p| p["closing"] == true) {
                seen.closing_seen += 1;
            }
            for p in &procs {
                let Some(pid) = p["pid"].as_u64() else {
                    continue;
                };
                seen.pids.insert(pid as u32);
                if p["vendor"] == "claude" && p["closing"] != true {
                    if let Some(rss) = p["rssBytes"].as_f64() {
                        seen.claude_rss.push(rss / (1024.0 * 1024.0));
                    }
                }
            }
        }
        tokio::time::sleep_until(next.into()).await;
    }
}

/// Microseconds, saturating.
fn micros(d: Duration) -> u32 {
    d.as_micros().min(u128::from(u32::MAX)) as u32
}

/// The first three words of a notice (to count notices by what they say).
fn first_words(text: &str) -> String {
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The summary line.
fn summarize(plan: &Plan, max_live: u32, d: &Driven, s: &Samples) -> Value {
    let starts = |keep: &dyn Fn(&TurnRecord) -> bool| -> Value {
        let mut v: Vec<u32> = d
            .turns
            .iter()
            .filter(|t| keep(t))
            .filter_map(|t| t.start_us)
            .collect();
        v.sort_unstable();
        let ms = |us: u32| round(f64::from(us) / 1000.0, 1);
        json!({"n": v.len(), "p50": ms(percentile(&v, 50.0)), "p99": ms(percentile(&v, 99.0)),
               "max": ms(v.last().copied().unwrap_or(0))})
    };
    let ends = {
        let mut v: Vec<u32> = d.turns.iter().filter(|t| t.ok).map(|t| t.end_us).collect();
        v.sort_unstable();
        let ms = |us: u32| round(f64::from(us) / 1000.0, 1);
        json!({"n": v.len(), "p50": ms(percentile(&v, 50.0)), "p99": ms(percentile(&v, 99.0))})
    };
    let count = |keep: &dyn Fn(&TurnRecord) -> bool| d.turns.iter().filter(|t| keep(t)).count();
    let mib = |kib: f64| round(kib / 1024.0, 1);
    let totals: Vec<f64> = s.load.iter().map(|x| x.total_kib as f64).collect();
    let servers: Vec<f64> = s.load.iter().map(|x| x.server_kib as f64).collect();
    // Codex app-servers: those in 20 samples (10 s) or more of the load phase serve
    // sessions; shorter ones are the server's probes of the vendor.
    let mut codex_seen: BTreeMap<u32, usize> = BTreeMap::new();
    for x in &s.load {
        for (pid, _) in &x.codex {
            *codex_seen.entry(*pid).or_default() += 1;
        }
    }
    let serving = |pid: &u32| codex_seen.get(pid).is_some_and(|n| *n >= 20);
    let long_lived = codex_seen.values().filter(|n| **n >= 20).count();
    let codex_each = |f: &dyn Fn(&CliMem) -> Option<u64>| -> Vec<f64> {
        s.load
            .iter()
            .flat_map(|x| x.codex.iter())
            .filter(|(pid, _)| serving(pid))
            .filter_map(|(_, m)| f(m).map(|k| k as f64))
            .collect()
    };
    let codex = codex_each(&|m| Some(m.rss_kib));
    let codex_pss = codex_each(&|m| m.pss_kib);
    let codex_all: Vec<f64> = s
        .load
        .iter()
        .map(|x| x.codex.iter().map(|(_, m)| m.rss_kib).sum::<u64>() as f64)
        .collect();
    let codex_live: Vec<f64> = s
        .load
        .iter()
        .map(|x| x.codex.iter().filter(|(pid, _)| serving(pid)).count() as f64)
        .collect();
    let claude_rss: Vec<f64> = s
        .load
        .iter()
        .flat_map(|x| x.claude.iter().map(|c| c.rss_kib as f64))
        .collect();
    let claude_anon: Vec<f64> = s
        .load
        .iter()
        .flat_map(|x| x.claude.iter().map(|c| c.anon_kib as f64))
        .collect();
    let claude_pss: Vec<f64> = s
        .load
        .iter()
        .flat_map(|x| x.claude.iter().filter_map(|c| c.pss_kib.map(|p| p as f64)))
        .collect();
    let live: Vec<f64> = s.load.iter().map(|x| x.claude.len() as f64).collect();
    let pss_totals: Vec<f64> = s
        .load
        .iter()
        .filter_map(|x| x.pss_total_kib.map(|p| p as f64))
        .collect();
    // Claude Code's RSS early and late in the load phase (does it grow with turns?).
    let fifth = s.load.len() / 5;
    let claude_rss_in = |part: &[Sample]| -> f64 {
        let v: Vec<f64> = part
            .iter()
            .flat_map(|x| x.claude.iter().map(|c| c.rss_kib as f64))
            .collect();
        median(&v)
    };
    let first_fifth = claude_rss_in(&s.load[..fifth]);
    let last_fifth = claude_rss_in(&s.load[s.load.len() - fifth..]);
    let ticks = super::procfs::clock_ticks() as f64;
    let cpu_of = |claude: bool| -> (usize, f64) {
        let picked: Vec<u64> = s
            .cpu_ticks
            .values()
            .filter(|(c, _)| *c == claude)
            .map(|(_, t)| *t)
            .collect();
        (picked.len(), picked.iter().sum::<u64>() as f64 / ticks)
    };
    let (claude_procs, claude_cpu) = cpu_of(true);
    let (_, codex_cpu) = cpu_of(false);
    let peak = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
    let turns = d.turns.len();
    let rate = if d.load_s > 0.0 {
        turns as f64 / d.load_s
    } else {
        0.0
    };
    let mut out = json!({
        "mode": "fleet",
        "sessions": plan.claude + plan.codex,
        "cwd": if plan.own_cwd { "own" } else { "shared" },
        "claude_sessions": plan.claude,
        "codex_sessions": plan.codex,
        "limit": if max_live == 0 { Value::Null } else { json!(max_live) },
        "in_flight": plan.in_flight,
        "setup_s": round(d.setup_s, 1),
        "load_s": round(d.load_s, 1),
        "turns": turns,
        "turns_per_s": round(rate, 2),
        "turns_claude": count(&|t| t.vendor == Vendor::Claude),
        "turns_codex": count(&|t| t.vendor == Vendor::Codex),
        "first_turns": count(&|t| t.first),
        "failed": count(&|t| !t.ok),
        "failures": d.failures,
        "resumes": count(&|t| t.resumed),
        "waited_for_seat": count(&|t| t.waited),
        "restarted_notes": d.restarted_notes,
        "other_info": d.other_info,
        "error_events": d.errors,
        "stray_events": d.stray,
        "claude_pids_seen": s.claude_pids.len(),
        "codex_app_server_pids_seen": s.codex_pids.len(),
        "codex_app_servers_serving": long_lived,
        "turn_start_ms": {
            "all": starts(&|_| true),
            "resumed": starts(&|t| t.resumed),
            "claude": starts(&|t| t.vendor == Vendor::Claude),
            "claude_first": starts(&|t| t.vendor == Vendor::Claude && t.first),
            "claude_resumed": starts(&|t| t.vendor == Vendor::Claude && t.resumed),
            "claude_warm": starts(&|t| t.vendor == Vendor::Claude && !t.first && !t.resumed),
            "codex": starts(&|t| t.vendor == Vendor::Codex),
            "codex_first": starts(&|t| t.vendor == Vendor::Codex && t.first),
            "codex_later": starts(&|t| t.vendor == Vendor::Codex && !t.first),
            "waited": starts(&|t| t.waited),
        },
        "turn_ms": ends,
        "rss_samples": s.load.len(),
        "rss_total_peak_mib": mib(peak(&totals)),
        "rss_total_median_mib": mib(median(&totals)),
        "rss_server_mib": {"median": mib(median(&servers)), "peak": mib(peak(&servers))},
        "rss_codex_app_server_mib": {
            "each_median": mib(median(&codex)),
            "each_peak": mib(peak(&codex)),
            "each_pss_median": mib(median(&codex_pss)),
            "all_median": mib(median(&codex_all)),
            "all_peak": mib(peak(&codex_all)),
        },
        "live_codex_app_servers": {"median": median(&codex_live), "max": peak(&codex_live)},
        "rss_per_claude_cli_mib": {
            "fleet_median": round(median(&d.fleet.claude_rss), 1),
            "vmrss_median": mib(median(&claude_rss)),
            "vmrss_max": mib(peak(&claude_rss)),
            "anon_median": mib(median(&claude_anon)),
            "pss_median": mib(median(&claude_pss)),
        },
        "live_claude_clis": {"median": median(&live), "max": peak(&live)},

        "fleet_api": {
            "reads": d.fleet.reads,
            "max_processes": d.fleet.max_processes,
            "max_waiting": d.fleet.max_waiting,
            "reads_with_closing": d.fleet.closing_seen,
            "pids_listed": d.fleet.pids.len(),
        },
    });
    out["pss_total_median_mib"] = json!(mib(median(&pss_totals)));
    out["pss_total_peak_mib"] = json!(mib(peak(&pss_totals)));
    out["claude_vmrss_median_first_fifth_mib"] = json!(mib(first_fifth));
    out["claude_vmrss_median_last_fifth_mib"] = json!(mib(last_fifth));
    out["cpu_s"] = json!({
        "server": round(d.server_cpu_s, 1),
        "claude_clis": round(claude_cpu, 1),
        "per_claude_process": round(claude_cpu / claude_procs.max(1) as f64, 2),
        "codex_app_servers": round(codex_cpu, 1),
        "machine_busy_share": round(d.machine_busy, 3),
    });
    out
}

/// The 1, 5 and 15 minute load averages.
fn loadavg() -> Vec<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect()
}

/// `MemAvailable` of `/proc/meminfo`, KiB.
fn mem_available_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// One memory sample of the server's process tree.
#[derive(Debug, Clone, Default)]
struct Sample {
    /// `VmRSS` of the server and all its descendants.
    total_kib: u64,
    server_kib: u64,
    /// Each Claude Code process with its descendants.
    claude: Vec<CliMem>,
    /// Each Codex app-server with its descendants: its pid, `VmRSS`, `Pss`. One is
    /// the shared app-server; others are short-lived ones the server starts to probe
    /// the vendor (its models and login).
    codex: Vec<(u32, CliMem)>,
    /// `Pss` of the server and all its descendants (every [`PSS_EVERY`] samples).
    pss_total_kib: Option<u64>,
}

/// One CLI's memory (the process and its descendants).
#[derive(Debug, Clone, Default)]
struct CliMem {
    rss_kib: u64,
    anon_kib: u64,
    pss_kib: Option<u64>,
}

/// What the sampler collected.
#[derive(Debug, Default)]
struct Samples {
    /// Samples taken during the load phase.
    load: Vec<Sample>,
    min_available_kib: Option<u64>,
    claude_pids: BTreeSet<u32>,
    codex_pids: BTreeSet<u32>,
    /// CPU ticks (its own and its reaped children's) each Claude Code process and
    /// Codex app-server had used at the last sample that saw it; `true` for Claude.
    cpu_ticks: BTreeMap<u32, (bool, u64)>,
}

/// The sampling thread.
struct Sampler {
    stop: Arc<AtomicBool>,
    in_load: Arc<AtomicBool>,
    last_total: Arc<std::sync::atomic::AtomicU64>,
    handle: std::thread::JoinHandle<Samples>,
}

impl Sampler {
    fn start(server: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let in_load = Arc::new(AtomicBool::new(false));
        let last_total = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (s, l, t) = (stop.clone(), in_load.clone(), last_total.clone());
        let handle = std::thread::spawn(move || {
            let mut out = Samples::default();
            let mut i = 0usize;
            while !s.load(Ordering::SeqCst) {
                let next = Instant::now() + SAMPLE_EVERY;
                if let Some(avail) = mem_available_kib() {
                    out.min_available_kib =
                        Some(out.min_available_kib.map_or(avail, |m| m.min(avail)));
                }
                let (sample, cpu) = sample_tree(server, i.is_multiple_of(PSS_EVERY));
                i += 1;
                t.store(sample.total_kib, Ordering::SeqCst);
                for (pid, claude, ticks) in cpu {
                    if claude {
                        out.claude_pids.insert(pid);
                    } else {
                        out.codex_pids.insert(pid);
                    }
                    let seen = out.cpu_ticks.entry(pid).or_insert((claude, 0));
                    seen.1 = seen.1.max(ticks);
                }
                if l.load(Ordering::SeqCst) {
                    out.load.push(sample);
                }
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            out
        });
        Sampler {
            stop,
            in_load,
            last_total,
            handle,
        }
    }

    fn begin_load(&self) {
        self.in_load.store(true, Ordering::SeqCst);
    }

    fn end_load(&self) {
        self.in_load.store(false, Ordering::SeqCst);
    }

    fn last_total_kib(&self) -> u64 {
        self.last_total.load(Ordering::SeqCst)
    }

    fn stop(self) -> Samples {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().unwrap_or_default()
    }
}

/// Every process's parent, from `/proc/*/stat`.
fn parents() -> HashMap<u32, u32> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesized command name: state, ppid, …
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok());
        if let Some(ppid) = ppid {
            out.insert(pid, ppid);
        }
    }
    out
}

/// `VmRSS` and `RssAnon` of a process, KiB (zeros when it is gone).
fn status_kib(pid: u32) -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return (0, 0);
    };
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("RssAnon:"))
}

/// User and system CPU ticks of a process and of its children it has waited for.
fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    // After the command name: state is field 3; utime, stime, cutime, cstime are
    // fields 14 to 17.
    rest.split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum()
}

/// Busy and total CPU ticks of the machine (`/proc/stat`; idle and iowait are not
/// busy).
fn machine_ticks() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle.min(total), total)
}

/// `Pss` of a process from `smaps_rollup`, KiB.
fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// What a direct child of the server is.
#[derive(Debug, PartialEq)]
enum ChildKind {
    Claude,
    CodexAppServer,
    Other,
}

fn child_kind(pid: u32) -> ChildKind {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return ChildKind::Other;
    };
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let argv0 = args.first().copied().unwrap_or_default();
    let base = argv0.rsplit(|b| *b == b'/').next().unwrap_or_default();
    if args.iter().any(|a| *a == b"app-server") && base.starts_with(b"codex") {
        ChildKind::CodexAppServer
    } else if base == b"claude" && args.iter().any(|a| *a == b"--input-format") {
        // A session's CLI (a version check or other probe has no `--input-format`).
        ChildKind::Claude
    } else {
        ChildKind::Other
    }
}

/// One sample of the tree under `server`; with the Claude Code processes and Codex
/// app-servers in it: pid, whether Claude Code, CPU ticks.
fn sample_tree(server: u32, with_pss: bool) -> (Sample, Vec<(u32, bool, u64)>) {
    let parents = parents();
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, &ppid) in &parents {
        children.entry(ppid).or_default().push(pid);
    }
    let subtree = |root: u32| -> Vec<u32> {
        let mut out = vec![root];
        let mut i = 0;
        while i < out.len() {
            if let Some(c) = children.get(&out[i]) {
                out.extend(c.iter().copied());
            }
            i += 1;
        }
        out
    };
    let mut sample = Sample::default();
    let (server_rss, _) = status_kib(server);
    sample.server_kib = server_rss;
    sample.total_kib = server_rss;
    let mut pss_total = if with_pss { pss_kib(server) } else { 0 };
    let mut cpu = Vec::new();
    for &child in children.get(&server).map(Vec::as_slice).unwrap_or_default() {
        let kind = child_kind(child);
        let mut mem = CliMem::default();
        let mut pss = 0;
        for pid in subtree(child) {
            let (rss, anon) = status_kib(pid);
            mem.rss_kib += rss;
            mem.anon_kib += anon;
            if with_pss {
                pss += pss_kib(pid);
            }
        }
        sample.total_kib += mem.rss_kib;
        pss_total += pss;
        match kind {
            ChildKind::Claude => {
                cpu.push((child, true, cpu_ticks(child)));
                mem.pss_kib = with_pss.then_some(pss);
                sample.claude.push(mem);
            }
            ChildKind::CodexAppServer => {
                cpu.push((child, false, cpu_ticks(child)));
                mem.pss_kib = with_pss.then_some(pss);
                sample.codex.push((child, mem));
            }
            ChildKind::Other => {}
        }
    }
    sample.pss_total_kib = with_pss.then_some(pss_total);
    (sample, cpu)
}

/// Makes sure no process whose environment names the bench's directory outlives it.
struct Reaper {
    needle: String,
}

impl Reaper {
    /// Waits up to 10 s for such processes to end, kills (by pid) those that do not;
    /// how many there were after the wait.
    fn reap(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = self.find();
            if left.is_empty() {
                return 0;
            }
            if Instant::now() >= deadline {
                for pid in &left {
                    let _ = std::process::Command::new("kill")
                        .arg("-9")
                        .arg(pid.to_string())
                        .status();
                }
                report::note(&format!(
                    "fleet: {} processes outlived the server, killed: {left:?}",
                    left.len()
                ));
                return left.len();
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Live processes (not this one) whose environment holds the directory's path.
    fn find(&self) -> Vec<u32> {
        let me = std::process::id();
        let needle = self.needle.as_bytes();
        crate::procs::processes_where(|environ| environ.windows(needle.len()).any(|w| w == needle))
            .into_iter()
            .filter(|pid| *pid != me)
            .collect()
    }
}

impl Drop for Reaper {
    /// On an early return the server is already gone (dropped before this): clean up.
    fn drop(&mut self) {
        let _ = self.reap();
    }
}
