//! One tandem session the editor follows: where its subscription stands, the prompt
//! or load waiting on it, what each of its frames means for the editor, and, for a
//! Driver, the delegation to its Worker being shown.

use std::collections::{HashSet, VecDeque};

use serde_json::Value;
use tokio::sync::oneshot;

use super::delegation::Relay;
use super::mapping::Mapper;

/// Turns that ended before `chat.send` answered with their id, kept for that answer.
const ENDED_KEPT: usize = 16;

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `completed`, `interrupted` or `failed`.
    pub status: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Its usage as the vendor reported it (`turn_completed.usage`).
    pub usage: Option<Value>,
}

/// A `session/prompt` waiting for its turn to end.
#[derive(Debug)]
struct Prompt {
    /// The turn `chat.send` started, once its answer came.
    turn: Option<String>,
    done: oneshot::Sender<Outcome>,
}

/// What a frame asks of the editor.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A `session/update` with this update.
    Update(Value),
    /// A `session/request_permission` for this pending request (the fields of a
    /// `permission_request`).
    Ask(Value),
    /// A `session/request_permission`, in this session, for a pending request of its
    /// Worker `worker` (answered to the Worker).
    AskFor {
        /// The Worker session that asks.
        worker: String,
        /// The fields of its `permission_request`.
        request: Value,
    },
    /// The session's settings or its Worker changed (this `config_changed`,
    /// `pair_created` or `pair_closed` event): the editor is told its config options
    /// and mode.
    Configured(Value),
    /// Follow this Worker session for the delegation shown in this session.
    Watch(String),
    /// The delegation ended: stop following this Worker for it.
    Unwatch(String),
}

/// A session followed over the connection.
#[derive(Debug)]
pub struct Followed {
    /// The newest `seq` handled; a frame at or below it is a repeat.
    last: u64,
    /// The session's `lastSeq` when the subscription started (its `chat_subscribed`):
    /// events up to it are history, later ones live.
    replay_until: Option<u64>,
    /// A `session/load` waiting for the history to be replayed.
    loading: Option<oneshot::Sender<()>>,
    prompt: Option<Prompt>,
    ended: VecDeque<(String, Outcome)>,
    mapper: Mapper,
    /// Permission requests already put to the editor.
    asked: HashSet<String>,
    /// The `send_to_partner` call of a live turn whose delegation has not started.
    partner_call: Option<String>,
    /// The delegation shown while the Worker holds it.
    relay: Option<Relay>,
    /// The last delegation shown, ended on the Driver's side: kept for the call's
    /// result (which may come after the delegation's end) and for the Worker's last
    /// events.
    relayed: Option<Relay>,
}

impl Followed {
    /// A subscription from the event after `after`; `loading` is told once every
    /// event the session had when it started was handled.
    pub fn new(after: u64, loading: Option<oneshot::Sender<()>>) -> Followed {
        Followed {
            last: after,
            replay_until: None,
            loading,
            prompt: None,
            ended: VecDeque::new(),
            mapper: Mapper::default(),
            asked: HashSet::new(),
            partner_call: None,
            relay: None,
            relayed: None,
        }
    }

    /// The session's working directory (its `SessionInfo.cwd`), against which the
    /// relative paths of its edits are shown.
    pub fn with_cwd(mut self, cwd: Option<&str>) -> Followed {
        if let Some(cwd) = cwd {
            self.mapper.set_cwd(cwd);
        }
        self
    }

    /// The session's working directory, where known.
    pub fn cwd(&self) -> Option<String> {
        self.mapper.cwd()
    }

    /// The newest `seq` handled (to subscribe again from).
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Whether a prompt waits for a turn of this session.
    pub fn prompting(&self) -> bool {
        self.prompt.is_some()
    }

    /// A prompt starts: `done` is told how its turn ended.
    pub fn start_prompt(&mut self, done: oneshot::Sender<Outcome>) {
        self.prompt = Some(Prompt { turn: None, done });
    }

    /// The editor closed the session: a prompt waiting on it answers `cancelled`
    /// (its turn is not stopped: the session is not the editor's alone).
    pub fn close(self) {
        if let Some(prompt) = self.prompt {
            let _ = prompt.done.send(Outcome {
                status: "interrupted".into(),
                error: None,
                usage: None,
            });
        }
    }

