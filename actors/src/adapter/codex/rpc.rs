//! JSON-RPC over a child process's stdio: one JSON object per line each way.
//!
//! A [`Connection`] owns one `codex app-server` process. Requests get increasing
//! numeric ids and wait for the response with that id (with a timeout); responses are
//! matched on the reader task itself, so a turn's request never waits for an actor.
//! Notifications and app-server's own requests are routed by their `threadId` to the
//! session that registered the thread. When stdout closes, every waiting request
//! fails, every routed session is told (with the tail of stderr), and the process is
//! reaped. The process is killed when the last handle to the connection is dropped.

use std::collections::{HashMap, HashSet, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use super::wire::{RawMessage, RequestId, ThreadRef};

/// Lines of stderr kept to explain a crash.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept, in characters.
const STDERR_LINE_CHARS: usize = 500;

/// Why a request got no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    /// The process could not be started.
    #[error("cannot start codex app-server: {0}")]
    Spawn(String),
    /// The process ended (or was never reachable); the stderr tail says why.
    #[error("codex app-server exited: {0}")]
    Closed(String),
    /// No answer in time.
    #[error("codex app-server did not answer {method} within {ms} ms")]
    Timeout {
        /// The request.
        method: String,
        /// The limit.
        ms: u128,
    },
    /// app-server answered with an error.
    #[error("codex app-server refused {method}: {message} ({code})")]
    Remote {
        /// The request.
        method: String,
        /// JSON-RPC code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The answer did not have the expected shape.
    #[error("unexpected answer to {method}: {detail}")]
    Shape {
        /// The request.
        method: String,
        /// The parse error.
        detail: String,
    },
    /// The request's params could not be written as JSON; nothing was sent.
    #[error("cannot write {method} for codex app-server: {detail}")]
    Encode {
        /// The request.
        method: String,
        /// What serializing said (as text: `RpcError` is `Clone`, `serde_json::Error` is not).
        detail: String,
    },
}

/// What a routed session receives from its thread.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum ThreadInbound {
    /// A notification about the thread.
    Notification {
        /// Connection generation it came from.
        generation: u64,
        /// Method name.
        method: String,
        /// Params.
        params: Value,
    },
    /// app-server asks something (an approval) and waits for [`Connection::respond`].
    Request {
        /// Connection generation it came from.
        generation: u64,
        /// JSON-RPC id to answer.
        id: RequestId,
        /// Method name.
        method: String,
        /// Params.
        params: Value,
    },
    /// The process ended; `detail` holds its exit status and stderr tail.
    Exited {
        /// The generation that ended.
        generation: u64,
        /// Exit status and the last lines of stderr.
        detail: String,
        /// Set when tandem closed the process to make room for another session's
        /// (`--max-live-processes`): what to tell the session when its thread is
        /// resumed in the next process.
        evicted: Option<String>,
    },
}

/// Sent to whoever owns the connection when its process ended.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ConnectionClosed {
    /// The generation that ended.
    pub generation: u64,
}

/// The account-wide notification whose snapshot [`Connection::exhausted_until`] reads.
const RATE_LIMITS_UPDATED: &str = "account/rateLimits/updated";

type Waiter = oneshot::Sender<Result<Value, RpcError>>;

/// State shared by the handle and the I/O tasks.
struct Inner {
    generation: u64,
    next_id: AtomicU64,
    pending: Mutex<HashMap<i64, Waiter>>,
    routes: Mutex<HashMap<String, Recipient<ThreadInbound>>>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    stderr: Mutex<VecDeque<String>>,
    closed: AtomicBool,
    /// Notification methods already logged as unrouted (logged once each).
    unrouted: Mutex<HashSet<String>>,
    /// The account's latest rate-limit snapshot (`account/rateLimits/updated`) and
    /// when it came, epoch ms: a usage-limit error carries no reset time, the
    /// snapshot sent just before it does.
    rate_limits: Mutex<Option<(u64, Value)>>,
    /// Set by [`Connection::close_to_make_room`]: the note its threads pass on.
    evicted: Mutex<Option<String>>,
}

