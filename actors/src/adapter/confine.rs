//! Confining vendor processes with Landlock: what a vendor process may touch, and the
//! command line that starts it confined.
//!
//! Unsafe code is forbidden in this workspace, so the ruleset cannot be applied between
//! `fork` and `exec` (a `pre_exec` hook). A confined vendor process is started through
//! the server's own binary instead: `tandem confine --rw DIR… --ro DIR… -- PROGRAM ARGS…`
//! (the `confine` module of `tandem-http`) applies a Landlock ruleset to itself and
//! `exec`s PROGRAM. Landlock domains survive `exec` and are inherited by every child, so
//! the agent's shells, tools and background tasks are confined as well.
//!
//! This module decides what the ruleset allows ([`allow_list`]): the session's working
//! directory (and the git directory it belongs to), the vendor's own config and cache
//! directories under `HOME`, a private temporary directory (made by `tandem confine`),
//! read-only system paths, `PATH` and the vendor's installation. Everything else is
//! denied by construction, in particular the data directory (tokens, histories) and
//! other users' working directories. A listed path that contains the data directory is
//! left out, except the working directory itself: a session working in a directory that
//! holds the data directory could not work at all otherwise, so it is allowed and a
//! warning says the agent can read the data directory (`tandem serve` also says so at
//! start for every workspace root that contains it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tandem_protocol::rest::VendorInfo;

use super::VendorId;

/// The hidden subcommand of the `tandem` binary that confines itself and runs the
/// vendor's program.
pub const SUBCOMMAND: &str = "confine";

/// Name prefix of the private temporary directories `tandem confine` makes
/// (`tandem-agent-<pid>-<n>`); the pid lets the server remove those of processes that
/// ended ([`sweep_temp_dirs`]).
pub const TEMP_PREFIX: &str = "tandem-agent-";

/// System paths a vendor process may read and execute from, where they exist. `/proc`
/// is needed by runtimes (Node reads `/proc/self/…`); Landlock also keeps a confined
/// process from reading another process's `/proc/PID/environ`, `fd` or `root` unless
/// that process is confined by the same or a nested ruleset.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/run", "/sys",
    "/proc", "/nix",
];

/// System paths a vendor process may also write: `/dev` (`/dev/null`, `/dev/tty`, the
/// pseudo-terminals Codex runs commands in).
const SYSTEM_WRITE: &[&str] = &["/dev"];

/// Directories and files under `HOME` that vendor CLIs and the tools agents run keep
/// their config, logins, caches and history in: read and write.
const HOME_WRITE: &[&str] = &[
    ".codex",
    ".claude",
    ".claude.json",
    ".gemini",
    ".config",
    ".cache",
    ".local",
    ".npm",
    ".cargo",
    ".rustup",
];

/// Directories under `HOME` made when missing, before a confined process starts: it
/// cannot make them itself, as it cannot write in `HOME`. The built-in vendors' (and
/// Zed's ACP bridges to them) and the usual XDG ones.
const HOME_MAKE: &[&str] = &[".codex", ".claude", ".cache", ".config", ".local"];

/// Files under `HOME` made when missing (with this content), for the same reason:
/// Claude Code's settings file, which it cannot create next to `HOME`'s other files.
const HOME_MAKE_FILES: &[(&str, &str)] = &[(".claude.json", "{}")];

/// Files under `HOME` that are read only.
const HOME_READ: &[&str] = &[".gitconfig", ".npmrc"];

/// Environment variables naming a vendor's config or cache directory: read and write.
const ENV_WRITE: &[&str] = &[
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
];

/// Whether vendor processes run confined, as `tandem serve` found at start (it asks
/// `tandem confine --probe` what the kernel enforces).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// How confined processes are started; `None`: vendor processes are not confined.
    pub launcher: Option<Launcher>,
    /// Why confinement is off, or what a partially enforced ruleset leaves out.
    pub problem: Option<String>,
}

impl Confinement {
    /// Not confined, because of `problem`.
    pub fn off(problem: impl Into<String>) -> Confinement {
        Confinement {
            launcher: None,
            problem: Some(problem.into()),
        }
    }

