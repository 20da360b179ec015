//! A Driver's delegation as the editor sees it, pure: while the Driver's Worker holds
//! a delegation, the Worker's messages and tool calls (summarized) become the content
//! of a tool call in the Driver's session (the Driver's `send_to_partner` call, or a
//! call of our own when the delegation came another way, e.g. an accepted proposal),
//! the Worker's permission requests are asked in the Driver's session naming the
//! Worker, and the delegation's end adds what the Worker changed.
//!
//! The Worker is followed from the start of its history, because the delegated turn
//! may have begun before the Driver's `delegation` event reached us; what precedes the
//! Worker's own `delegation` start event is passed over, and what the replay found is
//! shown once the replay is done.
//!
//! A Driver may have several Workers, whose delegations run at the same time:
//! [`Delegations`] keeps one [`Relay`] per Worker, and gives each delegation start
//! the Driver's `send_to_partner` call that asked for it.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{json, Value};

use super::mapping;
use super::session::Effect;

/// One delegation of the Driver, shown as one tool call.
#[derive(Debug)]
pub struct Relay {
    /// The Worker session.
    pub worker: String,
    /// The tool call of the Driver's session that shows it.
    pub call_id: String,
    /// Whether that call is ours (so its end is ours to say).
    own_call: bool,
    /// What the Worker said and did, as tool call content blocks, in order.
    parts: Vec<Value>,
    /// The part of each Worker tool call, by its call id, to mark it done.
    tools: HashMap<String, usize>,
    /// The title of each Worker tool call, by its call id.
    titles: HashMap<String, String>,
    /// Inside the delegated turn of the Worker's history.
    collecting: bool,
    /// The newest Worker event handled.
    last: u64,
    /// The Worker's `lastSeq` when we subscribed: events up to it are replayed.
    replay_until: Option<u64>,
    /// The Worker's permission requests already asked.
    asked: HashSet<String>,
    /// The Worker's history said the delegation ended (it says so once all the
    /// delegated turn's events are written; its stream and the Driver's are not
    /// ordered with each other).
    worker_done: bool,
    /// The Driver's history said the delegation ended.
    driver_done: bool,
}

/// What the editor is shown of one Worker tool call: its title and how it stands.
fn tool_line(title: &str, status: &str) -> Value {
    let mark = match status {
        "completed" => "done",
        "failed" => "failed",
        _ => "running",
    };
    text_block(&format!("Worker tool: {title} ({mark})"))
}

