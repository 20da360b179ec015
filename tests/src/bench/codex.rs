//! `bench codex`: what the server adds to a Codex turn.
//!
//! One run: start the mock Responses API ([`MockOpenAi`]), then two clients of the
//! same pinned `codex` binary, each with its own `CODEX_HOME`:
//!
//! - *direct*: a minimal client that runs `codex app-server` itself and speaks
//!   JSON-RPC over its stdio (the same `initialize` as the adapter, one thread with
//!   the same `tandem` MCP server the adapter configures), each turn timed from
//!   writing `turn/start` to reading `turn/completed`;
//! - *served*: a server (`serve --config` pointing its Codex vendor at the same mock),
//!   one Codex session, each turn timed from writing `chat.send` on a subscribed
//!   WebSocket to receiving that turn's `turn_completed` event.
//!
//! Both send the same `turn/start` (the adapter adds the approval policy, sandbox,
//! model or effort only when one changed since the thread was loaded, which it was
//! not here). `--direct-overrides 1` makes the direct client add the approval policy
//! and sandbox to every turn as the adapter once did, to measure what that costs
//! app-server.
//!
//! Both run the same text turn (`say hello from the bench`), alternating turn by turn
//! so both see the same machine load, after `WARMUP` untimed turns each (the first
//! turn starts the process and the thread). Overhead = served − direct, for the
//! median and the p99 of the two distributions; also the median of the per-turn
//! differences (each served turn minus the direct turn just before it), and the
//! server process's CPU time (utime + stime) per timed turn, which machine load does
//! not inflate the way it inflates wall-clock differences.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::args::Flags;
use super::fanout::next_control;
use super::procfs::cpu_seconds;
use super::raw_ws::{Incoming, RawWs};
use super::report;
use super::scan;
use super::server::BenchServer;
use super::stats::{median, percentile, round};
use crate::mock_openai::MockOpenAi;
use crate::TempDir;

/// Untimed turns on each side before measuring.
const WARMUP: usize = 5;
/// Longest one turn may take.
const TURN_TIMEOUT: Duration = Duration::from_secs(60);
/// The turn both sides run.
const PROMPT: &str = "say hello from the bench";

/// Runs the mode.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let turns: usize = flags.num("turns", 100)?;
    let runs: usize = flags.num("runs", 3)?;
    let bin: Option<String> = flags.opt("codex-bin")?;
    let overrides = flags.num("direct-overrides", 0u8)? != 0;
    let extra = flags.all("server-arg");
    flags.done()?;
    if turns < 50 || runs == 0 {
        return Err("--turns must be at least 50 and --runs positive".into());
    }
    let bin = match bin
        .map(PathBuf::from)
        .or_else(crate::vendor_clis::codex_bin)
    {
        Some(b) => b,
        None => return Err("no codex binary: pass --codex-bin or run .ci/run".into()),
    };
    let mut overheads = Vec::new();
    let mut p99s = Vec::new();
    let mut paired = Vec::new();
    let mut cpus = Vec::new();
    for run in 1..=runs {
        let RunResult {
            direct,
            served,
            diffs,
            cpu_ms,
            commits,
        } = run_once(&bin, turns, &extra, overrides)?;
        let overhead = ms(percentile(&served, 50.0)) - ms(percentile(&direct, 50.0));
        let p99 = ms(percentile(&served, 99.0)) - ms(percentile(&direct, 99.0));
        let pair = median(&diffs);
        report::line(&json!({
            "mode": "codex", "run": run, "turns": turns, "direct_overrides": overrides,
            "direct_ms": summary(&direct), "served_ms": summary(&served),
            "overhead_median_ms": round(overhead, 2),
            "overhead_p99_ms": round(p99, 2),
            "paired_difference_median_ms": round(pair, 2),
            "server_cpu_ms_per_turn": round(cpu_ms, 3),
            "store_commits_per_turn": round(commits, 2),
        }));
        cpus.push(cpu_ms);
        overheads.push(overhead);
        p99s.push(p99);
        paired.push(pair);
    }
    report::line(&json!({
        "mode": "codex", "summary": true, "runs": runs, "turns": turns,
        "overhead_median_ms": round(median(&overheads), 2),
        "overhead_p99_ms": round(median(&p99s), 2),
        "paired_difference_median_ms": round(median(&paired), 2),
        "server_cpu_ms_per_turn": round(median(&cpus), 3),
        "server_args": extra,
    }));
    Ok(())
}

