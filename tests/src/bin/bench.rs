//! Benchmarks for tandem (see BENCHMARKS.md). `bench serve ARGS` runs the server itself
//! (exactly `tandem serve ARGS`; likewise `bench user ...`), so tests and benchmarks
//! start it as a child process.
//! `bench fanout|sessions|replay|durability|delegation|codex|claude|acp [flags]` start that server as a child
//! process and measure it over loopback ([`tandem_tests::bench`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        // The server's own commands, exactly as `tandem` runs them.
        Some("serve" | "user" | "token") => tandem_http::cli::main_from(&args),
        Some(
            mode @ ("fanout" | "sessions" | "replay" | "durability" | "delegation" | "codex"
            | "claude" | "acp"),
        ) => tandem_tests::bench::run(mode, &args[1..]),
        _ => {
            eprintln!("{}", tandem_tests::bench::USAGE);
            ExitCode::from(2)
        }
    }
}