fn text_block(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

impl Relay {
    /// A delegation to `worker` started (the Driver's `delegation` event `seq`);
    /// `call` is the Driver's `send_to_partner` call that started it, if one did.
    /// Without one, a tool call of our own is announced.
    pub fn start(worker: &str, call: Option<String>, seq: u64) -> (Relay, Vec<Effect>) {
        let own_call = call.is_none();
        let call_id = call.unwrap_or_else(|| format!("delegation_{seq}"));
        let mut effects = vec![Effect::Watch(worker.to_string())];
        if own_call {
            effects.push(Effect::Update(json!({
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": format!("Delegated to the Worker {worker}"),
                "kind": "other",
                "status": "in_progress",
                "rawInput": {"workerId": worker},
            })));
        }
        let relay = Relay {
            worker: worker.to_string(),
            call_id,
            own_call,
            parts: Vec::new(),
            tools: HashMap::new(),
            titles: HashMap::new(),
            collecting: false,
            last: 0,
            replay_until: None,
            asked: HashSet::new(),
            worker_done: false,
            driver_done: false,
        };
        (relay, effects)
    }

    /// Whether the Worker's history is replayed up to where it stood when followed.
    fn live(&self) -> bool {
        self.replay_until.is_some_and(|until| self.last >= until)
    }

    /// The update that shows the Worker's progress so far.
    fn progress(&self) -> Effect {
        Effect::Update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": self.call_id,
            "content": self.parts,
        }))
    }

    /// The Worker's `chat_subscribed`: its pending permission requests are asked.
    pub fn on_subscribed(&mut self, frame: &Value) -> Vec<Effect> {
        let was_live = self.live();
        let until = frame["lastSeq"].as_u64().unwrap_or_default();
        self.replay_until = Some(self.replay_until.map_or(until, |u| u.max(until)));
        let mut effects: Vec<Effect> = frame["pendingPermissions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| self.ask(p))
            .collect();
        if !was_live && self.live() && !self.parts.is_empty() {
            effects.push(self.progress());
        }
        effects
    }

    /// One event of the Worker.
    pub fn on_event(&mut self, event: &Value) -> Vec<Effect> {
        let Some(seq) = event["seq"].as_u64() else {
            return Vec::new();
        };
        if seq <= self.last {
            return Vec::new();
        }
        let was_live = self.live();
        self.last = seq;
        let changed = match event["kind"].as_str().unwrap_or_default() {
            "delegation" => {
                self.collecting = event["active"] == true;
                self.worker_done = !self.collecting;
                if self.collecting {
                    // A newer delegation than any the replay went through.
                    self.parts.clear();
                    self.tools.clear();
                } else if self.driver_done && self.live() {
                    return vec![Effect::Unwatch(self.worker.clone())];
                }
                false
            }
            _ if !self.collecting => false,
            "assistant_message" => {
                let text = event["text"].as_str().unwrap_or_default();
                if !text.is_empty() {
                    self.parts.push(text_block(text));
                }
                !text.is_empty()
            }
            "tool_call" => {
                let call = event["callId"].as_str().unwrap_or_default().to_string();
                let title = mapping::tool_title(event);
                self.tools.insert(call.clone(), self.parts.len());
                self.parts.push(tool_line(&title, "in_progress"));
                self.titles.insert(call, title);
                true
            }
            "tool_result" => {
                let call = event["callId"].as_str().unwrap_or_default();
                let status = if event["isError"] == true {
                    "failed"
                } else {
                    "completed"
                };
                match (self.tools.get(call), self.titles.get(call)) {
                    (Some(&i), Some(title)) => {
                        self.parts[i] = tool_line(title, status);
                        true
                    }
                    _ => false,
                }
            }
            "permission_request" if was_live => {
                return self.ask(event).into_iter().collect();
            }
            _ => false,
        };
        match (was_live, self.live()) {
            (true, _) if changed => vec![self.progress()],
            // The replay is done: what it found, at once.
            (false, true) if !self.parts.is_empty() => vec![self.progress()],
            _ => Vec::new(),
        }
    }

    fn ask(&mut self, request: &Value) -> Option<Effect> {
        let id = request["requestId"].as_str()?;
        self.asked.insert(id.to_string()).then(|| Effect::AskFor {
            worker: self.worker.clone(),
            request: request.clone(),
        })
    }

    /// The delegation ended (the Driver's `delegation {active: false, changes?}`):
    /// what the Worker changed is added; a call of ours is completed, the Driver's
    /// own `send_to_partner` call is completed by its result. The Worker stays
    /// followed until its own history says the delegation ended, so its last events
    /// are still shown.
    pub fn finish(&mut self, changes: &Value) -> Vec<Effect> {
        self.driver_done = true;
        if let (Some(branch), Some(files)) = (changes["branch"].as_str(), changes["files"].as_u64())
        {
            self.parts.push(text_block(&format!(
                "Worker changes on {branch}: {files} files, +{} -{}",
                changes["added"].as_u64().unwrap_or(0),
                changes["removed"].as_u64().unwrap_or(0)
            )));
        }
        let mut update = json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": self.call_id,
            "content": self.parts,
        });
        if self.own_call {
            update["status"] = json!("completed");
        }
        let mut effects = vec![Effect::Update(update)];
        if self.worker_done && self.live() {
            effects.push(Effect::Unwatch(self.worker.clone()));
        }
        effects
    }

    /// The content shown so far (kept before the Driver's call result's own).
    pub fn parts(&self) -> &[Value] {
        &self.parts
    }

    /// Whether both histories said the delegation ended and the Worker was let go
    /// (its `Unwatch` was given).
    fn released(&self) -> bool {
        self.worker_done && self.driver_done && self.live()
    }
}

