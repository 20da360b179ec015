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

/// On-CPU time of each live thread of a process, from `/proc/<pid>/task/*/schedstat`
/// (nanoseconds, where `/proc/<pid>/stat` counts 10 ms ticks: a floor run of 30 ms of
/// CPU would be three ticks). A thread that ends between two snapshots takes its time
/// with it, so [`ThreadCpu::since`] reports how many threads ended.
#[derive(Debug, Clone, Default)]
pub struct ThreadCpu {
    /// Per thread id: its name (`comm`) and nanoseconds on a CPU so far.
    threads: std::collections::BTreeMap<u32, (String, u64)>,
}

/// What a process's threads used between two [`ThreadCpu`] snapshots.
#[derive(Debug, Clone, Default)]
pub struct CpuDelta {
    /// All threads' CPU, seconds.
    pub total_s: f64,
    /// CPU seconds per thread name with digits dropped (`actix-server worker 0` and
    /// `… 1` add up), largest first.
    pub by_name: Vec<(String, f64)>,
    /// Threads of the first snapshot missing from the second (their time is lost).
    pub ended: usize,
}

impl ThreadCpu {
    /// Reads every thread of `pid`.
    pub fn of(pid: u32) -> Result<ThreadCpu, String> {
        let dir = format!("/proc/{pid}/task");
        let mut threads = std::collections::BTreeMap::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))? {
            let Ok(entry) = entry else { continue };
            let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            // A thread can end between the listing and these reads: skip it.
            let Ok(stat) = std::fs::read_to_string(entry.path().join("schedstat")) else {
                continue;
            };
            let Some(ns) = stat.split_whitespace().next().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            threads.insert(tid, (name.trim().to_string(), ns));
        }
        if threads.is_empty() {
            return Err(format!("{dir}: no readable thread"));
        }
        Ok(ThreadCpu { threads })
    }

    /// The CPU used since `earlier` (a snapshot of the same process).
    pub fn since(&self, earlier: &ThreadCpu) -> CpuDelta {
        let mut by_name: std::collections::BTreeMap<String, u64> = Default::default();
        let mut total = 0;
        for (tid, (name, ns)) in &self.threads {
            let before = earlier.threads.get(tid).map_or(0, |(_, ns)| *ns);
            let used = ns.saturating_sub(before);
            total += used;
            let group: String = name.chars().filter(|c| !c.is_ascii_digit()).collect();
            *by_name.entry(group.trim().to_string()).or_default() += used;
        }
        let mut by_name: Vec<(String, f64)> = by_name
            .into_iter()
            .map(|(name, ns)| (name, ns as f64 / 1e9))
            .collect();
        by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
        CpuDelta {
            total_s: total as f64 / 1e9,
            by_name,
            ended: earlier
                .threads
                .keys()
                .filter(|tid| !self.threads.contains_key(tid))
                .count(),
        }
    }
}

/// Read-like and write-like system calls a process has made (`syscr`, `syscw` of
/// `/proc/<pid>/io`: `read`/`write` and their vectored forms). Sockets go through
/// `recv`/`send`, which are not counted: these are eventfd wake-ups between threads
/// and the database's own reads and writes.
pub fn syscalls(pid: u32) -> Result<(u64, u64), String> {
    let path = format!("/proc/{pid}/io");
    let io = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let field = |name: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("{path}: no {name}"))
    };
    Ok((field("syscr:")?, field("syscw:")?))
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
        assert!(super::syscalls(pid).is_ok_and(|(r, _)| r > 0));
    }

    /// Busy work on a second thread shows up in the delta, under its name.
    #[test]
    fn thread_cpu_counts_a_busy_thread() {
        let pid = std::process::id();
        let before = super::ThreadCpu::of(pid).expect("snapshot");
        let spin = std::thread::Builder::new()
            .name("spinner7".into())
            .spawn(|| {
                let start = std::time::Instant::now();
                let mut x = 0u64;
                while start.elapsed() < std::time::Duration::from_millis(50) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                // Still alive at the second snapshot: it waits for the main thread.
                std::thread::park();
                x
            })
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(80));
        let delta = super::ThreadCpu::of(pid).expect("snapshot").since(&before);
        spin.thread().unpark();
        spin.join().expect("join");
        let spinner = delta
            .by_name
            .iter()
            .find(|(name, _)| name == "spinner")
            .map(|(_, s)| *s)
            .expect("the spinner's group");
        // It spun for 50 ms of wall time; on a loaded machine it may have had less CPU.
        assert!(spinner > 0.005 && spinner < 0.5, "{spinner}");
        assert!(delta.total_s >= spinner);
    }
}
