//! `bench claude`: what the server adds to a Claude Code turn, against driving the same
//! `claude` binary directly with the same mock model server.
//!
//! Setup (not timed): a mock Messages API ([`crate::mock_anthropic`]); a server whose
//! `--config` runs the pinned `claude` (`TANDEM_TEST_CLAUDE_BIN`, else `.vendor-clis`)
//! against it with a private HOME; one Claude session on it, subscribed over one
//! WebSocket; and one `claude` process started directly with the adapter's own flags
//! (built by the adapter's `cli_args`, with the same `--mcp-config`: the server's `/mcp`
//! and the session's token from `POST /sessions/{id}/mcp-token`) and environment, so
//! the two processes differ only in who drives them.
//! Both get `--warmup` turns first (the server's first turn also starts its process).
//!
//! Then `--turns` rounds, each one turn through the server and one direct turn, in
//! alternation so both see the same machine: the user text `say pong` (a three-delta
//! reply). Server turn: from writing the `chat.send` frame to receiving the turn's
//! `turn_completed`. Direct turn: from writing the user line to the CLI's stdin to
//! reading its `result` line. Overhead = server − direct, reported as the difference of
//! the medians and of the p99s, and as the median of the per-round differences. Also
//! the server process's CPU time (utime + stime from `/proc`, which does not include
//! the `claude` child) over the timed rounds, per turn: the work the server does for a
//! turn, independent of how busy the machine is. Finally, as a reference on the same
//! server, `--turns` turns of a scripted session answering `pong` at once (same
//! timing, same CPU measure).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use tandem_actors::adapter::claude::transport::cli_args;
use tandem_actors::adapter::messages::TurnSettings;
use tandem_actors::adapter::McpAccess;

use super::args::Flags;
use super::procfs::cpu_seconds;
use super::report;
use super::server::BenchServer;
use super::stats::{median, percentile, round};
use crate::mock_anthropic::{claude_config, MockAnthropic};
use crate::{TempDir, WsClient};

/// Longest one direct turn may take.
const TURN_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the mode.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let turns: usize = flags.num("turns", 100)?;
    let warmup: usize = flags.num("warmup", 5)?;
    let bin = flags
        .all("bin")
        .pop()
        .map(PathBuf::from)
        .or_else(crate::vendor_clis::claude_bin)
        .ok_or("no claude binary: pass --bin or install .vendor-clis (see .ci/run)")?;
    flags.done()?;
    if turns == 0 {
        return Err("--turns must be at least 1".into());
    }
    let mock = MockAnthropic::start();
    let dir = TempDir::new("bench-claude");
    let server_home = dir.path().join("server-home");
    let direct_home = dir.path().join("direct-home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    std::fs::create_dir_all(&direct_home).map_err(|e| format!("{e}"))?;
    let config = claude_config(dir.path(), &bin, &mock, &server_home, 3600);
    let server = BenchServer::start(&[
        "--config".into(),
        config.display().to_string(),
        "--workspace-root".into(),
        work.display().to_string(),
    ])?;
    report::note(&format!(
        "claude: {turns} rounds after {warmup} warm-up turns each"
    ));
    actix_rt::System::new().block_on(async {
        let mut ws = WsClient::try_connect(&server.ws_url()).await?;
        let reply = ws
            .request(json!({"type": "session.create", "vendor": "claude",
                            "cwd": work.display().to_string()}))
            .await;
        let id = reply["session"]["id"]
            .as_str()
            .ok_or(format!("session.create: {reply}"))?
            .to_string();
        let mcp = mcp_access(&server, &id).await?;
        let mut direct = Direct::start(&bin, &mock, &direct_home, &work, &mcp).await?;
        ws.subscribe(&id, 0).await;
        for _ in 0..warmup {
            server_turn(&mut ws, &id).await?;
            direct.turn().await?;
        }
        let mut through = Vec::with_capacity(turns);
        let mut alone = Vec::with_capacity(turns);
        let cpu_before = cpu_seconds(server.pid())?;
        for _ in 0..turns {
            through.push(server_turn(&mut ws, &id).await?);
            alone.push(direct.turn().await?);
        }
        let server_cpu_ms = (cpu_seconds(server.pid())? - cpu_before) * 1000.0 / turns as f64;
        // Reference: the same number of turns of the built-in scripted vendor answering
        // "pong" at once, on the same server.
        let reply = ws
            .request(json!({"type": "session.create", "cwd": work.display().to_string()}))
            .await;
        let scripted = reply["session"]["id"]
            .as_str()
            .ok_or(format!("session.create: {reply}"))?
            .to_string();
        ws.subscribe(&scripted, 0).await;
        for _ in 0..warmup {
            server_turn_text(&mut ws, &scripted, "pong").await?;
        }
        let cpu_before = cpu_seconds(server.pid())?;
        let mut reference = Vec::with_capacity(turns);
        for _ in 0..turns {
            reference.push(server_turn_text(&mut ws, &scripted, "pong").await?);
        }
        let scripted_cpu_ms = (cpu_seconds(server.pid())? - cpu_before) * 1000.0 / turns as f64;
        let (scripted_p50, scripted_p99) = {
            let mut sorted = reference.clone();
            sorted.sort_unstable();
            (
                percentile(&sorted, 50.0) as f64 / 1000.0,
                percentile(&sorted, 99.0) as f64 / 1000.0,
            )
        };
        let diffs: Vec<f64> = through
            .iter()
            .zip(&alone)
            .map(|(s, d)| (*s as f64 - *d as f64) / 1000.0)
            .collect();
        let stats = |v: &[u32]| {
            let mut sorted = v.to_vec();
            sorted.sort_unstable();
            (
                percentile(&sorted, 50.0) as f64 / 1000.0,
                percentile(&sorted, 99.0) as f64 / 1000.0,
            )
        };
        let (server_p50, server_p99) = stats(&through);
        let (direct_p50, direct_p99) = stats(&alone);
        report::line(&json!({
            "mode": "claude",
            "turns": turns,
            "server_ms": {"median": round(server_p50, 2), "p99": round(server_p99, 2)},
            "direct_ms": {"median": round(direct_p50, 2), "p99": round(direct_p99, 2)},
            "overhead_ms": {
                "median": round(server_p50 - direct_p50, 2),
                "p99": round(server_p99 - direct_p99, 2),
                "median_of_round_differences": round(median(&diffs), 2),
            },
            "server_cpu_ms_per_turn": round(server_cpu_ms, 2),
            "reference_scripted": {
                "median_ms": round(scripted_p50, 2),
                "p99_ms": round(scripted_p99, 2),
                "server_cpu_ms_per_turn": round(scripted_cpu_ms, 2),
            },
        }));
        direct.stop().await;
        Ok::<(), String>(())
    })?;
    drop(server);
    Ok(())
}

