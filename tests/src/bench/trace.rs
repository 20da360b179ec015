//! `--trace-ms N`: samples the server's `/metrics` every N ms during a run and prints
//! the counters as JSON lines, to see where events wait (before the commit, in the
//! gateway, in client queues). A plain blocking HTTP/1.0 request on its own thread, so
//! it needs no runtime and disturbs the run as little as possible.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;

use super::procfs::now_us;
use super::report;
use super::server::metric_value;

/// Counters printed per sample.
const TRACED: [&str; 5] = [
    "tandem_events_appended_total",
    "tandem_events_committed_total",
    "tandem_store_commits_total",
    "tandem_frames_delivered_total",
    "tandem_client_queued_bytes",
];

/// A running sampler; [`Tracer::stop`] ends it.
pub struct Tracer {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Tracer {
    /// Samples `base` (`http://HOST:PORT`) every `every`, times relative to `t0_us`.
    pub fn start(base: &str, every: Duration, t0_us: u64) -> Tracer {
        let addr = base.trim_start_matches("http://").to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                if let Some(text) = fetch(&addr) {
                    let mut line = json!({"mode": "trace",
                        "t_ms": (now_us().saturating_sub(t0_us)) as f64 / 1e3});
                    for name in TRACED {
                        line[name.trim_start_matches("tandem_")] =
                            json!(metric_value(&text, name).unwrap_or(0.0));
                    }
                    report::line(&line);
                }
                std::thread::sleep(every);
            }
        });
        Tracer { stop, thread }
    }

    /// Stops sampling.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

fn fetch(addr: &str) -> Option<String> {
    let mut conn = TcpStream::connect(addr).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    conn.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    conn.read_to_string(&mut out).ok()?;
    Some(out)
}
