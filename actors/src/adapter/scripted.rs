//! The built-in `scripted` vendor: deterministic turns driven by the user's message,
//! line by line. Used by the quick start, the tests and the benchmarks.
//!
//! - plain line → a few `text_delta`s, then one `assistant_message`
//! - `/sleep MS` → waits (an interrupt ends the wait at once)
//! - `/hold NAME` → waits until the test releases NAME (`crate::holds`; an interrupt
//!   ends the wait at once); only with the `test-hooks` feature: without it nothing
//!   could release the hold, and the turn fails saying so
//! - `/stubborn MS` → waits MS and ignores any interrupt meanwhile, like a vendor that
//!   never confirms one (to exercise the session's own fallback); the rest of the
//!   script then runs on
//! - `/stream N` → N `text_delta`s `"chunk i "` as fast as possible, then the whole text
//! - `/tool NAME {json}` → calls a session-bound tool through the shared tool router
//! - `/fail MESSAGE` → the turn fails with MESSAGE
//! - `/background TASKID MS DESCRIPTION` → a background task that ends after MS
//! - `/ask TOOL {json}` → asks permission to use TOOL (a `permission_request`), waits
//!   for the answer and says `allowed TOOL` or `denied TOOL: MESSAGE`; allowed at once
//!   when the session bypasses permissions
//! - `/usage {json}` → reports that usage for the turn (on its `turn_completed`)
//! - `/show NAME {json}` → a `tool_call` NAME with that input and an `ok`
//!   `tool_result`, running nothing (how a vendor's own tools look in the history)
//! - `/think TEXT` → a `thinking` event with TEXT
//! - `/plan [json entries]` → a `plan` event with those entries
//! - `/history` → one text line `history: A | B` quoting the user messages of the
//!   earlier turns this agent remembers (its "conversation"), so tests can see what a
//!   rewind made it forget
//! - `/write PATH TEXT` → writes TEXT and a newline to PATH, relative to the session's
//!   working directory (no `..`, not absolute), as an agent's edit would; shown as a
//!   `tool_call` `write` and its `tool_result`
//! - any other `/word` line is echoed as text
//!
//! The agent's memory is the user messages of the turns it ran, newest last; a rewind
//! (`chat.edit-send`) drops the newest ones natively.
//!
//! Messages the server writes (pushed-back results) are echoed line by line and never
//! executed: they quote other sessions' scripts.

use std::ops::ControlFlow;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tandem_protocol::{
    BackgroundTask, EventBody, PermissionChoice, PermissionKind, PermissionMode, RememberScope,
    TaskType, TurnStatus,
};
use tokio::sync::oneshot;

use super::catalog::strings;
use super::core::{Approvals, Asked, Emitter, TurnSlot, AWAIT_EVERY};
use super::health::VendorStatus;
use super::messages::{AdapterCommand, AgentItem, ImageInput, PendingPermission};
use super::{AdapterContext, AdapterFactory, Tools, VendorId, VendorSpec, CLI_CAPABILITIES};
use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::ids::{SessionId, TurnId};

/// One line of a script.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Text(String),
    Sleep(u64),
    /// Waits until the test releases this hold (`/hold NAME`).
    Hold(String),
    Stubborn(u64),
    Stream(u64),
    Tool {
        name: String,
        args: String,
    },
    Fail(String),
    Ask {
        tool: String,
        input: String,
    },
    Background {
        id: String,
        ms: u64,
        description: String,
    },
    /// Reports the turn's usage (`/usage {json}`, a `TurnUsage`).
    Usage(tandem_protocol::TurnUsage),
    /// A tool call shown as a vendor reports one, with an `ok` result, running
    /// nothing (`/show NAME {json}`): how the page draws a vendor's tools.
    Show {
        name: String,
        input: Value,
    },
    /// Thinking shown as a vendor's (`/think TEXT`).
    Think(String),
    /// A plan shown as a vendor's (`/plan [entries]`).
    Plan(Vec<tandem_protocol::PlanEntry>),
    /// Quotes the remembered conversation (`/history`).
    History,
    /// Writes a file in the working directory (`/write PATH TEXT`).
    Write {
        path: String,
        text: String,
    },
}

