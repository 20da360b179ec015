//! The agent: each request of the editor as tandem requests over the [`Link`], and
//! each frame of the server as what the editor is told.
//!
//! Requests run as tasks of their own on the one thread, so a `session/prompt` that
//! waits for its turn never holds up a `session/cancel` or a permission answer. The
//! state they share is borrowed only between awaits.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use tandem_protocol::ids::SessionId;

use serde_json::{json, Value};
use tandem_actors::adapter::acp::wire::{Implementation, RpcError, PROTOCOL_VERSION};
use tokio::sync::oneshot;

use super::embedded::{self, Embedding};
use super::link::Link;
use super::mapping::{self, PermissionAsk};
use super::rpc::{
    error, Incoming, Output, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND,
};
use super::session::{Effect, Followed};
use super::usage;
use crate::client::conn::{ClientError, Target};

/// A permission request put to the editor, by our request id.
#[derive(Debug)]
struct Asked {
    /// The tandem session that asked (a Worker's, for its Driver's editor session).
    session_id: SessionId,
    request_id: String,
    ask: PermissionAsk,
}

/// What the requests share.
#[derive(Debug, Default)]
pub(super) struct State {
    link: Option<Link>,
    /// The sessions the editor follows, by id.
    sessions: HashMap<String, Followed>,
    asked: HashMap<u64, Asked>,
    next_request: u64,
    /// The caller's user id, once asked.
    user: Option<String>,
    /// The server's vendors (`vendors.list`), once asked: the config options offer
    /// theirs.
    pub(super) vendors: Option<Vec<Value>>,
    /// Worker sessions followed for a delegation shown in their Driver's session:
    /// Worker id → Driver id.
    workers: HashMap<String, String>,
    /// The workspace the editor chose for a session's next Worker (`""`: the
    /// server's default), by session id.
    pub(super) worker_workspace: HashMap<String, String>,
}

/// The agent; clones share it.
#[derive(Clone)]
pub struct Agent {
    pub(super) out: Output,
    /// The server (its token replaced once an embedded server wrote its own).
    target: Rc<RefCell<Target>>,
    /// How to serve an embedded server when none answers (`None`: never), and
    /// whether one was started.
    embedding: Rc<RefCell<Option<Embedding>>>,
    /// Sessions asked of the server per `session/list` page.
    list_page: usize,
    pub(super) state: Rc<RefCell<State>>,
    /// Held while the connection is being opened, so one opens.
    connecting: Rc<tokio::sync::Mutex<()>>,
}

/// A method's answer: its result, or the JSON-RPC error.
pub(super) type Answer = Result<Value, RpcError>;

