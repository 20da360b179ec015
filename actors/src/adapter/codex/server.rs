//! One `codex app-server` process per owner, shared by that owner's Codex sessions.
//!
//! [`CodexHub`] (in the runtime's services) finds or starts the owner's [`AppServer`]
//! actor. The actor owns the process's lifecycle: it starts the process and performs
//! the handshake on the first [`Connect`] (later ones wait behind it), hands every
//! session the same [`Connection`], and forgets the connection when the process ends
//! so the next `Connect` starts a fresh one. Sessions route their threads on the
//! connection themselves.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::rpc::{Connection, ConnectionClosed, RpcError};
use super::wire::{
    method, ClientInfo, InitializeCapabilities, InitializeParams, InitializeResponse,
};
use crate::adapter::VendorProcess;

/// Default limit for one request to app-server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time an unreachable model may keep a turn retrying before it fails.
const UNREACHABLE_LIMIT: Duration = Duration::from_secs(30);

/// Limits the adapter applies; the environment of the server may shorten them
/// (`TANDEM_CODEX_REQUEST_TIMEOUT_MS`, `TANDEM_CODEX_UNREACHABLE_MS`), which the
/// tests do to exercise the faults quickly.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request without an answer in this long fails.
    pub request: Duration,
    /// A turn whose model stays unreachable this long (app-server keeps retrying
    /// forever) is interrupted and ends `failed`.
    pub unreachable: Duration,
}

impl Limits {
    /// Defaults, overridden from the environment.
    pub fn from_env() -> Limits {
        let ms = |key: &str| {
            std::env::var(key)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        Limits {
            request: ms("TANDEM_CODEX_REQUEST_TIMEOUT_MS").unwrap_or(REQUEST_TIMEOUT),
            unreachable: ms("TANDEM_CODEX_UNREACHABLE_MS").unwrap_or(UNREACHABLE_LIMIT),
        }
    }
}

/// The app-server actors of every owner. Cheap to clone.
#[derive(Clone)]
pub struct CodexHub {
    servers: Arc<Mutex<HashMap<String, Addr<AppServer>>>>,
    /// Limits for every connection.
    pub limits: Limits,
}

impl std::fmt::Debug for CodexHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexHub")
            .field("limits", &self.limits)
            .finish()
    }
}

impl Default for CodexHub {
    fn default() -> Self {
        CodexHub::new(Limits::from_env())
    }
}

impl CodexHub {
    /// An empty hub.
    pub fn new(limits: Limits) -> CodexHub {
        CodexHub {
            servers: Arc::new(Mutex::new(HashMap::new())),
            limits,
        }
    }

    /// The owner's app-server actor, started (on the caller's arbiter) if needed. A
    /// confined process may use only its working directory, so confined app-servers
    /// are one per owner and working directory `cwd`.
    pub fn server_for(
        &self,
        owner_id: &str,
        cwd: &std::path::Path,
        process: &VendorProcess,
    ) -> Addr<AppServer> {
        let workdir = process.confine.as_ref().map(|_| cwd.to_path_buf());
        let key = match &workdir {
            Some(dir) => format!("{owner_id}\0{}", dir.display()),
            None => owner_id.to_string(),
        };
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(addr) = servers.get(&key).filter(|a| a.connected()) {
            return addr.clone();
        }
        let addr =
            AppServer::new(owner_id.to_string(), workdir, process.clone(), self.limits).start();
        servers.insert(key, addr.clone());
        addr
    }
}

/// The adapter actor for one owner's app-server process.
pub struct AppServer {
    owner_id: String,
    /// The working directory a confined process is started in (and allowed).
    workdir: Option<std::path::PathBuf>,
    process: VendorProcess,
    limits: Limits,
    /// The live process, once started and initialized.
    conn: Option<Connection>,
    /// Processes started so far (a connection's generation).
    started: u64,
    /// Sessions with a turn, a pending approval or background work on the process.
    busy: HashSet<String>,
    /// Closes the process once nobody has been busy for `process.idle_close`.
    idle_timer: Option<SpawnHandle>,
}