    /// `landlock` when vendor processes are confined, else `none` (the words of
    /// `GET /vendors`' `confinement`).
    pub fn mode(&self) -> &'static str {
        if self.launcher.is_some() {
            "landlock"
        } else {
            "none"
        }
    }

    /// Fills in `confinement` and `confinementProblem` of a vendor's entry; vendors that
    /// run inside the server (the scripted agent) have no process to confine.
    pub fn describe(&self, info: &mut VendorInfo) {
        if info.id == VendorId::SCRIPTED.as_str() {
            return;
        }
        info.confinement = Some(self.mode().to_string());
        info.confinement_problem = self.problem.clone();
    }
}

/// How a confined vendor process is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The program that confines itself and runs the vendor's: the server's own binary
    /// (which has the `confine` subcommand).
    pub helper: PathBuf,
    /// Paths no vendor process may reach: the data directory and the config file
    /// ([`crate::RuntimeConfig::private_paths`]). A listed path that contains one is
    /// left out, except a working directory (see the module comment).
    pub denied: Vec<PathBuf>,
    /// Programs and files a process may read and execute besides its own, with their
    /// installations ([`installation`]): those of the config's stdio MCP servers,
    /// which CLIs start (set once at start), and a Claude Code process's MCP config
    /// file (added for that process).
    pub also_read: Vec<PathBuf>,
}

impl Launcher {
    /// `helper confine --rw … --ro … [--in-temp] -- bin`, for a process whose
    /// environment is `env`, working in `workdir` (a session's) or, when `None`, in its
    /// private temporary directory (`--in-temp`: version and login checks, probes).
    /// The caller adds the vendor's arguments, environment and working directory.
    pub fn command(
        &self,
        bin: &Path,
        env: &BTreeMap<String, String>,
        workdir: Option<&Path>,
    ) -> tokio::process::Command {
        sweep_temp_dirs(&temp_base(env));
        let allow = allow_list(bin, env, workdir, &self.denied, &self.also_read);
        if allow.workdir_holds_denied {
            tracing::warn!(
                workdir = %workdir.map(Path::display).map(|d| d.to_string()).unwrap_or_default(),
                "the session's working directory contains the data directory or the config file: its agent can read them"
            );
        }
        let mut cmd = tokio::process::Command::new(&self.helper);
        cmd.arg(SUBCOMMAND);
        for dir in &allow.write {
            cmd.arg("--rw").arg(dir);
        }
        for dir in &allow.read {
            cmd.arg("--ro").arg(dir);
        }
        if workdir.is_none() {
            cmd.arg("--in-temp");
        }
        cmd.arg("--").arg(bin);
        cmd
    }
}

/// What a confined vendor process may use, besides its private temporary directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    /// Read, write, create, remove, execute beneath each (canonical, existing).
    pub write: Vec<PathBuf>,
    /// Read and execute beneath each (canonical, existing).
    pub read: Vec<PathBuf>,
    /// The working directory contains a denied path (and was allowed anyway).
    pub workdir_holds_denied: bool,
}

/// The paths a vendor process running `bin` with environment `env` in `workdir` may
/// use (see the module comment). Paths that do not exist are left out, every path is
/// made canonical, and none that contains one of `denied` is kept except `workdir`.
pub fn allow_list(
    bin: &Path,
    env: &BTreeMap<String, String>,
    workdir: Option<&Path>,
    denied: &[PathBuf],
    also_read: &[PathBuf],
) -> AllowList {
    let mut write: Vec<PathBuf> = SYSTEM_WRITE.iter().map(PathBuf::from).collect();
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    if let Some(path) = env.get("PATH") {
        read.extend(std::env::split_paths(path).filter(|d| d.is_absolute()));
    }
    read.extend(installation(bin));
    read.extend(script_targets(bin).iter().flat_map(|p| installation(p)));
    read.extend(also_read.iter().flat_map(|p| installation(p)));
    if let Some(home) = env
        .get("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
    {
        if home.is_dir() {
            for name in HOME_MAKE {
                let _ = std::fs::create_dir(home.join(name));
            }
            for (name, content) in HOME_MAKE_FILES {
                // `create_new`: an existing file is never touched.
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(home.join(name))
                    .and_then(|mut f| std::io::Write::write_all(&mut f, content.as_bytes()));
            }
        }
        write.extend(HOME_WRITE.iter().map(|name| home.join(name)));
        read.extend(HOME_READ.iter().map(|name| home.join(name)));
    }
    write.extend(
        ENV_WRITE
            .iter()
            .filter_map(|key| env.get(*key))
            .map(PathBuf::from)
            .filter(|p| p.is_absolute()),
    );
    let denied: Vec<PathBuf> = denied
        .iter()
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()))
        .collect();
    // A path that holds a denied one, or lies in one (a file in the data directory
    // that an MCP server's arguments name, say).
    let holds_denied = |p: &Path| denied.iter().any(|d| d.starts_with(p) || p.starts_with(d));
    let mut allow = AllowList::default();
    if let Some(dir) = workdir.and_then(|w| w.canonicalize().ok()) {
        allow.workdir_holds_denied = holds_denied(&dir);
        write.extend(git_dirs(&dir));
        allow.write.push(dir);
    }
    for dir in write.iter().filter_map(|p| p.canonicalize().ok()) {
        if !holds_denied(&dir) && !allow.write.contains(&dir) {
            allow.write.push(dir);
        }
    }
    for dir in read.iter().filter_map(|p| p.canonicalize().ok()) {
        if !holds_denied(&dir) && !allow.read.contains(&dir) && !allow.write.contains(&dir) {
            allow.read.push(dir);
        }
    }
    allow
}

