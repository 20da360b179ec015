//! The adapter actor of one Codex session: its Codex thread on the owner's shared
//! app-server.
//!
//! It starts the thread on the first turn (or resumes it, by the `vendorSessionId`,
//! whenever the thread is not loaded in the live process: after a server restart or a
//! crash), receives the thread's notifications and requests from the connection, and
//! dispatches them to the modules beside it: [`super::turn`] (a turn's life),
//! [`super::plan`] (loading the thread, settings per turn), [`super::approvals`] and
//! [`super::terminals`] (background terminals).

use std::collections::{HashSet, VecDeque};

use actix::prelude::*;
use serde_json::Value;

use crate::adapter::mcp_servers::McpServerSpec;
use crate::ids::SessionId;

use super::approvals::Approval;
use super::plan::Applied;
use super::rpc::{Connection, ThreadInbound};
use super::server::{AppServer, Busy, Limits};
use super::shown;
use super::terminals::Terminals;
use super::turn::CodexTurn;
use crate::adapter::core::{Approvals, Emitter, TurnSlot};
use crate::adapter::messages::{AdapterCommand, TurnSettings};
use crate::adapter::{AdapterContext, McpAccess};

/// Adapter actor for one Codex session.
pub struct CodexThread {
    /// Our session id; tags log lines.
    pub(super) session_id: SessionId,
    /// The session's working directory (the thread's `cwd`).
    pub(super) cwd: String,
    /// Everything for the session goes through it.
    pub(super) emitter: Emitter,
    /// The agent tools endpoint, given to the thread as its `tandem` MCP server.
    mcp: Option<McpAccess>,
    /// Variables the session adds to the environment of the commands Codex runs
    /// (`TANDEM_PORT`); the process is shared, so they go per thread.
    env: std::collections::BTreeMap<String, String>,
    /// The owner's app-server actor (connects, and is told when we need it).
    pub(super) server: Addr<AppServer>,
    /// Request and unreachable-model timeouts.
    pub(super) limits: Limits,
    /// Settings as the session last gave them.
    pub(super) settings: TurnSettings,
    /// The app-server runs confined (tandem's Landlock ruleset), where Codex's own
    /// sandbox cannot start: see [`super::plan::policy`].
    pub(super) confined: bool,
    /// Codex's thread id (our `vendorSessionId`), once started.
    pub(super) thread_id: Option<String>,
    /// The connection the thread is loaded on.
    pub(super) conn: Option<Connection>,
    /// The instructions the loaded thread was given.
    pub(super) instructions: Option<String>,
    /// The settings the loaded thread runs with, when known.
    pub(super) applied: Option<Applied>,
    /// The turn in flight.
    pub(super) turn: TurnSlot<CodexTurn>,
    /// Codex turn ids that ended recently (their late notifications are dropped).
    pub(super) finished: VecDeque<String>,
    /// Approvals app-server waits for.
    pub(super) approvals: Approvals<Approval>,
    /// Background terminals.
    pub(super) terminals: Terminals,
    /// Notification methods this adapter does not read, logged once each.
    pub(super) ignored: HashSet<String>,
    /// What the app-server actor was last told about this session needing it.
    busy: bool,
    /// The process the thread was loaded in was closed to make room: said when the
    /// next one has resumed the thread.
    pub(super) resumed_note: Option<String>,
}

impl CodexThread {
    /// The adapter for the session in `ctx`, on the owner's app-server `server`.
    pub fn new(
        ctx: AdapterContext,
        server: Addr<AppServer>,
        limits: Limits,
        confined: bool,
    ) -> CodexThread {
        let emitter = ctx.emitter();
        CodexThread {
            session_id: ctx.session_id,
            cwd: ctx.cwd.to_string_lossy().into_owned(),
            turn: TurnSlot::new(&emitter),
            emitter,
            mcp: ctx.mcp,
            env: ctx.env,
            server,
            limits,
            settings: ctx.settings,
            confined,
            thread_id: ctx.vendor_session_id,
            conn: None,
            instructions: None,
            applied: None,
            finished: VecDeque::new(),
            approvals: Approvals::new(ctx.remembered),
            terminals: Terminals::default(),
            ignored: HashSet::new(),
            busy: false,
            resumed_note: None,
        }
    }