/// Kills the process when the last [`Connection`] handle goes.
struct KillGuard(Mutex<Option<oneshot::Sender<()>>>);

impl KillGuard {
    fn fire(&self) {
        if let Ok(mut slot) = self.0.lock() {
            if let Some(tx) = slot.take() {
                let _ = tx.send(());
            }
        }
    }
}

impl Drop for KillGuard {
    fn drop(&mut self) {
        self.fire();
    }
}

/// A handle on one app-server process. Clones share it.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
    _guard: Arc<KillGuard>,
    pid: Option<u32>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("generation", &self.inner.generation)
            .field("pid", &self.pid)
            .finish()
    }
}

impl Connection {
    /// Starts `cmd` (stdio piped) and its I/O tasks. `on_close` hears when it ends.
    /// Must run inside the actix runtime.
    pub fn spawn(
        mut cmd: Command,
        generation: u64,
        on_close: Option<Recipient<ConnectionClosed>>,
    ) -> Result<Connection, RpcError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| RpcError::Spawn(e.to_string()))?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(RpcError::Spawn("stdio not piped".into()));
        };
        let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let inner = Arc::new(Inner::new(generation, out_tx));
        let (kill_tx, kill_rx) = oneshot::channel::<()>();
        let (exit_tx, exit_rx) = oneshot::channel::<String>();

        actix_rt::spawn(write_lines(stdin, out_rx, generation));
        actix_rt::spawn(inner.clone().keep_stderr_tail(stderr));
        // Reaper: waits for exit, or kills on request.
        actix_rt::spawn(reap(child, kill_rx, exit_tx));
        actix_rt::spawn(inner.clone().read(stdout, exit_rx, on_close));

        Ok(Connection {
            inner,
            _guard: Arc::new(KillGuard(Mutex::new(Some(kill_tx)))),
            pid,
        })
    }

    /// Which process this is: increases with every process an owner starts.
    pub fn generation(&self) -> u64 {
        self.inner.generation
    }

    /// The OS process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// True once stdout closed.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Sends a request and waits up to `timeout` for its result.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<R, RpcError> {
        let value = self.request_value(method, params, timeout).await?;
        serde_json::from_value(value).map_err(|e| RpcError::Shape {
            method: method.into(),
            detail: e.to_string(),
        })
    }

    /// [`Connection::request`] returning the raw result.
    pub async fn request_value<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        if self.is_closed() {
            return Err(RpcError::Closed(self.inner.describe_exit("exited")));
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst) as i64;
        // Written before it waits for an answer, so a request that cannot be written
        // leaves nothing pending.
        let line = frame(&RequestFrame { id, method, params }).map_err(|e| RpcError::Encode {
            method: method.into(),
            detail: e.to_string(),
        })?;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.inner.pending.lock() {
            pending.insert(id, tx);
        }
        if self.inner.out.send(line).is_err() {
            self.forget(id);
            return Err(RpcError::Closed(self.inner.describe_exit("stdin closed")));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(RpcError::Remote { code, message, .. }))) => Err(RpcError::Remote {
                method: method.into(),
                code,
                message,
            }),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(RpcError::Closed(self.inner.describe_exit("exited"))),
            Err(_) => {
                self.forget(id);
                Err(RpcError::Timeout {
                    method: method.into(),
                    ms: timeout.as_millis(),
                })
            }
        }
    }

    fn forget(&self, id: i64) {
        if let Ok(mut pending) = self.inner.pending.lock() {
            pending.remove(&id);
        }
    }

    /// Sends a notification; one whose params cannot be written is not sent (the
    /// log says why): app-server answers none, so nothing waits for it.
    pub fn notify<P: Serialize>(&self, method: &str, params: &P) {
        match frame(&NotificationFrame { method, params }) {
            Ok(line) => {
                let _ = self.inner.out.send(line);
            }
            Err(e) => {
                tracing::error!(target: "codex", %method, error = %e, "cannot serialize a notification; not sent");
            }
        }
    }

    /// Answers a request app-server sent us. A result that cannot be written is
    /// refused instead (JSON-RPC internal error), so app-server does not wait for it.
    pub fn respond<R: Serialize>(&self, id: &RequestId, result: &R) {
        match frame(&ResultFrame { id, result }) {
            Ok(line) => {
                let _ = self.inner.out.send(line);
            }
            Err(e) => {
                tracing::error!(target: "codex", ?id, error = %e, "cannot serialize an answer; refusing the request");
                self.respond_error(id, -32603, "tandem could not write its answer");
            }
        }
    }

    /// Refuses a request app-server sent us.
    pub fn respond_error(&self, id: &RequestId, code: i64, message: &str) {
        if let Some(line) = error_frame(id, code, message) {
            let _ = self.inner.out.send(line);
        }
    }

    /// When the account's exhausted rate-limit window resets, epoch ms, from the
    /// snapshot app-server sent within the last minute: the latest reset of the
    /// windows used up (100 %).
    pub fn exhausted_until(&self) -> Option<u64> {
        let kept = self.inner.rate_limits.lock().ok()?.clone()?;
        let (at, limits) = kept;
        if crate::clock::now_ms().saturating_sub(at) > 60_000 {
            return None;
        }
        ["primary", "secondary"]
            .iter()
            .filter_map(|w| limits.get(*w))
            .filter(|w| w["usedPercent"].as_f64().is_some_and(|p| p >= 100.0))
            .filter_map(|w| w["resetsAt"].as_u64())
            .max()
            .map(|secs| secs.saturating_mul(1000))
    }

    /// Routes notifications and requests about `thread_id` to `to`.
    pub fn route(&self, thread_id: &str, to: Recipient<ThreadInbound>) {
        if let Ok(mut routes) = self.inner.routes.lock() {
            routes.insert(thread_id.to_string(), to);
        }
    }

    /// Stops routing `thread_id`.
    pub fn unroute(&self, thread_id: &str) {
        if let Ok(mut routes) = self.inner.routes.lock() {
            routes.remove(thread_id);
        }
    }

    /// Stops routing `thread_id` if it is routed to `to`: a thread's actor that stops
    /// after another session loaded the same thread (an archived session's, once an
    /// import continues its thread) leaves the newer route alone.
    pub fn unroute_from(&self, thread_id: &str, to: &Recipient<ThreadInbound>) {
        if let Ok(mut routes) = self.inner.routes.lock() {
            if routes.get(thread_id) == Some(to) {
                routes.remove(thread_id);
            }
        }
    }

    /// Kills the process now (other handles see it end like a crash).
    pub fn close(&self) {
        self._guard.fire();
    }

    /// Closes the process to make room for another session's; its threads are told
    /// `note` when they are resumed in the next one.
    pub fn close_to_make_room(&self, note: String) {
        if let Ok(mut slot) = self.inner.evicted.lock() {
            *slot = Some(note);
        }
        self.close();
    }

    /// The last lines app-server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.inner.stderr_tail()
    }
}

