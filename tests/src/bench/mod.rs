//! The benchmark program (`bench fanout|sessions|replay|durability|delegation|codex|claude|acp|acp-agent|store-floor`, see
//! BENCHMARKS.md).
//!
//! Every mode starts the real server as a separate process ([`server::BenchServer`]),
//! talks to it over loopback WebSockets and REST, and prints one JSON object per line
//! on stdout ([`report`]); progress goes to stderr. The load generator shares the
//! machine's cores with the server, so it does as little work per frame as it can: it
//! never parses an event frame, it scans it for `"seq":`, `"ts":` and `"kind":`
//! ([`scan`]).

pub mod acp;
pub mod acp_agent;
pub mod args;
pub mod checkpoint;
pub mod claude;
pub mod codex;
pub mod delegation;
pub mod durability;
pub mod fanout;
pub mod fleet;
pub mod floor;
pub mod floor_store;
pub mod gitstate;
pub mod procfs;
pub mod raw_ws;
pub mod replay;
pub mod report;
pub mod scan;
pub mod server;
pub mod sessions;
pub mod stats;
pub mod store_floor;
pub mod stored_sessions;
pub mod trace;

use std::process::ExitCode;

/// Runs a benchmark mode with its flags; the exit code says whether it completed.
pub fn run(mode: &str, flags: &[String]) -> ExitCode {
    let flags = match args::Flags::parse(flags) {
        Ok(f) => f,
        Err(e) => return usage_error(&e),
    };
    let outcome = match mode {
        "fanout" => fanout::main(flags),
        "sessions" => sessions::main(flags),
        "replay" => replay::main(flags),
        "durability" => durability::main(flags),
        "delegation" => delegation::main(flags),
        "codex" => codex::main(flags),
        "claude" => claude::main(flags),
        "acp" => acp::main(flags),
        "acp-agent" => acp_agent::main(flags),
        "gitstate" => gitstate::main(flags),
        "checkpoint" => checkpoint::main(flags),
        "store-floor" => store_floor::main(flags),
        "fleet" => fleet::main(flags),
        other => Err(format!("unknown mode {other}")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench {mode}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The modes and their flags, for `bench` without arguments or with a bad flag.
pub const USAGE: &str = "\
usage: bench serve [tandem serve flags]
       bench fanout     [--sessions 10] [--clients 10] [--events 2000] [--runs 3]
                        [--rate EV_PER_S_PER_SESSION] [--tick-ms 10] [--threads 2]
                        [--trace-ms N] [--dump-latency FILE] [--subscribe one|all]
                        [--floor 1|durable] [--server-arg ARG]... [--cross-node 1]
                        (--cross-node: sessions on node a, clients on node b, via
                        nats-server on loopback)
       bench sessions   [--count 10000] [--clients 8] [--window 32] [--runs 3]
                        [--threads 2] [--server-arg ARG]...
       bench sessions   --stored 1 [--count 1000000] [--server-arg ARG]...
                        (N sessions written into the store, then start time and
                        RSS per idle session; --count takes a list: 10000,100000)
       bench replay     [--sizes 5000,100000] [--runs 5] [--server-arg ARG]...
       bench durability [fanout flags] (runs fanout with --commit-batch 1 and default)
       bench delegation [--pairs 100] [--calls 1000] [--per-pair 50] [--runs 3]
                        [--threads 2] [--server-arg ARG]...
       bench codex      [--turns 100] [--runs 3] [--codex-bin PATH] [--direct-overrides 1]
                        [--server-arg ARG]...
       bench claude     [--turns 100] [--warmup 5] [--bin PATH]
       bench acp        [--turns 100] [--runs 3] [--bin PATH] [--server-arg ARG]...
       bench acp-agent  [--rounds 5] [--turns 500] [--events 20] [--server-arg ARG]...
                        (the same scripted prompt through `tandem acp` and over the
                        WebSocket, interleaved)
       bench gitstate   [--files 10000] [--changed 100] [--runs 50]
       bench checkpoint [--files 10000] [--changed 100] [--runs 50]
       bench store-floor [--sessions 10] [--events 2000] [--batch 32,128,512] [--runs 3]
                        (SQLite insert cost per event, in process; no server)
       bench fleet      [--claude 50] [--codex 50] [--max-live 8] [--seconds 180]
                        [--rounds N] [--in-flight 8] [--cwd shared|own]
                        [--claude-bin PATH] [--codex-bin PATH] [--server-arg ARG]...
                        (real CLIs against the mock models, turns round-robin;
                        --max-live 0: no --max-live-processes)";

fn usage_error(e: &str) -> ExitCode {
    eprintln!("bench: {e}\n{USAGE}");
    ExitCode::from(2)
}