impl AppServer {
    fn new(
        owner_id: String,
        workdir: Option<std::path::PathBuf>,
        process: VendorProcess,
        limits: Limits,
    ) -> AppServer {
        AppServer {
            owner_id,
            workdir,
            process,
            limits,
            conn: None,
            started: 0,
            busy: HashSet::new(),
            idle_timer: None,
        }
    }

    /// Arms or disarms the idle close after the busy set changed.
    fn check_idle(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.idle_timer.take() {
            ctx.cancel_future(timer);
        }
        let Some(idle) = self.process.idle_close else {
            return;
        };
        if !self.busy.is_empty() || self.conn.is_none() {
            return;
        }
        self.idle_timer = Some(ctx.run_later(idle, |act, _| {
            act.idle_timer = None;
            if act.busy.is_empty() {
                if let Some(conn) = act.conn.take() {
                    tracing::info!(owner = %act.owner_id, generation = conn.generation(), "closing the idle codex app-server");
                    conn.close();
                }
            }
        }));
    }
}

/// A session says whether it needs the process (a turn, an approval or background
/// work); an owner's process with nobody busy is closed after `idle_secs`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Busy {
    /// The session.
    pub session_id: String,
    /// Whether it needs the process now.
    pub busy: bool,
}

impl Handler<Busy> for AppServer {
    type Result = ();

    fn handle(&mut self, msg: Busy, ctx: &mut Context<Self>) {
        if msg.busy {
            self.busy.insert(msg.session_id);
        } else {
            self.busy.remove(&msg.session_id);
        }
        self.check_idle(ctx);
    }
}

impl Actor for AppServer {
    type Context = Context<Self>;
}

/// Asks for a live, initialized connection (starting the process if none runs).
#[derive(Debug, Message)]
#[rtype(result = "Result<Connection, RpcError>")]
pub struct Connect;

impl Handler<Connect> for AppServer {
    type Result = AtomicResponse<Self, Result<Connection, RpcError>>;

    fn handle(&mut self, _: Connect, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(conn) = self.conn.as_ref().filter(|c| !c.is_closed()) {
            return AtomicResponse::new(Box::pin(fut::ready(Ok(conn.clone()))));
        }
        self.conn = None;
        self.started += 1;
        let generation = self.started;
        let mut cmd = match &self.workdir {
            Some(dir) => self.process.command_in(dir),
            None => self.process.command(),
        };
        cmd.arg("app-server");
        let spawned = Connection::spawn(cmd, generation, Some(ctx.address().recipient()));
        let conn = match spawned {
            Ok(conn) => conn,
            Err(e) => return AtomicResponse::new(Box::pin(fut::ready(Err(e)))),
        };
        tracing::info!(owner = %self.owner_id, generation, pid = ?conn.pid(), "codex app-server started");
        let timeout = self.limits.request;
        let handshake = async move {
            let params = InitializeParams {
                client_info: ClientInfo {
                    name: "tandem".into(),
                    title: "tandem".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                },
                capabilities: InitializeCapabilities {
                    experimental_api: true,
                    opt_out_notification_methods: method::OPTED_OUT
                        .iter()
                        .map(|m| (*m).to_string())
                        .collect(),
                },
            };
            let reply: InitializeResponse =
                conn.request(method::INITIALIZE, &params, timeout).await?;
            tracing::debug!(user_agent = %reply.user_agent, "codex app-server initialized");
            conn.notify(method::INITIALIZED, &super::shown::Empty {});
            Ok(conn)
        };
        AtomicResponse::new(Box::pin(handshake.into_actor(self).map(
            |res: Result<Connection, RpcError>, act, ctx| {
                if let Ok(conn) = &res {
                    act.conn = Some(conn.clone());
                    act.check_idle(ctx);
                }
                res
            },
        )))
    }
}

impl Handler<ConnectionClosed> for AppServer {
    type Result = ();

    fn handle(&mut self, msg: ConnectionClosed, _: &mut Context<Self>) {
        if self
            .conn
            .as_ref()
            .is_some_and(|c| c.generation() == msg.generation)
        {
            self.conn = None;
        }
    }
}