impl Inner {
    /// The state of process `generation`, whose lines go to `out`.
    fn new(generation: u64, out: mpsc::UnboundedSender<Vec<u8>>) -> Inner {
        Inner {
            generation,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            routes: Mutex::new(HashMap::new()),
            out,
            stderr: Mutex::new(VecDeque::new()),
            closed: AtomicBool::new(false),
            unrouted: Mutex::new(HashSet::new()),
            rate_limits: Mutex::new(None),
            evicted: Mutex::new(None),
        }
    }

    /// Logs stderr, keeping its last [`STDERR_TAIL_LINES`] lines (each cut to
    /// [`STDERR_LINE_CHARS`]) to explain a crash.
    async fn keep_stderr_tail(self: Arc<Self>, stderr: ChildStderr) {
        let generation = self.generation;
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "codex", generation, "stderr: {line}");
            if let Ok(mut tail) = self.stderr.lock() {
                if tail.len() == STDERR_TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line.chars().take(STDERR_LINE_CHARS).collect());
            }
        }
    }

    /// Dispatches each stdout line until stdout closes, then waits briefly for the
    /// exit status (`exit`) and tells every waiting request, routed session and
    /// `on_close` that the process ended.
    async fn read(
        self: Arc<Self>,
        stdout: ChildStdout,
        exit: oneshot::Receiver<String>,
        on_close: Option<Recipient<ConnectionClosed>>,
    ) {
        let generation = self.generation;
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            self.dispatch(&line);
        }
        self.closed.store(true, Ordering::SeqCst);
        // The process normally exits right after closing stdout.
        let status = tokio::time::timeout(Duration::from_secs(2), exit)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_else(|| "still running after closing stdout".into());
        let detail = self.describe_exit(&status);
        tracing::info!(target: "codex", generation, "app-server ended: {detail}");
        let waiters: Vec<Waiter> = match self.pending.lock() {
            Ok(mut p) => p.drain().map(|(_, w)| w).collect(),
            Err(_) => Vec::new(),
        };
        for w in waiters {
            let _ = w.send(Err(RpcError::Closed(detail.clone())));
        }
        let routes: Vec<Recipient<ThreadInbound>> = match self.routes.lock() {
            Ok(mut r) => r.drain().map(|(_, to)| to).collect(),
            Err(_) => Vec::new(),
        };
        let evicted = self
            .evicted
            .lock()
            .map(|note| note.clone())
            .unwrap_or_default();
        for to in routes {
            to.do_send(ThreadInbound::Exited {
                generation,
                detail: detail.clone(),
                evicted: evicted.clone(),
            });
        }
        if let Some(to) = on_close {
            to.do_send(ConnectionClosed { generation });
        }
    }

    fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    fn describe_exit(&self, status: &str) -> String {
        let tail = self.stderr_tail();
        if tail.is_empty() {
            status.to_string()
        } else {
            format!("{status}; stderr:\n{tail}")
        }
    }

    /// Handles one line from stdout.
    fn dispatch(&self, line: &str) {
        tracing::trace!(target: "codex", generation = self.generation, "< {line}");
        let raw: RawMessage = match serde_json::from_str(line) {
            Ok(raw) => raw,
            Err(e) => {
                tracing::debug!(target: "codex", "unparsable line from app-server: {e}");
                return;
            }
        };
        match (raw.id, raw.method) {
            (Some(id), None) => {
                let RequestId::Number(n) = id else { return };
                let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&n));
                if let Some(waiter) = waiter {
                    let outcome = match raw.error {
                        Some(e) => Err(RpcError::Remote {
                            method: String::new(),
                            code: e.code,
                            message: e.message,
                        }),
                        None => Ok(raw.result.unwrap_or(Value::Null)),
                    };
                    let _ = waiter.send(outcome);
                }
            }
            (None, Some(method)) if method == RATE_LIMITS_UPDATED => {
                if let (Ok(mut kept), Some(limits)) = (
                    self.rate_limits.lock(),
                    raw.params
                        .and_then(|mut p| p.get_mut("rateLimits").map(Value::take)),
                ) {
                    *kept = Some((crate::clock::now_ms(), limits));
                }
            }
            (id, Some(method)) => {
                let params = raw.params.unwrap_or(Value::Null);
                // Read in place: the params go on to the session whole.
                let thread = ThreadRef::deserialize(&params)
                    .ok()
                    .and_then(|t| t.thread_id);
                let to = thread
                    .as_ref()
                    .and_then(|t| self.routes.lock().ok().and_then(|r| r.get(t).cloned()));
                match (to, id) {
                    (Some(to), None) => to.do_send(ThreadInbound::Notification {
                        generation: self.generation,
                        method,
                        params,
                    }),
                    (Some(to), Some(id)) => to.do_send(ThreadInbound::Request {
                        generation: self.generation,
                        id,
                        method,
                        params,
                    }),
                    (None, Some(id)) => {
                        // Nobody can answer it: refuse so app-server does not wait.
                        tracing::debug!(target: "codex", %method, "unroutable request refused");
                        if let Some(line) = error_frame(&id, -32601, "no session for this request")
                        {
                            let _ = self.out.send(line);
                        }
                    }
                    (None, None) => {
                        let first = self
                            .unrouted
                            .lock()
                            .map(|mut seen| seen.insert(method.clone()))
                            .unwrap_or(false);
                        if first {
                            tracing::debug!(target: "codex", %method, "notification not routed to a session (logged once)");
                        }
                    }
                }
            }
            (None, None) => {}
        }
    }
}