    /// The prompt's `chat.send` was refused: nothing waits any more.
    pub fn drop_prompt(&mut self) {
        self.prompt = None;
    }

    /// `chat.send` answered: the prompt's turn is `turn` (which may have ended
    /// already).
    pub fn turn_accepted(&mut self, turn: &str) {
        if let Some(i) = self.ended.iter().position(|(t, _)| t == turn) {
            if let (Some(prompt), Some((_, outcome))) = (self.prompt.take(), self.ended.remove(i)) {
                let _ = prompt.done.send(outcome);
            }
            return;
        }
        if let Some(prompt) = &mut self.prompt {
            prompt.turn = Some(turn.to_string());
        }
    }

    /// The session's `chat_subscribed`: from here on events past its `lastSeq` are
    /// live; its pending permission requests are put to the editor.
    pub fn on_subscribed(&mut self, frame: &Value) -> Vec<Effect> {
        let until = frame["lastSeq"].as_u64().unwrap_or_default();
        self.replay_until = Some(self.replay_until.map_or(until, |u| u.max(until)));
        let effects = frame["pendingPermissions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| self.ask(p))
            .collect();
        self.check_loaded();
        effects
    }

    /// One event of the session.
    pub fn on_event(&mut self, event: &Value) -> Vec<Effect> {
        let Some(seq) = event["seq"].as_u64() else {
            return Vec::new();
        };
        if seq <= self.last {
            return Vec::new();
        }
        self.last = seq;
        let live = self.replay_until.is_some_and(|until| seq > until);
        let effects = match event["kind"].as_str().unwrap_or_default() {
            "permission_request" if live => self.ask(event).into_iter().collect(),
            "turn_completed" => {
                self.turn_ended(event);
                self.updates(event)
            }
            "config_changed" | "pair_created" | "pair_closed" if live => {
                vec![Effect::Configured(event.clone())]
            }
            "tool_call" if live && event["name"] == "send_to_partner" => {
                self.partner_call = event["callId"].as_str().map(str::to_string);
                self.updates(event)
            }
            "tool_result" => {
                let mut effects = self.updates(event);
                if let Some(Effect::Update(update)) = effects.first_mut() {
                    self.with_progress(update);
                }
                effects
            }
            // Only the Driver's side of its own delegations (a Worker's history has
            // them too).
            "delegation" if live && event["from"] == event["sessionId"] => {
                self.on_delegation(event)
            }
            // The editor wrote its prompt itself; other clients' messages are shown.
            "user_message" if live && self.own_turn(event) => Vec::new(),
            _ => self
                .mapper
                .updates(event)
                .into_iter()
                .map(Effect::Update)
                .collect(),
        };
        self.check_loaded();
        effects
    }

    fn updates(&mut self, event: &Value) -> Vec<Effect> {
        self.mapper
            .updates(event)
            .into_iter()
            .map(Effect::Update)
            .collect()
    }

    /// A delegation of this (Driver) session started or ended.
    fn on_delegation(&mut self, event: &Value) -> Vec<Effect> {
        let worker = event["to"].as_str().unwrap_or_default();
        if event["active"] == true {
            let mut effects = match self.relay.as_mut() {
                // A start we never saw the end of: that one is over.
                Some(old) => old.finish(&Value::Null),
                None => Vec::new(),
            };
            // The Worker's subscription, if still held for the last one, goes on.
            effects.retain(|e| !matches!(e, Effect::Unwatch(_)));
            self.relayed = None;
            let seq = event["seq"].as_u64().unwrap_or_default();
            let (relay, started) = Relay::start(worker, self.partner_call.take(), seq);
            self.relay = Some(relay);
            effects.extend(started);
            return effects;
        }
        match self.relay.take() {
            Some(mut relay) if relay.worker == worker => {
                let effects = relay.finish(&event["changes"]);
                self.relayed = Some(relay);
                effects
            }
            other => {
                self.relay = other;
                Vec::new()
            }
        }
    }

    /// The Worker's progress goes first in the content of the `send_to_partner`
    /// call's result that showed it (a result replaces the call's content).
    fn with_progress(&self, update: &mut Value) {
        let call = update["toolCallId"].as_str().unwrap_or_default();
        let parts = match (&self.relay, &self.relayed) {
            (Some(r), _) if r.call_id == call => r.parts(),
            (_, Some(r)) if r.call_id == call => r.parts(),
            _ => return,
        };
        if parts.is_empty() {
            return;
        }
        let mut content = parts.to_vec();
        if let Some(own) = update["content"].as_array() {
            content.extend(own.iter().cloned());
        }
        update["content"] = Value::Array(content);
    }

    /// The Worker session `worker` (followed for a delegation of this one) was
    /// subscribed to.
    pub fn on_worker_subscribed(&mut self, worker: &str, frame: &Value) -> Vec<Effect> {
        match self.relay_of(worker) {
            Some(relay) => relay.on_subscribed(frame),
            None => Vec::new(),
        }
    }

    /// An event of the Worker session followed for a delegation of this one.
    pub fn on_worker_event(&mut self, worker: &str, event: &Value) -> Vec<Effect> {
        match self.relay_of(worker) {
            Some(relay) => relay.on_event(event),
            None => Vec::new(),
        }
    }

    /// The delegation shown for `worker`: the running one, else the last.
    fn relay_of(&mut self, worker: &str) -> Option<&mut Relay> {
        match (&mut self.relay, &mut self.relayed) {
            (Some(r), _) if r.worker == worker => Some(r),
            (_, Some(r)) if r.worker == worker => Some(r),
            _ => None,
        }
    }

    fn own_turn(&self, event: &Value) -> bool {
        self.prompt.as_ref().is_some_and(|p| match &p.turn {
            None => true,
            Some(turn) => event["turnId"] == turn.as_str(),
        })
    }

    fn ask(&mut self, request: &Value) -> Option<Effect> {
        let id = request["requestId"].as_str()?;
        self.asked
            .insert(id.to_string())
            .then(|| Effect::Ask(request.clone()))
    }

    fn turn_ended(&mut self, event: &Value) {
        let Some(turn) = event["turnId"].as_str() else {
            return;
        };
        let outcome = Outcome {
            status: event["status"].as_str().unwrap_or("failed").to_string(),
            error: event["error"].as_str().map(str::to_string),
            usage: Some(event["usage"].clone()).filter(|u| !u.is_null()),
        };
        match self.prompt.as_ref().map(|p| p.turn.as_deref()) {
            Some(Some(t)) if t == turn => {
                if let Some(prompt) = self.prompt.take() {
                    let _ = prompt.done.send(outcome);
                }
            }
            Some(None) => {
                if self.ended.len() == ENDED_KEPT {
                    self.ended.pop_front();
                }
                self.ended.push_back((turn.to_string(), outcome));
            }
            _ => {}
        }
    }

    fn check_loaded(&mut self) {
        if self.replay_until.is_some_and(|until| self.last >= until) {
            if let Some(loaded) = self.loading.take() {
                let _ = loaded.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, kind: &str, turn: &str, fields: Value) -> Value {
        let mut e = json!({"kind": kind, "seq": seq, "sessionId": "s", "turnId": turn});
        if let (Some(e), Value::Object(f)) = (e.as_object_mut(), fields) {
            e.extend(f);
        }
        e
    }

    #[test]
    fn a_prompt_learns_how_its_turn_ended_even_before_chat_send_answers() {
        let mut f = Followed::new(0, None);
        f.on_subscribed(&json!({"lastSeq": 0}));
        let (tx, mut rx) = oneshot::channel();
        f.start_prompt(tx);
        // Its own user message is not echoed; the answer is.
        assert!(f
            .on_event(&ev(1, "user_message", "turn_1", json!({"text": "hi"})))
            .is_empty());
        let said = f.on_event(&ev(2, "assistant_message", "turn_1", json!({"text": "hi"})));
        assert_eq!(said.len(), 1);
        f.on_event(&ev(
            3,
            "turn_completed",
            "turn_1",
            json!({"status": "completed"}),
        ));
        assert!(rx.try_recv().is_err());
        f.turn_accepted("turn_1");
        assert_eq!(
            rx.try_recv().ok(),
            Some(Outcome {
                status: "completed".into(),
                error: None,
                usage: None
            })
        );
        assert!(!f.prompting());

        let (tx, mut rx) = oneshot::channel();
        f.start_prompt(tx);
        f.turn_accepted("turn_2");
        // Repeats are dropped.
        assert!(f
            .on_event(&ev(3, "assistant_message", "turn_1", json!({"text": "x"})))
            .is_empty());
        f.on_event(&ev(
            4,
            "turn_completed",
            "turn_2",
            json!({"status": "failed", "error": "boom"}),
        ));
        assert_eq!(
            rx.try_recv().ok().and_then(|o| o.error),
            Some("boom".into())
        );
    }

    #[test]
    fn a_load_waits_for_the_history_and_asks_only_pending_permissions() {
        let (tx, mut rx) = oneshot::channel();
        let mut f = Followed::new(0, Some(tx));
        let pending = json!({"requestId": "perm_2", "toolName": "t"});
        let asks = f.on_subscribed(&json!({"lastSeq": 3, "pendingPermissions": [pending]}));
        assert_eq!(asks, [Effect::Ask(pending.clone())]);
        // History: a user message is replayed, an old permission request is not asked.
        let replayed = f.on_event(&ev(1, "user_message", "turn_1", json!({"text": "hi"})));
        assert!(
            matches!(replayed.as_slice(), [Effect::Update(u)] if u["sessionUpdate"] == "user_message_chunk")
        );
        assert!(f
            .on_event(&ev(
                2,
                "permission_request",
                "turn_1",
                json!({"requestId": "perm_1"})
            ))
            .is_empty());
        assert!(rx.try_recv().is_err());
        // The pending one, replayed, is not asked twice.
        assert!(f
            .on_event(&ev(3, "permission_request", "turn_1", pending))
            .is_empty());
        assert_eq!(rx.try_recv().ok(), Some(()));
        // Live requests are asked.
        let live = f.on_event(&ev(
            4,
            "permission_request",
            "turn_2",
            json!({"requestId": "perm_3"}),
        ));
        assert_eq!(live.len(), 1);
    }

    #[test]
    fn a_drivers_delegation_shows_its_workers_progress_in_its_call() {
        let mut f = Followed::new(0, None);
        f.on_subscribed(&json!({"lastSeq": 0}));
        let call = json!({"callId": "c1", "name": "send_to_partner", "input": {"message": "go"}});
        f.on_event(&ev(1, "tool_call", "t1", call));
        let start = json!({"from": "s", "to": "w", "active": true, "pairId": "p"});
        let started = f.on_event(&ev(2, "delegation", "t1", start));
        assert_eq!(started, [Effect::Watch("w".into())]);
        // The Worker's history: its own start of the delegation, then its work.
        assert!(f
            .on_worker_subscribed("w", &json!({"lastSeq": 0}))
            .is_empty());
        let worker = |seq: u64, kind: &str, fields: Value| {
            let mut e = ev(seq, kind, "wt", fields);
            e["sessionId"] = json!("w");
            e
        };
        f.on_worker_event("w", &worker(1, "delegation", json!({"active": true})));
        let said = f.on_worker_event(
            "w",
            &worker(2, "assistant_message", json!({"text": "on it"})),
        );
        assert!(
            matches!(said.as_slice(), [Effect::Update(u)] if u["toolCallId"] == "c1"),
            "{said:?}"
        );
        // The Driver's end, then the call's result: the progress comes first.
        let end = json!({"from": "s", "to": "w", "active": false, "pairId": "p"});
        f.on_event(&ev(3, "delegation", "t1", end));
        let result = f.on_event(&ev(
            4,
            "tool_result",
            "t1",
            json!({"callId": "c1", "output": "done", "isError": false}),
        ));
        let [Effect::Update(update)] = result.as_slice() else {
            panic!("{result:?}");
        };
        let texts: Vec<&Value> = update["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["content"]["text"])
            .collect();
        assert_eq!(texts, ["on it", "done"]);
        // The Worker's own end lets it go.
        assert_eq!(
            f.on_worker_event("w", &worker(3, "delegation", json!({"active": false}))),
            [Effect::Unwatch("w".into())]
        );
    }

    #[test]
    fn an_empty_session_is_loaded_at_once() {
        let (tx, mut rx) = oneshot::channel();
        let mut f = Followed::new(0, Some(tx));
        f.on_subscribed(&json!({"lastSeq": 0}));
        assert_eq!(rx.try_recv().ok(), Some(()));
    }
}
