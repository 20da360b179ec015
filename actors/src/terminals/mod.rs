//! Sessions' terminals: the owner's shell in a pseudo-terminal in the session's
//! working directory ([`pty`]), the output it keeps for clients that connect later,
//! the clients watching it, and its end with every process it started ([`procs`]).
//!
//! Each terminal has two threads: one reads its output (kept, up to
//! [`REPLAY_BYTES`], and handed to every client's queue), one writes what clients
//! type (a shell that does not read holds back the clients' sockets, not the server).
//! A client that falls [`CLIENT_QUEUE`] chunks behind is dropped; it reconnects and
//! gets the kept output again. A terminal ends when its shell exits, when it is
//! closed (a request, its session archived or discarded, no client for the idle
//! time, the server stopping): every process of its shell's session is killed.

pub mod procs;
pub mod pty;

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tandem_protocol::terminals::{TerminalInfo, REPLAY_BYTES};
use tokio::sync::mpsc;

use crate::adapter::confine::Launcher;
use crate::error::RuntimeError;
use crate::ids::{SessionId, UserId};

/// Output chunks a client may fall behind before it is dropped.
pub const CLIENT_QUEUE: usize = 256;
/// Largest chunk of output read at once.
const READ_CHUNK: usize = 16 << 10;
/// Typed input waiting for the shell, in frames.
const INPUT_QUEUE: usize = 64;
/// How long a terminal's last output may take to arrive after its shell's session
/// was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How terminals are started and limited.
#[derive(Debug, Clone)]
pub struct TerminalsConfig {
    /// The server's own binary, which starts shells on their terminal (its `tty`
    /// subcommand); `None`: terminals cannot be opened.
    pub helper: Option<PathBuf>,
    /// Terminals one user may have open at once (`--max-terminals`).
    pub max_per_user: usize,
    /// A terminal no client watched for this long is ended (`--terminal-idle-secs`).
    pub idle: Duration,
}

impl Default for TerminalsConfig {
    fn default() -> Self {
        TerminalsConfig {
            helper: None,
            max_per_user: 8,
            idle: Duration::from_secs(3600),
        }
    }
}

/// What a client of a terminal receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Bytes the terminal wrote.
    Bytes(Bytes),
    /// The terminal ended; nothing follows.
    Exit {
        /// The shell's exit code (`None`: killed).
        exit_code: Option<i32>,
        /// Why, for a person.
        reason: String,
    },
}

/// Every open terminal of the server.
#[derive(Clone)]
pub struct Terminals {
    inner: Arc<Inner>,
}

struct Inner {
    config: TerminalsConfig,
    /// Confines shells where agents are confined.
    launcher: Option<Launcher>,
    /// Open terminals by id.
    open: Mutex<BTreeMap<String, Arc<Terminal>>>,
    /// Client ids, unique per server.
    next_client: AtomicU64,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where and for whom a terminal opens.
#[derive(Debug, Clone)]
pub struct Opening {
    /// The session.
    pub session_id: SessionId,
    /// Its owner, the only user who may use the terminal.
    pub owner: UserId,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// One open terminal.
pub struct Terminal {
    id: String,
    session_id: SessionId,
    owner: UserId,
    shell: String,
    cwd: String,
    created_at: u64,
    /// The shell's pid, which is also its process session's id.
    pid: i32,
    /// The server's end (for resizing; the threads hold their own copies).
    master: OwnedFd,
    /// To the writer thread.
    input: mpsc::Sender<Bytes>,
    state: Mutex<State>,
}

struct State {
    cols: u16,
    rows: u16,
    /// The last output, at most [`REPLAY_BYTES`].
    kept: VecDeque<u8>,
    clients: Vec<(u64, mpsc::Sender<Output>)>,
    /// Since when no client watches it.
    idle_since: Option<Instant>,
    /// Why it is being closed (set before its processes are killed).
    closing: Option<String>,
    /// It ended: no client may attach.
    ended: bool,
}

/// A client's hold on a terminal: its output queue and what it missed. Dropping it
/// detaches the client.
pub struct Attachment {
    /// The terminal.
    pub terminal: Arc<Terminal>,
    /// What the terminal kept, to show first.
    pub replay: Bytes,
    /// Its output from now on; ends after [`Output::Exit`], or when the client fell
    /// too far behind.
    pub output: mpsc::Receiver<Output>,
    client: u64,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let mut state = locked(&self.terminal.state);
        state.clients.retain(|(id, _)| *id != self.client);
        if state.clients.is_empty() && state.idle_since.is_none() {
            state.idle_since = Some(Instant::now());
        }
    }
}

impl Terminals {
    /// No terminal open yet; shells are confined by `launcher` where agents are.
    pub fn new(config: TerminalsConfig, launcher: Option<Launcher>) -> Terminals {
        Terminals {
            inner: Arc::new(Inner {
                config,
                launcher,
                open: Mutex::default(),
                next_client: AtomicU64::new(1),
            }),
        }
    }