/// Serializes a message as one line.
/// A request we send (app-server's JSON-RPC omits the `jsonrpc` member).
#[derive(Serialize)]
struct RequestFrame<'a, P> {
    /// Correlates the answer.
    id: i64,
    /// The app-server method.
    method: &'a str,
    /// Its typed params.
    params: &'a P,
}

/// A notification we send: a request nobody answers.
#[derive(Serialize)]
struct NotificationFrame<'a, P> {
    /// The app-server method.
    method: &'a str,
    /// Its typed params.
    params: &'a P,
}

/// Our answer to a request app-server sent.
#[derive(Serialize)]
struct ResultFrame<'a, R> {
    /// The id app-server gave its request.
    id: &'a RequestId,
    /// What we answer.
    result: &'a R,
}

/// Our refusal of a request app-server sent.
#[derive(Serialize)]
struct ErrorFrame<'a> {
    /// The id app-server gave its request.
    id: &'a RequestId,
    /// JSON-RPC's error object.
    error: ErrorBody<'a>,
}

/// JSON-RPC's error object.
#[derive(Serialize)]
struct ErrorBody<'a> {
    /// JSON-RPC error code (-32601 method not found, -32602 invalid params).
    code: i64,
    /// Why, for app-server's log.
    message: &'a str,
}

