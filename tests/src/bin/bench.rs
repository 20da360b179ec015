//! Benchmarks for tandem (see BENCHMARKS.md). `bench serve ARGS` runs the server itself
//! (exactly `tandem serve ARGS`), so tests and benchmarks start it as a child process.
//! `bench fanout|sessions|replay|durability [flags]` start that server as a child
//! process and measure it over loopback ([`tandem_tests::bench`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => {
            tandem_http::cli::init_tracing();
            match tandem_http::cli::parse_serve_args(&args[1..]) {
                Ok(serve) => tandem_http::cli::run_serve(serve),
                Err(e) => {
                    let _ = e.print();
                    ExitCode::from(2)
                }
            }
        }
        Some(mode @ ("fanout" | "sessions" | "replay" | "durability")) => {
            tandem_tests::bench::run(mode, &args[1..])
        }
        _ => {
            eprintln!("{}", tandem_tests::bench::USAGE);
            ExitCode::from(2)
        }
    }
}
