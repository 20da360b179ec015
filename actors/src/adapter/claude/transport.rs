//! One `claude` process: its command line, and the tasks that feed its stdin, read its
//! stdout line by line into the adapter actor, keep the tail of its stderr, and report
//! its exit.
//!
//! The process is owned by a supervisor task, not the actor: the actor holds a write
//! channel (dropping it closes stdin, which ends the CLI cleanly) and a kill switch
//! (sending on it — or dropping it, when the actor goes away — kills the process).

use std::collections::VecDeque;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use actix::WeakAddr;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::ClaudeHub;
use crate::adapter::messages::TurnSettings;
use crate::adapter::{McpAccess, VendorProcess};
use tandem_protocol::PermissionMode;

/// Lines of stderr kept for the error of a turn the process's death ended.
const STDERR_LINES: usize = 20;
/// How long a process that closed stdout may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// A stdout line from process generation `generation`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StdoutLine {
    /// Which process wrote it (lines of an older process are ignored).
    pub generation: u64,
    /// The line, without its newline.
    pub line: String,
}

/// Process generation `generation` has exited.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Exited {
    /// Which process: the exit of a process already replaced must not end the live one.
    pub generation: u64,
    /// How it ended, for the error message.
    pub status: String,
    /// The last lines it wrote to stderr.
    pub stderr_tail: String,
}

/// The CLI's name for a permission mode. Bypass runs the CLI in `default` mode and the
/// adapter allows every tool use itself: the CLI refuses `bypassPermissions` when run
/// as root outside a sandbox.
pub fn cli_mode(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default | PermissionMode::BypassPermissions => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Plan => "plan",
    }
}

/// The `--mcp-config` value naming our `/mcp` endpoint as server `tandem`.
pub fn mcp_config(mcp: &McpAccess) -> String {
    let config = McpConfig {
        mcp_servers: McpServers {
            tandem: McpServer {
                kind: "http",
                url: &mcp.url,
                headers: [("Authorization", format!("Bearer {}", mcp.token))].into(),
            },
        },
    };
    serde_json::to_string(&config).unwrap_or_default()
}

/// Claude Code's `--mcp-config` document.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct McpConfig<'a> {
    /// MCP servers by name.
    mcp_servers: McpServers<'a>,
}

/// The one MCP server we give Claude Code.
#[derive(serde::Serialize)]
struct McpServers<'a> {
    /// Our `/mcp` endpoint, as this session.
    tandem: McpServer<'a>,
}

/// How Claude Code reaches our `/mcp`: streamable HTTP with the session's token.
#[derive(serde::Serialize)]
struct McpServer<'a> {
    /// The transport (`http`).
    #[serde(rename = "type")]
    kind: &'static str,
    /// `http://HOST:PORT/mcp`.
    url: &'a str,
    /// Sent with every request: the session's bearer token.
    headers: std::collections::BTreeMap<&'static str, String>,
}

/// The adapter's own arguments (after the configured ones).
pub fn cli_args(
    settings: &TurnSettings,
    resume: Option<&str>,
    mcp: Option<&McpAccess>,
) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        cli_mode(settings.permission_mode),
    ]
    .into_iter()
    .map(String::from)
    .collect();
    if !settings.model.is_empty() {
        args.extend(["--model".into(), settings.model.clone()]);
    }
    if !settings.effort.is_empty() {
        args.extend(["--effort".into(), settings.effort.clone()]);
    }
    if let Some(prompt) = settings.system_prompt.as_ref().filter(|p| !p.is_empty()) {
        args.extend(["--append-system-prompt".into(), prompt.clone()]);
    }
    // By default the CLI records the system prompt of a conversation's first request
    // and replays it on resume; ours changes when a session joins a pair.
    args.extend(["--system-prompt-snapshot".into(), "off".into()]);
    if let Some(id) = resume {
        args.extend(["--resume".into(), id.to_string()]);
    }
    if let Some(mcp) = mcp {
        // Our own tools never need a person's approval: the server checks every call.
        args.extend([
            "--mcp-config".into(),
            mcp_config(mcp),
            "--allowedTools".into(),
            "mcp__tandem".into(),
        ]);
    }
    args
}

/// A live process as the actor sees it.
#[derive(Debug)]
pub struct LiveProcess {
    /// Its generation (lines and exits carry it).
    pub generation: u64,
    /// Its pid, for logs.
    pub pid: u32,
    /// Lines to write to stdin; dropping it closes stdin.
    pub stdin: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// Kills the process when sent to or dropped.
    pub kill: Option<oneshot::Sender<()>>,
}

impl LiveProcess {
    /// Queues one line for stdin; false when stdin is already closed.
    pub fn write(&self, line: Vec<u8>) -> bool {
        self.stdin.as_ref().is_some_and(|tx| tx.send(line).is_ok())
    }
}

