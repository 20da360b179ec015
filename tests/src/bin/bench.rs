//! Benchmarks for tandem (see BENCHMARKS.md). `bench serve ARGS` runs the server itself
//! (exactly `tandem serve ARGS`; likewise `bench user ...`, `bench doctor` and every other
//! `tandem` command; `bench tandem ARGS` for any, `acp` included), so tests and
//! benchmarks start it as a child process.
//! `bench fanout|sessions|replay|durability|delegation|codex|claude|acp|acp-agent|gitstate|checkpoint [flags]` start that server as a child
//! process and measure it over loopback ([`tandem_tests::bench`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        // The minimal fan-out server `bench fanout --floor` compares with.
        Some("floor-serve") => match tandem_tests::bench::floor::serve(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench floor-serve: {e}");
                ExitCode::FAILURE
            }
        },
        Some(
            mode @ ("fanout" | "sessions" | "replay" | "durability" | "delegation" | "codex"
            | "claude" | "acp" | "acp-agent" | "gitstate" | "checkpoint" | "store-floor"
            | "fleet"),
        ) => tandem_tests::bench::run(mode, &args[1..]),
        // `bench tandem ARGS` is exactly `tandem ARGS`, also for a command whose name a
        // benchmark takes (`tandem acp`, which tests/e2e/acp_agent.rs starts).
        Some("tandem") => tandem_http::cli::main_from(&args[1..]),
        None => {
            eprintln!("{}", tandem_tests::bench::USAGE);
            ExitCode::from(2)
        }
        // Every other word is one of the server's own commands (`serve`, `user`,
        // `token`, `doctor`, ...), exactly as `tandem` runs it.
        Some(_) => tandem_http::cli::main_from(&args),
    }
}
