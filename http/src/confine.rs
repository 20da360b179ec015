//! `tandem confine`: the hidden subcommand vendor processes are started through when
//! agents are confined (see `tandem_actors::adapter::confine` for what is allowed and
//! why the server starts them this way). It makes the process's private temporary
//! directory, applies a Landlock ruleset to itself that allows only the paths it is
//! given (and that directory), and `exec`s the vendor's program, which keeps the
//! ruleset, as does everything the program starts.
//!
//! `tandem confine --probe` applies an empty ruleset and prints what the kernel
//! enforced; `tandem serve` and `tandem doctor` ask it once at start ([`detect`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tandem_actors::adapter::confine::{Confinement, Launcher, SUBCOMMAND, TEMP_PREFIX};

/// Flags of `tandem confine` (hidden from `--help`: only the server runs it).
#[derive(Debug, clap::Args)]
pub struct ConfineArgs {
    /// Print what the kernel enforces (`full ABI`, `partial ABI` or `none REASON`) and
    /// exit, instead of running a program.
    #[arg(long)]
    probe: bool,
    /// A path the program may read, write, create and remove in (repeatable).
    #[arg(long)]
    rw: Vec<PathBuf>,
    /// A path the program may read and execute from (repeatable).
    #[arg(long)]
    ro: Vec<PathBuf>,
    /// Run the program in its private temporary directory (work outside a session).
    #[arg(long)]
    in_temp: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true)]
    command: Vec<OsString>,
}

/// Why `tandem confine` could not run the program.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// Nothing after `--`.
    #[error("no program given after `--`")]
    NoProgram,
    /// The private temporary directory could not be made.
    #[error("cannot make a private temporary directory under {dir}: {source}")]
    TempDir {
        /// Where it was to be made.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The kernel refused the ruleset.
    #[error("cannot apply the Landlock ruleset: {0}")]
    Ruleset(String),
    /// `exec` failed (the program is missing or not allowed).
    #[error("cannot run {program}: {source}")]
    Exec {
        /// The program.
        program: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// Runs `tandem confine`: exits only when the program could not be started (126, with
/// the reason on stderr) or after `--probe`.
pub fn run(args: ConfineArgs) -> ExitCode {
    if args.probe {
        println!("{}", ruleset::probe());
        return ExitCode::SUCCESS;
    }
    match confine_and_exec(args) {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("tandem confine: {e}");
            ExitCode::from(126)
        }
    }
}

/// Makes the private temporary directory, confines this process and becomes the
/// program; returns only on failure.
fn confine_and_exec(args: ConfineArgs) -> Result<std::convert::Infallible, ConfineError> {
    let Some((program, rest)) = args.command.split_first() else {
        return Err(ConfineError::NoProgram);
    };
    die_with_parent();
    let temp = private_temp_dir()?;
    let home = private_home(&temp, &args.rw, &args.ro);
    let mut rw = args.rw;
    rw.push(temp.clone());
    ruleset::restrict(&rw, &args.ro)?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest).env("TMPDIR", &temp);
    if let Some(home) = &home {
        cmd.env("HOME", home);
    }
    if args.in_temp {
        cmd.current_dir(&temp);
    }
    Err(ConfineError::Exec {
        program: program.to_string_lossy().into_owned(),
        source: exec(&mut cmd),
    })
}

/// Asks the kernel to kill this process (and so the agent it becomes: the setting
/// survives `exec`) when the server dies, also by SIGKILL, where nothing of the
/// server's runs to stop it. Without it the agent outlived a killed server, waiting
/// on its closed stdin. The kernel sends the signal when the *thread* that started
/// the process ends; the server starts vendor processes from its arbiter threads, which
/// live as long as it does. A server that died before the setting took is noticed by
/// the parent having changed.
#[cfg(target_os = "linux")]
fn die_with_parent() {
    let parent = std::os::unix::process::parent_id();
    let signal = Some(rustix::process::Signal::KILL);
    if let Err(e) = rustix::process::set_parent_process_death_signal(signal) {
        eprintln!("tandem confine: the agent will not die with the server: {e}");
        return;
    }
    if std::os::unix::process::parent_id() != parent {
        std::process::exit(1);
    }
}

/// Only Linux has the parent-death signal.
#[cfg(not(target_os = "linux"))]
fn die_with_parent() {}

/// Replaces this process with `cmd`; returns only the error.
#[cfg(unix)]
fn exec(cmd: &mut std::process::Command) -> std::io::Error {
    std::os::unix::process::CommandExt::exec(cmd)
}

/// Without `exec`, the program cannot inherit the ruleset.
#[cfg(not(unix))]
fn exec(_: &mut std::process::Command) -> std::io::Error {
    std::io::Error::other("confinement needs Unix")
}