/// Starts `claude` for a session: configured args, our args, the inherited environment,
/// the session's working directory. Lines go to `to` tagged with `generation`.
pub fn spawn<A>(
    process: &VendorProcess,
    args: &[String],
    cwd: &Path,
    generation: u64,
    hub: &ClaudeHub,
    to: WeakAddr<A>,
) -> std::io::Result<LiveProcess>
where
    A: Actor<Context = Context<A>> + Handler<StdoutLine> + Handler<Exited>,
{
    let mut cmd = process.command();
    cmd.args(args).current_dir(cwd);
    // MCP tools are otherwise deferred behind the CLI's ToolSearch tool.
    if !process.env.contains_key("ENABLE_TOOL_SEARCH") {
        cmd.env("ENABLE_TOOL_SEARCH", "false");
    }
    let child = cmd.spawn()?;
    let pid = child.id().unwrap_or(0);
    hub.process_started(pid);
    let mut child = Supervised {
        child,
        pid,
        hub: hub.clone(),
    };
    let (stdin_tx, mut stdin_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let (kill_tx, kill_rx) = oneshot::channel::<()>();
    let stdin = child.child.stdin.take();
    let stdout = child.child.stdout.take();
    let stderr = child.child.stderr.take();

    if let Some(mut stdin) = stdin {
        actix::spawn(async move {
            while let Some(line) = stdin_rx.recv().await {
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            // Dropping stdin closes it: the CLI finishes and exits.
        });
    }

    let tail = Arc::new(Mutex::new(VecDeque::<String>::new()));
    let stderr_task = stderr.map(|stderr| {
        let tail = tail.clone();
        actix::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(pid, line = %line, "claude stderr");
                if let Ok(mut t) = tail.lock() {
                    if t.len() == STDERR_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
        })
    });

    let mut shutdown = hub.shutdown_signal();
    actix::spawn(async move {
        let mut kill_rx = kill_rx;
        if let Some(stdout) = stdout {
            let mut lines = BufReader::new(stdout).lines();
            loop {
                tokio::select! {
                    biased;
                    _ = &mut kill_rx => {
                        let _ = child.child.start_kill();
                        break;
                    }
                    _ = shutdown_requested(&mut shutdown) => {
                        let _ = child.child.start_kill();
                        break;
                    }
                    line = lines.next_line() => match line {
                        Ok(Some(line)) => {
                            // A gone adapter (its session stopped) ends the process.
                            let delivered = match to.upgrade() {
                                Some(addr) => addr.send(StdoutLine { generation, line }).await.is_ok(),
                                None => false,
                            };
                            if !delivered {
                                let _ = child.child.start_kill();
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!(pid, error = %e, "claude stdout unreadable");
                            break;
                        }
                    }
                }
            }
        }
        let status = match tokio::time::timeout(EXIT_GRACE, child.child.wait()).await {
            Ok(status) => describe(status),
            Err(_) => {
                let _ = child.child.start_kill();
                describe(child.child.wait().await)
            }
        };
        if let Some(task) = stderr_task {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        drop(child);
        let stderr_tail = tail
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        if let Some(addr) = to.upgrade() {
            addr.do_send(Exited {
                generation,
                status,
                stderr_tail,
            });
        }
    });

    Ok(LiveProcess {
        generation,
        pid,
        stdin: Some(stdin_tx),
        kill: Some(kill_tx),
    })
}

/// The child process as its supervisor task holds it. However the task ends — it
/// finishes, or it is dropped because the server's runtime is stopping — the process is
/// killed (a no-op once it has exited) and the hub forgets its pid.
struct Supervised {
    child: tokio::process::Child,
    pid: u32,
    hub: ClaudeHub,
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        self.hub.process_ended(self.pid);
    }
}

/// Resolves once the server shuts down; never without a signal.
async fn shutdown_requested(rx: &mut Option<watch::Receiver<bool>>) {
    if let Some(rx) = rx {
        while !*rx.borrow_and_update() {
            if rx.changed().await.is_err() {
                break;
            }
        }
        if *rx.borrow() {
            return;
        }
    }
    std::future::pending::<()>().await
}

fn describe(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(s) => match s.code() {
            Some(code) => format!("exit code {code}"),
            None => "killed by a signal".into(),
        },
        Err(e) => format!("unknown exit ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_follow_the_settings() {
        let mut settings = TurnSettings::default();
        let plain = cli_args(&settings, None, None);
        assert!(plain.join(" ").contains("--permission-mode default"));
        assert!(
            !plain.contains(&"--model".to_string()),
            "no model: the default"
        );
        settings.model = "claude-sonnet-4-5".into();
        settings.effort = "high".into();
        settings.permission_mode = PermissionMode::BypassPermissions;
        settings.system_prompt = Some("be a Driver".into());
        let mcp = McpAccess {
            url: "http://127.0.0.1:1/mcp".into(),
            token: "T".into(),
        };
        let args = cli_args(&settings, Some("sess-1"), Some(&mcp)).join(" ");
        for part in [
            "--permission-mode default",
            "--model claude-sonnet-4-5",
            "--effort high",
            "--append-system-prompt be a Driver",
            "--resume sess-1",
            "--system-prompt-snapshot off",
            "--allowedTools mcp__tandem",
            "\"Authorization\":\"Bearer T\"",
        ] {
            assert!(args.contains(part), "{part} missing from {args}");
        }
        assert_eq!(cli_mode(PermissionMode::Plan), "plan");
    }
}
