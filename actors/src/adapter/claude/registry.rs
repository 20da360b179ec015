//! Claude Code processes running outside tandem, for the running-sessions view.
//!
//! While it runs, every Claude Code process writes `~/.claude/sessions/<pid>.json`
//! (`{pid, sessionId, cwd, startedAt, procStart, status: busy | idle, ...}`) and
//! deletes it on exit. A process that crashed leaves its file behind, a file may be
//! read half-written, and a pid may have been reused since: every such entry is
//! skipped, never an error. Our own adapter processes write these files too; the
//! caller excludes their pids.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A busy Claude Code process found in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalRun {
    /// Its process id (not ours: our own processes are filtered out); breaks sort ties.
    pub pid: u32,
    /// The Claude session it works on (matched against our sessions' vendor ids).
    pub claude_session_id: String,
    /// When the process started, epoch ms.
    pub started_at: u64,
}

/// One registry file, as far as we read it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RegistryFile {
    pid: u32,
    session_id: String,
    #[serde(default)]
    started_at: u64,
    /// Absent in older CLIs: such processes cannot be told busy from idle.
    #[serde(default)]
    status: Option<String>,
    /// The process start time in clock ticks since boot (field 22 of
    /// `/proc/<pid>/stat`), to tell a reused pid from the original process.
    #[serde(default)]
    proc_start: Option<String>,
}

/// `<home>/.claude/sessions`.
pub fn registry_dir(home: &Path) -> PathBuf {
    home.join(".claude").join("sessions")
}

/// Every busy, alive process in the registry under `home` whose pid `is_ours` does
/// not claim. Unreadable files and directories yield nothing.
pub fn scan(home: &Path, is_ours: &dyn Fn(u32) -> bool) -> Vec<ExternalRun> {
    let Ok(entries) = std::fs::read_dir(registry_dir(home)) else {
        return Vec::new();
    };
    let mut out: Vec<ExternalRun> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<RegistryFile>(&bytes).ok())
        .filter(|f| f.status.as_deref() == Some("busy"))
        .filter(|f| !f.session_id.is_empty() && !is_ours(f.pid))
        .filter(|f| alive(f.pid, f.proc_start.as_deref()))
        .map(|f| ExternalRun {
            pid: f.pid,
            claude_session_id: f.session_id,
            started_at: f.started_at,
        })
        .collect();
    out.sort_by_key(|r| (r.started_at, r.pid));
    out
}

/// True when `pid` runs and is not a zombie and, when the registry recorded the
/// process's start time, it is still the same process. Where `/proc` is missing (not
/// Linux), every pid counts as alive.
fn alive(pid: u32, proc_start: Option<&str>) -> bool {
    if pid == 0 {
        return false;
    }
    if !Path::new("/proc/self").exists() {
        return true;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ...`: comm may hold spaces and parentheses; fields after the
    // last ')' are plain.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first().is_some_and(|s| *s == "Z" || *s == "X") {
        return false;
    }
    match proc_start.map(str::trim).filter(|s| !s.is_empty()) {
        // Field 22 overall is the 20th after the state (field 3).
        Some(recorded) => fields.get(19).is_some_and(|f| *f == recorded),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tandem-claude-registry-{label}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(registry_dir(&dir)).unwrap_or_else(|e| panic!("{e}"));
        dir
    }

    fn write(home: &Path, name: &str, body: &str) {
        std::fs::write(registry_dir(home).join(name), body).unwrap_or_else(|e| panic!("{e}"));
    }

    fn own_start() -> String {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap();
        rest.split_whitespace().nth(19).unwrap().to_string()
    }

    #[test]
    fn keeps_busy_alive_processes_only() {
        let me = std::process::id();
        let h = home("rules");
        write(
            &h,
            "1.json",
            &format!(r#"{{"pid":{me},"sessionId":"busy","status":"busy","startedAt":5}}"#),
        );
        write(
            &h,
            "2.json",
            &format!(r#"{{"pid":{me},"sessionId":"idle","status":"idle","startedAt":6}}"#),
        );
        write(
            &h,
            "3.json",
            r#"{"pid":4194302,"sessionId":"dead","status":"busy","startedAt":7}"#,
        );
        write(&h, "4.json", r#"{"pid":"#);
        write(
            &h,
            "5.json",
            &format!(r#"{{"pid":{me},"sessionId":"old-cli","startedAt":8}}"#),
        );
        write(
            &h,
            "6.json",
            &format!(
                r#"{{"pid":{me},"sessionId":"same","status":"busy","startedAt":9,"procStart":"{}"}}"#,
                own_start()
            ),
        );
        write(
            &h,
            "7.json",
            &format!(
                r#"{{"pid":{me},"sessionId":"reused","status":"busy","startedAt":10,"procStart":"1"}}"#
            ),
        );
        let found = scan(&h, &|_| false);
        let ids: Vec<&str> = found.iter().map(|r| r.claude_session_id.as_str()).collect();
        if Path::new("/proc/self").exists() {
            assert_eq!(ids, ["busy", "same"]);
        }
        assert!(
            scan(&h, &|pid| pid == me).is_empty(),
            "our own pids are skipped"
        );
        let _ = std::fs::remove_dir_all(&h);
    }

    #[test]
    fn a_missing_registry_is_empty() {
        assert!(scan(Path::new("/nonexistent/tandem"), &|_| false).is_empty());
    }
}