    /// Tells the app-server actor whether this session needs the process (a turn,
    /// an approval or background work), when that changed.
    pub(super) fn report_busy(&mut self) {
        let busy =
            !self.turn.is_idle() || !self.approvals.is_empty() || !self.terminals.tasks.is_empty();
        if busy != self.busy {
            self.busy = busy;
            self.server.do_send(Busy {
                session_id: self.session_id.clone(),
                busy,
            });
        }
    }

    /// The connection the thread is loaded on, if its process still runs.
    pub(super) fn live_conn(&self) -> Option<Connection> {
        self.conn.clone().filter(|c| !c.is_closed())
    }

    /// Per-thread config: our `tandem` MCP server with this session's token. Given per
    /// thread (not on the command line) because one process serves many sessions; the
    /// tools run without a Codex approval prompt since they are the server's own.
    /// The session's variables go in as dotted keys, so they add to the user's own
    /// `shell_environment_policy` instead of replacing it.
    pub(super) fn thread_config(&self) -> Option<Value> {
        let mut config = self.mcp.as_ref().map(|m| {
            let mut config = shown::value(shown::ThreadConfig::tandem(&m.url, &m.token));
            // The user's MCP servers beside ours, in Codex's own config keys.
            if let Some(Value::Object(servers)) = config.get_mut("mcp_servers") {
                for s in m.servers.iter() {
                    let entry = match &s.spec {
                        McpServerSpec::Stdio { command, args, env } => {
                            serde_json::json!({"command": command, "args": args, "env": env})
                        }
                        McpServerSpec::Http { url, headers } => {
                            serde_json::json!({"url": url, "http_headers": headers})
                        }
                    };
                    servers.insert(s.name.clone(), entry);
                }
            }
            config
        });
        if !self.env.is_empty() {
            let map = config.get_or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(map) = map {
                for (k, v) in &self.env {
                    map.insert(
                        format!("shell_environment_policy.set.{k}"),
                        Value::String(v.clone()),
                    );
                }
            }
        }
        config
    }
}

impl Actor for CodexThread {
    type Context = Context<Self>;

    fn stopped(&mut self, ctx: &mut Context<Self>) {
        if let (Some(conn), Some(thread_id)) = (&self.conn, &self.thread_id) {
            conn.unroute_from(thread_id, &ctx.address().recipient());
        }
    }
}

impl Handler<ThreadInbound> for CodexThread {
    type Result = ();

    fn handle(&mut self, msg: ThreadInbound, ctx: &mut Context<Self>) {
        match msg {
            ThreadInbound::Notification {
                generation,
                method,
                params,
            } => {
                if self
                    .conn
                    .as_ref()
                    .is_some_and(|c| c.generation() != generation)
                {
                    return;
                }
                self.on_notification(&method, params, ctx);
            }
            ThreadInbound::Request {
                generation,
                id,
                method,
                params,
            } => self.on_request(generation, id, &method, params),
            ThreadInbound::Exited {
                generation,
                detail,
                evicted,
            } => self.on_exit(generation, detail, evicted, ctx),
        }
    }
}

impl Handler<AdapterCommand> for CodexThread {
    type Result = ();

    fn handle(&mut self, msg: AdapterCommand, ctx: &mut Context<Self>) {
        match msg {
            AdapterCommand::StartTurn {
                turn_id,
                text,
                images,
                settings,
                ..
            } => {
                self.settings = settings;
                if let Some(old) = self.turn.begin(turn_id.clone(), CodexTurn::default()) {
                    self.superseded(old.data, ctx);
                }
                self.report_busy();
                self.begin(turn_id, text, images, ctx);
            }
            AdapterCommand::Interrupt { turn_id } => self.interrupt(&turn_id, ctx),
            AdapterCommand::StopTask { task_id } => self.stop_task(task_id, ctx),
            AdapterCommand::PermissionResponse {
                request_id,
                allow,
                remember,
                permission_mode,
                ..
            } => {
                if let Some(mode) = permission_mode {
                    self.settings.permission_mode = mode;
                }
                self.on_answer(&request_id, allow, remember);
            }
            AdapterCommand::Rewind {
                drop_turns, done, ..
            } => self.rewind(drop_turns, done, ctx),
            AdapterCommand::Fork { drop_turns, done } => self.fork(drop_turns, done, ctx),
            AdapterCommand::Configure { settings } => {
                // Codex takes model, effort and policies per turn.
                self.settings = settings;
            }
        }
    }
}
