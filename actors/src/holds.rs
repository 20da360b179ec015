//! The named holds behind the scripted vendor's `/hold NAME` step. Only test builds
//! (feature `test-hooks`) run that step; without it nothing waits here and the HTTP
//! crate has no route to release a hold. A script that reaches `/hold NAME` waits
//! until NAME is released (`POST /debug/holds/{name}/release` in the HTTP crate), so
//! an end-to-end test can put a turn in a state ("running", "a delegation waits", "the
//! Worker is busy") and act in it, instead of racing a `/sleep` window.
//!
//! A release is a latch: it opens NAME for the rest of the process's life, so the turns
//! waiting there go on and every later `/hold NAME` passes at once. A release that comes
//! before any turn reached the hold is therefore not lost (no race between "the test
//! releases" and "the turn arrives"); a test that needs to hold twice uses two names.
//! Holds are process-wide: names are chosen per test.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::sync::watch;

/// One hold: whether it was released, and how many scripts wait at it now.
struct Gate {
    /// `true` once released; waiting scripts watch it.
    open: watch::Sender<bool>,
    /// Scripts waiting at this hold right now (what `GET /debug/holds` lists).
    waiting: usize,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            open: watch::Sender::new(false),
            waiting: 0,
        }
    }
}

/// Every hold named so far in this process (by a script or a release).
static GATES: OnceLock<Mutex<HashMap<String, Gate>>> = OnceLock::new();

/// The holds, locked. A panic while holding the lock cannot leave the map half-updated
/// (every change is one statement), so a poisoned lock is used as is.
fn gates() -> MutexGuard<'static, HashMap<String, Gate>> {
    GATES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Whether `name` can name a hold: 1 to 64 of `A-Z a-z 0-9 _ -` (it travels in a URL
/// path and in a script line).
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Counts one script as waiting at a hold while it lives; dropped when the wait ends
/// or when the script is cancelled (an interrupt drops the script's future).
struct Reached(String);

impl Drop for Reached {
    fn drop(&mut self) {
        if let Some(gate) = gates().get_mut(&self.0) {
            gate.waiting = gate.waiting.saturating_sub(1);
        }
    }
}

/// Waits until `name` is released; returns at once when it already was.
pub async fn wait(name: &str) {
    let (mut open, _reached) = {
        let mut gates = gates();
        let gate = gates.entry(name.to_string()).or_insert_with(Gate::new);
        if *gate.open.borrow() {
            return;
        }
        gate.waiting += 1;
        (gate.open.subscribe(), Reached(name.to_string()))
    };
    // The sender lives in the static map and is never dropped, so this ends only when
    // the hold opens (or the script is cancelled).
    let _ = open.wait_for(|open| *open).await;
}

/// Releases `name` for good (see the module's doc); answers how many scripts were
/// waiting there and now go on.
pub fn release(name: &str) -> usize {
    let mut gates = gates();
    let gate = gates.entry(name.to_string()).or_insert_with(Gate::new);
    gate.open.send_replace(true);
    gate.waiting
}

/// The holds scripts wait at right now, by name, with how many wait at each.
pub fn reached() -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = gates()
        .iter()
        .filter(|(_, gate)| gate.waiting > 0)
        .map(|(name, gate)| (name.clone(), gate.waiting))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_url_safe_tokens() {
        assert!(valid_name("a"));
        assert!(valid_name("turn-1_B"));
        assert!(valid_name(&"x".repeat(64)));
        assert!(!valid_name(""));
        assert!(!valid_name(&"x".repeat(65)));
        assert!(!valid_name("a b"));
        assert!(!valid_name("a/b"));
        assert!(!valid_name("ü"));
    }

    #[actix_rt::test]
    async fn a_hold_waits_until_released_and_a_dropped_wait_is_no_longer_listed() {
        let held = actix_rt::spawn(wait("unit-held"));
        while !reached().contains(&("unit-held".to_string(), 1)) {
            actix_rt::task::yield_now().await;
        }
        assert_eq!(release("unit-held"), 1);
        let _ = held.await;
        assert!(!reached().iter().any(|(n, _)| n == "unit-held"));

        let cancelled = actix_rt::spawn(wait("unit-cancelled"));
        while !reached().iter().any(|(n, _)| n == "unit-cancelled") {
            actix_rt::task::yield_now().await;
        }
        cancelled.abort();
        let _ = cancelled.await;
        assert!(!reached().iter().any(|(n, _)| n == "unit-cancelled"));
    }

    #[actix_rt::test]
    async fn a_release_before_the_hold_is_reached_lets_it_pass() {
        assert_eq!(release("unit-early"), 0);
        wait("unit-early").await;
        wait("unit-early").await;
        assert!(!reached().iter().any(|(n, _)| n == "unit-early"));
    }
}