/// How long a started embedded server may take to accept its admin token.
const EMBEDDED_TOKEN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Agent {
    /// An agent writing to `out`, speaking to the server at `target`.
    pub fn new(
        out: Output,
        target: Target,
        list_page: usize,
        embedding: Option<Embedding>,
    ) -> Agent {
        Agent {
            out,
            target: Rc::new(RefCell::new(target)),
            embedding: Rc::new(RefCell::new(embedding)),
            list_page: list_page.clamp(1, 1000),
            state: Rc::new(RefCell::new(State::default())),
            connecting: Rc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Handles one line of the editor.
    pub fn on_line(&self, line: &str) {
        match super::rpc::parse_line(line) {
            Incoming::Request { id, method, params } => {
                let agent = self.clone();
                actix_rt::spawn(async move {
                    match agent.request(&method, params).await {
                        Ok(result) => agent.out.result(id, result),
                        Err(e) => {
                            tracing::debug!("{method} refused: {}", e.message);
                            agent.out.error(id, e);
                        }
                    }
                });
            }
            Incoming::Notification { method, params } => match method.as_str() {
                "session/cancel" => {
                    let agent = self.clone();
                    actix_rt::spawn(async move { agent.cancel(params).await });
                }
                other => tracing::debug!("ignored notification {other}"),
            },
            Incoming::Response { id, outcome } => self.on_response(&id, outcome),
            Incoming::Bad { id, error } => {
                tracing::warn!("bad line from the editor: {}", error.message);
                self.out.error(id, error);
            }
        }
    }

    async fn request(&self, method: &str, params: Value) -> Answer {
        match method {
            "initialize" => self.initialize().await,
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(params).await,
            "session/load" => self.load(params).await,
            "session/resume" => self.resume(params).await,
            "session/close" => self.close(params).await,
            "session/prompt" => self.prompt(params).await,
            "session/list" => self.list(params).await,
            "session/set_mode" => self.set_mode(params).await,
            "session/set_config_option" => self.set_config_option(params).await,
            other => Err(error(
                METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        }
    }

    /// `initialize`: connects (so a server that cannot be reached, or a refused
    /// token, is said now) and tells what tandem does.
    async fn initialize(&self) -> Answer {
        self.link().await?;
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": false},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
            },
            "agentInfo": Implementation {
                name: "tandem".into(),
                title: Some("tandem".into()),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            },
            "authMethods": [],
        }))
    }

    /// `session/new {cwd, mcpServers}`: `session.create` in `cwd`, followed from now.
    async fn new_session(&self, params: Value) -> Answer {
        let cwd = string(&params, "cwd")?;
        let editor = super::editor_mcp::entries(&params["mcpServers"])
            .map_err(|e| error(INVALID_PARAMS, e))?;
        let link = self.link().await?;
        let mut create = json!({"cwd": cwd});
        // The editor's servers beside every one the user has here (without any, the
        // session gets those by default).
        if !editor.is_empty() {
            let listed = link
                .call("mcp-servers.list", json!({}))
                .await
                .map_err(refused)?;
            create["mcpServers"] = super::editor_mcp::choice(editor, &listed);
        }
        let reply = link.call("session.create", create).await.map_err(refused)?;
        let session = &reply["session"];
        let id = session["id"].as_str().unwrap_or_default().to_string();
        let last = session["lastSeq"].as_u64().unwrap_or_default();
        self.subscribe(&link, &id, last, None, session["cwd"].as_str())
            .await?;
        let mut answer = self.settings(&link, session).await;
        answer["sessionId"] = json!(id);
        Ok(answer)
    }

    /// `session/load {sessionId, cwd}`: the whole history as updates, then the answer;
    /// the session is followed live from there.
    async fn load(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let link = self.link().await?;
        let reply = link
            .call("session.get", json!({"sessionId": id}))
            .await
            .map_err(refused)?;
        let (loaded, replayed) = oneshot::channel();
        let cwd = reply["session"]["cwd"].as_str();
        self.subscribe(&link, &id, 0, Some(loaded), cwd).await?;
        replayed.await.map_err(|_| lost())?;
        Ok(self.settings(&link, &reply["session"]).await)
    }

    /// `session/resume {sessionId, cwd}`: the session is followed live from now,
    /// without its history (the editor has it); its pending permission requests are
    /// asked. A session followed already goes on as it is.
    async fn resume(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let link = self.link().await?;
        let reply = link
            .call("session.get", json!({"sessionId": id}))
            .await
            .map_err(refused)?;
        if !self.state.borrow().sessions.contains_key(&id) {
            let last = reply["session"]["lastSeq"].as_u64().unwrap_or_default();
            let cwd = reply["session"]["cwd"].as_str();
            self.subscribe(&link, &id, last, None, cwd).await?;
            // Without the history, the commands its agent offers are told as they are.
            match link
                .call("session.commands", json!({"sessionId": id}))
                .await
            {
                Ok(listed) if listed["commands"].as_array().is_some_and(|c| !c.is_empty()) => {
                    self.update(&id, mapping::commands_update(&listed["commands"]));
                }
                Ok(_) => {}
                Err(e) => tracing::info!("session/resume of {id}: no commands: {e}"),
            }
        }
        Ok(self.settings(&link, &reply["session"]).await)
    }

    /// `session/close {sessionId}`: stops following the session (a prompt waiting on
    /// it answers `cancelled`); the tandem session stays, and a turn it runs goes on
    /// (other clients may be following it).
    async fn close(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let followed = self.state.borrow_mut().sessions.remove(&id);
        let Some(followed) = followed else {
            return Err(error(
                RESOURCE_NOT_FOUND,
                format!("session {id} is not open here (session/new, session/load or session/resume opens one)"),
            ));
        };
        followed.close();
        // The Workers followed for its delegations go too, and so does the session
        // itself unless it is a Worker shown in another session's delegation (or, for
        // a Worker, followed on its own).
        let gone: Vec<String> = {
            let mut state = self.state.borrow_mut();
            let workers: Vec<String> = state
                .workers
                .iter()
                .filter(|(_, driver)| **driver == id)
                .map(|(worker, _)| worker.clone())
                .collect();
            state.workers.retain(|_, driver| *driver != id);
            std::iter::once(id.clone())
                .chain(workers)
                .filter(|s| !state.workers.contains_key(s) && !state.sessions.contains_key(s))
                .collect()
        };
        if let (Some(link), false) = (self.live_link(), gone.is_empty()) {
            if let Err(e) = link
                .call("chat.unsubscribe", json!({"sessionIds": gone}))
                .await
            {
                tracing::info!("session/close of {id}: {e}");
            }
        }
        Ok(json!({}))
    }

    /// `session/prompt {sessionId, prompt}`: `chat.send`; the turn's events stream as
    /// updates, and its end answers.
    async fn prompt(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let blocks = params["prompt"]
            .as_array()
            .ok_or_else(|| error(INVALID_PARAMS, "`prompt` must be a list of content blocks"))?;
        let parts = mapping::prompt_content(blocks).map_err(|e| error(INVALID_PARAMS, e))?;
        let link = self.link().await?;
        self.follow(&link, &id).await?;
        // Embedded resources go up as attachments first (the link made sure of the
        // token).
        let mut uploads = Vec::with_capacity(parts.files.len());
        for file in &parts.files {
            let target = self.target.borrow().clone();
            let answer = target
                .upload(&file.name, &file.mime, file.bytes.clone())
                .await
                .map_err(refused)?;
            uploads.push(answer["uploadId"].as_str().unwrap_or_default().to_string());
        }
        let content = parts.with_uploads(&uploads);
        let (done, ended) = oneshot::channel();
        self.with_session(&id, |s| {
            if s.prompting() {
                return Err(error(
                    INVALID_PARAMS,
                    "a prompt of this session is still running",
                ));
            }
            s.start_prompt(done);
            Ok(())
        })??;
        let sent = link
            .call("chat.send", json!({"sessionId": id, "content": content}))
            .await;
        match sent {
            Ok(reply) => {
                let turn = reply["turnId"].as_str().unwrap_or_default().to_string();
                self.with_session(&id, |s| s.turn_accepted(&turn))?;
            }
            Err(e) => {
                let _ = self.with_session(&id, Followed::drop_prompt);
                return Err(refused(e));
            }
        }
        let outcome = ended.await.map_err(|_| lost())?;
        match mapping::stop_reason(&outcome.status, outcome.error.as_deref()) {
            Ok(reason) => {
                let mut answer = json!({"stopReason": reason});
                if let Some(tokens) = outcome.usage.as_ref().and_then(usage::turn_tokens) {
                    answer["usage"] = tokens;
                }
                Ok(answer)
            }
            Err(why) => Err(error(INTERNAL_ERROR, why)),
        }
    }

    /// `session/cancel {sessionId}`: `chat.abort`; the prompt then answers
    /// `cancelled`.
    async fn cancel(&self, params: Value) {
        let Some(id) = params["sessionId"].as_str() else {
            tracing::warn!("session/cancel without a sessionId");
            return;
        };
        let link = match self.link().await {
            Ok(link) => link,
            Err(e) => return tracing::warn!("session/cancel: {}", e.message),
        };
        if let Err(e) = link.call("chat.abort", json!({"sessionId": id})).await {
            tracing::info!("session/cancel of {id}: {e}");
        }
    }

    /// `session/list {cwd?, cursor?}`: the caller's sessions, most recently active
    /// first, a page at a time (the server's cursor is ours).
    async fn list(&self, params: Value) -> Answer {
        let wanted = params["cwd"].as_str().map(same_dir);
        let link = self.link().await?;
        let me = self.user(&link).await?;
        let mut cursor = params["cursor"].as_str().map(str::to_string);
        let mut sessions = Vec::new();
        loop {
            let mut asked = json!({"limit": self.list_page});
            if let Some(c) = &cursor {
                asked["cursor"] = json!(c);
            }
            let page = link.call("sessions.list", asked).await.map_err(refused)?;
            for s in page["sessions"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                let mine = s["ownerId"] == me.as_str();
                let here = match (&wanted, s["cwd"].as_str()) {
                    (None, _) => true,
                    (Some(w), Some(cwd)) => same_dir(cwd) == *w,
                    (Some(_), None) => false,
                };
                if mine && here {
                    sessions.push(mapping::session_info(s));
                }
            }
            cursor = page["nextCursor"].as_str().map(str::to_string);
            // A page the filter emptied is passed over, so no page comes back empty
            // while more may follow.
            if cursor.is_none() || !sessions.is_empty() {
                break;
            }
        }
        let mut answer = json!({"sessions": sessions});
        if let Some(next) = cursor {
            answer["nextCursor"] = json!(next);
        }
        Ok(answer)
    }

    /// The caller's user id (`user.get`), asked once.
    async fn user(&self, link: &Link) -> Result<String, RpcError> {
        if let Some(user) = self.state.borrow().user.clone() {
            return Ok(user);
        }
        let reply = link.call("user.get", json!({})).await.map_err(refused)?;
        let user = reply["userId"].as_str().unwrap_or_default().to_string();
        self.state.borrow_mut().user = Some(user.clone());
        Ok(user)
    }

    /// Follows session `id` from now on, unless it is followed already.
    async fn follow(&self, link: &Link, id: &str) -> Result<(), RpcError> {
        if self.state.borrow().sessions.contains_key(id) {
            return Ok(());
        }
        let reply = link
            .call("session.get", json!({"sessionId": id}))
            .await
            .map_err(refused)?;
        let last = reply["session"]["lastSeq"].as_u64().unwrap_or_default();
        let cwd = reply["session"]["cwd"].as_str();
        self.subscribe(link, id, last, None, cwd).await
    }

    /// Subscribes to session `id` (working in `cwd`) after `after` (0: its whole
    /// history), starting its follow state afresh.
    async fn subscribe(
        &self,
        link: &Link,
        id: &str,
        after: u64,
        loading: Option<oneshot::Sender<()>>,
        cwd: Option<&str>,
    ) -> Result<(), RpcError> {
        self.state
            .borrow_mut()
            .sessions
            .insert(id.to_string(), Followed::new(after, loading).with_cwd(cwd));
        let entry = json!({"sessions": [{"sessionId": id, "lastSeq": after}]});
        if let Err(e) = link.call("chat.subscribe", entry).await {
            self.state.borrow_mut().sessions.remove(id);
            return Err(refused(e));
        }
        Ok(())
    }

    fn with_session<T>(&self, id: &str, f: impl FnOnce(&mut Followed) -> T) -> Result<T, RpcError> {
        let mut state = self.state.borrow_mut();
        match state.sessions.get_mut(id) {
            Some(s) => Ok(f(s)),
            None => Err(lost()),
        }
    }

    /// The connection, opened if there is none. A new connection (after a lost one)
    /// subscribes again to every followed session from where it stands.
    pub(super) async fn link(&self) -> Result<Link, RpcError> {
        if let Some(link) = self.live_link() {
            return Ok(link);
        }
        let _opening = self.connecting.lock().await;
        if let Some(link) = self.live_link() {
            return Ok(link);
        }
        let target = self.target.borrow().clone();
        let opened = match Link::open(&target).await {
            Err(ClientError::Unreachable { .. }) if self.embedding.borrow().is_some() => {
                self.embed().await
            }
            other => other,
        };
        let (link, mut frames) = opened.map_err(|e| {
            tracing::error!("{e}");
            error(INTERNAL_ERROR, e.to_string())
        })?;
        let resume: Vec<(String, u64)> = {
            let mut state = self.state.borrow_mut();
            state.link = Some(link.clone());
            state
                .sessions
                .iter()
                .map(|(id, s)| (id.clone(), s.last()))
                .collect()
        };
        let agent = self.clone();
        actix_rt::spawn(async move {
            while let Some(frame) = frames.recv().await {
                agent.on_frame(&frame);
            }
            agent.on_link_lost();
        });
        // Before any request goes out on the new connection, so none of its
        // sessions' events is missed.
        for (id, last) in resume {
            let entry = json!({"sessions": [{"sessionId": id, "lastSeq": last}]});
            if let Err(e) = link.call("chat.subscribe", entry).await {
                tracing::warn!("following {id} again: {e}");
            }
        }
        Ok(link)
    }

    /// Nothing answered: when nothing listens there at all, serves the embedded
    /// server (once: a later loss connects again, or serves anew if it stopped) and
    /// connects to it with its admin token.
    async fn embed(
        &self,
    ) -> Result<(Link, tokio::sync::mpsc::UnboundedReceiver<Value>), ClientError> {
        let base = self.target.borrow().base.clone();
        let Some(embedding) = self.embedding.borrow().clone() else {
            return Err(ClientError::Other(format!(
                "cannot reach the server at {base}"
            )));
        };
        let (host, port) =
            embedded::loopback(&base).map_err(|e| ClientError::Other(e.to_string()))?;
        if embedded::listening(&host, port).await {
            // Something answers there, just not to us (a refused token, not
            // tandem): say so rather than serve over it.
            let target = self.target.borrow().clone();
            return Link::open(&target).await;
        }
        embedding
            .serve(&host, port)
            .await
            .map_err(|e| ClientError::Other(e.to_string()))?;
        // Its admin token is written as its store opens, maybe just after it listens.
        let started = std::time::Instant::now();
        loop {
            if let Some(token) = embedded::admin_token(embedding.data_dir.as_ref()) {
                self.target.borrow_mut().token = Some(token);
            }
            let target = self.target.borrow().clone();
            match Link::open(&target).await {
                Ok(opened) => return Ok(opened),
                Err(e) if started.elapsed() > EMBEDDED_TOKEN_WAIT => return Err(e),
                Err(_) => actix_rt::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    }

    /// The connection, unless there is none or it is gone.
    fn live_link(&self) -> Option<Link> {
        self.state
            .borrow()
            .link
            .clone()
            .filter(|link| !link.is_closed())
    }

    fn resubscribe(&self, link: &Link, id: String, last: u64) {
        let link = link.clone();
        actix_rt::spawn(async move {
            let entry = json!({"sessions": [{"sessionId": id, "lastSeq": last}]});
            if let Err(e) = link.call("chat.subscribe", entry).await {
                tracing::warn!("following {id} again: {e}");
            }
        });
    }

    /// The connection closed: every prompt and load waiting on it fails; the next
    /// request connects again.
    fn on_link_lost(&self) {
        let mut state = self.state.borrow_mut();
        if state.link.as_ref().is_some_and(|link| !link.is_closed()) {
            return; // a new connection took over already
        }
        state.link = None;
        // The delegations shown are shown no more (their Drivers' state starts
        // afresh below).
        state.workers.clear();
        let followed: Vec<(String, u64, Option<String>)> = state
            .sessions
            .iter()
            .map(|(id, s)| (id.clone(), s.last(), s.cwd()))
            .collect();
        for (id, last, cwd) in followed {
            // Waiters are dropped (they answer that the connection was lost); the
            // position is kept for the next connection.
            let fresh = Followed::new(last, None).with_cwd(cwd.as_deref());
            state.sessions.insert(id, fresh);
        }
    }

    /// A frame of the server that answers no request: for the session it names if
    /// the editor follows it, and for the Driver whose delegation it shows if it is
    /// a Worker's.
    fn on_frame(&self, frame: &Value) {
        let Some(id) = frame["sessionId"].as_str() else {
            return;
        };
        let kind = frame["kind"].as_str().unwrap_or_default();
        let (effects, driver_effects) = {
            let mut guard = self.state.borrow_mut();
            let state = &mut *guard;
            let effects = match state.sessions.get_mut(id) {
                None => Vec::new(),
                Some(session) => match kind {
                    "chat_subscribed" => session.on_subscribed(frame),
                    "lagged" => {
                        let last = session.last();
                        if let Some(link) = state.link.clone() {
                            self.resubscribe(&link, id.to_string(), last);
                        }
                        Vec::new()
                    }
                    _ => session.on_event(frame),
                },
            };
            let driver = state.workers.get(id).cloned();
            let driver_effects = match driver
                .as_ref()
                .and_then(|d| state.sessions.get_mut(d).map(|s| (d, s)))
            {
                None => None,
                Some((driver, session)) => {
                    let effects = match kind {
                        "chat_subscribed" => session.on_worker_subscribed(id, frame),
                        // A lagged Worker is followed again from where the Driver's
                        // view of it stands (its own repeats are passed over).
                        "lagged" => {
                            if let Some(link) = state.link.clone() {
                                self.resubscribe(&link, id.to_string(), 0);
                            }
                            Vec::new()
                        }
                        _ => session.on_worker_event(id, frame),
                    };
                    Some((driver.clone(), effects))
                }
            };
            (effects, driver_effects)
        };
        self.apply(id, effects);
        if let Some((driver, effects)) = driver_effects {
            self.apply(&driver, effects);
        }
    }

    /// Does what a session's frames asked, in the editor's session `id`.
    fn apply(&self, id: &str, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Update(update) => self.update(id, update),
                Effect::Ask(request) => self.ask(id, id, &request),
                Effect::AskFor { worker, request } => self.ask(id, &worker, &request),
                Effect::Configured(event) => self.configured(id, event),
                Effect::Watch(worker) => self.watch(id, worker),
                Effect::Unwatch(worker) => self.unwatch(worker),
            }
        }
    }

    /// Sends a `session/update` of the editor's session `id`.
    pub(super) fn update(&self, id: &str, update: Value) {
        self.out
            .notify("session/update", json!({"sessionId": id, "update": update}));
    }

    /// Follows Worker `worker` for the delegation shown in Driver `driver`, from the
    /// start of its history (the delegated turn may have begun already).
    fn watch(&self, driver: &str, worker: String) {
        self.state
            .borrow_mut()
            .workers
            .insert(worker.clone(), driver.to_string());
        let agent = self.clone();
        actix_rt::spawn(async move {
            let link = match agent.link().await {
                Ok(link) => link,
                Err(e) => return tracing::warn!("following the Worker {worker}: {}", e.message),
            };
            let entry = json!({"sessions": [{"sessionId": worker, "lastSeq": 0}]});
            if let Err(e) = link.call("chat.subscribe", entry).await {
                tracing::warn!("following the Worker {worker}: {e}");
            }
        });
    }

    /// A delegation ended: the Worker is no longer followed for it (unless the
    /// editor follows it as a session of its own).
    fn unwatch(&self, worker: String) {
        let own = {
            let mut state = self.state.borrow_mut();
            state.workers.remove(&worker);
            state.sessions.contains_key(&worker)
        };
        if own {
            return;
        }
        if let Some(link) = self.live_link() {
            actix_rt::spawn(async move {
                let gone = json!({"sessionIds": [worker]});
                if let Err(e) = link.call("chat.unsubscribe", gone).await {
                    tracing::info!("no longer following the Worker {worker}: {e}");
                }
            });
        }
    }

    /// Puts a pending permission request of tandem session `asker` to the editor, in
    /// its session `session_id` (the asker's own, or its Driver's for a Worker, whose
    /// name the title then carries).
    fn ask(&self, session_id: &str, asker: &str, request: &Value) {
        let mut ask = mapping::permission_ask(request);
        if asker != session_id {
            let title = ask.tool_call["title"]
                .as_str()
                .unwrap_or("tool")
                .to_string();
            ask.tool_call["title"] = json!(format!("Worker {asker}: {title}"));
        }
        let params = json!({
            "sessionId": session_id,
            "toolCall": ask.tool_call,
            "options": ask.options,
        });
        let id = {
            let mut state = self.state.borrow_mut();
            state.next_request += 1;
            let id = state.next_request;
            state.asked.insert(
                id,
                Asked {
                    session_id: asker.into(),
                    request_id: request["requestId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    ask,
                },
            );
            id
        };
        self.out.request(id, "session/request_permission", params);
    }

    /// The editor answered one of our requests: a permission request's answer goes to
    /// the server as `chat.permission-response`.
    fn on_response(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let asked = id
            .as_u64()
            .and_then(|id| self.state.borrow_mut().asked.remove(&id));
        let Some(asked) = asked else {
            tracing::warn!("the editor answered a request we did not send: {id}");
            return;
        };
        let result = match outcome {
            Ok(result) => result,
            Err(e) => {
                return tracing::warn!(
                    "the editor refused the permission request {}: {e}",
                    asked.request_id
                )
            }
        };
        let Some(mut answer) = asked.ask.answer(&result) else {
            tracing::debug!(
                "permission request {} not answered: {result}",
                asked.request_id
            );
            return;
        };
        answer["sessionId"] = json!(asked.session_id);
        let agent = self.clone();
        actix_rt::spawn(async move {
            let sent = match agent.link().await {
                Ok(link) => link
                    .call_as("chat.permission-response", answer, asked.request_id.clone())
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.message),
            };
            if let Err(e) = sent {
                tracing::warn!("answering permission request {}: {e}", asked.request_id);
            }
        });
    }
}

