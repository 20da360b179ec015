//! A pseudo-terminal and the shell started on it.
//!
//! The shell must lead a process session of its own with the terminal as its
//! controlling terminal (job control, `^C` reaching the foreground job, a hangup when
//! the terminal goes). Making that happen between `fork` and `exec` needs `unsafe`
//! code, which this workspace forbids; the server's own binary does it instead: the
//! shell is started as `tandem tty -- SHELL`, which calls `setsid`, takes its standard
//! input (the terminal) as controlling terminal and `exec`s the shell (through `tandem
//! confine` where agents are confined, so a terminal can do no more than the session's
//! agent). The shell keeps the pid it was started with, which is also its session id:
//! everything it starts that stays in its session is found by that id
//! ([`super::procs`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rustix::pty::OpenptFlags;

use crate::adapter::confine::Launcher;

/// The hidden subcommand of the server's binary that starts a program on its standard
/// input's terminal (see the module comment).
pub const TTY_SUBCOMMAND: &str = "tty";

/// A terminal's two ends, before the shell is started on the second.
pub struct Pty {
    /// The server's end: output is read from it, input written to it, and the size set
    /// on it.
    pub master: OwnedFd,
    /// The shell's end (its standard input, output and error).
    slave: OwnedFd,
}

/// How a terminal's shell is started.
pub struct Spawn<'a> {
    /// The server's own binary (it has the `tty` subcommand).
    pub helper: &'a Path,
    /// Confines the shell where agents are confined.
    pub launcher: Option<&'a Launcher>,
    /// The shell.
    pub shell: &'a Path,
    /// Where it starts.
    pub cwd: &'a Path,
    /// Its whole environment.
    pub env: &'a BTreeMap<String, String>,
}

impl Pty {
    /// A new pseudo-terminal of `cols` × `rows`.
    pub fn open(cols: u16, rows: u16) -> std::io::Result<Pty> {
        let master =
            rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
        rustix::pty::grantpt(&master)?;
        rustix::pty::unlockpt(&master)?;
        let name = rustix::pty::ptsname(&master, Vec::new())?;
        let slave = rustix::fs::open(
            name.as_c_str(),
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        resize(&master, cols, rows)?;
        Ok(Pty { master, slave })
    }

    /// Starts the shell on the terminal; the server keeps only the master end.
    pub fn spawn(self, how: &Spawn<'_>) -> std::io::Result<(OwnedFd, std::process::Child)> {
        let (program, args): (OsString, Vec<OsString>) = match how.launcher {
            Some(launcher) => {
                let confined = launcher.command(how.shell, how.env, Some(how.cwd));
                let std = confined.as_std();
                (
                    std.get_program().to_os_string(),
                    std.get_args().map(|a| a.to_os_string()).collect(),
                )
            }
            None => (how.shell.as_os_str().to_os_string(), Vec::new()),
        };
        // A std child, waited for by a thread of its own: the terminal must outlive
        // the HTTP worker whose request opened it (a worker that stops drops its tasks).
        let mut cmd = std::process::Command::new(how.helper);
        cmd.arg(TTY_SUBCOMMAND)
            .arg("--")
            .arg(program)
            .args(args)
            .current_dir(how.cwd)
            .env_clear()
            .envs(how.env)
            .stdin(Stdio::from(self.slave.try_clone()?))
            .stdout(Stdio::from(self.slave.try_clone()?))
            .stderr(Stdio::from(self.slave));
        let child = cmd.spawn()?;
        Ok((self.master, child))
    }
}

/// Sets the terminal's size; the shell's foreground job hears `SIGWINCH`.
pub fn resize(master: &OwnedFd, cols: u16, rows: u16) -> std::io::Result<()> {
    rustix::termios::tcsetwinsize(
        master,
        rustix::termios::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    Ok(())
}

/// The shell a terminal runs: the server's `$SHELL` when it names an absolute path
/// to a file, else `/bin/bash`.
pub fn user_shell(env: &BTreeMap<String, String>) -> PathBuf {
    env.get("SHELL")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/bash"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_opens_at_its_size_and_resizes() {
        let pty = Pty::open(91, 27).unwrap();
        let size = rustix::termios::tcgetwinsize(&pty.slave).unwrap();
        assert_eq!((size.ws_col, size.ws_row), (91, 27));
        resize(&pty.master, 120, 40).unwrap();
        let size = rustix::termios::tcgetwinsize(&pty.slave).unwrap();
        assert_eq!((size.ws_col, size.ws_row), (120, 40));
    }

    #[test]
    fn the_shell_is_the_servers_when_it_names_a_program() {
        let mut env = BTreeMap::new();
        assert_eq!(user_shell(&env), PathBuf::from("/bin/bash"));
        env.insert("SHELL".into(), "/bin/sh".into());
        assert_eq!(user_shell(&env), PathBuf::from("/bin/sh"));
        env.insert("SHELL".into(), "zsh".into());
        assert_eq!(user_shell(&env), PathBuf::from("/bin/bash"));
        env.insert("SHELL".into(), "/nonexistent/shell".into());
        assert_eq!(user_shell(&env), PathBuf::from("/bin/bash"));
    }
}