/// Ended delegations kept, one per Worker, for a call result that comes after the
/// end and for the Worker's last events: those of the Workers that ended lately.
const ENDED_KEPT: usize = 8;

/// `send_to_partner` calls kept waiting for their delegation to start (the model
/// may call it for several Workers at once; more than this is a call whose start
/// will never come).
const WAITING_KEPT: usize = 16;

/// A Driver's `send_to_partner` call of a live turn whose delegation has not started.
#[derive(Debug)]
struct PartnerCall {
    /// The tool call's id.
    call_id: String,
    /// The Driver's turn that made it (its end ends the wait).
    turn: String,
    /// Its `worker` argument (a Worker's name or session id), if it has one.
    worker: Option<String>,
}

/// The delegations of one Driver, one [`Relay`] per Worker: the running ones, the
/// last ended one of the Workers that ended lately, and the Driver's
/// `send_to_partner` calls waiting for their delegation to start.
#[derive(Debug, Default)]
pub struct Delegations {
    /// The delegations shown while their Worker holds them, by Worker session id.
    running: HashMap<String, Relay>,
    /// The last delegation of each Worker that ended on the Driver's side, oldest
    /// first, at most [`ENDED_KEPT`]: kept for the call's result (which may come after
    /// the delegation's end) and for the Worker's last events. A Worker is never both
    /// here and in `running`.
    ended: VecDeque<Relay>,
    /// The Driver's `send_to_partner` calls whose delegation has not started, oldest
    /// first.
    waiting: VecDeque<PartnerCall>,
    /// The session ids of the Driver's Workers by name (from its `pair_created`
    /// events), to tell which Worker a call names.
    names: HashMap<String, String>,
}

impl Delegations {
    /// A `send_to_partner` call of the Driver's live turn (its `tool_call` event): it
    /// waits for the delegation it asks for.
    pub fn called(&mut self, event: &Value) {
        let Some(call_id) = event["callId"].as_str() else {
            return;
        };
        let input = &event["input"];
        // An ACP vendor's input holds the tool's arguments as `rawInput`.
        let worker = [&input["worker"], &input["rawInput"]["worker"]]
            .into_iter()
            .find_map(Value::as_str)
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(str::to_string);
        if self.waiting.len() == WAITING_KEPT {
            self.waiting.pop_front();
        }
        self.waiting.push_back(PartnerCall {
            call_id: call_id.to_string(),
            turn: event["turnId"].as_str().unwrap_or_default().to_string(),
            worker,
        });
    }

    /// A tool call's result came: it waits no more (a `send_to_partner` refused
    /// never starts a delegation).
    pub fn answered(&mut self, call_id: &str) {
        self.waiting.retain(|c| c.call_id != call_id);
    }

    /// The Driver's turn `turn` ended: its calls wait no more.
    pub fn turn_ended(&mut self, turn: &str) {
        self.waiting.retain(|c| c.turn != turn);
    }

    /// A `pair_created` event of the Driver: its Worker's name is learned.
    pub fn paired(&mut self, event: &Value) {
        let pair = &event["pair"];
        if pair["driverId"] != event["sessionId"] {
            return;
        }
        if let (Some(name), Some(id)) = (pair["workerName"].as_str(), pair["workerId"].as_str()) {
            self.names.insert(name.to_string(), id.to_string());
        }
    }

    /// A delegation to `worker` started (the Driver's `delegation` event `seq`). A
    /// running one of the same Worker, whose end we never saw, is over.
    pub fn start(&mut self, worker: &str, seq: u64) -> Vec<Effect> {
        let mut effects = match self.running.remove(worker) {
            Some(mut old) => old.finish(&Value::Null),
            None => Vec::new(),
        };
        // The Worker's subscription, if still held for the last one, goes on.
        effects.retain(|e| !matches!(e, Effect::Unwatch(w) if w == worker));
        self.ended.retain(|r| r.worker != worker);
        let call = self.take_call(worker);
        let (relay, started) = Relay::start(worker, call, seq);
        self.running.insert(worker.to_string(), relay);
        effects.extend(started);
        effects
    }