/// Splits a fork's context off a message: the user messages it quotes (first line
/// of each) and the message after it. A message without one is all message.
fn fork_preface(text: &str) -> (Vec<String>, &str) {
    use crate::handoff::{FORK_CONTEXT_END, FORK_CONTEXT_HEAD};
    let Some(body) = text.strip_prefix(FORK_CONTEXT_HEAD) else {
        return (Vec::new(), text);
    };
    let Some((quoted, rest)) = body.split_once(FORK_CONTEXT_END) else {
        return (Vec::new(), text);
    };
    let users = quoted
        .lines()
        .filter_map(|l| l.strip_prefix("User: "))
        .map(|l| l.trim_end().to_string())
        .collect();
    (users, rest.trim_start_matches('\n'))
}

fn parse_script(text: &str) -> Vec<Step> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let line = line.trim_end();
            let mut words = line.splitn(2, char::is_whitespace);
            let head = words.next().unwrap_or_default();
            let rest = words.next().unwrap_or_default().trim();
            let number = |s: &str| s.parse::<u64>().ok();
            match head {
                "/sleep" => number(rest).map(Step::Sleep),
                "/hold" if crate::holds::valid_name(rest) => Some(Step::Hold(rest.into())),
                "/stubborn" => number(rest).map(Step::Stubborn),
                "/stream" => number(rest).map(Step::Stream),
                "/fail" => Some(Step::Fail(if rest.is_empty() {
                    "scripted failure".into()
                } else {
                    rest.into()
                })),
                "/tool" if !rest.is_empty() => {
                    let mut parts = rest.splitn(2, char::is_whitespace);
                    let name = parts.next().unwrap_or_default().to_string();
                    let args = parts.next().unwrap_or("{}").trim().to_string();
                    Some(Step::Tool { name, args })
                }
                "/ask" if !rest.is_empty() => {
                    let mut parts = rest.splitn(2, char::is_whitespace);
                    let tool = parts.next().unwrap_or_default().to_string();
                    let input = parts.next().unwrap_or("{}").trim().to_string();
                    Some(Step::Ask { tool, input })
                }
                "/history" if rest.is_empty() => Some(Step::History),
                "/think" if !rest.is_empty() => Some(Step::Think(rest.into())),
                "/plan" => serde_json::from_str(rest).ok().map(Step::Plan),
                "/usage" => serde_json::from_str(rest).ok().map(Step::Usage),
                "/show" if !rest.is_empty() => {
                    let mut parts = rest.splitn(2, char::is_whitespace);
                    let name = parts.next().unwrap_or_default().to_string();
                    serde_json::from_str(parts.next().unwrap_or("{}").trim())
                        .ok()
                        .map(|input| Step::Show { name, input })
                }
                "/write" if !rest.is_empty() => {
                    let mut parts = rest.splitn(2, char::is_whitespace);
                    let path = parts.next().unwrap_or_default().to_string();
                    let text = parts.next().unwrap_or_default().to_string();
                    Some(Step::Write { path, text })
                }
                "/background" => {
                    let mut parts = rest.splitn(3, char::is_whitespace);
                    match (parts.next(), parts.next().and_then(number)) {
                        (Some(id), Some(ms)) if !id.is_empty() => Some(Step::Background {
                            id: id.into(),
                            ms,
                            description: parts.next().unwrap_or("background task").trim().into(),
                        }),
                        _ => None,
                    }
                }
                _ => None,
            }
            .unwrap_or_else(|| Step::Text(line.to_string()))
        })
        .collect()
}

