//! End-to-end tests: each starts the real server as a process on a loopback port and
//! speaks WebSocket and REST to it. One test binary, so the workspace links it once.

mod access;
mod bad_input;
mod browser_attacks;
mod budgets;
mod claude;
mod cluster;
mod codex;
mod configure;
mod crash_workflows;
mod durability;
mod error_codes;
mod first_run;
mod flow;
mod fuzz_socket;
mod handoff;
mod huge_frames;
mod limits;
mod long_urls;
mod pair_gone;
mod pairs;
mod permissions;
mod rest_parity;
mod restart;
mod schedule;
mod secrets;
mod slow_client;
mod stalled_clients;
mod subscribe;
mod write_path;

use serde_json::Value;

/// Asserts that events carry seq `from, from+1, ...` with no gap and no duplicate.
pub fn assert_contiguous(events: &[Value], from: u64) {
    for (i, ev) in events.iter().enumerate() {
        assert_eq!(
            ev["seq"].as_u64(),
            Some(from + i as u64),
            "event {i} out of sequence: {ev}"
        );
    }
}

/// The `kind` of each event.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}
