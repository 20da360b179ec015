//! A worktree's scripts (`copy`, `setup`, `run`, `archive` of the repository's
//! settings, [`crate::workspace::project`]) and the ports they get.
//!
//! Every script runs as `sh -c` in a process group of its own, confined where agents
//! are, with the server's environment minus tandem's own variables plus
//! `TANDEM_PORT` (the worktree's port) and `TANDEM_ROOT_PATH` (the checkout it was
//! made from), and the variables the tool whose file it came from gives
//! (`CONDUCTOR_PORT`, `CONDUCTOR_ROOT_PATH`, `CONDUCTOR_WORKSPACE_PATH`;
//! `ROOT_WORKTREE_PATH`). [`Scripts`] knows every process group a script leads, so
//! they are killed with their session and when the server stops.

pub mod copy;
pub mod ledger;
pub mod run;
pub mod shell;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tandem_protocol::scripts::{ScriptName, ScriptReport, ScriptStatus};

use crate::adapter::confine::Launcher;
use crate::ids::SessionId;
use crate::workspace::project::{Project, ScriptsFrom};
use shell::{Ending, Shell};

/// How long a setup may run.
pub const SETUP_LIMIT: Duration = Duration::from_secs(30 * 60);
/// How often a running setup's output is reported (a `script` event) at most.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// How long an archive script may run.
pub const ARCHIVE_LIMIT: Duration = Duration::from_secs(5 * 60);

/// The ports worktrees get when the configuration names none.
pub const DEFAULT_PORTS: RangeInclusive<u16> = 41000..=41999;

/// The server's scripts: how they are started, the worktrees' ports, and the
/// processes running now.
#[derive(Clone, Debug)]
pub struct Scripts {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Confines the scripts where agents are confined.
    launcher: Option<Launcher>,
    /// The ports given out.
    ports: RangeInclusive<u16>,
    /// Ports held by live worktrees.
    taken: Mutex<BTreeSet<u16>>,
    /// Each session's run script.
    runs: Mutex<HashMap<String, Arc<run::Run>>>,
    /// Leaders of the setup and archive scripts running now, by session.
    bounded: Mutex<HashMap<SessionId, Vec<u32>>>,
    /// Every group a script leads, on file for the next start after a crash.
    ledger: Arc<ledger::Ledger>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a worktree's scripts run and what they are told.
#[derive(Debug, Clone)]
pub struct Place {
    /// The session.
    pub session_id: SessionId,
    /// The worktree (or working directory) they run in.
    pub workdir: PathBuf,
    /// The checkout the worktree was made from.
    pub root: PathBuf,
    /// The worktree's port.
    pub port: Option<u16>,
}

impl Scripts {
    /// Scripts confined by `launcher` (where agents are), with ports from `ports`,
    /// writing down their process groups in `data_dir` (and killing what a server
    /// that did not stop cleanly left there).
    pub fn new(launcher: Option<Launcher>, ports: RangeInclusive<u16>, data_dir: &Path) -> Scripts {
        Scripts {
            inner: Arc::new(Inner {
                launcher,
                ports,
                taken: Mutex::default(),
                runs: Mutex::default(),
                bounded: Mutex::default(),
                ledger: Arc::new(ledger::Ledger::open(data_dir)),
            }),
        }
    }

    /// A free port for a new worktree: the lowest of the range no live worktree holds
    /// and nothing on this machine listens on; `None` when the range is used up.
    pub fn take_port(&self) -> Option<u16> {
        let mut taken = locked(&self.inner.taken);
        let port = self.inner.ports.clone().find(|p| {
            !taken.contains(p) && std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok()
        })?;
        taken.insert(port);
        Some(port)
    }

    /// Marks `port` held (a worktree loaded at start).
    pub fn hold_port(&self, port: u16) {
        locked(&self.inner.taken).insert(port);
    }

    /// Gives `port` back (its worktree went).
    pub fn free_port(&self, port: u16) {
        locked(&self.inner.taken).remove(&port);
    }

    /// The environment of the scripts of `place`, from `project`'s file.
    pub fn environment(&self, place: &Place, from: ScriptsFrom) -> BTreeMap<String, String> {
        let mut env = crate::adapter::process::inherited(std::env::vars_os());
        let root = place.root.to_string_lossy().into_owned();
        let here = place.workdir.to_string_lossy().into_owned();
        let port = place.port.map(|p| p.to_string());
        env.insert("TANDEM_ROOT_PATH".into(), root.clone());
        if let Some(port) = &port {
            env.insert("TANDEM_PORT".into(), port.clone());
        }
        match from {
            ScriptsFrom::Tandem => {}
            ScriptsFrom::Conductor => {
                env.insert("CONDUCTOR_ROOT_PATH".into(), root);
                env.insert("CONDUCTOR_WORKSPACE_PATH".into(), here);
                if let Some(port) = port {
                    env.insert("CONDUCTOR_PORT".into(), port);
                }
            }
            ScriptsFrom::Cursor => {
                env.insert("ROOT_WORKTREE_PATH".into(), root);
            }
        }
        env
    }