/// How a turn that reaches `/hold NAME` ends in a build without the `test-hooks`
/// feature: nothing could release the hold, and running on would not be what the
/// script's author meant.
#[cfg(not(feature = "test-hooks"))]
fn hold_refused(name: &str) -> (TurnStatus, Option<String>) {
    (
        TurnStatus::Failed,
        Some(format!(
            "`/hold {name}` needs a test build of the server (feature test-hooks)"
        )),
    )
}

/// Splits a line into at most three pieces on character boundaries.
fn deltas(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let size = chars.len().div_ceil(3).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The scripted vendor in the registry: always installed, no process.
pub struct Factory;

impl AdapterFactory for Factory {
    fn spec(&self) -> VendorSpec {
        VendorSpec {
            models: strings(&["scripted-1"]),
            effort_levels: strings(&["low", "medium", "high"]),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
            status: VendorStatus::Ok,
            default_model: Some("scripted-1".into()),
            ..VendorSpec::new(VendorId::SCRIPTED, "Scripted", CLI_CAPABILITIES)
        }
    }

    fn start(&self, ctx: AdapterContext) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        Ok(ScriptedAgent::new(ctx).start().recipient())
    }
}

/// Adapter actor for one scripted session.
pub struct ScriptedAgent {
    /// The session this agent works for (tool calls are made as it).
    session_id: SessionId,
    /// Where `/write` writes.
    cwd: std::path::PathBuf,
    /// Outputs outside turns (background tasks, permission requests) go through it;
    /// each running script has its own clone for its events.
    emitter: Emitter,
    /// Tool calls go through here.
    tools: Tools,
    /// The running turn and the handle that cancels its script.
    turn: TurnSlot<SpawnHandle>,
    /// Live background tasks and the timers that end them.
    tasks: Vec<(BackgroundTask, SpawnHandle)>,
    /// `/ask` steps waiting for a person's answer.
    approvals: Approvals<oneshot::Sender<Answer>>,
    /// The session's permission mode (bypass answers `/ask` at once).
    mode: PermissionMode,
    /// The running script is in a `/stubborn` step: interrupts are ignored.
    stubborn: bool,
    /// The user messages of the turns this agent ran, oldest first: what `/history`
    /// quotes and a rewind shortens.
    memory: Vec<String>,
}

/// A person's answer to an `/ask`.
#[derive(Debug)]
enum Answer {
    /// The tool may run.
    Allowed,
    /// It may not; the person's message (`denied` when they gave none).
    Denied(String),
}

/// Sent by a running script to its own actor: ask to use `tool`, answer on `reply`.
#[derive(Message)]
#[rtype(result = "()")]
struct Ask {
    turn_id: TurnId,
    tool: String,
    input: Value,
    reply: oneshot::Sender<Answer>,
}

/// Sent by a running script to its own actor around a `/stubborn` step.
#[derive(Message)]
#[rtype(result = "()")]
struct Stubborn(bool);

impl Handler<Stubborn> for ScriptedAgent {
    type Result = ();

    fn handle(&mut self, msg: Stubborn, _: &mut Context<Self>) {
        self.stubborn = msg.0;
    }
}

impl Handler<Ask> for ScriptedAgent {
    type Result = ();

    fn handle(&mut self, msg: Ask, _: &mut Context<Self>) {
        if !self.turn.is(&msg.turn_id) {
            return; // the script was stopped meanwhile: the reply channel closes
        }
        match self.approvals.ask(self.mode, &msg.tool, msg.reply) {
            Asked::Allowed(reply) => {
                let _ = reply.send(Answer::Allowed);
            }
            Asked::Pending(request_id) => self.emitter.send(
                Some(msg.turn_id),
                AgentItem::PermissionRequest(PendingPermission {
                    request_id,
                    // Shown as the vendor whose shape the input has shows it.
                    changes: crate::adapter::edits::any(&msg.tool, &msg.input),
                    tool_name: msg.tool,
                    input: msg.input,
                    permission_kind: PermissionKind::Tool,
                    choices: choices(),
                }),
            ),
        }
    }
}

