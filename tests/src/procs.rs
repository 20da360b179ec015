//! Processes on this machine, read from `/proc`: what a test checks to know that the
//! server started a vendor's process, and that none outlives it.

/// Live (neither zombie nor dead) processes whose environment holds `needle`
/// (`NAME=value`).
pub fn processes_with(needle: &str) -> Vec<u32> {
    processes_where(|environ| {
        environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
    })
}

/// Live processes whose environment (`/proc/PID/environ`, NUL-separated) `hit`
/// accepts.
pub fn processes_where(hit: impl Fn(&[u8]) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if hit(&environ) && is_alive(pid) {
            out.push(pid);
        }
    }
    out
}

/// True while `pid` runs: it exists and is neither a zombie nor dead.
pub fn is_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_string())
        })
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}
