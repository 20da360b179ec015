//! One shell command of a repository's settings (a check, a setup or archive script)
//! run to its end: `sh -c COMMAND` in a directory, confined like the agents where they
//! are (the command comes from a file agents can write, so it never runs with more
//! than they have), in a process group of its own that is killed whole at the time
//! limit, with its output (stdout and stderr, interleaved) kept to the last 8 KiB.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::adapter::confine::Launcher;

/// Bytes of output kept, from the end.
pub const LOG_TAIL_BYTES: usize = 8 * 1024;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code (`None`: killed by a signal it was not sent here).
    Exited(Option<i32>),
    /// Killed at its time limit.
    TimedOut,
    /// It could not start, or waiting for it failed: why.
    Broken(String),
}

/// A command's end and the last [`LOG_TAIL_BYTES`] of its output.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// The end of its output, as text.
    pub tail: String,
    /// How long it ran.
    pub elapsed: Duration,
    /// The leader of its process group (`None`: it did not start).
    pub leader: Option<u32>,
}

/// A command to run.
pub struct Shell<'a> {
    /// The shell text.
    pub command: &'a str,
    /// Where.
    pub workdir: &'a Path,
    /// Its whole environment.
    pub env: &'a BTreeMap<String, String>,
    /// Confines it where agents are confined.
    pub launcher: Option<&'a Launcher>,
    /// Killed after this long.
    pub limit: Duration,
    /// Its output is reported at most this often while it grows.
    pub progress_every: Duration,
}

/// `sh -c command` with its output on one pipe, in order, in a new process group,
/// killed with the handle.
pub fn command(
    text: &str,
    workdir: &Path,
    env: &BTreeMap<String, String>,
    launcher: Option<&Launcher>,
) -> tokio::process::Command {
    let shell = Path::new("/bin/sh");
    let mut cmd = match launcher {
        Some(l) => l.command(shell, env, Some(workdir)),
        None => tokio::process::Command::new(shell),
    };
    cmd.arg("-c")
        .arg(format!("exec 2>&1\n{text}"))
        .current_dir(workdir)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

impl Shell<'_> {
    /// Runs it to its end; `progress` hears the output tail at most every
    /// `progress_every` while it grows. `started` hears the process group's leader once the
    /// command runs (so its owner can kill it early).
    pub async fn run(
        &self,
        mut started: impl FnMut(Option<u32>),
        mut progress: impl FnMut(&str),
    ) -> Finished {
        let begun = Instant::now();
        let finished = |ending, tail, leader| Finished {
            ending,
            tail,
            elapsed: begun.elapsed(),
            leader,
        };
        let mut child = match command(self.command, self.workdir, self.env, self.launcher).spawn() {
            Ok(child) => child,
            Err(e) => {
                return finished(
                    Ending::Broken(format!("could not start: {e}")),
                    String::new(),
                    None,
                )
            }
        };
        let group = child.id();
        started(group);
        let mut out = child.stdout.take();
        let mut tail = Vec::new();
        let work = async {
            let mut reported = Instant::now();
            if let Some(out) = out.as_mut() {
                let mut buf = [0u8; 8192];
                while let Ok(n) = out.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    tail.extend_from_slice(&buf[..n]);
                    if tail.len() > 2 * LOG_TAIL_BYTES {
                        tail.drain(..tail.len() - LOG_TAIL_BYTES);
                    }
                    if reported.elapsed() >= self.progress_every {
                        progress(&tail_text(&tail));
                        reported = Instant::now();
                    }
                }
            }
            child.wait().await
        };
        let outcome = tokio::time::timeout(self.limit, work).await;
        let text = tail_text(&tail);
        match outcome {
            Ok(Ok(status)) => finished(Ending::Exited(status.code()), text, group),
            Ok(Err(e)) => finished(Ending::Broken(format!("wait failed: {e}")), text, group),
            Err(_) => {
                kill_group(group);
                finished(Ending::TimedOut, text, group)
            }
        }
    }
}

/// The last [`LOG_TAIL_BYTES`] of `bytes` as text, cut at a character boundary.
pub fn tail_text(bytes: &[u8]) -> String {
    let from = bytes.len().saturating_sub(LOG_TAIL_BYTES);
    let text = String::from_utf8_lossy(&bytes[from..]).into_owned();
    text.trim_start_matches('\u{FFFD}').to_string()
}

/// Kills the process group `leader` leads, so what its shell started goes too.
pub fn kill_group(leader: Option<u32>) {
    let Some(pid) = leader
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(command: &str, secs: u64) -> Finished {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let dir = std::env::temp_dir();
        Shell {
            command,
            workdir: &dir,
            env: &env,
            launcher: None,
            limit: Duration::from_secs(secs),
            progress_every: Duration::MAX,
        }
        .run(|_| {}, |_| {})
        .await
    }

    #[actix_rt::test]
    async fn ends_are_told_apart_and_the_output_kept() {
        let ok = run("echo out; echo err >&2", 10).await;
        assert_eq!(
            (ok.ending, ok.tail.as_str()),
            (Ending::Exited(Some(0)), "out\nerr\n")
        );
        assert_eq!(run("exit 3", 10).await.ending, Ending::Exited(Some(3)));
        let slow = run("echo begun; sleep 30 & sleep 30", 1).await;
        assert_eq!(slow.ending, Ending::TimedOut);
        assert!(slow.tail.starts_with("begun\n"), "{}", slow.tail);
        assert!(slow.elapsed < Duration::from_secs(10));
        let long = run("yes x | head -c 100000", 10).await;
        assert_eq!(long.tail.len(), LOG_TAIL_BYTES);
    }

    #[actix_rt::test]
    async fn progress_is_told_while_it_runs() {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let dir = std::env::temp_dir();
        let mut seen = Vec::new();
        let done = Shell {
            command: "echo one; sleep 1.5; echo two",
            workdir: &dir,
            env: &env,
            launcher: None,
            limit: Duration::from_secs(20),
            progress_every: Duration::from_secs(1),
        }
        .run(|_| {}, |tail| seen.push(tail.to_string()))
        .await;
        assert_eq!(done.tail, "one\ntwo\n");
        assert_eq!(seen, ["one\ntwo\n"]);
    }
}