/// `$TMPDIR/tandem-agent-<pid>-<n>`, made with mode 0700 (only this user, and under
/// Landlock only this process tree, can use it). The pid lets the server remove it
/// once the process has ended (`sweep_temp_dirs`).
fn private_temp_dir() -> Result<PathBuf, ConfineError> {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    let mut last = None;
    for n in 0..100u32 {
        let dir = base.join(format!("{TEMP_PREFIX}{pid}-{n}"));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            // Left by an earlier process with the same pid.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(source) => return Err(ConfineError::TempDir { dir: base, source }),
        }
    }
    Err(ConfineError::TempDir {
        dir: base,
        source: last.unwrap_or_else(|| std::io::Error::other("no free name")),
    })
}

/// A private `HOME` in the temporary directory: a link to each allowed directory and
/// read-only file of the real one (`.claude`, `.codex`, `.gitconfig`, ...) and a copy
/// of each writable file (`.claude.json`); `None` without `HOME`.
///
/// Why: the ruleset cannot let a program create files in the real `HOME` without
/// letting it write every file there (`.bashrc` among them), yet CLIs save their
/// settings atomically next to them: Claude Code writes `~/.claude.json` through
/// `~/.claude.json.tmp.*` (next to the file's real path, links resolved) and a
/// `~/.claude.json.lock` directory. Denied both, it falls back to unlocked in-place
/// writes, and concurrent sessions then read each other's half-written file ("Claude
/// configuration file ... is corrupted") and fail to start. With a private copy the
/// temporary files, the lock and the saved settings are the process's own: the real
/// `~/.claude.json` is read when the process starts and never written.
fn private_home(temp: &Path, rw: &[PathBuf], ro: &[PathBuf]) -> Option<PathBuf> {
    let real = PathBuf::from(std::env::var_os("HOME")?);
    let real_canonical = real.canonicalize().unwrap_or_else(|_| real.clone());
    let home = temp.join("home");
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    if let Err(e) = builder.create(&home) {
        eprintln!("tandem confine: no private HOME ({e}); the real one is used");
        return None;
    }
    let in_home = |path: &Path| {
        path.parent()
            .is_some_and(|p| p == real || p == real_canonical)
    };
    let writable = rw.iter().map(|p| (p, true));
    let readable = ro.iter().map(|p| (p, false));
    for (path, write) in writable.chain(readable) {
        let (true, Some(name)) = (in_home(path), path.file_name()) else {
            continue;
        };
        let target = home.join(name);
        let made = if write && path.is_file() {
            std::fs::copy(path, &target).map(|_| ())
        } else {
            link(path, &target)
        };
        if let Err(e) = made {
            eprintln!(
                "tandem confine: cannot give {} to the agent: {e}",
                path.display()
            );
        }
    }
    Some(home)
}

#[cfg(unix)]
fn link(original: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(original, link)
}

#[cfg(not(unix))]
fn link(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("links need Unix"))
}

/// What `--probe` printed, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Probe {
    /// Every requested restriction is enforced, under this Landlock ABI.
    Full(u32),
    /// Some are (reads and writes are always among them), under this ABI.
    Partial(u32),
    /// None: why.
    None(String),
}

impl Probe {
    fn parse(line: &str) -> Probe {
        let (word, rest) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        match (word, rest.parse::<u32>()) {
            ("full", Ok(abi)) => Probe::Full(abi),
            ("partial", Ok(abi)) => Probe::Partial(abi),
            ("none", _) => Probe::None(rest.to_string()),
            _ => Probe::None(format!("unexpected probe answer `{}`", line.trim())),
        }
    }
}