    /// Runs `commands` (setup or archive) in `place` as one script that stops at the
    /// first failing command; `report` hears its start, its progress and its end,
    /// which is returned.
    pub async fn run_bounded(
        &self,
        name: ScriptName,
        commands: &[String],
        place: &Place,
        from: ScriptsFrom,
        report: impl Fn(ScriptReport),
    ) -> ScriptReport {
        let limit = match name {
            ScriptName::Archive => ARCHIVE_LIMIT,
            _ => SETUP_LIMIT,
        };
        let text = format!("set -e\n{}", commands.join("\n"));
        let env = self.environment(place, from);
        let running = |log_tail: &str| ScriptReport {
            name,
            status: ScriptStatus::Running,
            exit_code: None,
            log_tail: log_tail.to_string(),
        };
        report(running(""));
        let sid = place.session_id.clone();
        let registered = std::cell::Cell::new(false);
        let done = Shell {
            command: &text,
            workdir: &place.workdir,
            env: &env,
            launcher: self.inner.launcher.as_ref(),
            limit,
            progress_every: PROGRESS_EVERY,
        }
        .run(
            |leader| {
                if let Some(leader) = leader {
                    self.inner.ledger.started(leader);
                    registered.set(true);
                    locked(&self.inner.bounded)
                        .entry(sid.clone())
                        .or_default()
                        .push(leader);
                }
            },
            |tail| report(running(tail)),
        )
        .await;
        // Gone from the list already: killed because its session went.
        let stopped = registered.get() && locked(&self.inner.bounded).remove(&sid).is_none();
        if let Some(leader) = done.leader {
            self.inner.ledger.ended(leader);
        }
        let (status, exit_code, log_tail) = match done.ending {
            Ending::Exited(Some(0)) => (ScriptStatus::Passed, Some(0), done.tail),
            _ if stopped => (ScriptStatus::Stopped, None, done.tail),
            Ending::Exited(code) => (ScriptStatus::Failed, code, done.tail),
            Ending::TimedOut => (
                ScriptStatus::TimedOut,
                None,
                format!("{}\n[killed after {}s]", done.tail, limit.as_secs()),
            ),
            Ending::Broken(why) => (ScriptStatus::Failed, None, format!("{}[{why}]", done.tail)),
        };
        let end = ScriptReport {
            name,
            status,
            exit_code,
            log_tail,
        };
        report(end.clone());
        end
    }

    /// The run slot of `session`.
    pub fn run_of(&self, session: &str) -> Arc<run::Run> {
        locked(&self.inner.runs)
            .entry(session.to_string())
            .or_default()
            .clone()
    }

    /// The run slot of `session`, if it ever ran.
    pub fn run_if(&self, session: &str) -> Option<Arc<run::Run>> {
        locked(&self.inner.runs).get(session).cloned()
    }

    /// Starts the run script `command` of `place` unless it runs; `false` when it
    /// already ran.
    pub fn start_run(
        &self,
        command: &str,
        place: &Place,
        from: ScriptsFrom,
        report: impl Fn(ScriptReport) + Send + 'static,
    ) -> bool {
        let slot = self.run_of(&place.session_id);
        if slot.state().running {
            return false;
        }
        let env = self.environment(place, from);
        run::start(
            slot,
            command,
            &place.workdir,
            &env,
            self.inner.launcher.as_ref(),
            self.inner.ledger.clone(),
            report,
        );
        true
    }

    /// Kills every script process of `session` (its run and a running setup or
    /// archive) and forgets its run's output: the session went.
    pub fn end_session(&self, session: &str) {
        if let Some(slot) = locked(&self.inner.runs).remove(session) {
            slot.stop();
        }
        self.kill_bounded(session);
    }

    /// Kills `session`'s running setup or archive script.
    pub fn kill_bounded(&self, session: &str) {
        if let Some(leaders) = locked(&self.inner.bounded).remove(session) {
            for leader in leaders {
                shell::kill_group(Some(leader));
            }
        }
    }

    /// Kills every script process: the server stops.
    pub fn shutdown(&self) {
        for slot in locked(&self.inner.runs).values() {
            slot.stop();
        }
        let all: Vec<u32> = locked(&self.inner.bounded)
            .drain()
            .flat_map(|(_, l)| l)
            .collect();
        for leader in all {
            shell::kill_group(Some(leader));
        }
    }
}

/// Whether `project` gives a new worktree anything to do.
pub fn prepares(project: &Project) -> bool {
    !project.copy.is_empty() || !project.setup.is_empty()
}

/// The top of the checkout holding `dir` (or `dir`).
pub fn top_of(dir: &Path) -> PathBuf {
    crate::workspace::git::toplevel(dir).unwrap_or_else(|| dir.to_path_buf())
}
