//! Builds the actix-web server around a started runtime.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use std::time::Duration;

use actix_web::web;
use tandem_actors::RuntimeConfig;

use crate::auth::AuthMode;
use crate::listeners::{listen_plain, listen_tls, Routes, Shared};
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
    /// Serve HTTPS and WSS with this certificate; `None`: plain HTTP.
    pub tls: Option<crate::tls::TlsSource>,
    /// Plain HTTP on a non-loopback address was asked for (`--insecure-http`); without
    /// it (or TLS) such a bind is refused.
    pub insecure_http: bool,
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
    /// Plain HTTP on a non-loopback address without `--insecure-http`.
    #[error(
        "refusing to serve plain HTTP on {0}, which is not a loopback address: the token \
         and everything sessions show would cross the network unencrypted. Serve HTTPS \
         with --tls-cert FILE --tls-key FILE or --tls self-signed, or pass --insecure-http \
         to accept that"
    )]
    PlainOffLoopback(IpAddr),
    /// The TLS certificate or key could not be loaded or made.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
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

/// Stops a server started by [`serve_reporting`].
pub use actix_server::ServerHandle;

/// Starts the runtime and serves until the process is stopped. Prints the start line
/// (`tandem listening on http://HOST:PORT`, `https://` with TLS) once the port is bound.
pub async fn serve(opts: ServeOptions) -> Result<(), ServeError> {
    serve_reporting(opts, |lines, _| {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(lines)?;
        stdout.flush()
    })
    .await
}

/// [`serve`], handing the start lines and a handle that stops the server to `started`
/// instead of printing them: how the tests run a server inside their own process.
/// Once the handle stopped the HTTP server, the vendor processes are stopped and this
/// returns.
pub async fn serve_reporting(
    opts: ServeOptions,
    started: impl FnOnce(&[u8], ServerHandle) -> std::io::Result<()>,
) -> Result<(), ServeError> {
    check_exposure(&opts)?;
    // Bind before anything touches the data directory: a port in use must not leave a
    // fresh database behind, and its error must say which address.
    let listener = bind(&opts)?;
    let addr = listener.local_addr()?;
    let agents_mcp = bind_agents_mcp(&opts)?;
    // Before the runtime starts, for the same reason: a bad certificate or key leaves
    // nothing behind but (with `--tls self-signed`) the certificate it made.
    let tls = match &opts.tls {
        Some(source) => Some(crate::tls::load(source, &opts.runtime.data_dir, opts.bind)?),
        None => None,
    };
    let opened = tandem_actors::start(opts.runtime.clone())?;
    let users = opened.runtime.store().list_users().map_or(0, |u| u.len());
    crate::confine::log_at_start(&opts.runtime.confinement, users);
    let cluster = join_cluster(&opts, &opened.runtime).await?;
    let state = app_state(&opts, opened.runtime, cluster);
    let guard = web::Data::from(crate::guard::Guard::new(
        addr.ip(),
        &opts.allowed_hosts,
        &opts.allowed_origins,
    ));
    let shared = Shared {
        state: state.clone(),
        guard,
        body_timeout: web::Data::new(crate::body_timeout::BodyTimeout(opts.request_timeout)),
        addr,
        routes: Routes::All,
    };
    let mut builder = actix_server::Server::build().workers(opts.workers.max(1));
    builder = match &tls {
        None => listen_plain(builder, "tandem", listener, shared.clone())?,
        Some(tls) => listen_tls(builder, listener, tls, shared.clone())?,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let base = format!("{scheme}://{addr}");
    // Agents reach `/mcp` at the loopback listener under TLS (see `bind_agents_mcp`).
    let agents_base = match agents_mcp {
        Some(listener) => {
            let (next, url) = listen_agents_mcp(builder, listener, &opts, shared)?;
            builder = next;
            url
        }
        None => base.clone(),
    };
    let server = builder.run();
    stop_terminals_on_signal(state.runtime.clone());
    state.runtime.set_base_url(&agents_base);
    // Pairing links name an address a phone can reach, not `0.0.0.0`.
    let (public, reachable) = crate::pairing::public_url(scheme, opts.bind, addr.port());
    state.runtime.auth().set_public_url(&public, reachable);
    let mut lines = Vec::new();
    print_start(
        &mut lines,
        &opts,
        &base,
        opened.new_admin_token.as_deref(),
        tls.as_ref(),
    )?;
    started(&lines, server.handle())?;
    tracing::info!(%addr, data_dir = %opts.runtime.data_dir.display(), "serving");
    server.await?;
    // Stopped by its handle, no signal ended them (see `stop_terminals_on_signal`).
    state.runtime.terminals().stop_all();
    state.runtime.stop_vendor_processes().await;
    Ok(())
}

/// Refuses what would expose the server off loopback without protection: no
/// authentication, or plain HTTP without `--insecure-http` (which is warned about).
fn check_exposure(opts: &ServeOptions) -> Result<(), ServeError> {
    if opts.auth == AuthMode::None && !opts.bind.is_loopback() {
        return Err(ServeError::AuthNoneOffLoopback(opts.bind));
    }
    if opts.tls.is_none() && !opts.bind.is_loopback() {
        if !opts.insecure_http {
            return Err(ServeError::PlainOffLoopback(opts.bind));
        }
        tracing::warn!(
            bind = %opts.bind,
            "serving plain HTTP on a non-loopback address (--insecure-http): tokens, \
             prompts and everything agents do cross the network unencrypted, readable and \
             changeable by anyone on the way; use --tls-cert/--tls-key or --tls self-signed"
        );
    }
    Ok(())
}

/// Adds the agents' plain loopback listener for `/mcp` (under TLS) to `builder`;
/// the builder and the URL agents reach it at.
fn listen_agents_mcp(
    builder: actix_server::ServerBuilder,
    listener: std::net::TcpListener,
    opts: &ServeOptions,
    shared: Shared,
) -> Result<(actix_server::ServerBuilder, String), ServeError> {
    let mcp_addr = listener.local_addr()?;
    let mcp = Shared {
        guard: web::Data::from(crate::guard::Guard::new(
            mcp_addr.ip(),
            &opts.allowed_hosts,
            &opts.allowed_origins,
        )),
        addr: mcp_addr,
        routes: Routes::McpOnly,
        ..shared
    };
    let builder = listen_plain(builder, "tandem-mcp", listener, mcp)?;
    Ok((builder, format!("http://{mcp_addr}")))
}

/// Ends every terminal as soon as the server is told to stop (SIGTERM, SIGINT; the
/// HTTP server hears the same signals): a graceful stop waits for open connections,
/// and a terminal's socket closes only once its shell is gone.
fn stop_terminals_on_signal(runtime: tandem_actors::Runtime) {
    use actix_rt::signal::unix::{signal, SignalKind};
    actix_rt::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!(
                "cannot listen for stop signals: terminals end only after the HTTP server"
            );
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("stopping: ending every terminal");
        runtime.terminals().stop_all();
    });
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
        told: Default::default(),
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