/// A required string parameter.
pub(super) fn string(params: &Value, key: &str) -> Result<String, RpcError> {
    params[key]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| error(INVALID_PARAMS, format!("`{key}` must be a string")))
}

/// A directory compared by where it really is (as the server stores a session's).
fn same_dir(path: &str) -> String {
    std::fs::canonicalize(path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.trim_end_matches('/').to_string())
}

fn lost() -> RpcError {
    error(
        INTERNAL_ERROR,
        "the connection to the tandem server was lost; send the request again",
    )
}

/// A refused tandem request as a JSON-RPC error carrying the server's message, its
/// code in `data.tandemCode`.
pub(super) fn refused(e: ClientError) -> RpcError {
    match e {
        ClientError::Refused { code, message } => {
            let rpc_code = match code.as_str() {
                "SESSION_NOT_FOUND" => RESOURCE_NOT_FOUND,
                "INVALID_ARGUMENT"
                | "INVALID_JSON"
                | "INVALID_ATTACHMENT"
                | "ATTACHMENT_TOO_LARGE"
                | "ATTACHMENT_NOT_SUPPORTED"
                | "NO_SUCH_UPLOAD"
                | "VENDOR_NOT_INSTALLED" => INVALID_PARAMS,
                _ => INTERNAL_ERROR,
            };
            let message = if message.is_empty() {
                code.clone()
            } else {
                message
            };
            RpcError {
                code: rpc_code,
                message,
                data: Some(json!({"tandemCode": code})),
            }
        }
        other => error(INTERNAL_ERROR, other.to_string()),
    }
}