/// What `/ask` offers: once, always for this session, or deny.
fn choices() -> Vec<PermissionChoice> {
    let choice = |label: &str, allow: bool, remember: Option<RememberScope>| PermissionChoice {
        label: label.into(),
        allow,
        remember,
        permission_mode: None,
    };
    vec![
        choice("Allow once", true, None),
        choice(
            "Always allow in this session",
            true,
            Some(RememberScope::Session),
        ),
        choice("Deny", false, None),
    ]
}

impl ScriptedAgent {
    /// A new agent for the session `ctx` describes.
    pub fn new(ctx: AdapterContext) -> Self {
        let emitter = ctx.emitter();
        ScriptedAgent {
            session_id: ctx.session_id,
            cwd: ctx.cwd,
            turn: TurnSlot::new(&emitter),
            emitter,
            tools: ctx.tools,
            tasks: Vec::new(),
            approvals: Approvals::new(ctx.remembered),
            mode: ctx.settings.permission_mode,
            stubborn: false,
            memory: Vec::new(),
        }
    }

    fn report_tasks(&self) {
        let tasks = self.tasks.iter().map(|(t, _)| t.clone()).collect();
        self.emitter.send(None, AgentItem::BackgroundTasks(tasks));
    }

    /// Ends the turn in flight; its unanswered `/ask`s can never be answered.
    fn end_turn(&mut self, status: TurnStatus, error: Option<String>, ctx: &mut Context<Self>) {
        if let Some(turn) = self.turn.end(status, error) {
            ctx.cancel_future(turn.data);
        }
        self.approvals.drain();
    }

    /// Starts a turn running the message's script (`internal`: the server wrote it)
    /// in its own future, which ends the turn when the script does.
    fn start_turn(
        &mut self,
        turn_id: TurnId,
        text: &str,
        images: &[ImageInput],
        internal: bool,
        ctx: &mut Context<Self>,
    ) {
        let run = Run {
            turn_id: turn_id.clone(),
            session_id: self.session_id.clone(),
            emitter: self.emitter.clone(),
            tools: self.tools.clone(),
            me: ctx.address(),
            cwd: self.cwd.clone(),
        };
        let steps = self.script(text, internal, images);
        let finished = turn_id.clone();
        let handle = ctx.spawn(run.execute(steps).into_actor(self).map(
            move |outcome, act, ctx| {
                if !act.turn.is(&finished) {
                    return; // already ended (interrupted, superseded)
                }
                // A script that stopped early (its session stopped taking
                // events, or an answer can no longer come) still ends its turn.
                let (status, error) = outcome.unwrap_or_else(|| {
                    (TurnStatus::Failed, Some("the script stopped early".into()))
                });
                act.end_turn(status, error, ctx);
            },
        ));
        if let Some(old) = self.turn.begin(turn_id, handle) {
            ctx.cancel_future(old.data);
        }
        self.turn.go_live();
    }

    /// The steps a message runs, remembering it: a server-written message's lines as
    /// text, else its script after any fork preface; then a line per image.
    fn script(&mut self, text: &str, internal: bool, images: &[ImageInput]) -> Vec<Step> {
        // A server-written message (a pushed-back result) quotes other
        // sessions' scripts: it is echoed as text, never executed.
        let mut steps: Vec<Step> = if internal {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| Step::Text(l.trim_end().to_string()))
                .collect()
        } else {
            // A fork's first message carries the source's turns: this agent
            // remembers their user messages and runs only the message itself.
            let (remembered, script) = fork_preface(text);
            self.memory.extend(remembered);
            let history = format!("history: {}", self.memory.join(" | "));
            parse_script(script)
                .into_iter()
                .map(|step| match step {
                    Step::History => Step::Text(history.clone()),
                    other => other,
                })
                .collect()
        };
        self.memory.push(fork_preface(text).1.to_string());
        // The scripted agent cannot look at images; it says what it got, so
        // tests see exactly which bytes reached the adapter.
        steps.extend(images.iter().map(|img| {
            let size = std::fs::metadata(&img.path).map_or(0, |m| m.len());
            Step::Text(format!(
                "received image {} ({}, {size} bytes)",
                img.upload_id, img.mime_type
            ))
        }));
        steps
    }
}

