//! A repository's own settings for tandem: `.tandem/worktree.toml` at the top of the
//! working tree. Read without following links (it is a file agents can write), at
//! most 64 KiB; a repository without it has no settings. Keys this server does not
//! use yet are ignored, so a file written for a newer one still reads.
//!
//! Without it, a worktree's scripts are read from Conductor's `conductor.json`
//! (`scripts.setup`, `scripts.run`, `scripts.archive`) or Cursor's
//! `.cursor/worktrees.json` (`setup-worktree-unix`, else `setup-worktree`).
//!
//! ```toml
//! copy = [".env"]
//! setup = ["npm ci"]
//! run = "npm run dev"
//! archive = ["docker compose down"]
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
    /// A vendor whose agent reviews a worktree Worker's change when its delegation
    /// ends; its verdict goes to the Driver with the Worker's changes.
    pub review_on_delegation: Option<String>,
    /// What that reviewer is told to look for (default: bugs, risks, missing tests,
    /// unclear code).
    pub review_instructions: Option<String>,
    /// Paths (files or directories, relative to the top of the checkout) copied from
    /// the base checkout into a new worktree before `setup`: what git does not carry,
    /// like `.env`.
    #[serde(deserialize_with = "one_or_many")]
    pub copy: Vec<String>,
    /// Commands that prepare a new worktree, run in order until one fails.
    #[serde(deserialize_with = "one_or_many")]
    pub setup: Vec<String>,
    /// The long-running command `session.run` starts (a dev server on `TANDEM_PORT`).
    pub run: Option<String>,
    /// Commands run in order as a worktree is discarded or archived.
    #[serde(deserialize_with = "one_or_many")]
    pub archive: Vec<String>,
    /// Which file the scripts came from (not a key of the file).
    #[serde(skip)]
    pub scripts_from: ScriptsFrom,
}

/// The file a repository's worktree scripts were read from: each gives its scripts
/// the environment variables its own tool does, besides `TANDEM_PORT`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ScriptsFrom {
    /// `.tandem/worktree.toml`, or no file.
    #[default]
    Tandem,
    /// Conductor's `conductor.json`.
    Conductor,
    /// Cursor's `.cursor/worktrees.json`.
    Cursor,
}

impl Project {
    /// Whether it declares any worktree script or file to copy.
    pub fn has_scripts(&self) -> bool {
        !self.copy.is_empty()
            || !self.setup.is_empty()
            || self.run.is_some()
            || !self.archive.is_empty()
    }
}

/// A list of strings, or one string for a list of one.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

/// Conductor's `conductor.json`, the part read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ConductorJson {
    scripts: ConductorScripts,
}

/// `scripts` of `conductor.json`: one shell text each.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ConductorScripts {
    setup: Option<String>,
    run: Option<String>,
    archive: Option<String>,
}

/// Cursor's `.cursor/worktrees.json`, the part read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CursorJson {
    #[serde(rename = "setup-worktree-unix", deserialize_with = "one_or_many")]
    unix: Vec<String>,
    #[serde(rename = "setup-worktree", deserialize_with = "one_or_many")]
    any: Vec<String>,
}

/// Where Conductor and Cursor keep their worktree scripts.
pub const CONDUCTOR_PATH: &str = "conductor.json";
/// See [`CONDUCTOR_PATH`].
pub const CURSOR_PATH: &str = ".cursor/worktrees.json";

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
    let Some(text) = read_text(&jail, PATH)? else {
        return fallback(&jail);
    };
    let mut project = parse(&text)?;
    if !project.has_scripts() {
        // Checks of our own, scripts of another tool's.
        let other = fallback(&jail)?;
        project.setup = other.setup;
        project.run = other.run;
        project.archive = other.archive;
        project.scripts_from = other.scripts_from;
    }
    Ok(project)
}