    /// Ends terminals no client watched for the configured idle time, checking a few
    /// times per that time (at least every second, at most every minute). Call inside
    /// an actix system; it stops with the runtime.
    pub fn start_sweeper(&self) {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let idle = self.inner.config.idle;
        let every = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
        actix_rt::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let quiet: Vec<Arc<Terminal>> = locked(&inner.open)
                    .values()
                    .filter(|t| {
                        locked(&t.state)
                            .idle_since
                            .is_some_and(|s| s.elapsed() >= idle)
                    })
                    .cloned()
                    .collect();
                let terminals = Terminals { inner };
                for t in quiet {
                    let why = format!("no client for {} s", idle.as_secs());
                    terminals.close_one(&t, why).await;
                }
            }
        });
    }

    /// Opens a terminal: the shell starts in `at.cwd`. `LIMIT_EXCEEDED` when the owner
    /// has all they may.
    pub fn open(&self, at: Opening) -> Result<TerminalInfo, RuntimeError> {
        self.check_room(&at.owner)?;
        let (shell, master, mut child) = self.spawn_shell(&at)?;
        let pid = i32::try_from(child.id())
            .map_err(|_| RuntimeError::Internal("the terminal's shell has no usable pid".into()))?;
        let reading = master.try_clone()?;
        let writing = master.try_clone()?;
        let (input, typed) = mpsc::channel(INPUT_QUEUE);
        let terminal = Arc::new(Terminal {
            id: crate::clock::random_id("term_", 8),
            session_id: at.session_id,
            owner: at.owner,
            shell: shell.display().to_string(),
            cwd: at.cwd.display().to_string(),
            created_at: crate::clock::now_ms(),
            pid,
            master,
            input,
            state: Mutex::new(State {
                cols: at.cols,
                rows: at.rows,
                kept: VecDeque::new(),
                clients: Vec::new(),
                idle_since: Some(Instant::now()),
                closing: None,
                ended: false,
            }),
        });
        let (read_done, drained) = std::sync::mpsc::channel::<()>();
        let reader = terminal.clone();
        let threads = [
            std::thread::Builder::new()
                .name("terminal-out".into())
                .spawn(move || {
                    reader.read_output(reading);
                    let _ = read_done.send(());
                })
                .map(drop),
            std::thread::Builder::new()
                .name("terminal-in".into())
                .spawn(move || write_input(writing, typed))
                .map(drop),
        ];
        if let Some(Err(e)) = threads.into_iter().find(Result::is_err) {
            procs::kill_session(pid);
            let _ = child.wait();
            return Err(e.into());
        }
        let info = terminal.info();
        locked(&self.inner.open).insert(terminal.id.clone(), terminal.clone());
        let weak = Arc::downgrade(&self.inner);
        let waiter = std::thread::Builder::new()
            .name("terminal-wait".into())
            .spawn(move || {
                let status = child.wait();
                // What its shell left running goes with it.
                procs::kill_session(terminal.pid);
                let _ = drained.recv_timeout(DRAIN_GRACE);
                if let Some(inner) = weak.upgrade() {
                    locked(&inner.open).remove(&terminal.id);
                }
                terminal.finish(status.ok().and_then(|s| s.code()));
            });
        if let Err(e) = waiter {
            // Nobody would reap it or tell its clients: it does not stay.
            locked(&self.inner.open).remove(&info.terminal_id);
            procs::kill_session(pid);
            return Err(e.into());
        }
        Ok(info)
    }

    /// Refuses a terminal when `owner` has all they may (`LIMIT_EXCEEDED`).
    fn check_room(&self, owner: &str) -> Result<(), RuntimeError> {
        let config = &self.inner.config;
        let mine = locked(&self.inner.open)
            .values()
            .filter(|t| t.owner == owner)
            .count();
        if mine >= config.max_per_user {
            return Err(RuntimeError::LimitExceeded(format!(
                "user `{owner}` already has {} terminals open (--max-terminals)",
                config.max_per_user
            )));
        }
        Ok(())
    }

    /// Starts the user's shell in a new pseudo-terminal at `at`: the shell's path,
    /// the pseudo-terminal's master side and the child.
    fn spawn_shell(
        &self,
        at: &Opening,
    ) -> Result<(PathBuf, OwnedFd, std::process::Child), RuntimeError> {
        let helper = self.inner.config.helper.as_deref().ok_or_else(|| {
            RuntimeError::Internal(
                "this server cannot start terminals: its binary is not known".into(),
            )
        })?;
        let mut env = crate::adapter::process::inherited(std::env::vars_os());
        env.insert("TERM".into(), "xterm-256color".into());
        env.insert("COLORTERM".into(), "truecolor".into());
        let shell = pty::user_shell(&env);
        let spawned = pty::Pty::open(at.cols, at.rows).and_then(|p| {
            p.spawn(&pty::Spawn {
                helper,
                launcher: self.inner.launcher.as_ref(),
                shell: &shell,
                cwd: &at.cwd,
                env: &env,
            })
        });
        let (master, child) =
            spawned.map_err(|e| RuntimeError::Internal(format!("cannot start a terminal: {e}")))?;
        Ok((shell, master, child))
    }

    /// The terminal `id`, if `user` owns it.
    pub fn get(&self, user: &str, id: &str) -> Option<Arc<Terminal>> {
        locked(&self.inner.open)
            .get(id)
            .filter(|t| t.owner == user)
            .cloned()
    }

    /// A new client of terminal `id`, if `user` owns it and it has not ended.
    pub fn attach(&self, user: &str, id: &str) -> Option<Attachment> {
        let terminal = self.get(user, id)?;
        let (tx, output) = mpsc::channel(CLIENT_QUEUE);
        let client = self.inner.next_client.fetch_add(1, Ordering::Relaxed);
        let replay = {
            let mut state = locked(&terminal.state);
            if state.ended {
                return None;
            }
            state.clients.push((client, tx));
            state.idle_since = None;
            let (a, b) = state.kept.as_slices();
            let mut all = Vec::with_capacity(a.len() + b.len());
            all.extend_from_slice(a);
            all.extend_from_slice(b);
            Bytes::from(all)
        };
        Some(Attachment {
            terminal,
            replay,
            output,
            client,
        })
    }

    /// The terminals of `session_id`, oldest first.
    pub fn list(&self, session_id: &SessionId) -> Vec<TerminalInfo> {
        let mut all: Vec<TerminalInfo> = locked(&self.inner.open)
            .values()
            .filter(|t| t.session_id == session_id)
            .map(|t| t.info())
            .collect();
        all.sort_by(|a, b| (a.created_at, &a.terminal_id).cmp(&(b.created_at, &b.terminal_id)));
        all
    }

    /// Ends terminal `id` of `session_id`; `None` when it has no such terminal.
    pub async fn close(&self, session_id: &SessionId, id: &str, why: &str) -> Option<TerminalInfo> {
        let terminal = locked(&self.inner.open)
            .get(id)
            .filter(|t| t.session_id == session_id)
            .cloned()?;
        let info = terminal.info();
        self.close_one(&terminal, why.to_string()).await;
        Some(info)
    }

    /// Ends every terminal of `session_id` (it was archived, or its worktree went).
    pub async fn end_session(&self, session_id: &SessionId, why: &str) {
        let theirs: Vec<Arc<Terminal>> = locked(&self.inner.open)
            .values()
            .filter(|t| t.session_id == session_id)
            .cloned()
            .collect();
        for t in theirs {
            self.close_one(&t, why.to_string()).await;
        }
    }

    /// Ends every terminal at once: the server stops.
    pub fn shutdown(&self) {
        let all: Vec<Arc<Terminal>> = std::mem::take(&mut *locked(&self.inner.open))
            .into_values()
            .collect();
        for t in all {
            locked(&t.state).closing = Some("the server stopped".into());
            procs::kill_session(t.pid);
        }
    }

    /// Out of the list at once, then its processes killed (off this thread); its
    /// clients hear the end once its shell was reaped.
    async fn close_one(&self, terminal: &Arc<Terminal>, why: String) {
        locked(&self.inner.open).remove(&terminal.id);
        locked(&terminal.state).closing.get_or_insert(why);
        let pid = terminal.pid;
        let _ = actix_rt::task::spawn_blocking(move || procs::kill_session(pid)).await;
    }
}