impl Actor for ScriptedAgent {
    type Context = Context<Self>;
}

/// Sent by a running script to its own actor to start a background task.
#[derive(Message)]
#[rtype(result = "()")]
struct StartBackground {
    id: String,
    ms: u64,
    description: String,
}

impl Handler<StartBackground> for ScriptedAgent {
    type Result = ();

    fn handle(&mut self, msg: StartBackground, ctx: &mut Context<Self>) {
        if let Some(pos) = self.tasks.iter().position(|(t, _)| t.task_id == msg.id) {
            let (_, handle) = self.tasks.remove(pos);
            ctx.cancel_future(handle);
        }
        let id = msg.id.clone();
        let handle = ctx.run_later(Duration::from_millis(msg.ms), move |act, _| {
            act.tasks.retain(|(t, _)| t.task_id != id);
            act.report_tasks();
        });
        self.tasks.push((
            BackgroundTask {
                task_id: msg.id,
                task_type: TaskType::Shell,
                description: msg.description,
                started_at: Some(now_ms()),
            },
            handle,
        ));
        self.report_tasks();
    }
}

impl Handler<AdapterCommand> for ScriptedAgent {
    type Result = ();

    fn handle(&mut self, msg: AdapterCommand, ctx: &mut Context<Self>) {
        match msg {
            AdapterCommand::StartTurn {
                turn_id,
                text,
                images,
                internal,
                settings,
            } => {
                self.stubborn = false;
                self.mode = settings.permission_mode;
                self.start_turn(turn_id, &text, &images, internal, ctx);
            }
            AdapterCommand::Interrupt { turn_id } => {
                if self.stubborn {
                    tracing::debug!(session = %self.session_id, turn = %turn_id, "stubborn script ignores an interrupt");
                    return;
                }
                if self.turn.is(&turn_id) {
                    self.end_turn(TurnStatus::Interrupted, None, ctx);
                }
            }
            AdapterCommand::StopTask { task_id } => {
                if let Some(pos) = self.tasks.iter().position(|(t, _)| t.task_id == task_id) {
                    let (_, handle) = self.tasks.remove(pos);
                    ctx.cancel_future(handle);
                    self.report_tasks();
                }
            }
            AdapterCommand::PermissionResponse {
                request_id,
                allow,
                message,
                remember,
                permission_mode,
                ..
            } => {
                if let Some(mode) = permission_mode {
                    self.mode = mode;
                }
                if let Some(reply) = self.approvals.answer(&request_id, allow && remember) {
                    let answer = if allow {
                        Answer::Allowed
                    } else {
                        Answer::Denied(message.unwrap_or_else(|| "denied".into()))
                    };
                    let _ = reply.send(answer);
                }
            }
            AdapterCommand::Configure { settings } => self.mode = settings.permission_mode,
            AdapterCommand::Fork { done, .. } => {
                // Not offered (no `fork` capability): its memory is the user
                // messages, which a fork's transcript carries.
                let _ = done.send(Err("the scripted agent forks by transcript".into()));
            }
            AdapterCommand::Rewind {
                drop_turns, done, ..
            } => {
                let keep = self
                    .memory
                    .len()
                    .saturating_sub(usize::try_from(drop_turns).unwrap_or(usize::MAX));
                self.memory.truncate(keep);
                let _ = done.send(Ok(()));
            }
        }
    }
}