/// Under TLS, a second listener on a free loopback port, plain HTTP, serving only
/// `/mcp` (each request needs a session's MCP token): the vendor CLIs this server
/// starts reach their tools there, since they would not trust a self-signed or
/// private CA's certificate, nor find 127.0.0.1 in a certificate made for a name.
/// Loopback traffic never leaves the machine, as with the plain default.
fn bind_agents_mcp(opts: &ServeOptions) -> Result<Option<std::net::TcpListener>, ServeError> {
    if opts.tls.is_none() {
        return Ok(None);
    }
    let loopback = IpAddr::from([127, 0, 0, 1]);
    std::net::TcpListener::bind((loopback, 0))
        .map(Some)
        .map_err(|source| ServeError::Bind {
            addr: format!("{loopback}:0 (the agents' /mcp listener)"),
            source,
            hint: "",
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

/// The start lines on stdout: with TLS the certificate's fingerprint, the admin
/// token's URL (once, when it was just made) or how to print it, then `tandem
/// listening on URL`.
fn print_start(
    stdout: &mut impl Write,
    opts: &ServeOptions,
    base: &str,
    new_admin_token: Option<&str>,
    tls: Option<&crate::tls::Tls>,
) -> Result<(), ServeError> {
    if let Some(tls) = tls {
        // To compare with what a browser or phone shows before trusting it.
        writeln!(
            stdout,
            "TLS certificate {} SHA-256 fingerprint {}",
            tls.cert_path.display(),
            tls.fingerprint
        )?;
    }
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
    Ok(())
}

/// ` --data-dir DIR` when `dir` is not the default, so the hint can be pasted as is.
fn data_dir_flag(dir: &std::path::Path) -> String {
    match default_data_dir() {
        Ok(default) if default == dir => String::new(),
        _ => format!(" --data-dir {}", dir.display()),
    }
}

/// `HOME` is unset or empty, so there is no default data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("HOME is not set, so there is no default data directory; pass --data-dir DIR")]
pub struct NoDefaultDataDir;

/// The CLI's commands report their errors as text.
impl From<NoDefaultDataDir> for String {
    fn from(e: NoDefaultDataDir) -> String {
        e.to_string()
    }
}

/// The default data directory: `~/.tandem`. Without `HOME` there is no sensible
/// place (a database in the current folder would be a surprise), so it is an error.
pub fn default_data_dir() -> Result<PathBuf, NoDefaultDataDir> {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => Ok(PathBuf::from(home).join(".tandem")),
        _ => Err(NoDefaultDataDir),
    }
}
