//! Builds the actix-web server around a started runtime.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use std::time::Duration;

use actix_rt::net::TcpStream;
use actix_service::IntoServiceFactory;
use actix_service::ServiceFactoryExt;
use actix_web::{web, App, HttpRequest, HttpResponse};
use tandem_actors::RuntimeConfig;

use crate::auth::{caller, AuthMode};
use crate::error::ApiError;
use crate::long_uri::LongUriGuard;
use crate::state::AppState;

/// Everything `tandem serve` takes.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to bind; `--auth none` is refused unless it is loopback.
    pub bind: IpAddr,
    /// Port; 0 picks a free one.
    pub port: u16,
    /// Token auth or none (loopback only).
    pub auth: AuthMode,
    /// Settings the runtime starts with (data directory, queues, vendors, ...).
    pub runtime: RuntimeConfig,
    /// Largest client frame or request body, bytes.
    pub max_frame_bytes: usize,
    /// HTTP worker threads (at least 1).
    pub workers: usize,
    /// WebSocket keep-alive, copied into the shared state.
    pub heartbeat: crate::state::Heartbeat,
    /// Host names accepted in `Host` besides the bound address and `localhost`.
    pub allowed_hosts: Vec<String>,
    /// Web origins accepted besides the server's own.
    pub allowed_origins: Vec<String>,
    /// Per-connection and per-user limits of the WebSocket.
    pub limits: crate::state::Limits,
    /// The cluster to join (`--nats`, `--node`); `None`: a single node.
    pub cluster: Option<tandem_actors::cluster::ClusterConfig>,
    /// Longest a request body may go without a byte before it is answered 408
    /// (`--request-timeout-secs`).
    pub request_timeout: Duration,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--auth none` on a non-loopback address.
    #[error("--auth none is only allowed on a loopback address, not {0}")]
    AuthNoneOffLoopback(IpAddr),
    /// The address could not be bound (in use, not ours, no permission).
    #[error("cannot listen on {addr}: {source}{hint}")]
    Bind {
        /// `IP:PORT` asked for, named in the message.
        addr: String,
        /// What the OS said (address in use, not available, permission denied).
        source: std::io::Error,
        /// What to try instead (another `--port`), when the port is in use; else empty.
        hint: &'static str,
    },
    /// The runtime could not start.
    #[error(transparent)]
    Runtime(#[from] tandem_actors::RuntimeError),
    /// The cluster could not be joined.
    #[error(transparent)]
    Cluster(#[from] tandem_actors::cluster::ClusterError),
    /// An I/O error after the bind (listening, printing the address, serving).
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// Starts the runtime and serves until the process is stopped. Prints the start line
/// (`tandem listening on http://HOST:PORT`) once the port is bound.
pub async fn serve(opts: ServeOptions) -> Result<(), ServeError> {
    if opts.auth == AuthMode::None && !opts.bind.is_loopback() {
        return Err(ServeError::AuthNoneOffLoopback(opts.bind));
    }
    // Bind before anything touches the data directory: a port in use must not leave a
    // fresh database behind, and its error must say which address.
    let listener = bind(&opts)?;
    let addr = listener.local_addr()?;
    let started = tandem_actors::start(opts.runtime.clone())?;
    let users = started.runtime.store().list_users().map_or(0, |u| u.len());
    crate::confine::log_at_start(&opts.runtime.confinement, users);
    let cluster = join_cluster(&opts, &started.runtime).await?;
    let state = app_state(&opts, started.runtime, cluster);
    let guard = web::Data::from(crate::guard::Guard::new(
        addr.ip(),
        &opts.allowed_hosts,
        &opts.allowed_origins,
    ));
    let app_state = state.clone();
    let body_timeout = web::Data::new(crate::body_timeout::BodyTimeout(opts.request_timeout));
    // actix-web's `HttpServer` with one change: each connection's I/O goes through
    // `LongUriGuard`, so a request target too long for actix-http gets a JSON answer.
    let server = actix_server::Server::build()
        .workers(opts.workers.max(1))
        .listen("tandem", listener, move || {
            let app = App::new();
            #[cfg(feature = "failpoints")]
            let app = app.configure(crate::failpoints::routes);
            #[cfg(feature = "test-hooks")]
            let app = app.configure(crate::holds::routes);
            let app = app
                .app_data(app_state.clone())
                // Origin, Host and Content-Type checks before every route and before
                // authentication (see guard.rs).
                .app_data(guard.clone())
                .app_data(body_timeout.clone())
                // Every body read below times out on a stall.
                .wrap(actix_web::middleware::from_fn(
                    crate::body_timeout::middleware,
                ))
                .wrap(actix_web::middleware::from_fn(crate::guard::middleware))
                .configure(crate::rest::routes)
                .configure(crate::mcp::routes)
                .route("/ws", web::get().to(crate::ws::connect))
                .route("/metrics", web::get().to(metrics))
                .configure(crate::web::routes)
                .default_service(web::to(crate::rest::not_found));
            let app = app
                .into_factory()
                .map_err(|e: actix_web::Error| e.error_response());
            let http = actix_http::HttpService::build()
                .keep_alive(actix_http::KeepAlive::Timeout(Duration::from_secs(5)))
                .client_request_timeout(Duration::from_secs(5))
                .client_disconnect_timeout(Duration::from_secs(1))
                .local_addr(addr)
                .on_connect_ext(|io: &LongUriGuard<TcpStream>, data| on_connect(io.get_ref(), data))
                .finish(actix_service::map_config(app, move |_| {
                    actix_web::dev::AppConfig::default()
                }));
            actix_service::fn_service(|io: TcpStream| async move {
                let peer = io.peer_addr().ok();
                Ok::<_, actix_http::error::DispatchError>((
                    LongUriGuard::new(io),
                    actix_http::Protocol::Http1,
                    peer,
                ))
            })
            .and_then(http)
        })?
        .run();
    let base = format!("http://{addr}");
    state.runtime.set_base_url(&base);
    print_start(&opts, &base, started.new_admin_token.as_deref())?;
    tracing::info!(%addr, data_dir = %opts.runtime.data_dir.display(), "serving");
    server.await?;
    state.runtime.stop_vendor_processes().await;
    Ok(())
}