/// Where the vendor's program is installed: the binary itself, and the top-most
/// `node_modules` folder it lies in (a Node package's code and the native binaries it
/// ships), or else the folder it lies in.
fn installation(bin: &Path) -> Vec<PathBuf> {
    let Ok(real) = bin.canonicalize() else {
        return Vec::new();
    };
    let root = real
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .or_else(|| real.parent())
        .map(Path::to_path_buf);
    std::iter::once(real).chain(root).collect()
}

/// Longest script read for [`script_targets`].
const SCRIPT_BYTES: u64 = 64 << 10;

/// The programs a wrapper script `bin` (`#!…`) names by absolute path, e.g. the real
/// CLI a `exec /opt/x/bin/cli "$@"` wrapper runs, and its interpreter: executable files
/// only. Their
/// installations are allowed like `bin`'s, or the wrapper could not run them.
fn script_targets(bin: &Path) -> Vec<PathBuf> {
    let Ok(file) = std::fs::File::open(bin) else {
        return Vec::new();
    };
    let mut text = String::new();
    if std::io::Read::read_to_string(&mut std::io::Read::take(file, SCRIPT_BYTES), &mut text)
        .is_err()
        || !text.starts_with("#!")
    {
        return Vec::new();
    }
    let mut found: Vec<PathBuf> = text
        .split(|c: char| c.is_whitespace() || "\"'`;=(){}|&<>!".contains(c))
        .filter(|word| word.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| is_executable(p))
        .collect();
    found.dedup();
    found
}

/// A regular file someone may execute.
fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The git directory of the repository `workdir` belongs to, when it lies outside
/// `workdir`: a worktree's own git directory and the main checkout's common directory
/// (a `.git` file), or the `.git` folder of a checkout `workdir` is a subfolder of.
/// Git writes there (index, refs, objects) for work in `workdir`.
fn git_dirs(workdir: &Path) -> Vec<PathBuf> {
    for dir in workdir.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return vec![dot_git];
        }
        if !dot_git.is_file() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&dot_git) else {
            return Vec::new();
        };
        let Some(gitdir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
            return Vec::new();
        };
        let gitdir = dir.join(gitdir.trim());
        let common = std::fs::read_to_string(gitdir.join("commondir"))
            .ok()
            .map(|c| gitdir.join(c.trim()));
        return std::iter::once(gitdir).chain(common).collect();
    }
    Vec::new()
}