pub(super) fn ms(us: u32) -> f64 {
    f64::from(us) / 1000.0
}

pub(super) fn summary(sorted: &[u32]) -> Value {
    json!({
        "median": round(ms(percentile(sorted, 50.0)), 2),
        "p90": round(ms(percentile(sorted, 90.0)), 2),
        "p99": round(ms(percentile(sorted, 99.0)), 2),
        "max": round(ms(sorted.last().copied().unwrap_or(0)), 2),
    })
}

/// `CODEX_HOME` and `HOME` for one side, under `dir`.
fn homes(dir: &Path, side: &str) -> Result<(PathBuf, PathBuf), String> {
    let codex_home = dir.join(format!("{side}-codex-home"));
    let home = dir.join(format!("{side}-home"));
    for d in [&codex_home, &home] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    Ok((codex_home, home))
}

/// What one run measured.
struct RunResult {
    /// Direct turn times, sorted, µs.
    direct: Vec<u32>,
    /// Served turn times, sorted, µs.
    served: Vec<u32>,
    /// Each served turn minus the direct turn run just before it, ms.
    diffs: Vec<f64>,
    /// The server's CPU time per timed turn, ms.
    cpu_ms: f64,
    /// Store commits per timed turn.
    commits: f64,
}

fn run_once(
    bin: &Path,
    turns: usize,
    extra: &[String],
    overrides: bool,
) -> Result<RunResult, String> {
    let mock = MockOpenAi::start();
    let dir = TempDir::new("bench-codex");

    let (codex_home, home) = homes(dir.path(), "served")?;
    let config = dir.path().join("tandem.toml");
    let args: Vec<String> = mock
        .codex_args()
        .iter()
        .map(|a| json!(a).to_string())
        .collect();
    let text = format!(
        "[vendors.codex]\nbin = {}\nargs = [{}]\nenv = {{ CODEX_HOME = {}, HOME = {} }}\n",
        json!(bin.display().to_string()),
        args.join(", "),
        json!(codex_home.display().to_string()),
        json!(home.display().to_string()),
    );
    std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
    let mut server_args = vec!["--config".to_string(), config.display().to_string()];
    server_args.extend(extra.iter().cloned());
    let server = BenchServer::start(&server_args)?;
    let system = actix_rt::System::new();
    let mut served = system.block_on(Served::start(&server.ws_url()))?;
    // The direct client's thread gets the same `tandem` MCP server the adapter gives
    // its threads (with the token of a session of its own), so both run the same turn.
    let mcp = system.block_on(mcp_access(&server))?;
    let mut direct = Direct::start(bin, &mock, dir.path(), mcp)?;
    direct.overrides = overrides;

    let mut direct_us = Vec::with_capacity(turns);
    let mut served_us = Vec::with_capacity(turns);
    let mut diffs = Vec::with_capacity(turns);
    let mut cpu0 = 0.0;
    let mut commits0 = 0.0;
    for i in 0..WARMUP + turns {
        if i == WARMUP {
            cpu0 = cpu_seconds(server.pid())?;
            commits0 = system.block_on(server.metric("tandem_store_commits_total"))?;
        }
        let d = direct.turn()?;
        let s = system.block_on(served.turn(i))?;
        if i >= WARMUP {
            direct_us.push(d);
            served_us.push(s);
            diffs.push(ms(s) - ms(d));
        }
    }
    let cpu_ms = (cpu_seconds(server.pid())? - cpu0) * 1000.0 / turns as f64;
    let commits =
        (system.block_on(server.metric("tandem_store_commits_total"))? - commits0) / turns as f64;
    system.block_on(served.ws.close());
    drop(direct);
    direct_us.sort_unstable();
    served_us.sort_unstable();
    Ok(RunResult {
        direct: direct_us,
        served: served_us,
        diffs,
        cpu_ms,
        commits,
    })
}