/// Whether vendor processes can be confined here: `enabled` is `--confine-agents`,
/// `denied` the paths no vendor process may reach (data directory, config file),
/// `program` the `tandem` binary (`None`: this very one). Runs `tandem confine
/// --probe` to see what the kernel enforces.
pub fn detect(enabled: bool, denied: Vec<PathBuf>, program: Option<&Path>) -> Confinement {
    if !enabled {
        return Confinement::off(
            "switched off (--confine-agents off): agents can read and write whatever the server can",
        );
    }
    let helper = match program.map_or_else(std::env::current_exe, |p| Ok(p.to_path_buf())) {
        Ok(path) => path,
        Err(e) => {
            return Confinement::off(format!(
                "cannot find the tandem binary to confine agents with: {e}"
            ))
        }
    };
    let answer = std::process::Command::new(&helper)
        .args([SUBCOMMAND, "--probe"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let probe = match answer {
        Ok(out) if out.status.success() => Probe::parse(&String::from_utf8_lossy(&out.stdout)),
        Ok(out) => Probe::None(format!("`tandem confine --probe` failed ({})", out.status)),
        Err(e) => Probe::None(format!("cannot run `tandem confine --probe`: {e}")),
    };
    let launcher = Launcher {
        helper,
        denied,
        also_read: Vec::new(),
    };
    match probe {
        Probe::Full(_) => Confinement {
            launcher: Some(launcher),
            problem: None,
        },
        Probe::Partial(abi) => Confinement {
            launcher: Some(launcher),
            problem: Some(format!(
                "partially enforced: this kernel's Landlock (ABI {abi}) denies reading and writing \
                 outside the allowed paths, but not every kind of access (truncating, renaming \
                 across directories or device ioctls need ABI 2, 3 and 5)"
            )),
        },
        Probe::None(reason) => Confinement::off(format!(
            "Landlock is not available ({reason}): agents can read and write whatever the server can"
        )),
    }
}

/// One line for `tandem doctor` and the start-up log.
pub fn describe(confinement: &Confinement) -> String {
    match (&confinement.launcher, &confinement.problem) {
        (Some(_), None) => {
            "landlock (agents use only their working directory, their own config and \
             cache directories, a private temporary directory and read-only system paths)"
                .to_string()
        }
        (Some(_), Some(problem)) => format!("landlock, {problem}"),
        (None, Some(problem)) => format!("none: {problem}"),
        (None, None) => "none".to_string(),
    }
}

/// Logs at start how agents are confined, and warns when they are not while more than
/// one user can log in: each user's agents can then read the data directory (every
/// user's tokens and sessions) and other users' working directories.
pub fn log_at_start(confinement: &Confinement, users: usize) {
    if confinement.launcher.is_some() {
        tracing::info!(confinement = %describe(confinement), "agents are confined");
        return;
    }
    if users > 1 {
        tracing::warn!(
            users,
            reason = %confinement.problem.as_deref().unwrap_or("off"),
            "agents are not confined: every user's agents can read what the server can \
             (the data directory with every user's tokens, and other users' working directories)"
        );
    } else {
        tracing::info!(confinement = %describe(confinement), "agents are not confined");
    }
}

/// The kernel side, with the `landlock` crate (Linux only).
#[cfg(target_os = "linux")]
mod ruleset {
    use super::{ConfineError, PathBuf};
    use landlock::{
        path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, LandlockStatus, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, ABI,
    };

    /// The rights handled: every filesystem right up to ABI 5 (reading, writing,
    /// executing, creating and removing, renaming across directories, truncating,
    /// device ioctls). Later rights (connecting to Unix sockets by path, ABI 9) are left
    /// alone so agents keep reaching e.g. an ssh-agent. Network access is not
    /// restricted. On an older kernel the crate's best-effort mode enforces what the
    /// kernel knows.
    const TARGET: ABI = ABI::V5;

    /// Confines this process (and what it executes) to `rw` and `ro`; paths that do
    /// not exist are skipped.
    pub fn restrict(rw: &[PathBuf], ro: &[PathBuf]) -> Result<(), ConfineError> {
        let status = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET))
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(rw, AccessFs::from_all(TARGET))))
            .and_then(|r| r.add_rules(path_beneath_rules(ro, AccessFs::from_read(TARGET))))
            .and_then(|r| r.restrict_self())
            .map_err(|e| ConfineError::Ruleset(e.to_string()))?;
        if status.ruleset == RulesetStatus::NotEnforced {
            // The server found Landlock at start; say so if it is gone.
            eprintln!("tandem confine: the kernel did not enforce the Landlock ruleset");
        }
        Ok(())
    }

    /// Applies a ruleset that handles every right and allows nothing, and says what
    /// the kernel enforced (this process exits right after).
    pub fn probe() -> String {
        let applied = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET))
            .and_then(|r| r.create())
            .and_then(|r| r.restrict_self());
        let status = match applied {
            Ok(status) => status,
            Err(e) => return format!("none {e}"),
        };
        let abi = match status.landlock {
            LandlockStatus::Available { effective_abi, .. } => effective_abi as u32,
            LandlockStatus::NotEnabled => {
                return "none the kernel has Landlock switched off".into()
            }
            LandlockStatus::NotImplemented => {
                return "none the kernel was built without Landlock".into()
            }
        };
        match status.ruleset {
            RulesetStatus::FullyEnforced => format!("full {abi}"),
            RulesetStatus::PartiallyEnforced => format!("partial {abi}"),
            RulesetStatus::NotEnforced => "none the kernel enforced no rule".into(),
        }
    }
}

/// Without Landlock (not Linux) nothing is confined.
#[cfg(not(target_os = "linux"))]
mod ruleset {
    use super::{ConfineError, PathBuf};

    pub fn restrict(_: &[PathBuf], _: &[PathBuf]) -> Result<(), ConfineError> {
        Err(ConfineError::Ruleset("Landlock is Linux-only".into()))
    }

    pub fn probe() -> String {
        "none Landlock is Linux-only".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_answers_are_read_back() {
        assert_eq!(Probe::parse("full 7\n"), Probe::Full(7));
        assert_eq!(Probe::parse("partial 3"), Probe::Partial(3));
        assert_eq!(
            Probe::parse("none the kernel was built without Landlock"),
            Probe::None("the kernel was built without Landlock".into())
        );
        assert!(matches!(Probe::parse("what"), Probe::None(_)));
    }
}