/// Where the private temporary directories of processes with environment `env` are
/// made: `TMPDIR`, else `/tmp` (as `std::env::temp_dir` decides in `tandem confine`).
pub fn temp_base(env: &BTreeMap<String, String>) -> PathBuf {
    env.get("TMPDIR")
        .filter(|t| !t.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Removes the private temporary directories under `base` whose process has ended.
/// `tandem confine` cannot remove its own (it becomes the vendor's program), so the
/// server removes them when it starts the next confined process. Never fails: what
/// cannot be read or removed (another user's) is left alone.
pub fn sweep_temp_dirs(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Scratch;

    /// A scratch directory (removed at the end) and its canonical path: the allow-list
    /// compares canonical paths.
    fn scratch(label: &str) -> (Scratch, PathBuf) {
        let dir = Scratch::new(label);
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    fn env(pairs: &[(&str, &Path)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.display().to_string()))
            .collect()
    }

    #[test]
    fn allows_the_workdir_vendor_dirs_and_system_but_not_the_data_dir_or_home() {
        let (_s, root) = scratch("allow");
        let (home, work, data, other) = (
            root.join("home"),
            root.join("roots/alice/work"),
            root.join("home/.tandem"),
            root.join("roots/bob"),
        );
        let pkg = root.join("prefix/node_modules/@v/cli/bin");
        for d in [&home.join(".codex"), &work, &data, &other, &pkg] {
            std::fs::create_dir_all(d).unwrap();
        }
        let bin = pkg.join("cli.js");
        std::fs::write(&bin, "#!/usr/bin/env node\n").unwrap();
        let allow = allow_list(
            &bin,
            &env(&[("HOME", &home)]),
            Some(&work),
            std::slice::from_ref(&data),
            &[],
        );
        assert!(allow.write.contains(&work), "{allow:?}");
        assert!(allow.write.contains(&home.join(".codex")), "{allow:?}");
        assert!(allow.write.contains(&PathBuf::from("/dev")), "{allow:?}");
        assert!(allow.read.contains(&PathBuf::from("/usr")), "{allow:?}");
        assert!(
            allow.read.contains(&root.join("prefix/node_modules")),
            "{allow:?}"
        );
        assert!(allow.read.contains(&bin), "{allow:?}");
        assert!(!allow.workdir_holds_denied);
        // Nothing allowed contains the data directory or the other root.
        for p in allow.write.iter().chain(&allow.read) {
            assert!(!data.starts_with(p), "{p:?} holds the data directory");
            assert!(!other.starts_with(p), "{p:?} holds another root");
        }
    }

    #[test]
    fn a_listed_path_holding_the_data_dir_is_left_out_but_the_workdir_stays() {
        let (_s, root) = scratch("holds");
        let (home, data) = (root.join("home"), root.join("home/.local/share/tandem"));
        std::fs::create_dir_all(&data).unwrap();
        let allow = allow_list(
            Path::new("/bin/sh"),
            &env(&[("HOME", &home)]),
            Some(&home),
            std::slice::from_ref(&data),
            &[],
        );
        assert!(!allow.write.contains(&home.join(".local")), "{allow:?}");
        assert!(allow.write.contains(&home), "{allow:?}");
        assert!(allow.workdir_holds_denied);
    }

    #[test]
    fn a_wrapper_script_gets_the_installation_of_what_it_runs() {
        let (_s, root) = scratch("wrapper");
        let real = root.join("opt/node_modules/@v/cli/bin/cli");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "#!/bin/sh\n").unwrap();
        let wrapper = root.join("wrapper");
        std::fs::write(
            &wrapper,
            format!("#!/bin/sh\nexec \"{}\" \"$@\"\n", real.display()),
        )
        .unwrap();
        for f in [&real, &wrapper] {
            std::process::Command::new("chmod")
                .arg("+x")
                .arg(f)
                .status()
                .unwrap();
        }
        assert_eq!(
            script_targets(&wrapper),
            vec![PathBuf::from("/bin/sh"), real]
        );
        let allow = allow_list(&wrapper, &BTreeMap::new(), None, &[], &[]);
        assert!(
            allow.read.contains(&root.join("opt/node_modules")),
            "{allow:?}"
        );
    }

    #[test]
    fn a_worktree_gets_its_git_directories() {
        let (_s, root) = scratch("git");
        let (base, wt) = (root.join("repo"), root.join("wt"));
        let gitdir = base.join(".git/worktrees/wt");
        std::fs::create_dir_all(&gitdir).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        let dirs: Vec<PathBuf> = git_dirs(&wt)
            .into_iter()
            .map(|d| d.canonicalize().unwrap())
            .collect();
        assert_eq!(dirs, vec![gitdir.clone(), base.join(".git")]);
        // A subfolder of a checkout gets the checkout's `.git`.
        let sub = base.join("src");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(git_dirs(&sub), vec![base.join(".git")]);
    }

    #[test]
    fn stale_temp_dirs_are_swept_live_ones_kept() {
        let (_s, root) = scratch("sweep");
        let live = root.join(format!("{TEMP_PREFIX}{}-1", std::process::id()));
        let dead = root.join(format!("{TEMP_PREFIX}{}-1", u32::MAX - 1));
        let other = root.join("unrelated-dir");
        for d in [&live, &dead, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        sweep_temp_dirs(&root);
        assert!(live.is_dir() && other.is_dir());
        assert!(!dead.exists());
    }
}
