//! Builds the actix-web server around a started runtime.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use tandem_actors::{Runtime, RuntimeConfig};

use crate::auth::{caller, AuthMode};
use crate::error::ApiError;

/// Everything `tandem serve` takes.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to bind.
    pub bind: IpAddr,
    /// Port; 0 picks a free one.
    pub port: u16,
    /// Token auth or none (loopback only).
    pub auth: AuthMode,
    /// Runtime settings.
    pub runtime: RuntimeConfig,
    /// Largest client frame or request body, bytes.
    pub max_frame_bytes: usize,
    /// HTTP worker threads.
    pub workers: usize,
    /// WebSocket keep-alive.
    pub heartbeat: Heartbeat,
}

/// WebSocket keep-alive: the server pings every `ping_every` and drops a client it
/// has not heard from (no frame, no pong) for `timeout`.
#[derive(Debug, Clone, Copy)]
pub struct Heartbeat {
    /// Ping interval.
    pub ping_every: std::time::Duration,
    /// Silence after which a client is dropped as half-open.
    pub timeout: std::time::Duration,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--auth none` on a non-loopback address.
    #[error("--auth none is only allowed on a loopback address, not {0}")]
    AuthNoneOffLoopback(IpAddr),
    /// The runtime could not start.
    #[error(transparent)]
    Runtime(#[from] tandem_actors::RuntimeError),
    /// Binding or serving failed.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// Shared by every handler.
pub struct AppState {
    /// The runtime.
    pub runtime: Runtime,
    /// Auth mode.
    pub auth: AuthMode,
    /// Largest frame or body accepted.
    pub max_frame_bytes: usize,
    /// WebSocket keep-alive.
    pub heartbeat: Heartbeat,
}

/// Starts the runtime and serves until the process is stopped. Prints the start line
/// (`tandem listening on http://HOST:PORT`) once the port is bound.
pub async fn serve(opts: ServeOptions) -> Result<(), ServeError> {
    if opts.auth == AuthMode::None && !opts.bind.is_loopback() {
        return Err(ServeError::AuthNoneOffLoopback(opts.bind));
    }
    let started = Runtime::start(opts.runtime.clone())?;
    let state = web::Data::new(AppState {
        runtime: started.runtime,
        auth: opts.auth,
        max_frame_bytes: opts.max_frame_bytes,
        heartbeat: opts.heartbeat,
    });
    let app_state = state.clone();
    let server = HttpServer::new(move || {
        let app = App::new();
        #[cfg(feature = "failpoints")]
        let app = app.configure(crate::failpoints::routes);
        app.app_data(app_state.clone())
            .configure(crate::rest::routes)
            .configure(crate::mcp::routes)
            .route("/ws", web::get().to(crate::ws::connect))
            .route("/metrics", web::get().to(metrics))
            .configure(crate::web::routes)
    })
    // Small frames must leave at once: with Nagle on, a frame waits for the peer's
    // delayed ACK (~40 ms).
    .on_connect(|conn, data| {
        if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "could not set TCP_NODELAY");
            }
            // Kept with the connection, so a WebSocket client that stops reading can
            // be disconnected from outside its (then stalled) actor.
            match crate::ws::ConnSocket::of(tcp) {
                Ok(socket) => {
                    data.insert(socket);
                }
                Err(e) => tracing::debug!(error = %e, "could not keep the socket"),
            }
        }
    })
    .workers(opts.workers.max(1))
    .bind((opts.bind, opts.port))?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| std::io::Error::other("bound to no address"))?;
    let base = format!("http://{addr}");
    state.runtime.set_base_url(&base);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "tandem listening on {base}")?;
    if opts.auth == AuthMode::Token {
        writeln!(stdout, "open {base}/?token={}", started.admin_token)?;
    }
    stdout.flush()?;
    drop(stdout);
    tracing::info!(%addr, data_dir = %opts.runtime.data_dir.display(), "serving");
    server.run().await?;
    Ok(())
}

async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    caller(&req, &state.runtime, state.auth)?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(crate::metrics::render(&state.runtime)))
}

/// The default data directory: `~/.tandem`.
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".tandem")
}
