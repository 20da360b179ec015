//! The `tandem` binary.

use std::process::ExitCode;

fn main() -> ExitCode {
    tandem_http::cli::main()
}
