//! How [`AcpAgent`] starts its agent: the process, `initialize` within the configured
//! bound, and opening the agent's session (`session/new`, or `session/resume` /
//! `session/load` once its id is known), with the enums that say how far it got.

use super::*;
use crate::adapter::acp::models::{self, OfferedEfforts, OfferedModels};
use crate::adapter::mcp_servers::McpServerSpec;
use crate::ids::TurnId;

/// How many pages of `session/list` are read looking for the session to reopen.
const MAX_LIST_PAGES: u32 = 20;

/// How the agent's session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Open {
    /// `session/new`: a new conversation.
    New,
    /// `session/load`: the agent replays the conversation (the replay is not shown).
    Load,
    /// `session/resume`: the agent reopens it without replaying.
    Resume,
    /// `session/fork`: a new session with a copy of the conversation (a fork's).
    Fork,
}

impl Open {
    pub(super) fn method(self) -> &'static str {
        match self {
            Open::New => "session/new",
            Open::Load => "session/load",
            Open::Resume => "session/resume",
            Open::Fork => "session/fork",
        }
    }
}

/// Where a live process is in its start.
#[derive(Debug)]
pub(super) enum Stage {
    /// `initialize` sent, not answered.
    Initializing,
    /// The session is being opened.
    Opening {
        /// How.
        how: Open,
        /// What `initialize` said the agent can do.
        caps: AgentCapabilities,
    },
    /// The session is open: turns can be prompted.
    Ready {
        /// The agent's session id.
        session: String,
        /// The modes it offers (empty: it has none).
        modes: Vec<Mode>,
        /// The mode in force, as far as tandem knows.
        mode: String,
        /// The models the agent offers for this session (`None`: no choice); boxed,
        /// being rarely read and larger than the rest of the stage.
        models: Option<Box<OfferedModels>>,
        /// The model in force, as far as tandem knows.
        model: Option<String>,
        /// A model the session asked for that the agent does not offer, once said so
        /// (said once per process, not per turn).
        unoffered: Option<String>,
        /// The effort levels the agent offers for this session and the one in force
        /// (`None`: no choice); boxed for the same reason as `models`.
        efforts: Option<Box<EffortChoice>>,
        /// The instruction text last sent (the Driver's pair instruction), so it is
        /// sent again only when it changes.
        instructions: Option<String>,
    },
}

/// A session's effort levels as its agent offers them.
#[derive(Debug)]
pub(super) struct EffortChoice {
    /// The `thought_level` option and its levels.
    pub(super) offered: OfferedEfforts,
    /// The level in force, as far as tandem knows.
    pub(super) current: Option<String>,
    /// An effort the session asked for that the agent does not offer as such, once
    /// said so (once per process, not per turn).
    pub(super) unoffered: Option<String>,
}

impl EffortChoice {
    /// What the agent offers, the level it named in force.
    pub(super) fn boxed(offered: OfferedEfforts) -> Box<EffortChoice> {
        Box::new(EffortChoice {
            current: offered.current.clone(),
            offered,
            unoffered: None,
        })
    }
}

/// The agent process, if there is one.
#[derive(Debug)]
pub(super) enum Link {
    /// No process; the next turn starts one.
    Down,
    /// A process, in one stage of its start.
    Up {
        /// The process.
        process: LiveProcess,
        /// Its stage.
        stage: Stage,
    },
}

/// A request of ours waiting for its answer.
#[derive(Debug)]
pub(super) enum Pending {
    /// `initialize`.
    Initialize,
    /// `session/list`, page `page` (from 1), before reopening with `Open`.
    List(Open, u32),
    /// `session/new`, `session/load` or `session/resume`.
    Open(Open),
    /// `session/set_mode` to this mode.
    SetMode(String),
    /// `session/set_model` or `session/set_config_option` to this model.
    SetModel(String),
    /// `session/set_config_option` of the `thought_level` option to this level.
    SetEffort(String),
    /// `session/prompt` of this turn.
    Prompt(TurnId),
}