/// One JSON-RPC line: the message as JSON, and a newline.
fn frame<T: Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    Ok(line)
}

/// The line refusing request `id`. An id, a number and a text cannot fail to be
/// written; were they to, nothing is sent (app-server's request then times out on
/// its side) and the log says why.
fn error_frame(id: &RequestId, code: i64, message: &str) -> Option<Vec<u8>> {
    frame(&ErrorFrame {
        id,
        error: ErrorBody { code, message },
    })
    .map_err(|e| {
        tracing::error!(target: "codex", ?id, error = %e, "cannot serialize a refusal; not sent");
    })
    .ok()
}

/// Writes each line sent on `lines` to app-server's stdin, one write per line, until
/// the channel or the pipe closes.
async fn write_lines(
    mut stdin: ChildStdin,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
    generation: u64,
) {
    while let Some(line) = lines.recv().await {
        if tracing::enabled!(tracing::Level::TRACE) {
            // Thread config carries the session's MCP token: never log it.
            let text = String::from_utf8_lossy(&line);
            if text.contains("Authorization") {
                tracing::trace!(target: "codex", generation, "> ({} bytes, holds a token)", line.len());
            } else {
                tracing::trace!(target: "codex", generation, "> {}", text.trim_end());
            }
        }
        if stdin.write_all(&line).await.is_err() {
            break;
        }
    }
}

/// Waits for the child to exit or for a kill request; reports the exit status.
async fn reap(mut child: Child, kill: oneshot::Receiver<()>, exit: oneshot::Sender<String>) {
    let status = tokio::select! {
        status = child.wait() => status,
        _ = kill => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    let text = match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("wait failed: {e}"),
    };
    let _ = exit.send(text);
}
