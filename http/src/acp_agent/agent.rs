//! The agent: each request of the editor as tandem requests over the [`Link`], and
//! each frame of the server as what the editor is told.
//!
//! Requests run as tasks of their own on the one thread, so a `session/prompt` that
//! waits for its turn never holds up a `session/cancel` or a permission answer. The
//! state they share is borrowed only between awaits.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{json, Value};
use tandem_actors::adapter::acp::wire::{Implementation, RpcError, PROTOCOL_VERSION};
use tokio::sync::oneshot;

use super::link::Link;
use super::mapping::{self, PermissionAsk};
use super::rpc::{
    error, Incoming, Output, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND,
};
use super::session::{Effect, Followed};
use crate::client::conn::{ClientError, Target};

/// A permission request put to the editor, by our request id.
#[derive(Debug)]
struct Asked {
    session_id: String,
    request_id: String,
    ask: PermissionAsk,
}

#[derive(Debug, Default)]
struct State {
    link: Option<Link>,
    sessions: HashMap<String, Followed>,
    asked: HashMap<u64, Asked>,
    next_request: u64,
    /// The caller's user id, once asked.
    user: Option<String>,
}

/// The agent; clones share it.
#[derive(Clone)]
pub struct Agent {
    out: Output,
    target: Rc<Target>,
    /// Sessions asked of the server per `session/list` page.
    list_page: usize,
    state: Rc<RefCell<State>>,
    /// Held while the connection is being opened, so one opens.
    connecting: Rc<tokio::sync::Mutex<()>>,
}

type Answer = Result<Value, RpcError>;

impl Agent {
    /// An agent writing to `out`, speaking to the server at `target`.
    pub fn new(out: Output, target: Target, list_page: usize) -> Agent {
        Agent {
            out,
            target: Rc::new(target),
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
            "session/prompt" => self.prompt(params).await,
            "session/list" => self.list(params).await,
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
                "mcpCapabilities": {"http": false, "sse": false},
                "sessionCapabilities": {"list": {}},
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
        if params["mcpServers"]
            .as_array()
            .is_some_and(|servers| !servers.is_empty())
        {
            tracing::info!("the editor's MCP servers are not passed on to the agent yet");
        }
        let link = self.link().await?;
        let reply = link
            .call("session.create", json!({"cwd": cwd}))
            .await
            .map_err(refused)?;
        let session = &reply["session"];
        let id = session["id"].as_str().unwrap_or_default().to_string();
        let last = session["lastSeq"].as_u64().unwrap_or_default();
        self.subscribe(&link, &id, last, None).await?;
        Ok(json!({"sessionId": id}))
    }

    /// `session/load {sessionId, cwd}`: the whole history as updates, then the answer;
    /// the session is followed live from there.
    async fn load(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let link = self.link().await?;
        link.call("session.get", json!({"sessionId": id}))
            .await
            .map_err(refused)?;
        let (loaded, replayed) = oneshot::channel();
        self.subscribe(&link, &id, 0, Some(loaded)).await?;
        replayed.await.map_err(|_| lost())?;
        Ok(json!({}))
    }

    /// `session/prompt {sessionId, prompt}`: `chat.send`; the turn's events stream as
    /// updates, and its end answers.
    async fn prompt(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let blocks = params["prompt"]
            .as_array()
            .ok_or_else(|| error(INVALID_PARAMS, "`prompt` must be a list of content blocks"))?;
        let content = mapping::prompt_content(blocks).map_err(|e| error(INVALID_PARAMS, e))?;
        let link = self.link().await?;
        self.follow(&link, &id).await?;
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
            Ok(reason) => Ok(json!({"stopReason": reason})),
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
        self.subscribe(link, id, last, None).await
    }

    /// Subscribes to session `id` after `after` (0: its whole history), starting its
    /// follow state afresh.
    async fn subscribe(
        &self,
        link: &Link,
        id: &str,
        after: u64,
        loading: Option<oneshot::Sender<()>>,
    ) -> Result<(), RpcError> {
        self.state
            .borrow_mut()
            .sessions
            .insert(id.to_string(), Followed::new(after, loading));
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
    async fn link(&self) -> Result<Link, RpcError> {
        if let Some(link) = self.live_link() {
            return Ok(link);
        }
        let _opening = self.connecting.lock().await;
        if let Some(link) = self.live_link() {
            return Ok(link);
        }
        let (link, mut frames) = Link::open(&self.target).await.map_err(|e| {
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
        let followed: Vec<(String, u64)> = state
            .sessions
            .iter()
            .map(|(id, s)| (id.clone(), s.last()))
            .collect();
        for (id, last) in followed {
            // Waiters are dropped (they answer that the connection was lost); the
            // position is kept for the next connection.
            state.sessions.insert(id, Followed::new(last, None));
        }
    }

    /// A frame of the server that answers no request.
    fn on_frame(&self, frame: &Value) {
        let Some(id) = frame["sessionId"].as_str() else {
            return;
        };
        let effects = {
            let mut guard = self.state.borrow_mut();
            let state = &mut *guard;
            let Some(session) = state.sessions.get_mut(id) else {
                return;
            };
            match frame["kind"].as_str().unwrap_or_default() {
                "chat_subscribed" => session.on_subscribed(frame),
                "lagged" => {
                    let last = session.last();
                    if let Some(link) = state.link.clone() {
                        self.resubscribe(&link, id.to_string(), last);
                    }
                    Vec::new()
                }
                _ => session.on_event(frame),
            }
        };
        for effect in effects {
            match effect {
                Effect::Update(update) => self
                    .out
                    .notify("session/update", json!({"sessionId": id, "update": update})),
                Effect::Ask(request) => self.ask(id, &request),
            }
        }
    }

    /// Puts a pending permission request to the editor.
    fn ask(&self, session_id: &str, request: &Value) {
        let ask = mapping::permission_ask(request);
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
                    session_id: session_id.to_string(),
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
fn string(params: &Value, key: &str) -> Result<String, RpcError> {
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
fn refused(e: ClientError) -> RpcError {
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
