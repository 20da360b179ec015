//! `session.push`: a worktree's branch pushed to a remote of its base repository,
//! after its uncommitted changes are committed (as a merge does).
//!
//! The remote's URL is read from the base repository and pushed to directly, so what
//! else a repository's configuration (which agents write) says about the remote (its
//! `receivepack`, `pushurl`) is never run; on top of the settings every git call has
//! (no hooks, no credential helper), the ssh command is plain `ssh` and only the
//! ordinary transports are allowed (no `ext::`, no remote helpers), whatever
//! `url.*.insteadOf` rewrites the URL to.

use std::path::Path;

use tandem_protocol::workspace::WorkspaceInfo;

use super::{git, merge, WorkspaceError};

/// Settings of the push itself, after [`git::command`]'s own.
const PUSH_SETTINGS: &[&str] = &[
    "core.sshCommand=ssh",
    "protocol.allow=never",
    "protocol.file.allow=always",
    "protocol.ssh.allow=always",
    "protocol.https.allow=always",
    "protocol.http.allow=always",
    "protocol.git.allow=always",
];

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The remote's name.
    pub remote: String,
    /// The branch written there.
    pub branch: String,
    /// The commit pushed.
    pub commit: String,
}

/// A remote name git would take, from a client: letters, digits, `.`, `_`, `-`, not
/// starting with `-`.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Pushes the worktree at `worktree` (workspace `ws`) to `remote` (default: the base
/// branch's upstream remote, else `origin`) as `branch` (default: its own branch).
/// Blocking.
pub fn push(
    worktree: &Path,
    ws: &WorkspaceInfo,
    remote: Option<&str>,
    branch: Option<&str>,
    message: &str,
) -> Result<Pushed, WorkspaceError> {
    let base = Path::new(&ws.base_checkout);
    let remote = match remote.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => r.to_string(),
        None => git::line(
            base,
            &["config", "--get", &format!("branch.{}.remote", ws.base)],
        )
        .ok()
        .filter(|r| r != ".")
        .unwrap_or_else(|| "origin".to_string()),
    };
    if !plain_name(&remote) {
        return Err(WorkspaceError::InvalidArgument(format!(
            "`{remote:.100}` is not a remote name"
        )));
    }
    let url = git::line(base, &["config", "--get", &format!("remote.{remote}.url")])
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            WorkspaceError::Unusable(format!(
                "the repository at {} has no remote `{remote}`",
                ws.base_checkout
            ))
        })?;
    let target = branch
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .unwrap_or(&ws.branch)
        .to_string();
    if git::run(base, &["check-ref-format", "--branch", &target]).is_err() {
        return Err(WorkspaceError::InvalidArgument(format!(
            "`{target:.100}` is not a branch name"
        )));
    }
    let tip = git::line(worktree, &["rev-parse", "HEAD"])?;
    let commit = merge::snapshot(worktree, &tip, message)?;
    if commit != tip {
        let branch_ref = format!("refs/heads/{}", ws.branch);
        git::run(worktree, &["update-ref", &branch_ref, &commit, &tip])?;
        git::run(worktree, &["reset", "-q"])?;
    }
    let mut args: Vec<String> = Vec::new();
    for setting in PUSH_SETTINGS {
        args.extend(["-c".to_string(), (*setting).to_string()]);
    }
    args.extend([
        "push".into(),
        "--quiet".into(),
        "--".into(),
        url,
        format!("{commit}:refs/heads/{target}"),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = git::command(base, &args)
        .env_remove("GIT_SSH")
        .env_remove("GIT_SSH_VARIANT")
        .output()
        .map_err(|source| WorkspaceError::Io {
            path: "git".into(),
            source,
        })?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(WorkspaceError::PushRefused(said));
    }
    Ok(Pushed {
        remote,
        branch: target,
        commit,
    })
}

#[cfg(test)]
mod tests {
    use super::plain_name;

    #[test]
    fn remote_names_are_plain() {
        for ok in ["origin", "up-stream", "a.b_c"] {
            assert!(plain_name(ok), "{ok}");
        }
        for bad in ["", "-u", "a b", "ext::sh", "../x", "x/y"] {
            assert!(!plain_name(bad), "{bad}");
        }
    }
}
