//! The child-process supervisor the ACP and Claude Code adapters share: one vendor
//! process per live session, the tasks that feed its stdin, read its stdout line by
//! line into the adapter actor, keep the tail of its stderr and report its exit; the
//! grace-period close; and [`ProcessHub`], the pids of a vendor's processes and the
//! shutdown signal that kills them all.
//!
//! The process is owned by a supervisor task, not the actor: the actor holds a write
//! channel (dropping it closes stdin, which ends a well-behaved CLI) and a kill switch
//! (sending on it, or dropping it when the actor goes away, kills the process). The
//! hub's shutdown signal kills it too, so no process outlives the server.
//!
//! (Codex's app-server is one process shared by many sessions and speaks JSON-RPC with
//! responses matched on its reader task: `codex/rpc.rs` supervises it.)

use std::collections::{HashSet, VecDeque};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use actix::WeakAddr;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::sync::{mpsc, oneshot, watch};

use super::fleet::Seat;

/// Lines of stderr kept for the error of a turn the process's death ended.
const STDERR_LINES: usize = 20;
/// How long a process that closed stdout may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(3);
/// How long a process whose stdin was closed (an idle close) may take to exit before
/// it is killed.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The processes of one vendor that we started, shared by all its adapters; cheap to
/// clone.
#[derive(Debug, Clone)]
pub struct ProcessHub {
    inner: Arc<HubInner>,
}

#[derive(Debug)]
struct HubInner {
    /// Pids of the processes we started and that have not exited.
    pids: Mutex<HashSet<u32>>,
    /// Set once at shutdown; every process supervisor watches it.
    shutdown: watch::Sender<bool>,
}

impl Default for ProcessHub {
    fn default() -> Self {
        ProcessHub {
            inner: Arc::new(HubInner {
                pids: Mutex::new(HashSet::new()),
                shutdown: watch::channel(false).0,
            }),
        }
    }
}

impl ProcessHub {
    fn process_started(&self, pid: u32) {
        if let Ok(mut pids) = self.inner.pids.lock() {
            pids.insert(pid);
        }
    }

    fn process_ended(&self, pid: u32) {
        if let Ok(mut pids) = self.inner.pids.lock() {
            pids.remove(&pid);
        }
    }

    /// True when `pid` is a process one of the hub's adapters started.
    pub fn is_ours(&self, pid: u32) -> bool {
        self.inner.pids.lock().is_ok_and(|p| p.contains(&pid))
    }

