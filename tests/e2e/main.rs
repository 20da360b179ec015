//! End-to-end tests: each starts the real server as a process on a loopback port and
//! speaks WebSocket and REST to it. One test binary, so the workspace links it once.

// Test code fails loudly on a missing value: `unwrap`/`expect` are allowed here (the
// workspace denies them in product code; clippy.toml allows them in unit tests, and
// these helpers are not `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod access;
mod acknowledged;
mod acp;
mod acp_agent;
mod approvals;
mod attachments;
mod attention;
mod bad_input;
mod browser_attacks;
mod budgets;
mod checkpoints;
mod checks;
mod claude;
mod cluster;
mod cluster_lagged;
mod cluster_pairs;
mod cluster_push;
mod cluster_workspaces;
mod codex;
mod configure;
mod confinement;
mod conformance;
mod crash_workflows;
mod devices;
mod durability;
mod error_codes;
mod external;
mod first_run;
mod fleet;
mod flow;
mod forks;
mod fuzz_socket;
mod handoff;
mod harness;
mod holds;
mod huge_frames;
mod limits;
mod long_urls;
mod loops;
mod many_subscriptions;
mod mcp_sdk;
mod mcp_servers;
mod old_histories;
mod openapi;
mod operations;
mod overlaps;
mod pair_gone;
mod pairs;
mod permissions;
mod push;
mod questions;
mod queue_usage;
mod release_build;
mod rest_parity;
mod restart;
mod review;
mod review_by;
mod revocation;
mod rewind;
mod schedule;
mod schemathesis;
mod scripts;
mod secrets;
mod security;
mod slow_client;
mod stalled_bodies;
mod stalled_clients;
mod subscribe;
mod terminal_client;
mod terminals;
mod tls;
mod turn_slots;
mod vendor_env;
mod vendor_errors;
mod web_push;
mod worker_choice;
mod workers;
mod workspaces;
mod write_path;

use serde_json::Value;
pub use tandem_tests::events::kinds;

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