impl AcpAgent {
    /// Tandem's `/mcp` as this session and the user's MCP servers, those over HTTP
    /// only for an agent that connects to HTTP MCP servers.
    pub(super) fn mcp_servers(&self, caps: &AgentCapabilities) -> Vec<McpServer> {
        let Some(mcp) = &self.mcp else {
            return Vec::new();
        };
        let pairs = |map: &std::collections::BTreeMap<String, String>| {
            map.iter()
                .map(|(name, value)| HttpHeader {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect::<Vec<_>>()
        };
        let mut servers = Vec::new();
        if caps.mcp_capabilities.http {
            servers.push(McpServer::Http {
                kind: "http",
                name: "tandem".into(),
                url: mcp.url.clone(),
                headers: vec![HttpHeader {
                    name: "Authorization".into(),
                    value: format!("Bearer {}", mcp.token),
                }],
            });
        }
        for s in mcp.servers.iter() {
            match &s.spec {
                McpServerSpec::Stdio { command, args, env } => servers.push(McpServer::Stdio {
                    name: s.name.clone(),
                    command: command.clone(),
                    args: args.clone(),
                    env: pairs(env),
                }),
                McpServerSpec::Http { url, headers } if caps.mcp_capabilities.http => {
                    servers.push(McpServer::Http {
                        kind: "http",
                        name: s.name.clone(),
                        url: url.clone(),
                        headers: pairs(headers),
                    })
                }
                McpServerSpec::Http { .. } => {}
            }
        }
        servers
    }

    /// Starts a process in fleet seat `seat` and sends `initialize`; bounded by the
    /// configured start time.
    pub(super) fn spawn(&mut self, seat: Seat, ctx: &mut Context<Self>) -> std::io::Result<()> {
        self.generation += 1;
        self.place.seated(&seat);
        let process = transport::spawn(
            &self.vendor.process,
            &self.cwd,
            self.generation,
            &self.hub,
            seat,
            ctx.address().downgrade(),
        )?;
        tracing::debug!(session = %self.session_id, vendor = %self.vendor.id, pid = process.pid, "acp agent started");
        self.link = Link::Up {
            process,
            stage: Stage::Initializing,
        };
        self.pending.clear();
        self.request(
            "initialize",
            InitializeParams {
                protocol_version: PROTOCOL_VERSION,
                client_capabilities: ClientCapabilities::default(),
                client_info: Implementation {
                    name: "tandem".into(),
                    title: Some("tandem".into()),
                    version: Some(env!("CARGO_PKG_VERSION").into()),
                },
            },
            Pending::Initialize,
        );
        self.arm_startup_limit(ctx, "initialize");
        Ok(())
    }

    /// Fails the start if the step begun now (the newest) has not moved on within the
    /// limit.
    pub(super) fn arm_startup_limit(&mut self, ctx: &mut Context<Self>, step: &'static str) {
        let generation = self.generation;
        // Only the newest step's limit counts: a list page, a reopen that failed and a
        // new session each get the whole limit.
        self.start_step += 1;
        let armed = self.start_step;
        let opening = !matches!(
            self.link,
            Link::Up {
                stage: Stage::Initializing,
                ..
            }
        );
        let limit = self.vendor.startup_timeout;
        ctx.run_later(limit, move |act, ctx| {
            let stuck = act.generation == generation
                && act.start_step == armed
                && match &act.link {
                    Link::Up { stage, .. } => match stage {
                        Stage::Initializing => !opening,
                        Stage::Opening { .. } => opening,
                        Stage::Ready { .. } => false,
                    },
                    Link::Down => false,
                };
            if stuck {
                let error = format!(
                    "{} did not answer `{step}` within {} s",
                    act.name(),
                    limit.as_secs_f32()
                );
                act.fail_start(error, ctx);
            }
        });
    }

    /// The start failed: the process goes, and a turn waiting for it fails with `error`.
    pub(super) fn fail_start(&mut self, error: String, ctx: &mut Context<Self>) {
        tracing::warn!(session = %self.session_id, vendor = %self.vendor.id, error = %error, "acp agent did not start");
        self.kill_live();
        self.finish_turn(TurnStatus::Failed, Some(error), None);
        self.arm_idle(ctx);
    }

    pub(super) fn on_initialized(
        &mut self,
        outcome: Result<Value, RpcError>,
        ctx: &mut Context<Self>,
    ) {
        let result = match outcome.map(serde_json::from_value::<InitializeResult>) {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => {
                let error = format!("{} answered `initialize` unreadably: {e}", self.name());
                return self.fail_start(error, ctx);
            }
            Err(e) => {
                let error = format!("{} refused `initialize`: {e}", self.name());
                return self.fail_start(error, ctx);
            }
        };
        if result.protocol_version != PROTOCOL_VERSION {
            let error = format!(
                "{} speaks ACP version {}; tandem speaks {PROTOCOL_VERSION}",
                self.name(),
                result.protocol_version
            );
            return self.fail_start(error, ctx);
        }
        let caps = result.agent_capabilities;
        let how = match &self.vendor_session_id {
            None => Open::New,
            Some(_) if self.fork_on_open && caps.session_capabilities.fork.is_some() => Open::Fork,
            Some(source) if self.fork_on_open => {
                // Reopening the source's session would write into its conversation.
                let text = format!(
                    "{} no longer offers session/fork, so this fork of its session {source} starts a new conversation.",
                    self.name()
                );
                self.note(text);
                self.vendor_session_id = None;
                self.fork_on_open = false;
                Open::New
            }
            Some(_) if caps.session_capabilities.resume.is_some() => Open::Resume,
            Some(_) if caps.load_session => Open::Load,
            Some(old) => {
                let text = format!(
                    "{} cannot reopen its session {old}; this turn starts a new conversation.",
                    self.name()
                );
                self.note(text);
                self.vendor_session_id = None;
                Open::New
            }
        };
        if matches!(how, Open::Resume | Open::Load) && caps.session_capabilities.list.is_some() {
            return self.list(how, caps, None, 1, ctx);
        }
        self.open(how, caps, ctx);
    }

    /// Asks for a page of the agent's sessions in this working directory, to learn
    /// whether it still has the one to reopen before asking it to.
    fn list(
        &mut self,
        how: Open,
        caps: AgentCapabilities,
        cursor: Option<String>,
        page: u32,
        ctx: &mut Context<Self>,
    ) {
        let cwd = self.cwd.display().to_string();
        if let Link::Up { stage, .. } = &mut self.link {
            *stage = Stage::Opening { how, caps };
        }
        self.request(
            "session/list",
            ListSessionsParams {
                cwd: &cwd,
                cursor: cursor.as_deref(),
            },
            Pending::List(how, page),
        );
        self.arm_startup_limit(ctx, "session/list");
    }

    /// What `initialize` said the agent can do, while its session is being opened.
    fn opening_caps(&self) -> Option<AgentCapabilities> {
        match &self.link {
            Link::Up {
                stage: Stage::Opening { caps, .. },
                ..
            } => Some(caps.clone()),
            _ => None,
        }
    }

    /// A page of the agent's sessions: reopen ours when it is there, a new session
    /// when the agent's whole list lacks it. An agent that fails the list, or whose list
    /// runs past [`MAX_LIST_PAGES`], is asked to reopen anyway (its answer decides).
    pub(super) fn on_listed(
        &mut self,
        how: Open,
        page: u32,
        outcome: Result<Value, RpcError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(caps) = self.opening_caps() else {
            return;
        };
        let Some(ours) = self.vendor_session_id.clone() else {
            return self.open(how, caps, ctx);
        };
        let listed = match outcome.map(serde_json::from_value::<SessionPage>) {
            Ok(Ok(listed)) => listed,
            Ok(Err(e)) => {
                tracing::debug!(session = %self.session_id, error = %e, "unreadable session/list answer");
                return self.open(how, caps, ctx);
            }
            Err(e) => {
                tracing::debug!(session = %self.session_id, error = %e, "session/list failed");
                return self.open(how, caps, ctx);
            }
        };
        if listed.sessions.iter().any(|s| s.session_id == ours) {
            return self.open(how, caps, ctx);
        }
        match listed.next_cursor {
            Some(next) if page < MAX_LIST_PAGES => self.list(how, caps, Some(next), page + 1, ctx),
            Some(_) => self.open(how, caps, ctx),
            None => {
                let text = format!(
                    "{} no longer lists its session {ours}; this turn starts a new conversation.",
                    self.name()
                );
                self.note(text);
                self.vendor_session_id = None;
                self.open(Open::New, caps, ctx);
            }
        }
    }

    /// An `info` event in the current turn (or outside turns).
    pub(super) fn note(&mut self, text: String) {
        let turn_id = self.slot.turn_id();
        self.emitter.event(turn_id, EventBody::Info { text });
    }

    pub(super) fn open(&mut self, how: Open, caps: AgentCapabilities, ctx: &mut Context<Self>) {
        let servers = self.mcp_servers(&caps);
        let cwd = self.cwd.display().to_string();
        if let Link::Up { stage, .. } = &mut self.link {
            *stage = Stage::Opening { how, caps };
        }
        let purpose = Pending::Open(how);
        match (how, self.vendor_session_id.clone()) {
            (Open::New, _) | (_, None) => self.request(
                Open::New.method(),
                NewSessionParams {
                    cwd: &cwd,
                    mcp_servers: &servers,
                },
                Pending::Open(Open::New),
            ),
            (_, Some(id)) => self.request(
                how.method(),
                OpenSessionParams {
                    session_id: &id,
                    cwd: &cwd,
                    mcp_servers: &servers,
                },
                purpose,
            ),
        };
        self.arm_startup_limit(ctx, how.method());
    }

    pub(super) fn on_opened(
        &mut self,
        how: Open,
        outcome: Result<Value, RpcError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(caps) = self.opening_caps() else {
            return;
        };
        let opened = match outcome.map(serde_json::from_value::<SessionOpened>) {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => {
                let error = format!(
                    "{} answered `{}` unreadably: {e}",
                    self.name(),
                    how.method()
                );
                return self.fail_start(error, ctx);
            }
            Err(e) if how != Open::New => {
                // The agent lost the conversation: carry on in a new one rather than
                // failing every turn from now on.
                self.fork_on_open = false;
                let old = self.vendor_session_id.take().unwrap_or_default();
                let text = format!(
                    "{} could not reopen its session {old} ({e}); this turn starts a new conversation.",
                    self.name()
                );
                self.note(text);
                return self.open(Open::New, caps, ctx);
            }
            Err(e) => {
                let error = format!("{} refused `session/new`: {e}", self.name());
                return self.fail_start(error, ctx);
            }
        };
        let models = models::offered(&opened).map(Box::new);
        let efforts = models::offered_efforts(&opened.config_options).map(EffortChoice::boxed);
        let model = models.as_ref().and_then(|m| m.current.clone());
        let session = match self.opened_session(how, opened.session_id) {
            Ok(session) => session,
            Err(error) => return self.fail_start(error, ctx),
        };
        if self.vendor_session_id.as_deref() != Some(session.as_str()) {
            self.vendor_session_id = Some(session.clone());
            self.emitter
                .send(None, AgentItem::VendorSessionId(session.clone()));
        }
        let (modes, mode) = opened
            .modes
            .map(|m| (m.available_modes, m.current_mode_id))
            .unwrap_or_default();
        if let Link::Up { stage, .. } = &mut self.link {
            *stage = Stage::Ready {
                session,
                modes,
                mode,
                models,
                model,
                unoffered: None,
                efforts,
                instructions: None,
            };
        }
        self.closes = caps.session_capabilities.close.is_some();
        if std::mem::take(&mut self.place.evicted) {
            let text = self.place.resumed_note(self.name());
            self.note(text);
        }
        self.cost_base = (how == Open::New).then_some(0.0);
        if self.slot.is_idle() {
            self.apply_mode();
            self.apply_model();
            self.apply_effort();
            self.arm_idle(ctx);
        }
        self.prompt_if_ready();
    }

    /// The agent's session once `how` opened one (`id`: what it answered): a new or
    /// forked session's own, else the one reopened; what is wrong when there is none.
    fn opened_session(&mut self, how: Open, id: Option<String>) -> Result<String, String> {
        match (how, id, self.vendor_session_id.clone()) {
            (Open::New | Open::Fork, Some(id), _) => {
                // A fork's own session from now on.
                self.fork_on_open = false;
                Ok(id)
            }
            (Open::New | Open::Fork, None, _) => {
                Err(format!("{} opened a session without an id", self.name()))
            }
            (_, _, Some(id)) => Ok(id),
            (_, Some(id), None) => Ok(id),
            (_, None, None) => Err("no session to reopen".into()),
        }
    }
}