impl Terminal {
    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Its shell's pid (its process session's id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// What `terminal.list` shows of it.
    pub fn info(&self) -> TerminalInfo {
        let state = locked(&self.state);
        TerminalInfo {
            terminal_id: self.id.clone(),
            session_id: self.session_id.clone(),
            shell: self.shell.clone(),
            cwd: self.cwd.clone(),
            cols: state.cols,
            rows: state.rows,
            clients: u32::try_from(state.clients.len()).unwrap_or(u32::MAX),
            created_at: self.created_at,
        }
    }

    /// Hands typed bytes to the shell, waiting while it does not read; `false` once
    /// the terminal ended.
    pub async fn write(&self, bytes: Bytes) -> bool {
        self.input.send(bytes).await.is_ok()
    }

    /// Sets its size (checked by the caller).
    pub fn resize(&self, cols: u16, rows: u16) -> std::io::Result<()> {
        pty::resize(&self.master, cols, rows)?;
        let mut state = locked(&self.state);
        state.cols = cols;
        state.rows = rows;
        Ok(())
    }

    /// The reader thread: output until the terminal hangs up (its last process
    /// closed it).
    fn read_output(&self, master: OwnedFd) {
        let mut file = std::fs::File::from(master);
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => self.output(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // EIO: no process holds the terminal any more.
                Err(_) => return,
            }
        }
    }

    /// Keeps `chunk` and hands it to every client; a client whose queue is full is
    /// dropped.
    fn output(&self, chunk: &[u8]) {
        let bytes = Bytes::copy_from_slice(chunk);
        let mut state = locked(&self.state);
        keep(&mut state.kept, chunk);
        let before = state.clients.len();
        state
            .clients
            .retain(|(_, tx)| tx.try_send(Output::Bytes(bytes.clone())).is_ok());
        if before > 0 && state.clients.is_empty() {
            state.idle_since = Some(Instant::now());
        }
    }

    /// Its shell was reaped: every client hears why and is let go.
    fn finish(&self, exit_code: Option<i32>) {
        let mut state = locked(&self.state);
        state.ended = true;
        let (exit_code, reason) = match state.closing.take() {
            Some(why) => (None, why),
            None => (exit_code, "the shell exited".to_string()),
        };
        for (_, tx) in state.clients.drain(..) {
            let _ = tx.try_send(Output::Exit {
                exit_code,
                reason: reason.clone(),
            });
        }
    }
}

