//! The processes of a terminal: everything in its shell's process session. An
//! interactive shell puts each job in a process group of its own, so killing the
//! shell's group would leave its background jobs; the session holds them all (a
//! program that leaves the session on purpose, as a daemon does, is not followed).

use crate::scripts::ledger::{live_processes, stat};

/// The live processes of session `sid` (zombies are not counted: they hold nothing).
pub fn members(sid: i32) -> Vec<i32> {
    live_processes()
        .filter(|(_, s)| s.sid == sid)
        .map(|(pid, _)| pid)
        .collect()
}

/// Kills every process of session `sid`, again until none is left (a process may fork
/// while its session is being killed); gives up after a few rounds. Never the
/// server's own session (a shell whose `setsid` failed would be in it).
pub fn kill_session(sid: i32) {
    // Read from /proc, not getsid(2): in a container whose session leader lies outside
    // its PID namespace the server's session id is 0, which rustix's `getsid` rejects
    // with a panic.
    let own = i32::try_from(std::process::id())
        .ok()
        .and_then(stat)
        .map(|s| s.sid);
    if sid <= 1 || own == Some(sid) {
        tracing::warn!(sid, "not killing a session that is not a terminal's");
        return;
    }
    for round in 0..20 {
        let left = members(sid);
        if left.is_empty() {
            return;
        }
        for pid in left {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        if round > 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    tracing::warn!(sid, "processes of a terminal survived being killed");
}
