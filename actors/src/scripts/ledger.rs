//! The process groups scripts lead, written down in the data directory so that a
//! server killed without a clean stop (SIGKILL, a crash, the power) kills what its
//! scripts left running when it starts again. A clean stop kills them itself
//! ([`super::Scripts::shutdown`]); where agents are confined, a script's shell also
//! dies with the server (the launcher's parent-death signal), but what that shell
//! started in the background does not.
//!
//! Each line is `PGID START SID`: the group's leader, its start time (clock ticks
//! since boot, `/proc/PID/stat` field 22) and its session. At start a group is killed
//! only if its leader is gone or is still that same process (same start time): a
//! leader pid reused by another process means the group is not ours any more. Its
//! members must be in the same session and have started no earlier than the leader.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// File name in the data directory.
const FILE: &str = "script-groups";

/// One recorded group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    pgid: i32,
    start: u64,
    sid: i32,
}

/// What `/proc/PID/stat` says of a process: its group, session and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// Its process group.
    pub(crate) pgrp: i32,
    /// Its session.
    pub(crate) sid: i32,
    /// When it started, clock ticks since boot.
    pub(crate) start: u64,
}

/// Reads `/proc/PID/stat` of a live process (fields after the command name, which may
/// hold spaces); none for one that exited.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    stat_of(pid, false)
}

/// [`stat`] of a process that may have exited but not been reaped: the leader we
/// just started may already be a zombie (a script that only starts something in the
/// background and exits), and its group must still go on file.
fn stat_even_exited(pid: i32) -> Option<Stat> {
    stat_of(pid, true)
}

fn stat_of(pid: i32, zombie_too: bool) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state): field N is rest[N - 3].
    let state = *fields.first()?;
    if !zombie_too && (state == "Z" || state == "X") {
        return None;
    }
    Some(Stat {
        pgrp: fields.get(2)?.parse().ok()?,
        sid: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// The groups on file, written as they start and end.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    groups: Mutex<Vec<Group>>,
}

impl Ledger {
    /// The ledger of `data_dir`, after killing what a previous run left on file.
    pub fn open(data_dir: &Path) -> Ledger {
        let path = data_dir.join(FILE);
        let left: Vec<Group> = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace().map(str::parse::<i64>);
                let (pgid, start, sid) = (
                    parts.next()?.ok()?,
                    parts.next()?.ok()?,
                    parts.next()?.ok()?,
                );
                Some(Group {
                    pgid: i32::try_from(pgid).ok()?,
                    start: u64::try_from(start).ok()?,
                    sid: i32::try_from(sid).ok()?,
                })
            })
            .collect();
        for group in left {
            sweep(group);
        }
        let ledger = Ledger {
            path,
            groups: Mutex::new(Vec::new()),
        };
        ledger.write(&[]);
        ledger
    }

    /// A group `leader` leads now.
    pub fn started(&self, leader: u32) {
        let Some(pgid) = i32::try_from(leader).ok() else {
            return;
        };
        let Some(s) = stat_even_exited(pgid) else {
            return;
        };
        let mut groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        groups.push(Group {
            pgid,
            start: s.start,
            sid: s.sid,
        });
        self.write(&groups);
    }

    /// The group `leader` led has ended (or was killed).
    pub fn ended(&self, leader: u32) {
        let mut groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = groups.len();
        groups.retain(|g| i64::from(g.pgid) != i64::from(leader));
        if groups.len() != before {
            self.write(&groups);
        }
    }

    fn write(&self, groups: &[Group]) {
        let text: String = groups
            .iter()
            .map(|g| format!("{} {} {}\n", g.pgid, g.start, g.sid))
            .collect();
        if let Err(e) = std::fs::write(&self.path, text) {
            tracing::warn!(path = %self.path.display(), error = %e, "script groups not written down");
        }
    }
}

/// Every live process of the machine, with what `/proc` says of it.
pub(crate) fn live_processes() -> impl Iterator<Item = (i32, Stat)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
}

/// Kills what is left of `group`, if it is still ours.
fn sweep(group: Group) {
    if let Some(leader) = stat(group.pgid) {
        if leader.start != group.start {
            // The pid now names another process: not our group.
            return;
        }
    }
    let members = live_processes()
        .map(|(_, s)| s)
        .any(|s| s.pgrp == group.pgid && s.sid == group.sid && s.start >= group.start);
    if !members {
        return;
    }
    if let Some(pid) = rustix::process::Pid::from_raw(group.pgid) {
        tracing::warn!(
            pgid = group.pgid,
            "killing what a script left running before a restart"
        );
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    #[test]
    fn a_group_left_on_file_is_killed_and_a_reused_leader_pid_is_not() {
        let dir = std::env::temp_dir().join(format!("tandem-ledger-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        // A group whose leader exits at once, leaving a member behind.
        let mut leader = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg("sleep 60 >/dev/null 2>&1 & echo $!")
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pgid = leader.id();
        let ledger = Ledger::open(&dir);
        ledger.started(pgid);
        let mut out = String::new();
        std::io::Read::read_to_string(
            leader
                .stdout
                .as_mut()
                .unwrap_or_else(|| panic!("no stdout")),
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let _ = leader.wait();
        let member: i32 = out.trim().parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(stat(member).is_some(), "the member runs");
        // A server that dies here leaves the file; the next one sweeps it.
        drop(ledger);
        let _next = Ledger::open(&dir);
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            stat(member).is_none()
        });
        assert!(gone, "the member was not killed");
        assert_eq!(
            std::fs::read_to_string(dir.join(FILE)).ok().as_deref(),
            Some("")
        );
        // A recorded leader whose pid is now another process: left alone.
        let other = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn();
        let mut other = other.unwrap_or_else(|e| panic!("{e}"));
        let pid = i32::try_from(other.id()).unwrap_or_else(|e| panic!("{e}"));
        let s = stat(pid).unwrap_or_else(|| panic!("no stat"));
        std::fs::write(dir.join(FILE), format!("{pid} {} {}\n", s.start + 1, s.sid))
            .unwrap_or_else(|e| panic!("{e}"));
        let _again = Ledger::open(&dir);
        assert!(stat(pid).is_some(), "a process that is not ours was killed");
        let _ = other.kill();
        let _ = other.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