/// The `/mcp` endpoint and token the server gives its own `claude` for session `id`,
/// so both processes are configured alike.
async fn mcp_access(server: &BenchServer, id: &str) -> Result<McpAccess, String> {
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish();
    let mut resp = client
        .post(format!("{}/api/v1/sessions/{id}/mcp-token", server.base))
        .insert_header(("Content-Type", "application/json"))
        .send_body("{}")
        .await
        .map_err(|e| format!("mcp-token: {e}"))?;
    let body: Value = resp.json().await.map_err(|e| format!("mcp-token: {e}"))?;
    let (Some(url), Some(token)) = (body["url"].as_str(), body["token"].as_str()) else {
        return Err(format!("mcp-token: {body}"));
    };
    Ok(McpAccess {
        url: url.to_string(),
        token: token.to_string(),
        servers: Default::default(),
    })
}

/// One Claude turn through the server; microseconds.
async fn server_turn(ws: &mut WsClient, id: &str) -> Result<u32, String> {
    server_turn_text(ws, id, "say pong").await
}

/// One turn with `text` through the server; microseconds from writing the frame to
/// receiving the turn's `turn_completed`.
async fn server_turn_text(ws: &mut WsClient, id: &str, text: &str) -> Result<u32, String> {
    let start = Instant::now();
    let reply = ws
        .request(json!({"type": "chat.send", "sessionId": id, "content": text}))
        .await;
    if reply["kind"] != "reply" {
        return Err(format!("chat.send: {reply}"));
    }
    let events = ws.events_until_turn_end(id).await;
    let elapsed = start.elapsed().as_micros() as u32;
    let end: &Value = events.last().ok_or("no turn_completed")?;
    if end["status"] != "completed" {
        return Err(format!("server turn ended {end}"));
    }
    Ok(elapsed)
}

/// A `claude` process driven directly.
struct Direct {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Direct {
    async fn start(
        bin: &std::path::Path,
        mock: &MockAnthropic,
        home: &std::path::Path,
        cwd: &std::path::Path,
        mcp: &McpAccess,
    ) -> Result<Direct, String> {
        // Exactly the adapter's flags for an unpaired session with default settings.
        let settings = TurnSettings {
            system_prompt: Some(tandem_actors::session::prompts::UNPAIRED.to_string()),
            ..TurnSettings::default()
        };
        // As the adapter does: the MCP config in a file of its own.
        let config = home.join("mcp-config.json");
        std::fs::write(
            &config,
            tandem_actors::adapter::claude::transport::mcp_config(mcp),
        )
        .map_err(|e| format!("writing {}: {e}", config.display()))?;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(cli_args(&settings, None, Some(&config)))
            .current_dir(cwd)
            .env_clear()
            .envs(
                ["PATH", "LANG", "TERM"]
                    .iter()
                    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))),
            )
            .envs(mock.cli_env())
            .env("HOME", home)
            .env("ENABLE_TOOL_SEARCH", "false")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", bin.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok(Direct {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    /// One turn; microseconds from writing the user line to reading `result`.
    async fn turn(&mut self) -> Result<u32, String> {
        let line = json!({"type": "user", "message": {"role": "user",
            "content": [{"type": "text", "text": "say pong"}]},
            "parent_tool_use_id": null, "session_id": ""})
        .to_string()
            + "\n";
        let start = Instant::now();
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("claude stdin: {e}"))?;
        self.stdin.flush().await.map_err(|e| format!("{e}"))?;
        loop {
            let next = tokio::time::timeout(TURN_TIMEOUT, self.lines.next_line())
                .await
                .map_err(|_| "a direct turn took over a minute")?
                .map_err(|e| format!("claude stdout: {e}"))?
                .ok_or("claude exited")?;
            // Parsed like the adapter parses every line.
            let v: Value = serde_json::from_str(&next).unwrap_or_default();
            if v["type"] == "result" {
                if v["is_error"] == true {
                    return Err(format!("direct turn failed: {next}"));
                }
                return Ok(start.elapsed().as_micros() as u32);
            }
        }
    }

    async fn stop(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let _ = self.child.start_kill();
    }
}