/// `path` of the jail's tree as text; `None` when it does not exist.
fn read_text(jail: &files::Jail, path: &str) -> Result<Option<String>, WorkspaceError> {
    match files::read(jail, path) {
        Ok(file) => Ok(Some(file.content)),
        Err(WorkspaceError::NoSuchFile(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The scripts of `conductor.json`, else of `.cursor/worktrees.json`, else none.
fn fallback(jail: &files::Jail) -> Result<Project, WorkspaceError> {
    if let Some(text) = read_text(jail, CONDUCTOR_PATH)? {
        return parse_conductor(&text);
    }
    if let Some(text) = read_text(jail, CURSOR_PATH)? {
        return parse_cursor(&text);
    }
    Ok(Project::default())
}

/// The scripts of a `conductor.json`.
pub fn parse_conductor(text: &str) -> Result<Project, WorkspaceError> {
    let file: ConductorJson = serde_json::from_str(text)
        .map_err(|e| WorkspaceError::Unusable(format!("{CONDUCTOR_PATH}: {e}")))?;
    let some = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
    Ok(Project {
        setup: some(file.scripts.setup).into_iter().collect(),
        run: some(file.scripts.run),
        archive: some(file.scripts.archive).into_iter().collect(),
        scripts_from: ScriptsFrom::Conductor,
        ..Project::default()
    })
}

/// The setup of a `.cursor/worktrees.json`.
pub fn parse_cursor(text: &str) -> Result<Project, WorkspaceError> {
    let file: CursorJson = serde_json::from_str(text)
        .map_err(|e| WorkspaceError::Unusable(format!("{CURSOR_PATH}: {e}")))?;
    let setup = if file.unix.is_empty() {
        file.any
    } else {
        file.unix
    };
    Ok(Project {
        setup: setup.into_iter().filter(|s| !s.trim().is_empty()).collect(),
        scripts_from: ScriptsFrom::Cursor,
        ..Project::default()
    })
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
    for path in &project.copy {
        files::check_relative(path).map_err(|_| {
            bad(format!(
                "`copy` takes paths inside the checkout, without `..` or `.git`: `{path:.64}`"
            ))
        })?;
    }
    if project
        .review_on_delegation
        .as_deref()
        .is_some_and(|v| v.trim().is_empty())
    {
        return Err(bad("`review_on_delegation` names no vendor".into()));
    }
    if project.run.as_deref().is_some_and(|r| r.trim().is_empty()) {
        return Err(bad("`run` is empty".into()));
    }
    Ok(project)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_and_settings_are_read_and_unknown_keys_ignored() {
        let p = parse(
            "merge_requires_checks = true\nchecks_on_delegation = true\nunknown = [\"x\"]\n\
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
    fn scripts_are_read_from_ours_or_conductors_or_cursors() {
        let ours = parse(
            "copy = \".env\"\nsetup = [\"npm ci\", \"make\"]\nrun = \"npm run dev\"\narchive = \"rm -rf tmp\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ours.copy, [".env"]);
        assert_eq!(ours.setup, ["npm ci", "make"]);
        assert_eq!(ours.run.as_deref(), Some("npm run dev"));
        assert_eq!(ours.archive, ["rm -rf tmp"]);
        let conductor = parse_conductor(
            r#"{"scripts": {"setup": "bun i", "run": "bun dev", "archive": ""}, "runScriptMode": "nonconcurrent"}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(conductor.setup, ["bun i"]);
        assert_eq!(conductor.run.as_deref(), Some("bun dev"));
        assert!(conductor.archive.is_empty());
        assert_eq!(conductor.scripts_from, ScriptsFrom::Conductor);
        let cursor =
            parse_cursor(r#"{"setup-worktree": ["npm ci", "cp $ROOT_WORKTREE_PATH/.env .env"]}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cursor.setup.len(), 2);
        let unix = parse_cursor(r#"{"setup-worktree": "a", "setup-worktree-unix": ["b"]}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(unix.setup, ["b"]);
        assert!(parse_conductor("{").is_err());
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        for (text, says) in [
            ("[[checks]]\nname = \"a\"\n", "command"),
            ("[[checks]]\nname = \"a\"\ncommand = \"x\"\n[[checks]]\nname = \"a\"\ncommand = \"y\"\n", "two checks"),
            ("[[checks]]\nname = \"a\"\ncommand = \"x\"\ntimeout_secs = 0\n", "timeout_secs"),
            ("checks = 3", "worktree.toml"),
            ("copy = [\"../secret\"]", "copy"),
            ("run = \" \"", "run"),
        ] {
            let Err(WorkspaceError::Unusable(why)) = parse(text) else {
                panic!("{text} was accepted");
            };
            assert!(why.contains(says), "{text}: {why}");
        }
    }
}
