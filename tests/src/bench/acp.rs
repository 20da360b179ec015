//! `bench acp`: what the server adds to a turn of an ACP agent.
//!
//! One run: start the mock Responses API ([`MockOpenAi`]), then two clients of the
//! same pinned `codex-acp` agent, each with its own `CODEX_HOME`:
//!
//! - *direct*: a minimal ACP client that starts the agent itself and speaks JSON-RPC
//!   over its stdio: `initialize`, `session/new` with the same `tandem` MCP server the
//!   adapter passes, `session/set_mode` to the mode the adapter picks for the default
//!   permission mode (`auto`); each turn timed from writing `session/prompt` to reading
//!   its answer;
//! - *served*: a server (`serve --config` with the agent as vendor `codex-acp`), one
//!   session, each turn timed from writing `chat.send` on a subscribed WebSocket to
//!   receiving that turn's `turn_completed`.
//!
//! Both run the same text turn, alternating turn by turn so both see the same machine
//! load, after `WARMUP` untimed turns each (the first starts the process and the
//! session; the served side's first prompt also carries the session's standing
//! instruction). Overhead = served − direct for the medians and p99s, the median of
//! the per-turn differences, and the server's CPU time per timed turn.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::args::Flags;
use super::codex::{mcp_access, ms, summary, Served};
use super::procfs::cpu_seconds;
use super::report;
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
    let bin: Option<String> = flags.opt("bin")?;
    let extra = flags.all("server-arg");
    flags.done()?;
    if turns < 50 || runs == 0 {
        return Err("--turns must be at least 50 and --runs positive".into());
    }
    let Some(bin) = bin
        .map(PathBuf::from)
        .or_else(crate::vendor_clis::codex_acp_bin)
    else {
        return Err("no codex-acp binary: pass --bin or run .ci/run".into());
    };
    let Some(sandbox) = crate::vendor_clis::codex_sandbox_dir() else {
        return Err("no bwrap from the pinned codex: run .ci/run".into());
    };
    let mut overheads = Vec::new();
    let mut p99s = Vec::new();
    let mut paired = Vec::new();
    let mut cpus = Vec::new();
    for run in 1..=runs {
        let r = run_once(&bin, &sandbox, turns, &extra)?;
        let overhead = ms(percentile(&r.served, 50.0)) - ms(percentile(&r.direct, 50.0));
        let p99 = ms(percentile(&r.served, 99.0)) - ms(percentile(&r.direct, 99.0));
        let pair = median(&r.diffs);
        report::line(&json!({
            "mode": "acp", "agent": "codex-acp", "run": run, "turns": turns,
            "direct_ms": summary(&r.direct), "served_ms": summary(&r.served),
            "overhead_median_ms": round(overhead, 2),
            "overhead_p99_ms": round(p99, 2),
            "paired_difference_median_ms": round(pair, 2),
            "server_cpu_ms_per_turn": round(r.cpu_ms, 3),
        }));
        cpus.push(r.cpu_ms);
        overheads.push(overhead);
        p99s.push(p99);
        paired.push(pair);
    }
    report::line(&json!({
        "mode": "acp", "agent": "codex-acp", "summary": true, "runs": runs, "turns": turns,
        "overhead_median_ms": round(median(&overheads), 2),
        "overhead_p99_ms": round(median(&p99s), 2),
        "paired_difference_median_ms": round(median(&paired), 2),
        "server_cpu_ms_per_turn": round(median(&cpus), 3),
        "server_args": extra,
    }));
    Ok(())
}

