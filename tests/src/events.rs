//! Reading a turn's events as the tests receive them (JSON values): by kind, their
//! texts, the turn's end. Each panics with the events when what it looks for is not
//! there, so a test's assertion shows what arrived.

use serde_json::Value;

/// The `kind` of each event.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The events of `kind`, in order.
pub fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// The last event of `kind`.
pub fn last_of<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    match events.iter().rev().find(|e| e["kind"] == kind) {
        Some(e) => e,
        None => panic!("no {kind} in {:?}", kinds(events)),
    }
}

/// The `text` of each event of `kind`.
pub fn texts(events: &[Value], kind: &str) -> Vec<String> {
    of_kind(events, kind)
        .iter()
        .filter_map(|e| e["text"].as_str().map(str::to_string))
        .collect()
}

/// The last event: a turn's `turn_completed` when the events are a whole turn.
pub fn end(events: &[Value]) -> &Value {
    match events.last() {
        Some(e) => e,
        None => panic!("no events"),
    }
}

/// The `status` of the last event (a whole turn's outcome).
pub fn status(events: &[Value]) -> Value {
    end(events)["status"].clone()
}
