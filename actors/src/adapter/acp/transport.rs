//! One ACP agent process: the tasks that feed its stdin, read its stdout line by line
//! into frames for the adapter actor (a malformed line is logged and skipped), keep
//! the tail of its stderr, and report its exit.
//!
//! The process is owned by a supervisor task: the actor holds a write channel
//! (dropping it closes stdin, which ends a well-behaved agent) and a kill switch
//! (sending on it, or dropping it, kills the process). The hub's shutdown signal kills
//! it too, so no agent outlives the server.

use std::collections::VecDeque;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use actix::WeakAddr;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::wire::{parse_frame, Frame};
use super::AcpHub;
use crate::adapter::VendorProcess;

/// Lines of stderr kept for the error of a turn the process's death ended.
const STDERR_LINES: usize = 20;
/// How long a process that closed stdout may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(3);
/// Longest piece of a malformed line quoted in the log.
const LOG_LINE_CHARS: usize = 200;

/// A frame from process generation `generation`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Incoming {
    /// Which process wrote it (frames of an older process are ignored).
    pub generation: u64,
    /// The frame.
    pub frame: Frame,
}

/// Process generation `generation` has exited.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Exited {
    /// Which process: the exit of a process already replaced must not touch the live one.
    pub generation: u64,
    /// How it ended, for the error message.
    pub status: String,
    /// The last lines it wrote to stderr.
    pub stderr_tail: String,
}

/// A live process as the actor sees it.
#[derive(Debug)]
pub struct LiveProcess {
    /// Its generation (frames and exits carry it).
    pub generation: u64,
    /// Its pid, for logs.
    pub pid: u32,
    /// Lines to write to stdin; dropping it closes stdin.
    stdin: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// Kills the process when sent to or dropped.
    kill: Option<oneshot::Sender<()>>,
}

impl LiveProcess {
    /// Queues one line for stdin; false when stdin is already closed.
    pub fn write(&self, line: Vec<u8>) -> bool {
        self.stdin.as_ref().is_some_and(|tx| tx.send(line).is_ok())
    }

    /// Closes stdin and hands back the kill switch, for a close with a grace period.
    pub fn close(mut self) -> Option<oneshot::Sender<()>> {
        self.stdin = None;
        self.kill.take()
    }
}

/// Starts the agent for a session in `cwd` with the minimal environment. Frames go to
/// `to` tagged with `generation`; `to` is awaited for each one, so a slow actor slows
/// the reader rather than queueing without bound.
pub fn spawn<A>(
    process: &VendorProcess,
    cwd: &Path,
    generation: u64,
    hub: &AcpHub,
    to: WeakAddr<A>,
) -> std::io::Result<LiveProcess>
where
    A: Actor<Context = Context<A>> + Handler<Incoming> + Handler<Exited>,
{
    let mut cmd = process.command();
    cmd.current_dir(cwd);
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
        });
    }

    let tail = Arc::new(Mutex::new(VecDeque::<String>::new()));
    let stderr_task = stderr.map(|stderr| {
        let tail = tail.clone();
        actix::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(pid, line = %line, "acp agent stderr");
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
                            if line.trim().is_empty() {
                                continue;
                            }
                            let frame = match parse_frame(&line) {
                                Ok(frame) => frame,
                                Err(e) => {
                                    let quoted: String = line.chars().take(LOG_LINE_CHARS).collect();
                                    tracing::warn!(pid, error = %e, line = %quoted, "malformed frame from acp agent skipped");
                                    continue;
                                }
                            };
                            // A gone adapter (its session stopped) ends the process.
                            let delivered = match to.upgrade() {
                                Some(addr) => addr.send(Incoming { generation, frame }).await.is_ok(),
                                None => false,
                            };
                            if !delivered {
                                let _ = child.child.start_kill();
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            // Not UTF-8, or the pipe broke: nothing more can be read.
                            tracing::warn!(pid, error = %e, "acp agent stdout unreadable");
                            let _ = child.child.start_kill();
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

/// The child as its supervisor task holds it: however the task ends (it finishes, or
/// is dropped because the runtime stops), the process is killed and the hub forgets it.
struct Supervised {
    child: tokio::process::Child,
    pid: u32,
    hub: AcpHub,
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
