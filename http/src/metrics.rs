//! `/metrics` in the Prometheus text format.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use tandem_actors::Runtime;

/// Renders every metric the runtime keeps.
pub fn render(runtime: &Runtime) -> String {
    let m = runtime.metrics();
    let mut out = String::with_capacity(2048);
    let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    };
    metric(
        "tandem_events_appended_total",
        "counter",
        "History events appended.",
        m.events_appended.load(Relaxed),
    );
    metric(
        "tandem_events_committed_total",
        "counter",
        "History events committed to SQLite.",
        m.events_committed.load(Relaxed),
    );
    metric(
        "tandem_store_commits_total",
        "counter",
        "SQLite transactions committed by the writer.",
        m.commits.load(Relaxed),
    );
    metric(
        "tandem_store_failed_events_total",
        "counter",
        "Events the store failed to write.",
        m.store_failures.load(Relaxed),
    );
    metric(
        "tandem_frames_delivered_total",
        "counter",
        "Event frames queued to WebSocket clients.",
        m.frames_delivered.load(Relaxed),
    );
    metric(
        "tandem_events_dropped_lag_total",
        "counter",
        "Events not delivered because a client lagged.",
        m.events_dropped_lag.load(Relaxed),
    );
    metric(
        "tandem_lagged_notices_total",
        "counter",
        "lagged notices sent.",
        m.lagged_notices.load(Relaxed),
    );
    metric(
        "tandem_clients_closed_slow_total",
        "counter",
        "Clients closed for staying behind.",
        m.clients_closed_slow.load(Relaxed),
    );
    metric(
        "tandem_pushbacks_total",
        "counter",
        "Delegation results pushed back into a Driver.",
        m.pushbacks.load(Relaxed),
    );
    metric(
        "tandem_protocol_errors_total",
        "counter",
        "Client frames answered with protocol_error.",
        m.protocol_errors.load(Relaxed),
    );
    metric(
        "tandem_ws_clients",
        "gauge",
        "Connected WebSocket clients.",
        m.ws_clients.load(Relaxed) as u64,
    );
    metric(
        "tandem_client_queued_bytes",
        "gauge",
        "Bytes queued for all WebSocket clients.",
        m.client_queued_bytes.load(Relaxed) as u64,
    );
    metric(
        "tandem_client_queued_bytes_peak",
        "gauge",
        "Most bytes ever queued for one client.",
        m.client_queued_bytes_peak.load(Relaxed) as u64,
    );
    metric(
        "tandem_client_queue_limit_bytes",
        "gauge",
        "Byte budget of each client's queue.",
        runtime.config().client_queue_bytes as u64,
    );
    let _ = writeln!(
        out,
        "# HELP tandem_sessions Sessions by status.\n# TYPE tandem_sessions gauge"
    );
    for (status, count) in runtime.status_counts() {
        let _ = writeln!(
            out,
            "tandem_sessions{{status=\"{}\"}} {count}",
            status.as_str()
        );
    }
    out
}
