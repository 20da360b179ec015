//! The built-in `scripted` vendor: deterministic turns driven by the user's message,
//! line by line. Used by the quick start, the tests and the benchmarks.
//!
//! - plain line → a few `text_delta`s, then one `assistant_message`
//! - `/sleep MS` → waits (an interrupt ends the wait at once)
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
//! - any other `/word` line is echoed as text
//!
//! Messages the server writes (pushed-back results) are echoed line by line and never
//! executed: they quote other sessions' scripts.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tandem_protocol::{BackgroundTask, EventBody, PermissionMode, TaskType, TurnStatus};
use tokio::sync::oneshot;

use super::messages::{AdapterCommand, AgentItem, AgentOutput};
use crate::adapter::messages::Pace;
use crate::adapter::Tools;
use crate::clock::{now_ms, random_id};

/// A script waits for the session to take every this many events, and then at the
/// session's flow gate: the session's mailbox stays short (an interrupt behind it is
/// handled promptly) and a fast script cannot outrun fan-out to clients.
const AWAIT_EVERY: u64 = 32;

/// One line of a script.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Text(String),
    Sleep(u64),
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

/// Splits a line into at most three pieces on character boundaries.
fn deltas(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let size = chars.len().div_ceil(3).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Adapter actor for one scripted session.
pub struct ScriptedAgent {
    /// The session this agent works for (tool calls are made as it).
    session_id: String,
    /// The session actor: every [`AgentOutput`] the script produces goes there.
    out: Recipient<AgentOutput>,
    /// Awaited while streaming fast, so the script does not outrun fan-out.
    pace: Recipient<Pace>,
    /// Tool calls go through here.
    tools: Tools,
    /// The running turn and the handle that cancels it.
    turn: Option<(String, SpawnHandle)>,
    /// Live background tasks and the timers that end them.
    tasks: Vec<(BackgroundTask, SpawnHandle)>,
    /// Permission requests of the running script, waiting for an answer.
    asks: HashMap<String, oneshot::Sender<Answer>>,
    /// The running script is in a `/stubborn` step: interrupts are ignored.
    stubborn: bool,
}

/// A person's answer to an `/ask`: allowed, or denied with a message.
type Answer = Result<(), String>;

/// Sent by a running script to its own actor: wait for the answer to `request_id`.
#[derive(Message)]
#[rtype(result = "()")]
struct AwaitAnswer {
    request_id: String,
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

impl Handler<AwaitAnswer> for ScriptedAgent {
    type Result = ();

    fn handle(&mut self, msg: AwaitAnswer, _: &mut Context<Self>) {
        // Requests of a finished script can never be answered.
        self.asks.retain(|_, tx| !tx.is_closed());
        self.asks.insert(msg.request_id, msg.reply);
    }
}

impl ScriptedAgent {
    /// A new agent reporting to `out`.
    pub fn new(
        session_id: String,
        out: Recipient<AgentOutput>,
        pace: Recipient<Pace>,
        tools: Tools,
    ) -> Self {
        ScriptedAgent {
            session_id,
            out,
            pace,
            tools,
            turn: None,
            tasks: Vec::new(),
            asks: HashMap::new(),
            stubborn: false,
        }
    }

    fn report_tasks(&self) {
        let tasks = self.tasks.iter().map(|(t, _)| t.clone()).collect();
        self.out.do_send(AgentOutput {
            turn_id: None,
            item: AgentItem::BackgroundTasks(tasks),
        });
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
                internal,
                settings,
            } => {
                self.stubborn = false;
                if let Some((old, handle)) = self.turn.take() {
                    // The session never starts a turn while one runs; if it somehow
                    // did, the old turn still ends exactly once.
                    ctx.cancel_future(handle);
                    self.out.do_send(AgentOutput {
                        turn_id: Some(old),
                        item: AgentItem::TurnEnded {
                            status: TurnStatus::Interrupted,
                            error: Some("superseded by a new turn".into()),
                        },
                    });
                }
                let run = Run {
                    turn_id: turn_id.clone(),
                    session_id: self.session_id.clone(),
                    out: self.out.clone(),
                    pace: self.pace.clone(),
                    tools: self.tools.clone(),
                    me: ctx.address(),
                    bypass: settings.permission_mode == PermissionMode::BypassPermissions,
                    emitted: std::cell::Cell::new(0),
                };
                let finished = turn_id.clone();
                // A server-written message (a pushed-back result) quotes other
                // sessions' scripts: it is echoed as text, never executed.
                let steps = if internal {
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(|l| Step::Text(l.trim_end().to_string()))
                        .collect()
                } else {
                    parse_script(&text)
                };
                let handle =
                    ctx.spawn(run.execute(steps).into_actor(self).map(move |_, act, _| {
                        if act.turn.as_ref().is_some_and(|(id, _)| *id == finished) {
                            act.turn = None;
                        }
                    }));
                self.turn = Some((turn_id, handle));
            }
            AdapterCommand::Interrupt { turn_id } => {
                if self.stubborn {
                    tracing::debug!(session = %self.session_id, turn = %turn_id, "stubborn script ignores an interrupt");
                    return;
                }
                if self.turn.as_ref().is_some_and(|(id, _)| *id == turn_id) {
                    if let Some((id, handle)) = self.turn.take() {
                        ctx.cancel_future(handle);
                        self.out.do_send(AgentOutput {
                            turn_id: Some(id),
                            item: AgentItem::TurnEnded {
                                status: TurnStatus::Interrupted,
                                error: None,
                            },
                        });
                    }
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
                ..
            } => {
                if let Some(reply) = self.asks.remove(&request_id) {
                    let answer = if allow {
                        Ok(())
                    } else {
                        Err(message.unwrap_or_else(|| "denied".into()))
                    };
                    let _ = reply.send(answer);
                }
            }
            // Settings arrive with every turn; the script has no process to update.
            AdapterCommand::Configure { .. } => {}
        }
    }
}

/// Everything a running script needs, detached from the actor so it can be awaited.
struct Run {
    turn_id: String,
    session_id: String,
    out: Recipient<AgentOutput>,
    pace: Recipient<Pace>,
    tools: Tools,
    me: Addr<ScriptedAgent>,
    /// `/ask` is allowed without asking.
    bypass: bool,
    /// Events emitted so far in this turn.
    emitted: std::cell::Cell<u64>,
}

impl Run {
    /// Emits one event. Every [`AWAIT_EVERY`] events it waits for the session to take
    /// them and then at the session's flow gate, so no script can flood the session,
    /// the store or the clients. False when the session is gone.
    async fn emit(&self, body: EventBody) -> bool {
        let output = AgentOutput {
            turn_id: Some(self.turn_id.clone()),
            item: AgentItem::Event(body),
        };
        let n = self.emitted.get() + 1;
        self.emitted.set(n);
        if !n.is_multiple_of(AWAIT_EVERY) {
            self.out.do_send(output);
            return true;
        }
        self.out.send(output).await.is_ok() && self.pace.send(Pace).await.is_ok()
    }

    /// Raises a permission request and waits for its answer; `None` when the agent
    /// stopped first.
    async fn ask(&self, tool: &str, input: &str) -> Option<Answer> {
        let request_id = random_id("perm_", 12);
        let (reply, answer) = oneshot::channel();
        self.me
            .send(AwaitAnswer {
                request_id: request_id.clone(),
                reply,
            })
            .await
            .ok()?;
        self.out
            .send(AgentOutput {
                turn_id: Some(self.turn_id.clone()),
                item: AgentItem::PermissionRequest {
                    request_id,
                    tool_name: tool.to_string(),
                    input: serde_json::from_str(input)
                        .unwrap_or_else(|_| Value::String(input.to_string())),
                    options: Vec::new(),
                },
            })
            .await
            .ok()?;
        answer.await.ok()
    }

    fn end(&self, status: TurnStatus, error: Option<String>) {
        self.out.do_send(AgentOutput {
            turn_id: Some(self.turn_id.clone()),
            item: AgentItem::TurnEnded { status, error },
        });
    }

    async fn execute(self, steps: Vec<Step>) {
        for (index, step) in steps.into_iter().enumerate() {
            match step {
                Step::Text(line) => {
                    for piece in deltas(&line) {
                        if !self.emit(EventBody::TextDelta { text: piece }).await {
                            return;
                        }
                    }
                    if !self.emit(EventBody::AssistantMessage { text: line }).await {
                        return;
                    }
                }
                Step::Sleep(ms) => actix_rt::time::sleep(Duration::from_millis(ms)).await,
                Step::Stubborn(ms) => {
                    if self.me.send(Stubborn(true)).await.is_err() {
                        return;
                    }
                    actix_rt::time::sleep(Duration::from_millis(ms)).await;
                    if self.me.send(Stubborn(false)).await.is_err() {
                        return;
                    }
                }
                Step::Stream(n) => {
                    let mut all = String::new();
                    for i in 0..n {
                        let text = format!("chunk {i} ");
                        all.push_str(&text);
                        if !self.emit(EventBody::TextDelta { text }).await {
                            return;
                        }
                    }
                    if !self.emit(EventBody::AssistantMessage { text: all }).await {
                        return;
                    }
                }
                Step::Tool { name, args } => {
                    let call_id = format!("{}_call_{index}", self.turn_id);
                    let parsed: Result<Value, String> = serde_json::from_str(&args)
                        .map_err(|e| format!("tool arguments are not JSON: {e}"));
                    let call = EventBody::ToolCall {
                        call_id: call_id.clone(),
                        name: name.clone(),
                        input: parsed.clone().unwrap_or(Value::String(args)),
                    };
                    if !self.emit(call).await {
                        return;
                    }
                    let result = match parsed {
                        Ok(input) => self
                            .tools
                            .call(&self.session_id, &name, input)
                            .await
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    let (output, is_error) = match result {
                        Ok(v) => (v, false),
                        Err(e) => (Value::String(e), true),
                    };
                    let result = EventBody::ToolResult {
                        call_id,
                        output,
                        is_error,
                    };
                    if !self.emit(result).await {
                        return;
                    }
                }
                Step::Fail(message) => {
                    self.end(TurnStatus::Failed, Some(message));
                    return;
                }
                Step::Ask { tool, input } => {
                    let answer = if self.bypass {
                        Ok(())
                    } else {
                        match self.ask(&tool, &input).await {
                            Some(answer) => answer,
                            None => return,
                        }
                    };
                    let line = match answer {
                        Ok(()) => format!("allowed {tool}"),
                        Err(message) => format!("denied {tool}: {message}"),
                    };
                    if !self.emit(EventBody::AssistantMessage { text: line }).await {
                        return;
                    }
                }
                Step::Background {
                    id,
                    ms,
                    description,
                } => {
                    // Awaited so the task set is reported before later steps' events.
                    if self
                        .me
                        .send(StartBackground {
                            id,
                            ms,
                            description,
                        })
                        .await
                        .is_err()
                    {
                        self.end(TurnStatus::Failed, Some("agent stopped".into()));
                        return;
                    }
                }
            }
        }
        self.end(TurnStatus::Completed, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_directive() {
        let steps = parse_script(
            "hello\n/sleep 5\n/stubborn 7\n/stream 3\n/tool t {\"a\":1}\n/background b1 100 long job\n/what x\n/sleep x\n\n/ask Bash {\"command\":\"ls\"}\n/fail boom",
        );
        assert_eq!(
            steps,
            vec![
                Step::Text("hello".into()),
                Step::Sleep(5),
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
            ]
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