/// Adds `chunk` to the kept output; past [`REPLAY_BYTES`] the oldest bytes go, up to
/// the next line end when one is near, so a replay starts at a line's beginning
/// rather than inside an escape sequence or a character.
fn keep(kept: &mut VecDeque<u8>, chunk: &[u8]) {
    kept.extend(chunk);
    if kept.len() <= REPLAY_BYTES {
        return;
    }
    let mut cut = kept.len() - REPLAY_BYTES;
    if let Some(nl) = kept.range(cut..).take(4096).position(|b| *b == b'\n') {
        cut += nl + 1;
    }
    kept.drain(..cut);
}

/// The writer thread: typed bytes to the shell until the terminal ends.
fn write_input(master: OwnedFd, mut typed: mpsc::Receiver<Bytes>) {
    let mut file = std::fs::File::from(master);
    while let Some(bytes) = typed.blocking_recv() {
        if file.write_all(&bytes).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_output_is_bounded_and_starts_at_a_line() {
        let mut kept = VecDeque::new();
        keep(&mut kept, b"first line\n");
        assert_eq!(kept.len(), 11);
        let line = [b'x'; 99];
        for _ in 0..(REPLAY_BYTES / 100 + 10) {
            keep(&mut kept, &line);
            keep(&mut kept, b"\n");
        }
        assert!(kept.len() <= REPLAY_BYTES, "{}", kept.len());
        assert!(kept.len() > REPLAY_BYTES - 100, "{}", kept.len());
        assert_eq!(kept.front(), Some(&b'x'));
        // One long line with no end near the cut: cut exactly.
        let mut long = VecDeque::new();
        keep(&mut long, &vec![b'y'; REPLAY_BYTES + 10_000]);
        assert_eq!(long.len(), REPLAY_BYTES);
    }
}