/// Everything a running script needs, detached from the actor so it can be awaited.
struct Run {
    turn_id: TurnId,
    session_id: SessionId,
    /// This script's events go through it, paced.
    emitter: Emitter,
    tools: Tools,
    me: Addr<ScriptedAgent>,
    cwd: std::path::PathBuf,
}

/// How a script ended: `None` when it stopped because its session or actor is gone.
type Outcome = Option<(TurnStatus, Option<String>)>;

/// The `tool_result` of call `call_id`: its output, or its error as text.
fn tool_result(call_id: String, output: Result<Value, String>) -> EventBody {
    let (output, is_error) = match output {
        Ok(v) => (v, false),
        Err(e) => (Value::String(e), true),
    };
    EventBody::ToolResult {
        call_id,
        output,
        is_error,
    }
}

impl Run {
    /// Emits one event, waiting at the session's flow gate when a pacing window filled,
    /// so no script can flood the session, the store or the clients. False when the
    /// session is gone.
    async fn emit(&mut self, body: EventBody) -> bool {
        self.emitter.event(Some(self.turn_id.clone()), body);
        match self.emitter.take_due() {
            Some(wait) => wait.wait().await,
            None => true,
        }
    }

    /// Emits several events as one message, then waits at the flow gate like
    /// [`Run::emit`] when a pacing window filled.
    async fn emit_many(&mut self, bodies: Vec<EventBody>) -> bool {
        self.emitter.events(Some(self.turn_id.clone()), bodies);
        match self.emitter.take_due() {
            Some(wait) => wait.wait().await,
            None => true,
        }
    }

    /// Raises a permission request (unless the actor answers it at once) and waits for
    /// its answer; `None` when the agent stopped first.
    async fn ask(&self, tool: &str, input: &str) -> Option<Answer> {
        let (reply, answer) = oneshot::channel();
        self.me
            .send(Ask {
                turn_id: self.turn_id.clone(),
                tool: tool.to_string(),
                input: serde_json::from_str(input)
                    .unwrap_or_else(|_| Value::String(input.to_string())),
                reply,
            })
            .await
            .ok()?;
        answer.await.ok()
    }

    /// Emits each event in turn like [`Run::emit`]; false (emitting no more) once the
    /// session is gone.
    async fn emit_each(&mut self, bodies: impl IntoIterator<Item = EventBody>) -> bool {
        for body in bodies {
            if !self.emit(body).await {
                return false;
            }
        }
        true
    }

    /// Runs the steps in order: how the script ended.
    async fn execute(mut self, steps: Vec<Step>) -> Outcome {
        for (index, step) in steps.into_iter().enumerate() {
            if let ControlFlow::Break(outcome) = self.run_step(index, step).await {
                return outcome;
            }
        }
        Some((TurnStatus::Completed, None))
    }