    /// The delegation to `worker` ended on the Driver's side, having changed
    /// `changes`.
    pub fn end(&mut self, worker: &str, changes: &Value) -> Vec<Effect> {
        let Some(mut relay) = self.running.remove(worker) else {
            return Vec::new();
        };
        let mut effects = relay.finish(changes);
        effects.extend(self.keep_ended(relay));
        effects
    }

    /// Keeps an ended delegation; the oldest kept beyond [`ENDED_KEPT`] goes, and its
    /// Worker, if still followed for it, is let go.
    fn keep_ended(&mut self, relay: Relay) -> Option<Effect> {
        self.ended.retain(|r| r.worker != relay.worker);
        self.ended.push_back(relay);
        if self.ended.len() <= ENDED_KEPT {
            return None;
        }
        let dropped = self.ended.pop_front()?;
        (!dropped.released() && !self.running.contains_key(&dropped.worker))
            .then_some(Effect::Unwatch(dropped.worker))
    }

    /// The waiting call a delegation to `worker` answers: the oldest naming it, else
    /// the oldest naming no other Worker we know of.
    fn take_call(&mut self, worker: &str) -> Option<String> {
        let i = self
            .waiting
            .iter()
            .position(|c| self.target(c) == Some(worker))
            .or_else(|| {
                self.waiting
                    .iter()
                    .position(|c| self.target(c).is_none_or(|t| !self.known(t)))
            })?;
        self.waiting.remove(i).map(|c| c.call_id)
    }

    /// The Worker a call names, as a session id where its name is known.
    fn target<'a>(&'a self, call: &'a PartnerCall) -> Option<&'a str> {
        let named = call.worker.as_deref()?;
        Some(self.names.get(named).map_or(named, String::as_str))
    }

    /// Whether `worker` is the session id of one of the Driver's Workers we know.
    fn known(&self, worker: &str) -> bool {
        self.running.contains_key(worker)
            || self.ended.iter().any(|r| r.worker == worker)
            || self.names.values().any(|id| id == worker)
    }

    /// The delegation shown for `worker`: the running one, else its last.
    pub fn of(&mut self, worker: &str) -> Option<&mut Relay> {
        match self.running.get_mut(worker) {
            Some(relay) => Some(relay),
            None => self.ended.iter_mut().find(|r| r.worker == worker),
        }
    }

