//! Running the `git` binary: one process per command, in a given directory, with a
//! fixed locale and no prompts. Blocking: call from a blocking thread.
//!
//! A repository's configuration can make git run commands: `core.fsmonitor` at every
//! status, hooks, filter, merge and diff drivers. Agents write that configuration (a
//! shared session works in the repository itself), so every git process the server
//! starts turns those settings off: a config an agent wrote never runs as the server.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::WorkspaceError;

/// A `git` command in `dir` with the environment every call needs: no terminal
/// prompts, no pager, messages in English (quoted in errors).
pub fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = bare_command(dir);
    for (key, value) in neutral_drivers(dir) {
        cmd.arg("-c").arg(format!("{key}={value}"));
    }
    cmd.args(args);
    cmd
}

/// Settings given to every git process so that nothing in a repository's
/// configuration runs a command: no fsmonitor daemon, no hooks, no signing program,
/// no editor, askpass or credential helper, no automatic maintenance.
const SAFE_SETTINGS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.editor=true",
    "sequence.editor=true",
    "core.askPass=",
    "credential.helper=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "diff.external=",
];

/// A `git -C dir` process with [`SAFE_SETTINGS`] and the environment every call
/// needs (no prompts, no pager, English messages), before its arguments.
fn bare_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    for setting in SAFE_SETTINGS {
        cmd.arg("-c").arg(setting);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GIT_ASKPASS")
        .env_remove("GIT_SSH_COMMAND")
        .stdin(Stdio::null());
    cmd
}

/// Overrides for the filter, merge and diff drivers the repository at `dir`
/// configures (they are named by `.gitattributes`, which agents write too): each
/// command is replaced by one that does the default thing and runs nothing of the
/// repository's. Reading the configuration runs nothing itself.
fn neutral_drivers(dir: &Path) -> Vec<(String, &'static str)> {
    let out = bare_command(dir)
        .args([
            "config",
            "--null",
            "--get-regexp",
            r"^(filter|merge|diff)\..+\.(clean|smudge|process|driver|textconv|command)$",
        ])
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    out.stdout
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let key = String::from_utf8_lossy(entry.split(|b| *b == b'\n').next()?).into_owned();
            let value = match key.rsplit('.').next()? {
                // An empty long-running filter is none; `cat` is the identity.
                "process" => "",
                "clean" | "smudge" | "textconv" => "cat",
                // The built-in three-way merge of text.
                "driver" => "git merge-file -q -- %A %O %B",
                // Diffs run with `--no-ext-diff`; an unset command is also none.
                "command" => "",
                _ => return None,
            };
            Some((key, value))
        })
        .collect()
}

/// Runs a command that commits (and must succeed), giving git a committer identity
/// when neither the environment nor the repository's configuration names one: the
/// server's user may have none, and a merge must not fail for that.
pub fn run_committing(dir: &Path, args: &[&str]) -> Result<String, WorkspaceError> {
    let mut cmd = command(dir, args);
    if !has_identity(dir) {
        for (name, value) in [
            ("GIT_AUTHOR_NAME", "tandem"),
            ("GIT_AUTHOR_EMAIL", "tandem@localhost"),
            ("GIT_COMMITTER_NAME", "tandem"),
            ("GIT_COMMITTER_EMAIL", "tandem@localhost"),
        ] {
            if std::env::var_os(name).is_none() {
                cmd.env(name, value);
            }
        }
    }
    let out = cmd.output().map_err(|source| WorkspaceError::Io {
        path: "git".into(),
        source,
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(failed(args, &out))
    }
}

/// True when git would find a committer identity in the configuration at `dir`.
fn has_identity(dir: &Path) -> bool {
    bare_command(dir)
        .args(["config", "--get", "user.email"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// Runs a command and returns its output whatever its exit status.
pub fn output(dir: &Path, args: &[&str]) -> Result<Output, WorkspaceError> {
    command(dir, args)
        .output()
        .map_err(|source| WorkspaceError::Io {
            path: "git".into(),
            source,
        })
}

/// Runs a command that must succeed; its standard output.
pub fn run(dir: &Path, args: &[&str]) -> Result<String, WorkspaceError> {
    let out = output(dir, args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(failed(args, &out))
    }
}

/// Like [`run`], with `index` as git's index file instead of the checkout's own (a
/// snapshot staged there leaves the user's staging area alone).
pub fn run_in_index(dir: &Path, index: &Path, args: &[&str]) -> Result<String, WorkspaceError> {
    let out = command(dir, args)
        .env("GIT_INDEX_FILE", index)
        .output()
        .map_err(|source| WorkspaceError::Io {
            path: "git".into(),
            source,
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(failed(args, &out))
    }
}

/// Like [`run`], trimmed of the trailing newline.
pub fn line(dir: &Path, args: &[&str]) -> Result<String, WorkspaceError> {
    run(dir, args).map(|s| s.trim_end().to_string())
}

/// The error for a command that exited with failure.
pub fn failed(args: &[&str], out: &Output) -> WorkspaceError {
    WorkspaceError::Git {
        command: args.join(" "),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    }
}

/// Runs a command and keeps at most `cap` bytes of its standard output (the process
/// is stopped once past it); the bytes and whether they were cut.
pub fn capped(dir: &Path, args: &[&str], cap: usize) -> Result<(Vec<u8>, bool), WorkspaceError> {
    let mut child = command(dir, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| WorkspaceError::Io {
            path: "git".into(),
            source,
        })?;
    let mut buf = Vec::new();
    let mut truncated = false;
    if let Some(stdout) = child.stdout.take() {
        let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
        stdout
            .take(limit)
            .read_to_end(&mut buf)
            .map_err(|source| WorkspaceError::Io {
                path: "git output".into(),
                source,
            })?;
        if buf.len() > cap {
            buf.truncate(cap);
            truncated = true;
            let _ = child.kill();
        }
    }
    let _ = child.wait();
    Ok((buf, truncated))
}

/// The top of the working tree containing `dir`, or `None` outside any repository.
pub fn toplevel(dir: &Path) -> Option<std::path::PathBuf> {
    let out = output(dir, &["rev-parse", "--show-toplevel"]).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim_end().into())
}

/// The commit `rev` names, or `None`.
pub fn commit_of(dir: &Path, rev: &str) -> Option<String> {
    let spec = format!("{rev}^{{commit}}");
    let out = output(dir, &["rev-parse", "-q", "--verify", &spec]).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The branch checked out at `dir` (short name), or `None` on a detached HEAD.
pub fn current_branch(dir: &Path) -> Option<String> {
    let out = output(dir, &["symbolic-ref", "-q", "--short", "HEAD"]).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// True when `name` is a local branch.
pub fn is_branch(dir: &Path, name: &str) -> bool {
    let r = format!("refs/heads/{name}");
    output(dir, &["show-ref", "--verify", "-q", &r]).is_ok_and(|o| o.status.success())
}

/// The `.git` directory of the checkout at `dir` (a worktree's own one).
pub fn git_dir(dir: &Path) -> Result<std::path::PathBuf, WorkspaceError> {
    line(dir, &["rev-parse", "--absolute-git-dir"]).map(Into::into)
}
