//! `/metrics` in the Prometheus text format.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use actix_web::{web, HttpRequest, HttpResponse};
use tandem_actors::Runtime;

use crate::auth::caller;
use crate::error::ApiError;
use crate::state::AppState;

/// `GET /metrics`: the Prometheus text, for a caller with a valid token.
pub(crate) async fn serve(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller(&req, &state.runtime, state.auth)?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(render(&state.runtime)))
}

/// One series: its name, kind, help text and how to read it.
type Series = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Runtime) -> u64,
);

/// Every series but the per-status session counts, in the order they are rendered.
const SERIES: [Series; 15] = [
    (
        "tandem_events_appended_total",
        "counter",
        "History events appended.",
        |r| r.metrics().events_appended.load(Relaxed),
    ),
    (
        "tandem_session_actors_started_total",
        "counter",
        "Session actors started (an idle session loaded at start gets one at its first request).",
        |r| r.metrics().session_actors_started.load(Relaxed),
    ),
    (
        "tandem_events_committed_total",
        "counter",
        "History events committed to SQLite.",
        |r| r.metrics().events_committed.load(Relaxed),
    ),
    (
        "tandem_store_commits_total",
        "counter",
        "SQLite transactions committed by the writer.",
        |r| r.metrics().commits.load(Relaxed),
    ),
    (
        "tandem_store_failed_events_total",
        "counter",
        "Events the store failed to write.",
        |r| r.metrics().store_failures.load(Relaxed),
    ),
    (
        "tandem_frames_delivered_total",
        "counter",
        "Event frames queued to WebSocket clients.",
        |r| r.metrics().frames_delivered.load(Relaxed),
    ),
    (
        "tandem_events_dropped_lag_total",
        "counter",
        "Events not delivered because a client lagged.",
        |r| r.metrics().events_dropped_lag.load(Relaxed),
    ),
    (
        "tandem_lagged_notices_total",
        "counter",
        "lagged notices sent.",
        |r| r.metrics().lagged_notices.load(Relaxed),
    ),
    (
        "tandem_clients_closed_slow_total",
        "counter",
        "Clients closed for staying behind.",
        |r| r.metrics().clients_closed_slow.load(Relaxed),
    ),
    (
        "tandem_pushbacks_total",
        "counter",
        "Delegation results pushed back into a Driver.",
        |r| r.metrics().pushbacks.load(Relaxed),
    ),
    (
        "tandem_protocol_errors_total",
        "counter",
        "Client frames answered with protocol_error.",
        |r| r.metrics().protocol_errors.load(Relaxed),
    ),
    (
        "tandem_ws_clients",
        "gauge",
        "Connected WebSocket clients.",
        |r| r.metrics().ws_clients.load(Relaxed) as u64,
    ),
    (
        "tandem_client_queued_bytes",
        "gauge",
        "Bytes queued for all WebSocket clients.",
        |r| r.metrics().client_queued_bytes.load(Relaxed) as u64,
    ),
    (
        "tandem_client_queued_bytes_peak",
        "gauge",
        "Most bytes ever queued for one client.",
        |r| r.metrics().client_queued_bytes_peak.load(Relaxed) as u64,
    ),
    (
        "tandem_client_queue_limit_bytes",
        "gauge",
        "Byte budget of each client's queue.",
        |r| r.config().client_queue_bytes as u64,
    ),
];

/// Renders every metric the runtime keeps.
pub fn render(runtime: &Runtime) -> String {
    let mut out = String::with_capacity(2048);
    for (name, kind, help, read) in SERIES {
        let value = read(runtime);
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP tandem_sessions Sessions by status.\n# TYPE tandem_sessions gauge"
    );
    for (status, count) in runtime.sessions().status_counts() {
        let _ = writeln!(
            out,
            "tandem_sessions{{status=\"{}\"}} {count}",
            status.as_str()
        );
    }
    out
}