    /// Runs step `index`; `Break` with the script's outcome when it ends the script.
    async fn run_step(&mut self, index: usize, step: Step) -> ControlFlow<Outcome> {
        let going = match step {
            Step::Text(line) => {
                let pieces = deltas(&line).into_iter();
                let pieces = pieces.map(|text| EventBody::TextDelta { text });
                self.emit_each(pieces.chain([EventBody::AssistantMessage { text: line }]))
                    .await
            }
            Step::Sleep(ms) => {
                actix_rt::time::sleep(Duration::from_millis(ms)).await;
                true
            }
            // Awaited in the script's own future, like `/sleep`: the actor keeps
            // handling its mailbox, and an interrupt cancels the future (and so
            // the wait) at once.
            #[cfg(feature = "test-hooks")]
            Step::Hold(name) => {
                crate::holds::wait(&name).await;
                true
            }
            #[cfg(not(feature = "test-hooks"))]
            Step::Hold(name) => return ControlFlow::Break(Some(hold_refused(&name))),
            Step::Stubborn(ms) => self.stubborn(ms).await,
            Step::Stream(n) => self.stream(n).await,
            Step::Tool { name, args } => self.call_tool(index, name, args).await,
            Step::Usage(usage) => {
                self.emitter
                    .send(Some(self.turn_id.clone()), AgentItem::Usage(usage));
                true
            }
            Step::Show { name, input } => self.show(index, name, input).await,
            Step::Think(text) => self.emit(EventBody::Thinking { text }).await,
            Step::Plan(entries) => self.emit(EventBody::Plan { entries }).await,
            // Replaced by its text when the turn starts; nothing left to run.
            Step::History => true,
            Step::Write { path, text } => self.write(index, path, text).await,
            Step::Fail(message) => {
                return ControlFlow::Break(Some((TurnStatus::Failed, Some(message))))
            }
            Step::Ask { tool, input } => self.ask_and_say(&tool, &input).await,
            Step::Background {
                id,
                ms,
                description,
            } => {
                // Awaited so the task set is reported before later steps' events.
                let start = StartBackground {
                    id,
                    ms,
                    description,
                };
                if self.me.send(start).await.is_err() {
                    let stopped = (TurnStatus::Failed, Some("agent stopped".into()));
                    return ControlFlow::Break(Some(stopped));
                }
                true
            }
        };
        if going {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(None)
        }
    }

    /// `/stubborn MS`: waits MS with interrupts ignored; false when the actor is gone.
    async fn stubborn(&self, ms: u64) -> bool {
        if self.me.send(Stubborn(true)).await.is_err() {
            return false;
        }
        actix_rt::time::sleep(Duration::from_millis(ms)).await;
        self.me.send(Stubborn(false)).await.is_ok()
    }

    /// `/stream N`: a pacing window of deltas at a time, as one message (the session
    /// appends them as one write), then the whole text.
    async fn stream(&mut self, n: u64) -> bool {
        let mut all = String::new();
        let mut window = Vec::new();
        for i in 0..n {
            let text = format!("chunk {i} ");
            all.push_str(&text);
            window.push(EventBody::TextDelta { text });
            if window.len() as u64 >= AWAIT_EVERY
                && !self.emit_many(std::mem::take(&mut window)).await
            {
                return false;
            }
        }
        window.push(EventBody::AssistantMessage { text: all });
        self.emit_many(window).await
    }