    /// The content shown so far in the tool call `call_id`, if a delegation shows
    /// itself there.
    pub fn parts_of_call(&self, call_id: &str) -> Option<&[Value]> {
        self.running
            .values()
            .chain(&self.ended)
            .find(|r| r.call_id == call_id)
            .map(Relay::parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64, kind: &str, fields: Value) -> Value {
        let mut e = json!({"kind": kind, "seq": seq, "sessionId": "w"});
        if let (Some(e), Value::Object(f)) = (e.as_object_mut(), fields) {
            e.extend(f);
        }
        e
    }

    fn updates(effects: &[Effect]) -> Vec<&Value> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Update(u) => Some(u),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_replay_is_shown_once_then_live_progress() {
        let (mut r, effects) = Relay::start("w", Some("call_1".into()), 7);
        assert_eq!(effects, [Effect::Watch("w".into())]);
        assert!(r.on_subscribed(&json!({"lastSeq": 4})).is_empty());
        // An earlier delegation's text is passed over; this one's is kept.
        assert!(r
            .on_event(&ev(1, "assistant_message", json!({"text": "old"})))
            .is_empty());
        r.on_event(&ev(2, "delegation", json!({"active": true})));
        r.on_event(&ev(3, "assistant_message", json!({"text": "working"})));
        let shown = r.on_event(&ev(
            4,
            "tool_call",
            json!({"callId": "t1", "name": "Read", "input": {"file_path": "/a"}}),
        ));
        let shown = updates(&shown);
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0]["toolCallId"], "call_1");
        assert_eq!(shown[0]["content"][0]["content"]["text"], "working");
        assert_eq!(
            shown[0]["content"][1]["content"]["text"],
            "Worker tool: Read: /a (running)"
        );
        let done = r.on_event(&ev(
            5,
            "tool_result",
            json!({"callId": "t1", "isError": false}),
        ));
        assert_eq!(
            updates(&done)[0]["content"][1]["content"]["text"],
            "Worker tool: Read: /a (done)"
        );
        // Its permission requests are asked in the Driver's session, once.
        let ask = ev(6, "permission_request", json!({"requestId": "perm_1"}));
        assert!(
            matches!(r.on_event(&ask).as_slice(), [Effect::AskFor { worker, .. }] if worker == "w")
        );
        assert!(r
            .on_subscribed(&json!({"lastSeq": 6, "pendingPermissions": [ask]}))
            .is_empty());
        let end = r.finish(&json!({"branch": "tandem/w", "files": 2, "added": 3, "removed": 1}));
        let last = updates(&end)[0];
        assert_eq!(last.get("status"), None);
        assert_eq!(
            last["content"][2]["content"]["text"],
            "Worker changes on tandem/w: 2 files, +3 -1"
        );
        // The Worker's last message, after the Driver's end, is still shown; its own
        // end lets it go.
        assert_eq!(end.len(), 1);
        let late = r.on_event(&ev(7, "assistant_message", json!({"text": "done"})));
        assert_eq!(updates(&late)[0]["content"][3]["content"]["text"], "done");
        assert_eq!(
            r.on_event(&ev(8, "delegation", json!({"active": false}))),
            [Effect::Unwatch("w".into())]
        );
    }

    #[test]
    fn without_a_call_one_of_ours_is_opened_and_closed() {
        let (mut r, effects) = Relay::start("w", None, 9);
        let opened = updates(&effects);
        assert_eq!(opened[0]["sessionUpdate"], "tool_call");
        assert_eq!(opened[0]["toolCallId"], "delegation_9");
        let end = r.finish(&Value::Null);
        assert_eq!(updates(&end)[0]["status"], "completed");
    }

    fn call_id(effects: &[Effect]) -> Option<&str> {
        updates(effects)
            .first()
            .and_then(|u| u["toolCallId"].as_str())
    }

    #[test]
    fn starts_take_the_call_naming_their_worker_else_the_oldest() {
        let mut d = Delegations::default();
        let call = |id: &str, turn: &str, input: Value| json!({"callId": id, "turnId": turn, "name": "send_to_partner", "input": input});
        d.called(&call("c1", "t1", json!({"message": "go"})));
        // An ACP vendor's arguments are its `rawInput`.
        d.called(&call("c2", "t1", json!({"rawInput": {"worker": "b"}})));
        d.called(&call("c3", "t1", json!({"message": "go"})));
        assert_eq!(d.start("b", 1), [Effect::Watch("b".into())]);
        assert_eq!(d.parts_of_call("c2"), Some(&[][..]));
        assert_eq!(d.start("a", 2), [Effect::Watch("a".into())]);
        assert!(d.parts_of_call("c1").is_some());
        // Its turn ended: c3 waits no more.
        d.turn_ended("t1");
        assert_eq!(call_id(&d.start("c", 3)), Some("delegation_3"));
        // A call naming another Worker we know is not given to this one.
        d.called(&call("c4", "t2", json!({"worker": "a"})));
        assert_eq!(call_id(&d.start("e", 4)), Some("delegation_4"));
    }

    #[test]
    fn the_oldest_ended_delegation_kept_lets_its_worker_go() {
        let mut d = Delegations::default();
        for seq in 0..=ENDED_KEPT as u64 {
            d.start(&format!("w{seq}"), seq);
        }
        for seq in 0..ENDED_KEPT as u64 {
            let ended = d.end(&format!("w{seq}"), &Value::Null);
            assert!(!ended.iter().any(|e| matches!(e, Effect::Unwatch(_))));
        }
        // Never told its end by its Worker, the first is still followed.
        let ended = d.end(&format!("w{ENDED_KEPT}"), &Value::Null);
        assert_eq!(ended.last(), Some(&Effect::Unwatch("w0".into())));
        assert!(d.of("w0").is_none());
        assert!(d.of("w1").is_some());
    }
}
