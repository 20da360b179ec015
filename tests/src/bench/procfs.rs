//! What `/proc` says about a process: CPU time and resident memory (Linux only).

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Clock ticks per second for `/proc/<pid>/stat` times (`getconf CLK_TCK`, 100 on
/// practically every Linux).
pub fn clock_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|t| *t > 0)
            .unwrap_or(100)
    })
}

/// User plus system CPU seconds a process (all its threads) has used.
pub fn cpu_seconds(pid: u32) -> Result<f64, String> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // The command name (field 2) is in parentheses and may hold spaces: fields are
    // counted from after its closing parenthesis, where field 3 (state) is index 0.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| format!("{path}: unexpected format"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| -> Result<u64, String> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| format!("{path}: no field {}", i + 3))
    };
    let ticks = field(11)? + field(12)?; // utime (14) + stime (15)
    Ok(ticks as f64 / clock_ticks() as f64)
}

/// Resident set size in KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("{path}: no VmRSS"))
}

/// Wall-clock time in microseconds since the Unix epoch (comparable with the `ts` the
/// server stamps on events, which is in milliseconds).
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_own_process() {
        let pid = std::process::id();
        assert!(super::cpu_seconds(pid).is_ok_and(|s| s >= 0.0));
        assert!(super::rss_kib(pid).is_ok_and(|k| k > 0));
    }
}