/// The minimal direct client.
struct Direct {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    thread_id: String,
    next_id: u64,
    /// Add the thread's approval policy and sandbox to every `turn/start`.
    overrides: bool,
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Direct {
    fn start(
        bin: &Path,
        mock: &MockOpenAi,
        dir: &Path,
        (url, token): (String, String),
    ) -> Result<Direct, String> {
        let (codex_home, home) = homes(dir, "direct")?;
        let mut child = Command::new(bin)
            .args(mock.codex_args())
            .arg("app-server")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("CODEX_HOME", &codex_home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("app-server stdio not piped".into());
        };
        let mut direct = Direct {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            thread_id: String::new(),
            next_id: 1,
            overrides: false,
        };
        // The same opt-outs as the adapter, so app-server does the same work.
        let opt_out = [
            "account/rateLimits/updated",
            "thread/readState/changed",
            "remoteControl/status/changed",
            "item/commandExecution/outputDelta",
            "item/fileChange/outputDelta",
            "thread/status/changed",
        ];
        direct.call(
            "initialize",
            json!({"clientInfo": {"name": "bench", "title": "bench", "version": "0"},
                   "capabilities": {"experimentalApi": true, "optOutNotificationMethods": opt_out}}),
        )?;
        direct.send(&json!({"method": "initialized", "params": {}}))?;
        let started = direct.call(
            "thread/start",
            json!({"cwd": dir.display().to_string(), "approvalPolicy": "untrusted",
                   "sandbox": "workspace-write",
                   "config": {"mcp_servers": {"tandem": {
                       "url": url,
                       "http_headers": {"Authorization": format!("Bearer {token}")},
                       "default_tools_approval_mode": "approve"}}}}),
        )?;
        direct.thread_id = started["thread"]["id"]
            .as_str()
            .ok_or_else(|| format!("thread/start: {started}"))?
            .to_string();
        Ok(direct)
    }

    fn send(&mut self, value: &Value) -> Result<(), String> {
        let mut line = value.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .map_err(|e| format!("app-server stdin: {e}"))
    }

    /// Reads lines until `done` says stop; returns that line.
    fn read_until(&mut self, mut done: impl FnMut(&str) -> bool) -> Result<String, String> {
        let deadline = Instant::now() + TURN_TIMEOUT;
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("app-server stdout: {e}"))?;
            if n == 0 {
                return Err("app-server closed its stdout".into());
            }
            if done(&line) {
                return Ok(line);
            }
            if Instant::now() > deadline {
                return Err("app-server did not finish in time".into());
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}))?;
        let prefix = format!("{{\"id\":{id},");
        let line = self.read_until(|l| l.starts_with(&prefix))?;
        let v: Value = serde_json::from_str(&line).map_err(|e| format!("{method}: {e}"))?;
        match v.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(format!("{method} failed: {line}")),
        }
    }

    /// One timed turn, µs.
    fn turn(&mut self) -> Result<u32, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut frame = json!({"id": id, "method": "turn/start", "params": {
            "threadId": self.thread_id,
            "input": [{"type": "text", "text": PROMPT, "text_elements": []}]}});
        if self.overrides {
            // The same values the thread was started with.
            frame["params"]["approvalPolicy"] = json!("untrusted");
            frame["params"]["sandboxPolicy"] = json!({"type": "workspaceWrite"});
        }
        let t0 = Instant::now();
        self.send(&frame)?;
        let line = self.read_until(|l| l.starts_with("{\"method\":\"turn/completed\""))?;
        let at = t0.elapsed();
        if !line.contains("\"status\":\"completed\"") {
            return Err(format!("direct turn did not complete: {line}"));
        }
        Ok(at.as_micros().min(u128::from(u32::MAX)) as u32)
    }
}

