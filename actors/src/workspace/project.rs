//! A repository's own settings for tandem: `.tandem/worktree.toml` at the top of the
//! working tree. Read without following links (it is a file agents can write), at
//! most 64 KiB; a repository without it has no settings. Keys this server does not
//! use yet are ignored, so a file written for a newer one still reads.
//!
//! ```toml
//! merge_requires_checks = true
//! [[checks]]
//! name = "tests"
//! command = "cargo test"
//! timeout_secs = 600
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{files, git, WorkspaceError};

/// Where the file is, relative to the top of the working tree.
pub const PATH: &str = ".tandem/worktree.toml";

/// Checks a file may declare.
const MAX_CHECKS: usize = 20;
/// A check's time limit when the file gives none, and the most it may give.
const DEFAULT_TIMEOUT_SECS: u64 = 600;
const MAX_TIMEOUT_SECS: u64 = 3600;

/// The settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Project {
    /// `[[checks]]`, run in order by `session.check`.
    pub checks: Vec<CheckSpec>,
    /// A merge whose last checks did not all pass is refused (`CHECKS_FAILED`) unless
    /// forced.
    pub merge_requires_checks: bool,
    /// The checks run when a worktree Worker's delegation ends, and their outcome
    /// goes to the Driver with the Worker's changes.
    pub checks_on_delegation: bool,
}

/// One check.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckSpec {
    /// Its name, unique in the file.
    pub name: String,
    /// A shell command (`sh -c`), run in the working directory.
    pub command: String,
    /// Killed after this long (default 600, at most 3600).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

/// The settings of the working tree that holds `dir`; `private` are the server's own
/// paths, never read. No file: the defaults. Blocking.
pub fn read(dir: &Path, private: &[PathBuf]) -> Result<Project, WorkspaceError> {
    let top = git::toplevel(dir).unwrap_or_else(|| dir.to_path_buf());
    let jail = files::Jail::new(&top, private)?;
    let text = match files::read(&jail, PATH) {
        Ok(file) => file.content,
        Err(WorkspaceError::NoSuchFile(_)) => return Ok(Project::default()),
        Err(e) => return Err(e),
    };
    parse(&text)
}

/// The settings in `text`, checked.
pub fn parse(text: &str) -> Result<Project, WorkspaceError> {
    let bad = |why: String| WorkspaceError::Unusable(format!("{PATH}: {why}"));
    let project: Project = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
    if project.checks.len() > MAX_CHECKS {
        return Err(bad(format!("at most {MAX_CHECKS} checks")));
    }
    let mut names = std::collections::HashSet::new();
    for check in &project.checks {
        if check.name.trim().is_empty() || check.command.trim().is_empty() {
            return Err(bad("every check needs a `name` and a `command`".into()));
        }
        if !names.insert(check.name.as_str()) {
            return Err(bad(format!("two checks are named `{:.64}`", check.name)));
        }
        if check.timeout_secs == 0 || check.timeout_secs > MAX_TIMEOUT_SECS {
            return Err(bad(format!(
                "`timeout_secs` of `{:.64}` must be 1 to {MAX_TIMEOUT_SECS}",
                check.name
            )));
        }
    }
    Ok(project)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_and_settings_are_read_and_unknown_keys_ignored() {
        let p = parse(
            "merge_requires_checks = true\nchecks_on_delegation = true\nsetup = [\"npm ci\"]\n\
             [[checks]]\nname = \"unit\"\ncommand = \"make test\"\n\
             [[checks]]\nname = \"lint\"\ncommand = \"make lint\"\ntimeout_secs = 30\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(p.merge_requires_checks && p.checks_on_delegation);
        assert_eq!(p.checks.len(), 2);
        assert_eq!(p.checks[0].timeout_secs, 600);
        assert_eq!(p.checks[1].timeout_secs, 30);
        assert_eq!(
            parse("").unwrap_or_else(|e| panic!("{e}")),
            Project::default()
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        for (text, says) in [
            ("[[checks]]\nname = \"a\"\n", "command"),
            ("[[checks]]\nname = \"a\"\ncommand = \"x\"\n[[checks]]\nname = \"a\"\ncommand = \"y\"\n", "two checks"),
            ("[[checks]]\nname = \"a\"\ncommand = \"x\"\ntimeout_secs = 0\n", "timeout_secs"),
            ("checks = 3", "worktree.toml"),
        ] {
            let Err(WorkspaceError::Unusable(why)) = parse(text) else {
                panic!("{text} was accepted");
            };
            assert!(why.contains(says), "{text}: {why}");
        }
    }
}