/// What every handler shares, from the options, the runtime and the membership.
fn app_state(
    opts: &ServeOptions,
    runtime: tandem_actors::Runtime,
    cluster: Option<tandem_actors::cluster::Cluster>,
) -> web::Data<AppState> {
    web::Data::new(AppState {
        cluster,
        runtime,
        auth: opts.auth,
        max_frame_bytes: opts.max_frame_bytes,
        heartbeat: opts.heartbeat,
        limits: opts.limits,
        connections: crate::limits::ConnectionCounts::default(),
    })
}

/// The listening socket, or which address could not be bound and why.
fn bind(opts: &ServeOptions) -> Result<std::net::TcpListener, ServeError> {
    std::net::TcpListener::bind((opts.bind, opts.port)).map_err(|source| {
        let hint = if source.kind() == std::io::ErrorKind::AddrInUse {
            " (another process uses it; pick another --port, or --port 0 for a free one)"
        } else {
            ""
        };
        ServeError::Bind {
            addr: std::net::SocketAddr::new(opts.bind, opts.port).to_string(),
            source,
            hint,
        }
    })
}

/// With `--nats`: joins the cluster and answers what other nodes send this one.
async fn join_cluster(
    opts: &ServeOptions,
    runtime: &tandem_actors::Runtime,
) -> Result<Option<tandem_actors::cluster::Cluster>, ServeError> {
    let Some(config) = opts.cluster.clone() else {
        return Ok(None);
    };
    let cluster = tandem_actors::cluster::Cluster::join(config, runtime.clone()).await?;
    crate::cluster_rpc::serve(&cluster, runtime.clone()).await?;
    Ok(Some(cluster))
}

/// The start lines on stdout: the admin token's URL (once, when it was just made) or
/// how to print it, then `tandem listening on URL`.
fn print_start(
    opts: &ServeOptions,
    base: &str,
    new_admin_token: Option<&str>,
) -> Result<(), ServeError> {
    let mut stdout = std::io::stdout().lock();
    if opts.auth == AuthMode::Token {
        match new_admin_token {
            // Shown once, when it is created; afterwards `tandem token show`.
            Some(token) => writeln!(stdout, "open {base}/?token={token}")?,
            None => writeln!(
                stdout,
                "admin token: run `tandem token show{}` to print it",
                data_dir_flag(&opts.runtime.data_dir)
            )?,
        }
    }
    writeln!(stdout, "tandem listening on {base}")?;
    stdout.flush()?;
    Ok(())
}

/// ` --data-dir DIR` when `dir` is not the default, so the hint can be pasted as is.
fn data_dir_flag(dir: &std::path::Path) -> String {
    match default_data_dir() {
        Ok(default) if default == dir => String::new(),
        _ => format!(" --data-dir {}", dir.display()),
    }
}

/// Per connection, before its first request.
fn on_connect(tcp: &TcpStream, data: &mut actix_http::Extensions) {
    // Small frames must leave at once: with Nagle on, a frame waits for the peer's
    // delayed ACK (~40 ms).
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
    // Kept with the connection, so a WebSocket client that stops reading can be
    // disconnected from outside its actor.
    match crate::ws::ConnSocket::of(tcp) {
        Ok(socket) => {
            data.insert(socket);
        }
        Err(e) => tracing::debug!(error = %e, "could not keep the socket"),
    }
}

async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    caller(&req, &state.runtime, state.auth)?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(crate::metrics::render(&state.runtime)))
}

/// The default data directory: `~/.tandem`. Without `HOME` there is no sensible
/// place (a database in the current folder would be a surprise), so it is an error.
pub fn default_data_dir() -> Result<PathBuf, String> {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => Ok(PathBuf::from(home).join(".tandem")),
        _ => Err(
            "HOME is not set, so there is no default data directory; pass --data-dir DIR".into(),
        ),
    }
}