/// The `/mcp` URL and a token for a fresh (scripted) session of `server`.
pub(super) async fn mcp_access(server: &BenchServer) -> Result<(String, String), String> {
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish();
    let mut resp = client
        .post(format!("{}/api/v1/sessions", server.base))
        .send_json(&json!({"title": "direct bench client"}))
        .await
        .map_err(|e| format!("create session: {e}"))?;
    let created: Value = resp
        .json()
        .await
        .map_err(|e| format!("create session: {e}"))?;
    let id = created["id"]
        .as_str()
        .ok_or_else(|| format!("create session: {created}"))?
        .to_string();
    let mut resp = client
        .post(format!("{}/api/v1/sessions/{id}/mcp-token", server.base))
        .send_json(&json!({}))
        .await
        .map_err(|e| format!("mcp-token: {e}"))?;
    let access: Value = resp.json().await.map_err(|e| format!("mcp-token: {e}"))?;
    match (access["url"].as_str(), access["token"].as_str()) {
        (Some(url), Some(token)) => Ok((url.to_string(), token.to_string())),
        _ => Err(format!("mcp-token: {access}")),
    }
}

/// The served client: one subscribed connection, one session of a vendor.
pub(super) struct Served {
    pub(super) ws: RawWs,
    session: String,
    /// The text each turn sends.
    prompt: &'static str,
}

impl Served {
    async fn start(url: &str) -> Result<Served, String> {
        Served::start_vendor(url, "codex", PROMPT).await
    }

    /// A session of `vendor` whose turns send `prompt`.
    pub(super) async fn start_vendor(
        url: &str,
        vendor: &str,
        prompt: &'static str,
    ) -> Result<Served, String> {
        let frame = json!({"type": "session.create", "vendor": vendor, "title": "bench",
            "requestId": "create"});
        let (ws, session) = subscribed_session(url, frame).await?;
        Ok(Served {
            ws,
            session,
            prompt,
        })
    }

    /// One timed turn, µs.
    pub(super) async fn turn(&mut self, i: usize) -> Result<u32, String> {
        let frame = json!({"type": "chat.send", "sessionId": self.session, "content": self.prompt,
            "requestId": format!("t{i}")});
        let t0 = Instant::now();
        self.ws.send_text(frame.to_string()).await?;
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
                        _ => None,
                    }
                })
                .await?;
            match got {
                Incoming::Closed(code) => return Err(format!("socket closed ({code:?})")),
                Incoming::Text(None) => {}
                Incoming::Text(Some((at, true))) => {
                    return Ok(at.as_micros().min(u128::from(u32::MAX)) as u32)
                }
                Incoming::Text(Some((_, false))) => {
                    return Err(format!("served turn {i} did not complete"))
                }
            }
        }
    }
}

/// A new WebSocket to `url` with the session `create` (a `session.create` frame
/// with `requestId`) made and subscribed from its start; the socket and the id.
pub(crate) async fn subscribed_session(
    url: &str,
    create: Value,
) -> Result<(RawWs, String), String> {
    let mut ws = RawWs::connect(url).await?;
    ws.send_text(create.to_string()).await?;
    let reply = next_control(&mut ws).await?;
    let session = reply["session"]["id"]
        .as_str()
        .ok_or_else(|| format!("session.create failed: {reply}"))?
        .to_string();
    let sub = json!({"type": "chat.subscribe", "sessions": [{"sessionId": session, "lastSeq": 0}]});
    ws.send_text(sub.to_string()).await?;
    loop {
        match ws
            .next_text(TURN_TIMEOUT, |b| scan::kind(b) == Some(b"chat_subscribed"))
            .await?
        {
            Incoming::Text(true) => break,
            Incoming::Text(false) => {}
            Incoming::Closed(code) => return Err(format!("socket closed ({code:?})")),
        }
    }
    Ok((ws, session))
}
