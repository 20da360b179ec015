//! One tandem session the editor follows: where its subscription stands, the prompt
//! or load waiting on it, what each of its frames means for the editor, and, for a
//! Driver, the delegations to its Workers being shown.

use std::collections::{HashSet, VecDeque};

use serde_json::Value;
use tokio::sync::oneshot;

use super::delegation::{Delegations, Relay};
use super::mapping::Mapper;

/// Turns that ended before `chat.send` answered with their id, kept for that answer.
const ENDED_KEPT: usize = 16;

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// `completed`, `interrupted` or `failed`.
    pub status: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Its usage (`turn_completed.usage`).
    pub usage: Option<tandem_protocol::TurnUsage>,
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
    /// The delegations of this (Driver) session shown, one per Worker, and its
    /// `send_to_partner` calls waiting for theirs to start.
    delegations: Delegations,
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
            delegations: Delegations::default(),
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
                if let Some(turn) = event["turnId"].as_str() {
                    self.delegations.turn_ended(turn);
                }
                self.updates(event)
            }
            "pair_created" => {
                // Replayed too: a call may name a Worker paired before.
                self.delegations.paired(event);
                if live {
                    vec![Effect::Configured(event.clone())]
                } else {
                    self.updates(event)
                }
            }
            "config_changed" | "pair_closed" if live => {
                vec![Effect::Configured(event.clone())]
            }
            "tool_call" if live && event["name"] == "send_to_partner" => {
                self.delegations.called(event);
                self.updates(event)
            }
            "tool_result" => {
                if let Some(call) = event["callId"].as_str() {
                    self.delegations.answered(call);
                }
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

    /// A delegation of this (Driver) session to one of its Workers started or ended.
    fn on_delegation(&mut self, event: &Value) -> Vec<Effect> {
        let worker = event["to"].as_str().unwrap_or_default();
        if event["active"] == true {
            let seq = event["seq"].as_u64().unwrap_or_default();
            return self.delegations.start(worker, seq);
        }
        self.delegations.end(worker, &event["changes"])
    }

    /// The Worker's progress goes first in the content of the `send_to_partner`
    /// call's result that showed it (a result replaces the call's content).
    fn with_progress(&self, update: &mut Value) {
        let call = update["toolCallId"].as_str().unwrap_or_default();
        let Some(parts) = self.delegations.parts_of_call(call) else {
            return;
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

    /// The delegation shown for `worker`: its running one, else its last.
    fn relay_of(&mut self, worker: &str) -> Option<&mut Relay> {
        self.delegations.of(worker)
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
            usage: serde_json::from_value(event["usage"].clone()).ok(),
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

    /// An event of the Worker session `worker`.
    fn wev(worker: &str, seq: u64, kind: &str, fields: Value) -> Value {
        let mut e = ev(seq, kind, "wt", fields);
        e["sessionId"] = json!(worker);
        e
    }

    /// The texts of a `tool_call_update`'s content.
    fn texts(update: &Value) -> Vec<&str> {
        update["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["content"]["text"].as_str().unwrap())
            .collect()
    }

    /// The updates among `effects`.
    fn updates(effects: &[Effect]) -> Vec<&Value> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Update(u) => Some(u),
                _ => None,
            })
            .collect()
    }

    /// A Driver `s` with the Workers `w1` (named `alice`) and `w2` (`bob`).
    fn driver_of_two() -> Followed {
        let mut f = Followed::new(0, None);
        f.on_subscribed(&json!({"lastSeq": 2}));
        for (seq, id, name) in [(1, "w1", "alice"), (2, "w2", "bob")] {
            let pair = json!({"pairId": format!("p{seq}"), "driverId": "s", "workerId": id,
                "workerName": name, "createdAt": 0});
            f.on_event(&ev(seq, "pair_created", "t0", json!({ "pair": pair })));
        }
        f
    }

    #[test]
    fn overlapping_delegations_to_two_workers_each_show_their_own_worker() {
        let mut f = driver_of_two();
        // Two calls at once; the first names bob by name, the second w1 by id, and
        // w1's delegation starts first.
        let call = |id: &str, worker: &str| {
            json!({"callId": id, "name": "send_to_partner",
                "input": {"message": "go", "worker": worker}})
        };
        f.on_event(&ev(3, "tool_call", "t1", call("c1", "bob")));
        f.on_event(&ev(4, "tool_call", "t1", call("c2", "w1")));
        let delegation = |worker: &str, active: bool, changes: Value| {
            json!({"from": "s", "to": worker, "active": active, "pairId": "p",
                "changes": changes})
        };
        let started = f.on_event(&ev(
            5,
            "delegation",
            "t1",
            delegation("w1", true, Value::Null),
        ));
        assert_eq!(started, [Effect::Watch("w1".into())]);
        let started = f.on_event(&ev(
            6,
            "delegation",
            "t1",
            delegation("w2", true, Value::Null),
        ));
        // The first delegation goes on.
        assert_eq!(started, [Effect::Watch("w2".into())]);
        for w in ["w1", "w2"] {
            assert!(f.on_worker_subscribed(w, &json!({"lastSeq": 0})).is_empty());
            f.on_worker_event(w, &wev(w, 1, "delegation", json!({"active": true})));
        }
        let said = f.on_worker_event(
            "w1",
            &wev("w1", 2, "assistant_message", json!({"text": "w1 on it"})),
        );
        assert_eq!(updates(&said)[0]["toolCallId"], "c2");
        assert_eq!(texts(updates(&said)[0]), ["w1 on it"]);
        let said = f.on_worker_event(
            "w2",
            &wev("w2", 2, "assistant_message", json!({"text": "w2 on it"})),
        );
        assert_eq!(updates(&said)[0]["toolCallId"], "c1");
        assert_eq!(texts(updates(&said)[0]), ["w2 on it"]);
        // w2 ends first: its changes, in its call, once.
        let changes = json!({"branch": "tandem/w2", "files": 1, "added": 2, "removed": 0});
        let ended = f.on_event(&ev(7, "delegation", "t1", delegation("w2", false, changes)));
        let [Effect::Update(end)] = ended.as_slice() else {
            panic!("{ended:?}");
        };
        assert_eq!(end["toolCallId"], "c1");
        assert_eq!(
            texts(end),
            ["w2 on it", "Worker changes on tandem/w2: 1 files, +2 -0"]
        );
        assert!(f
            .on_event(&ev(
                8,
                "delegation",
                "t1",
                delegation("w2", false, Value::Null)
            ))
            .is_empty());
        // w1 is still shown in its own call.
        let said = f.on_worker_event(
            "w1",
            &wev("w1", 3, "assistant_message", json!({"text": "w1 still"})),
        );
        assert_eq!(updates(&said)[0]["toolCallId"], "c2");
        assert_eq!(texts(updates(&said)[0]), ["w1 on it", "w1 still"]);
        let ended = f.on_event(&ev(
            9,
            "delegation",
            "t1",
            delegation("w1", false, Value::Null),
        ));
        let [Effect::Update(end)] = ended.as_slice() else {
            panic!("{ended:?}");
        };
        assert_eq!(end["toolCallId"], "c2");
        assert_eq!(texts(end), ["w1 on it", "w1 still"]);
        // Each call's result carries its own Worker's progress.
        for (seq, call, first) in [(10, "c1", "w2 on it"), (11, "c2", "w1 on it")] {
            let result = json!({"callId": call, "output": "done", "isError": false});
            let result = f.on_event(&ev(seq, "tool_result", "t1", result));
            let texts = texts(updates(&result)[0]);
            assert_eq!((texts[0], texts.last().copied()), (first, Some("done")));
        }
        // Each Worker's own end lets that one go.
        assert_eq!(
            f.on_worker_event("w2", &wev("w2", 3, "delegation", json!({"active": false}))),
            [Effect::Unwatch("w2".into())]
        );
        assert_eq!(
            f.on_worker_event("w1", &wev("w1", 4, "delegation", json!({"active": false}))),
            [Effect::Unwatch("w1".into())]
        );
    }

    #[test]
    fn a_workers_restart_without_an_end_ends_its_last_delegation() {
        let mut f = Followed::new(0, None);
        f.on_subscribed(&json!({"lastSeq": 0}));
        let call = json!({"callId": "c1", "name": "send_to_partner", "input": {"message": "go"}});
        f.on_event(&ev(1, "tool_call", "t1", call));
        let start = json!({"from": "s", "to": "w", "active": true, "pairId": "p"});
        f.on_event(&ev(2, "delegation", "t1", start.clone()));
        f.on_worker_subscribed("w", &json!({"lastSeq": 0}));
        f.on_worker_event("w", &wev("w", 1, "delegation", json!({"active": true})));
        f.on_worker_event(
            "w",
            &wev("w", 2, "assistant_message", json!({"text": "first"})),
        );
        // The Worker's end is seen, the Driver's is not.
        assert!(f
            .on_worker_event("w", &wev("w", 3, "delegation", json!({"active": false})))
            .is_empty());
        // A new start (here not by a call): the last one's call is brought up to
        // date, the Worker stays followed, and a call of ours shows the new one.
        let restarted = f.on_event(&ev(5, "delegation", "t2", start));
        assert!(
            !restarted.contains(&Effect::Unwatch("w".into())),
            "{restarted:?}"
        );
        assert!(restarted.contains(&Effect::Watch("w".into())));
        let shown = updates(&restarted);
        assert_eq!(shown.len(), 2, "{restarted:?}");
        assert_eq!(shown[0]["toolCallId"], "c1");
        assert_eq!(texts(shown[0]), ["first"]);
        assert_eq!(shown[1]["toolCallId"], "delegation_5");
        // Followed again from the start of its history, for the new one.
        f.on_worker_subscribed("w", &json!({"lastSeq": 3}));
        f.on_worker_event("w", &wev("w", 1, "delegation", json!({"active": true})));
        f.on_worker_event(
            "w",
            &wev("w", 2, "assistant_message", json!({"text": "first"})),
        );
        f.on_worker_event("w", &wev("w", 3, "delegation", json!({"active": false})));
        f.on_worker_event("w", &wev("w", 4, "delegation", json!({"active": true})));
        let said = f.on_worker_event(
            "w",
            &wev("w", 5, "assistant_message", json!({"text": "second"})),
        );
        assert_eq!(updates(&said)[0]["toolCallId"], "delegation_5");
        assert_eq!(texts(updates(&said)[0]), ["second"]);
    }

    #[test]
    fn a_refused_call_is_not_given_to_a_later_delegation() {
        let mut f = Followed::new(0, None);
        f.on_subscribed(&json!({"lastSeq": 0}));
        let call = json!({"callId": "c1", "name": "send_to_partner", "input": {"message": "go"}});
        f.on_event(&ev(1, "tool_call", "t1", call));
        let refused = json!({"callId": "c1", "output": "no", "isError": true});
        f.on_event(&ev(2, "tool_result", "t1", refused));
        // A delegation that came another way (an accepted proposal).
        let start = json!({"from": "s", "to": "w", "active": true, "pairId": "p"});
        let started = f.on_event(&ev(3, "delegation", "t1", start));
        assert_eq!(updates(&started)[0]["toolCallId"], "delegation_3");
    }
}
