//! One `codex app-server` process per owner, shared by that owner's Codex sessions.
//!
//! [`CodexHub`] (in the runtime's services) finds or starts the owner's [`AppServer`]
//! actor. The actor owns the process's lifecycle: it starts the process and performs
//! the handshake on the first [`Connect`] (later ones wait behind it), hands every
//! session the same [`Connection`], and forgets the connection when the process ends
//! so the next `Connect` starts a fresh one. Sessions route their threads on the
//! connection themselves.
//!
//! The process takes one seat of the fleet (`--max-live-processes`) before it starts,
//! waiting for one in line like any other agent process. It is busy while any of its
//! sessions is; idle, it may be asked to close to make room ([`Evict`]), and its
//! sessions' threads are resumed in the next process, with a `resumed` note.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::rpc::{Connection, ConnectionClosed, RpcError};
use super::wire::{
    method, ClientInfo, InitializeCapabilities, InitializeParams, InitializeResponse,
};
use crate::adapter::fleet::{Admission, Evict, Fleet, Seat};
use crate::adapter::VendorId;
use crate::adapter::VendorProcess;
use crate::ids::{SessionId, UserId};

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
        seat: (&Fleet, &VendorId),
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
        let (fleet, vendor) = seat;
        let addr = AppServer {
            owner_id: owner_id.into(),
            workdir,
            process: process.clone(),
            limits: self.limits,
            conn: None,
            started: 0,
            busy: HashSet::new(),
            idle_timer: None,
            fleet: fleet.clone(),
            vendor: vendor.clone(),
            seat: None,
        }
        .start();
        servers.insert(key, addr.clone());
        addr
    }
}

/// The adapter actor for one owner's app-server process.
pub struct AppServer {
    owner_id: UserId,
    /// The working directory a confined process is started in (and allowed).
    workdir: Option<std::path::PathBuf>,
    process: VendorProcess,
    limits: Limits,
    /// The live process, once started and initialized.
    conn: Option<Connection>,
    /// Processes started so far (a connection's generation).
    started: u64,
    /// Sessions with a turn, a pending approval or background work on the process.
    busy: HashSet<SessionId>,
    /// Closes the process once nobody has been busy for `process.idle_close`.
    idle_timer: Option<SpawnHandle>,
    /// The agent processes of the server (`--max-live-processes`).
    fleet: Fleet,
    /// The vendor id the seat is shown under (`codex` unless configured otherwise).
    vendor: VendorId,
    /// The process's seat and its generation; given back when that process exited.
    seat: Option<(u64, Seat)>,
}

impl AppServer {
    /// Tells the fleet whether any session needs the process.
    fn report_seat(&self) {
        if let Some((_, seat)) = &self.seat {
            self.fleet.set_busy(seat.id(), !self.busy.is_empty());
        }
    }

    /// Closes the live process (the fleet counts it as leaving until it exited);
    /// `note` goes to its threads when they are resumed, if it was closed to make
    /// room.
    fn close(&mut self, note: Option<String>) {
        if let Some((_, seat)) = &self.seat {
            self.fleet.leaving(seat.id());
        }
        if let Some(conn) = self.conn.take() {
            tracing::info!(owner = %self.owner_id, generation = conn.generation(), evicted = note.is_some(), "closing the codex app-server");
            match note {
                Some(note) => conn.close_to_make_room(note),
                None => conn.close(),
            }
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
                act.close(None);
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
    pub session_id: SessionId,
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
        self.report_seat();
        self.check_idle(ctx);
    }
}

impl Handler<Evict> for AppServer {
    type Result = ();

    /// Closes the process if none of its sessions needs it; else it stays.
    fn handle(&mut self, msg: Evict, _: &mut Context<Self>) {
        if self
            .seat
            .as_ref()
            .is_none_or(|(_, seat)| seat.id() != msg.seat)
        {
            return;
        }
        if !self.busy.is_empty() {
            self.fleet.kept(msg.seat);
            return;
        }
        let note = self.fleet.resumed_note("its codex app-server");
        self.close(Some(note));
    }
}

impl Actor for AppServer {
    type Context = Context<Self>;
}

/// Asks for a live, initialized connection (starting the process if none runs).
#[derive(Debug, Message)]
#[rtype(result = "Result<Connection, RpcError>")]
pub struct Connect {
    /// The session that needs it (a new process's seat is shown under it).
    pub session_id: SessionId,
}

impl Handler<Connect> for AppServer {
    type Result = AtomicResponse<Self, Result<Connection, RpcError>>;

    fn handle(&mut self, msg: Connect, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(conn) = self.conn.as_ref().filter(|c| !c.is_closed()) {
            return AtomicResponse::new(Box::pin(fut::ready(Ok(conn.clone()))));
        }
        self.conn = None;
        // The last process's seat, if its exit has not been reported yet, goes back
        // now: this actor answers nothing else while it waits for a seat, so
        // waiting for its own would never end.
        self.seat = None;
        let admission = self
            .fleet
            .take(&msg.session_id, &self.vendor, ctx.address().recipient());
        let seat = async move {
            match admission {
                Admission::Now(seat) => Ok(seat),
                Admission::Wait(granted) => granted
                    .await
                    .map_err(|_| RpcError::Closed("no agent process place came free".into())),
            }
        };
        AtomicResponse::new(Box::pin(seat.into_actor(self).then(
            |seat, act, ctx| -> ResponseActFuture<Self, Result<Connection, RpcError>> {
                match seat {
                    Ok(seat) => act.start(seat, ctx),
                    Err(e) => Box::pin(fut::ready(Err(e))),
                }
            },
        )))
    }
}

impl AppServer {
    /// Starts a process in `seat` and performs the handshake.
    fn start(
        &mut self,
        seat: Seat,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, Result<Connection, RpcError>> {
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
            // The seat goes back as it drops.
            Err(e) => return Box::pin(fut::ready(Err(e))),
        };
        tracing::info!(owner = %self.owner_id, generation, pid = ?conn.pid(), "codex app-server started");
        if let Some(pid) = conn.pid() {
            seat.started(pid);
        }
        self.seat = Some((generation, seat));
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
        Box::pin(
            handshake
                .into_actor(self)
                .map(|res: Result<Connection, RpcError>, act, ctx| {
                    if let Ok(conn) = &res {
                        act.conn = Some(conn.clone());
                        act.report_seat();
                        act.check_idle(ctx);
                    }
                    res
                }),
        )
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
        // Its process has exited: its seat goes back.
        if self
            .seat
            .as_ref()
            .is_some_and(|(generation, _)| *generation == msg.generation)
        {
            self.seat = None;
        }
    }
}