    /// `/tool NAME {json}` as step `index`: the call, the tool run through the router,
    /// its result.
    async fn call_tool(&mut self, index: usize, name: String, args: String) -> bool {
        let call_id = format!("{}_call_{index}", self.turn_id);
        let parsed = serde_json::from_str::<Value>(&args);
        let call = EventBody::ToolCall {
            call_id: call_id.clone(),
            name: name.clone(),
            input: match &parsed {
                Ok(input) => input.clone(),
                Err(_) => Value::String(args),
            },
            changes: Vec::new(),
        };
        if !self.emit(call).await {
            return false;
        }
        let output = match parsed {
            Ok(input) => self
                .tools
                .call(&self.session_id, &name, input)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("tool arguments are not JSON: {e}")),
        };
        self.emit(tool_result(call_id, output)).await
    }

    /// `/show NAME {json}` as step `index`: the call and an `ok` result, running
    /// nothing.
    async fn show(&mut self, index: usize, name: String, input: Value) -> bool {
        let call_id = format!("{}_call_{index}", self.turn_id);
        // Shown as the vendor whose shape the input has shows it.
        let changes = crate::adapter::edits::any(&name, &input);
        let call = EventBody::ToolCall {
            call_id: call_id.clone(),
            name,
            input,
            changes,
        };
        let ok = tool_result(call_id, Ok(Value::String("ok".into())));
        self.emit_each([call, ok]).await
    }

    /// `/write PATH TEXT` as step `index`: writes the file, then shows the call and
    /// its result.
    async fn write(&mut self, index: usize, path: String, text: String) -> bool {
        let call_id = format!("{}_call_{index}", self.turn_id);
        let call = EventBody::ToolCall {
            call_id: call_id.clone(),
            name: "write".into(),
            input: serde_json::json!({"path": path, "text": text}),
            changes: Vec::new(),
        };
        let written = crate::workspace::files::check_relative(&path)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                std::fs::write(self.cwd.join(&path), format!("{text}\n")).map_err(|e| e.to_string())
            });
        let output = written.map(|()| Value::String("ok".into()));
        self.emit_each([call, tool_result(call_id, output)]).await
    }

    /// `/ask TOOL {json}`: asks, then says the answer; false when the agent stopped
    /// first or the session is gone.
    async fn ask_and_say(&mut self, tool: &str, input: &str) -> bool {
        let line = match self.ask(tool, input).await {
            Some(Answer::Allowed) => format!("allowed {tool}"),
            Some(Answer::Denied(message)) => format!("denied {tool}: {message}"),
            None => return false,
        };
        self.emit(EventBody::AssistantMessage { text: line }).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_preface_is_remembered_not_run() {
        let entries = [("turn_1", "first"), ("turn_2", "/write a.txt x")].map(|(t, text)| {
            crate::handoff::Entry {
                seq: 1,
                turn_id: t.into(),
                speaker: crate::handoff::Speaker::User,
                text: text.into(),
            }
        });
        let text = format!(
            "{}/history",
            crate::handoff::fork_context("src", "Scripted", &entries)
        );
        let (remembered, script) = fork_preface(&text);
        assert_eq!(remembered, ["first", "/write a.txt x"]);
        assert_eq!(script, "/history");
        assert_eq!(fork_preface("plain"), (Vec::new(), "plain"));
    }

    #[test]
    fn parses_every_directive() {
        let steps = parse_script(
            "hello\n/sleep 5\n/hold h-1_A\n/hold a b\n/hold\n/stubborn 7\n/stream 3\n/tool t {\"a\":1}\n/background b1 100 long job\n/what x\n/sleep x\n\n/ask Bash {\"command\":\"ls\"}\n/fail boom\n/think hm\n/plan [{\"content\":\"a\"}]\n/plan nope",
        );
        assert_eq!(
            steps,
            vec![
                Step::Text("hello".into()),
                Step::Sleep(5),
                Step::Hold("h-1_A".into()),
                Step::Text("/hold a b".into()),
                Step::Text("/hold".into()),
                Step::Stubborn(7),
                Step::Stream(3),
                Step::Tool {
                    name: "t".into(),
                    args: "{\"a\":1}".into()
                },
                Step::Background {
                    id: "b1".into(),
                    ms: 100,
                    description: "long job".into()
                },
                Step::Text("/what x".into()),
                Step::Text("/sleep x".into()),
                Step::Ask {
                    tool: "Bash".into(),
                    input: "{\"command\":\"ls\"}".into()
                },
                Step::Fail("boom".into()),
                Step::Think("hm".into()),
                Step::Plan(vec![tandem_protocol::PlanEntry {
                    content: "a".into(),
                    status: Default::default(),
                    priority: Default::default(),
                }]),
                Step::Text("/plan nope".into()),
            ]
        );
    }

    #[cfg(not(feature = "test-hooks"))]
    #[test]
    fn a_hold_fails_the_turn_without_test_hooks() {
        let (status, error) = hold_refused("h");
        assert_eq!(status, TurnStatus::Failed);
        assert_eq!(
            error.as_deref(),
            Some("`/hold h` needs a test build of the server (feature test-hooks)")
        );
    }

    #[test]
    fn deltas_rejoin_to_the_line() {
        for line in ["a", "hello world", "ünïcödé text here"] {
            let parts = deltas(line);
            assert!(parts.len() <= 3);
            assert_eq!(parts.concat(), line);
        }
    }
}