    /// How many of the hub's processes are alive.
    pub fn live_processes(&self) -> usize {
        self.inner.pids.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// Kills every process the hub's adapters started and waits (at most `limit`)
    /// until they have exited: stopping the server leaves no process behind.
    pub async fn shutdown(&self, limit: Duration) {
        self.inner.shutdown.send_replace(true);
        let deadline = tokio::time::Instant::now() + limit;
        while self.live_processes() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
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

impl Exited {
    /// The error of a turn this exit ended: `"{who} exited during the turn (status):
    /// stderr tail"`.
    pub fn turn_error(&self, who: &str) -> String {
        let mut error = format!("{who} exited during the turn ({})", self.status);
        let tail = self.stderr_tail.trim();
        if !tail.is_empty() {
            error.push_str(": ");
            error.push_str(tail);
        }
        error
    }
}

/// A live process as the actor sees it.
#[derive(Debug)]
pub struct LiveProcess {
    /// Its generation (stdout messages and exits carry it).
    pub generation: u64,
    /// Its pid, for logs.
    pub pid: u32,
    /// Lines to write to stdin; dropping it closes stdin.
    stdin: mpsc::UnboundedSender<Vec<u8>>,
    /// Kills the process when sent to or dropped.
    kill: oneshot::Sender<()>,
}

impl LiveProcess {
    /// Queues one line for stdin; false when stdin is already closed.
    pub fn write(&self, line: Vec<u8>) -> bool {
        self.stdin.send(line).is_ok()
    }

    /// Kills the process at once (it is broken).
    pub fn kill(self) {
        let _ = self.kill.send(());
    }
}

/// Processes being closed: stdin closed, so a well-behaved CLI exits by itself, and
/// each killed if it is still there [`CLOSE_GRACE`] later.
#[derive(Debug, Default)]
pub struct Closing {
    /// Each closing process's generation and kill switch.
    kills: Vec<(u64, oneshot::Sender<()>)>,
}

impl Closing {
    /// Closes `process`'s stdin and arms its kill after [`CLOSE_GRACE`]; `field` finds
    /// this set in the actor when the timer fires.
    pub fn close<A>(
        &mut self,
        process: LiveProcess,
        ctx: &mut Context<A>,
        field: fn(&mut A) -> &mut Closing,
    ) where
        A: Actor<Context = Context<A>>,
    {
        let LiveProcess {
            generation, kill, ..
        } = process;
        self.kills.push((generation, kill));
        ctx.run_later(CLOSE_GRACE, move |act, _| {
            let closing = field(act);
            if let Some(pos) = closing.kills.iter().position(|(g, _)| *g == generation) {
                let (_, kill) = closing.kills.remove(pos);
                let _ = kill.send(());
            }
        });
    }

    /// Process generation `generation` has exited: nothing left to kill.
    pub fn exited(&mut self, generation: u64) {
        self.kills.retain(|(g, _)| *g != generation);
    }
}

/// Starts `cmd` (stdio piped, as `VendorProcess::command` makes it) as process
/// generation `generation` of one of `hub`'s adapters, in fleet seat `seat`, which is
/// given back once the process has exited. `decode` turns each stdout line into the
/// message for `to` (`None` skips the line); `to` is awaited for each one, so a slow
/// actor slows the reader rather than queueing without bound. The exit goes to `to` as
/// [`Exited`]. `name` is the vendor's name in log lines.
pub fn spawn<A, M, D>(
    mut cmd: tokio::process::Command,
    generation: u64,
    hub: &ProcessHub,
    seat: Seat,
    to: WeakAddr<A>,
    name: &'static str,
    mut decode: D,
) -> std::io::Result<LiveProcess>
where
    A: Actor<Context = Context<A>> + Handler<M> + Handler<Exited>,
    M: Message<Result = ()> + Send + 'static,
    D: FnMut(String) -> Option<M> + 'static,
{
    let child = cmd.spawn()?;
    let pid = child.id().unwrap_or(0);
    hub.process_started(pid);
    seat.started(pid);
    let mut child = Supervised {
        child,
        pid,
        hub: hub.clone(),
        _seat: seat,
    };
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let (kill_tx, mut kill_rx) = oneshot::channel::<()>();
    let stdin = child.child.stdin.take();
    let stdout = child.child.stdout.take();
    let stderr = child.child.stderr.take();

    if let Some(stdin) = stdin {
        actix::spawn(feed_stdin(stdin, stdin_rx));
    }

    let tail = Arc::new(Mutex::new(VecDeque::<String>::new()));
    let stderr_task =
        stderr.map(|stderr| actix::spawn(keep_stderr_tail(stderr, tail.clone(), pid, name)));

    let mut shutdown = hub.inner.shutdown.subscribe();
    actix::spawn(async move {
        if let Some(stdout) = stdout {
            let mut lines = BufReader::new(stdout).lines();
            let (kill, shutdown) = (&mut kill_rx, &mut shutdown);
            if relay_stdout(&mut lines, kill, shutdown, &to, &mut decode, pid, name).await {
                let _ = child.child.start_kill();
            }
        }
        let status = exit_status(&mut child.child).await;
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
        stdin: stdin_tx,
        kill: kill_tx,
    })
}

/// Writes each line sent on `lines` to the process's stdin until the channel or the
/// pipe closes; dropping stdin then closes it, and the CLI finishes and exits.
async fn feed_stdin(
    mut stdin: tokio::process::ChildStdin,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// Logs process `pid`'s stderr, keeping its last [`STDERR_LINES`] lines in `tail`.
async fn keep_stderr_tail(
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    pid: u32,
    name: &'static str,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(pid, line = %line, "{name} stderr");
        if let Ok(mut t) = tail.lock() {
            if t.len() == STDERR_LINES {
                t.pop_front();
            }
            t.push_back(line);
        }
    }
}

/// Hands each stdout line `decode` makes a message of to `to`, awaiting each, until
/// stdout ends (false) or the process must be killed (true): on `kill`, at shutdown,
/// when `to` is gone or stdout cannot be read.
async fn relay_stdout<A, M, D>(
    lines: &mut Lines<BufReader<tokio::process::ChildStdout>>,
    kill: &mut oneshot::Receiver<()>,
    shutdown: &mut watch::Receiver<bool>,
    to: &WeakAddr<A>,
    decode: &mut D,
    pid: u32,
    name: &'static str,
) -> bool
where
    A: Actor<Context = Context<A>> + Handler<M>,
    M: Message<Result = ()> + Send + 'static,
    D: FnMut(String) -> Option<M>,
{
    loop {
        tokio::select! {
            biased;
            _ = &mut *kill => return true,
            _ = shutdown_requested(shutdown) => return true,
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    let Some(msg) = decode(line) else {
                        continue;
                    };
                    // A gone adapter (its session stopped) ends the process.
                    let delivered = match to.upgrade() {
                        Some(addr) => addr.send(msg).await.is_ok(),
                        None => false,
                    };
                    if !delivered {
                        return true;
                    }
                }
                Ok(None) => return false,
                Err(e) => {
                    // Not UTF-8, or the pipe broke: nothing more can be read.
                    tracing::warn!(pid, error = %e, "{name} stdout unreadable");
                    return true;
                }
            }
        }
    }
}

/// How the process exited, killed if it takes longer than [`EXIT_GRACE`].
async fn exit_status(child: &mut tokio::process::Child) -> String {
    match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
        Ok(status) => describe(status),
        Err(_) => {
            let _ = child.start_kill();
            describe(child.wait().await)
        }
    }
}

/// The child as its supervisor task holds it. However the task ends (it finishes, or
/// it is dropped because the server's runtime is stopping), the process is killed (a
/// no-op once it has exited), the hub forgets its pid and its fleet seat is given back.
struct Supervised {
    child: tokio::process::Child,
    pid: u32,
    hub: ProcessHub,
    /// Given back when dropped.
    _seat: Seat,
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        self.hub.process_ended(self.pid);
    }
}

/// Resolves once the server shuts down; never when the hub is gone without one.
async fn shutdown_requested(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return std::future::pending::<()>().await;
        }
    }
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