/// The agent's arguments: the mock provider, a model Codex knows.
fn agent_args(mock: &MockOpenAi) -> Vec<String> {
    let mut args: Vec<String> = mock
        .codex_args()
        .into_iter()
        .take_while(|a| a != "--disable")
        .map(|a| {
            if a == "model=mock-model" {
                "model=gpt-5-codex".into()
            } else {
                a
            }
        })
        .collect();
    args.extend(["-c".into(), "features.plugins=false".into()]);
    args
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

/// PATH with Codex's `bwrap` first (the agent ships none).
fn path_with(sandbox: &Path) -> String {
    format!(
        "{}:{}",
        sandbox.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// What one run measured.
struct RunResult {
    direct: Vec<u32>,
    served: Vec<u32>,
    diffs: Vec<f64>,
    cpu_ms: f64,
}

fn run_once(
    bin: &Path,
    sandbox: &Path,
    turns: usize,
    extra: &[String],
) -> Result<RunResult, String> {
    let mock = MockOpenAi::start();
    let dir = TempDir::new("bench-acp");
    let (codex_home, home) = homes(dir.path(), "served")?;
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let args: Vec<String> = agent_args(&mock)
        .iter()
        .map(|a| json!(a).to_string())
        .collect();
    let text = format!(
        "[vendors.codex-acp]\nprotocol = \"acp\"\nbin = {}\nargs = [{}]\nenv = {{ CODEX_HOME = {}, HOME = {}, PATH = {} }}\n",
        json!(bin.display().to_string()),
        args.join(", "),
        json!(codex_home.display().to_string()),
        json!(home.display().to_string()),
        json!(path_with(sandbox)),
    );
    let config = dir.path().join("tandem.toml");
    std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
    let mut server_args = vec!["--config".to_string(), config.display().to_string()];
    server_args.extend(extra.iter().cloned());
    let server = BenchServer::start(&server_args)?;
    let system = actix_rt::System::new();
    let mut served =
        system.block_on(Served::start_vendor(&server.ws_url(), "codex-acp", PROMPT))?;
    let mcp = system.block_on(mcp_access(&server))?;
    let mut direct = Direct::start(bin, sandbox, &mock, dir.path(), &work, mcp)?;

    let mut direct_us = Vec::with_capacity(turns);
    let mut served_us = Vec::with_capacity(turns);
    let mut diffs = Vec::with_capacity(turns);
    let mut cpu0 = 0.0;
    for i in 0..WARMUP + turns {
        if i == WARMUP {
            cpu0 = cpu_seconds(server.pid())?;
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
    system.block_on(served.ws.close());
    drop(direct);
    direct_us.sort_unstable();
    served_us.sort_unstable();
    Ok(RunResult {
        direct: direct_us,
        served: served_us,
        diffs,
        cpu_ms,
    })
}

/// The minimal direct ACP client.
struct Direct {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    session: String,
    next_id: u64,
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
        sandbox: &Path,
        mock: &MockOpenAi,
        dir: &Path,
        work: &Path,
        (url, token): (String, String),
    ) -> Result<Direct, String> {
        let (codex_home, home) = homes(dir, "direct")?;
        let mut child = Command::new(bin)
            .args(agent_args(mock))
            .current_dir(work)
            .env_clear()
            .env("PATH", path_with(sandbox))
            .env("HOME", &home)
            .env("CODEX_HOME", &codex_home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("agent stdio not piped".into());
        };
        let mut direct = Direct {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            session: String::new(),
            next_id: 1,
        };
        direct.call(
            "initialize",
            json!({"protocolVersion": 1,
                   "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false},
                                          "terminal": false},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        )?;
        let opened = direct.call(
            "session/new",
            json!({"cwd": work.display().to_string(), "mcpServers": [{"type": "http",
                "name": "tandem", "url": url,
                "headers": [{"name": "Authorization", "value": format!("Bearer {token}")}]}]}),
        )?;
        direct.session = opened["sessionId"]
            .as_str()
            .ok_or_else(|| format!("session/new: {opened}"))?
            .to_string();
        let session = direct.session.clone();
        direct.call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "auto"}),
        )?;
        Ok(direct)
    }

    fn send(&mut self, value: &Value) -> Result<(), String> {
        let mut line = value.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .map_err(|e| format!("agent stdin: {e}"))
    }

    /// Sends a request and reads until its answer (notifications skipped, the
    /// agent's own requests refused as tandem refuses them).
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + TURN_TIMEOUT;
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("agent stdout: {e}"))?;
            if n == 0 {
                return Err("the agent closed its stdout".into());
            }
            if Instant::now() > deadline {
                return Err(format!("{method}: no answer in time"));
            }
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v.get("method").is_some() {
                if let Some(their) = v.get("id") {
                    let refusal = json!({"jsonrpc": "2.0", "id": their,
                        "error": {"code": -32601, "message": "not served"}});
                    self.send(&refusal)?;
                }
                continue;
            }
            if v["id"] == json!(id) {
                return match v.get("result") {
                    Some(r) => Ok(r.clone()),
                    None => Err(format!("{method} failed: {line}")),
                };
            }
        }
    }

    /// One timed turn, µs.
    fn turn(&mut self) -> Result<u32, String> {
        let session = self.session.clone();
        let t0 = Instant::now();
        let answer = self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": PROMPT}]}),
        )?;
        let at = t0.elapsed();
        if answer["stopReason"] != "end_turn" {
            return Err(format!("direct turn did not complete: {answer}"));
        }
        Ok(at.as_micros().min(u128::from(u32::MAX)) as u32)
    }
}
