//! `tandem tty -- PROGRAM [ARGS]`: the hidden subcommand a terminal's shell is started
//! through (`tandem_actors::terminals::pty`). Its standard input is the terminal: it
//! leaves the server's process session for a new one, takes the terminal as that
//! session's controlling terminal, and `exec`s the program, which keeps its pid (the
//! session's id) and the terminal.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

/// Flags of `tandem tty` (hidden from `--help`: only the server runs it).
#[derive(Debug, clap::Args)]
pub struct TtyArgs {
    /// The program and its arguments, after `--`.
    #[arg(last = true)]
    command: Vec<OsString>,
}

/// Runs `tandem tty`: returns only when the program could not be started (126, with
/// the reason on stderr, which is the terminal).
pub fn run(args: TtyArgs) -> ExitCode {
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("tandem tty: no program given after `--`");
        return ExitCode::from(126);
    };
    if let Err(e) = rustix::process::setsid() {
        eprintln!("tandem tty: cannot start a process session: {e}");
        return ExitCode::from(126);
    }
    if let Err(e) = rustix::process::ioctl_tiocsctty(std::io::stdin()) {
        eprintln!("tandem tty: cannot take the terminal: {e}");
        return ExitCode::from(126);
    }
    let e = std::process::Command::new(program).args(rest).exec();
    eprintln!("tandem tty: cannot run {}: {e}", program.to_string_lossy());
    ExitCode::from(126)
}
