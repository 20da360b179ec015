//! The listening sockets' services: plain HTTP or TLS under each connection, then
//! [`LongUriGuard`] over the (decrypted) stream, then actix-http with the app. This is
//! actix-web's `HttpServer` with that one change: a request target too long for
//! actix-http gets a JSON answer (long_uri.rs).

use std::time::Duration;

use actix_rt::net::TcpStream;
use actix_server::ServerBuilder;
use actix_service::{IntoServiceFactory, ServiceFactoryExt};
use actix_web::{web, App};

use crate::long_uri::LongUriGuard;
use crate::state::AppState;

/// A TLS connection over TCP, as the acceptor hands it on.
type TlsTcp = actix_tls::accept::rustls_0_23::TlsStream<TcpStream>;

/// Which routes a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routes {
    /// Everything: REST, `/ws`, `/mcp`, `/metrics`, the page.
    All,
    /// `/mcp` only (the agents' loopback listener under TLS).
    McpOnly,
}

/// What each connection's HTTP service is built from.
#[derive(Clone)]
pub struct Shared {
    /// The handlers' state.
    pub state: web::Data<AppState>,
    /// The Host/Origin/Content-Type checks.
    pub guard: web::Data<crate::guard::Guard>,
    /// How long a body may stall.
    pub body_timeout: web::Data<crate::body_timeout::BodyTimeout>,
    /// The listener's bound address.
    pub addr: std::net::SocketAddr,
    /// What it serves.
    pub routes: Routes,
}

/// Serves plain HTTP on `listener`.
pub fn listen_plain(
    builder: ServerBuilder,
    name: &str,
    listener: std::net::TcpListener,
    shared: Shared,
) -> std::io::Result<ServerBuilder> {
    builder.listen(name, listener, move || {
        actix_service::fn_service(|io: TcpStream| async move {
            let peer = io.peer_addr().ok();
            Ok::<_, actix_http::error::DispatchError>((
                LongUriGuard::new(io),
                actix_http::Protocol::Http1,
                peer,
            ))
        })
        .and_then(http_service(&shared))
    })
}

/// Serves HTTPS (and WSS) on `listener`. A failed handshake drops the connection;
/// one that stalls is dropped after actix-tls's handshake timeout (3 s).
pub fn listen_tls(
    builder: ServerBuilder,
    listener: std::net::TcpListener,
    tls: &crate::tls::Tls,
    shared: Shared,
) -> std::io::Result<ServerBuilder> {
    let acceptor = actix_tls::accept::rustls_0_23::Acceptor::new(tls.config.clone());
    builder.listen("tandem", listener, move || {
        acceptor
            .clone()
            .map_err(|e| actix_http::error::DispatchError::Io(handshake_error(e)))
            .and_then(actix_service::fn_service(|io: TlsTcp| async move {
                let peer = io.get_ref().0.peer_addr().ok();
                Ok::<_, actix_http::error::DispatchError>((
                    LongUriGuard::new(io),
                    actix_http::Protocol::Http1,
                    peer,
                ))
            }))
            .and_then(http_service(&shared))
    })
}

/// A connection's stream, plain or TLS, with its TCP socket underneath.
trait Connection: actix_codec::AsyncRead + actix_codec::AsyncWrite + Unpin + 'static {
    /// The TCP socket (under any TLS layer).
    fn tcp(&self) -> &TcpStream;
}

impl Connection for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Connection for TlsTcp {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// The app over HTTP/1.1 for one worker, on plain or TLS connections.
fn http_service<T: Connection>(
    shared: &Shared,
) -> impl actix_service::ServiceFactory<
    (
        LongUriGuard<T>,
        actix_http::Protocol,
        Option<std::net::SocketAddr>,
    ),
    Config = (),
    Response = (),
    Error = actix_http::error::DispatchError,
    InitError = (),
> {
    let all = shared.routes == Routes::All;
    let app = App::new();
    #[cfg(feature = "failpoints")]
    let app = app.configure(crate::failpoints::routes);
    #[cfg(feature = "test-hooks")]
    let app = app.configure(crate::holds::routes);
    let app = app
        .app_data(shared.state.clone())
        // Origin, Host and Content-Type checks before every route and before
        // authentication (see guard.rs).
        .app_data(shared.guard.clone())
        .app_data(shared.body_timeout.clone())
        // Every body read below times out on a stall.
        .wrap(actix_web::middleware::from_fn(
            crate::body_timeout::middleware,
        ))
        .wrap(actix_web::middleware::from_fn(crate::guard::middleware))
        .configure(|cfg| {
            if all {
                crate::rest::routes(cfg);
            }
        })
        .configure(crate::mcp::routes)
        .configure(|cfg| {
            if all {
                cfg.route("/ws", web::get().to(crate::ws::connect))
                    .route(
                        "/ws/terminals/{id}",
                        web::get().to(crate::ws_terminal::connect),
                    )
                    .route("/metrics", web::get().to(crate::metrics::serve));
                crate::web::routes(cfg);
            }
        })
        .default_service(web::to(crate::rest::not_found));
    let app = app
        .into_factory()
        .map_err(|e: actix_web::Error| e.error_response());
    actix_http::HttpService::build()
        .keep_alive(actix_http::KeepAlive::Timeout(Duration::from_secs(5)))
        .client_request_timeout(Duration::from_secs(5))
        .client_disconnect_timeout(Duration::from_secs(1))
        .local_addr(shared.addr)
        .on_connect_ext(|io: &LongUriGuard<T>, data| on_connect(io.get_ref().tcp(), data))
        .finish(actix_service::map_config(app, move |_| {
            actix_web::dev::AppConfig::default()
        }))
}

/// A failed or timed-out TLS handshake, as the connection's I/O error (the connection
/// is dropped; nothing is answered).
fn handshake_error(
    e: actix_tls::accept::TlsError<std::io::Error, std::convert::Infallible>,
) -> std::io::Error {
    match e {
        actix_tls::accept::TlsError::Tls(e) => e,
        actix_tls::accept::TlsError::Timeout => std::io::ErrorKind::TimedOut.into(),
        actix_tls::accept::TlsError::Service(never) => match never {},
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
