//! A request body that stops arriving is timed out (`--request-timeout-secs`) rather
//! than held open. actix-http's `client_request_timeout` covers the request head only;
//! a body that stalls half-way would keep its connection and the handler waiting
//! until the client gives up. So every request's body (REST, MCP, uploads, bodies
//! forwarded to another cluster node) is read through [`Stalling`], which fails the
//! read once no byte came for the timeout: a long upload that keeps sending is never
//! cut, only one that stops. The handler then fails on its own (nothing is stored),
//! and [`middleware`] answers 408 `REQUEST_TIMEOUT` instead and closes the connection
//! (the rest of the body, if it ever comes, is not read).

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::ConnectionType;
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{web, ResponseError};
use futures_util::Stream;
use tandem_protocol::ErrorCode;

use crate::error::ApiError;

/// How long a request body may go without a byte (`--request-timeout-secs`); the
/// server registers it as app data for [`middleware`].
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout(pub Duration);

/// Reads each request's body through [`Stalling`] and answers 408 when it stalled.
/// WebSocket upgrades are left alone: their "body" is the socket, which has its own
/// heartbeat.
pub async fn middleware(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let idle = req.app_data::<web::Data<BodyTimeout>>().map(|t| t.0);
    let stalled = Rc::new(Cell::new(false));
    if let Some(idle) = idle.filter(|_| !req.head().upgrade()) {
        let payload = req.parts_mut().1.take();
        if matches!(payload, Payload::None) {
            req.set_payload(payload);
        } else {
            let stream = Stalling {
                inner: payload,
                idle,
                timer: None,
                stalled: stalled.clone(),
            };
            req.set_payload(Payload::from(
                Box::pin(stream) as actix_http::BoxedPayloadStream
            ));
        }
    }
    let res = next.call(req).await?;
    if !stalled.get() {
        return Ok(res.map_into_left_body());
    }
    let secs = idle.map_or(0, |d| d.as_secs());
    tracing::info!(path = %res.request().path(), secs, "request body stalled; answered 408");
    let error = ApiError::new(
        ErrorCode::RequestTimeout,
        format!("the request body stopped arriving (no byte for {secs} s, --request-timeout-secs)"),
    );
    let (request, _) = res.into_parts();
    let mut response = error.error_response();
    // The rest of the body may still come: the connection cannot carry another
    // request after it.
    response
        .head_mut()
        .set_connection_type(ConnectionType::Close);
    Ok(ServiceResponse::new(request, response).map_into_right_body())
}

/// A request body that fails once no chunk arrived for `idle`; `stalled` tells the
/// middleware so.
struct Stalling {
    /// The body as actix-http reads it.
    inner: Payload,
    /// Longest wait for the next chunk.
    idle: Duration,
    /// Armed at the first wait, pushed back by every chunk.
    timer: Option<Pin<Box<actix_rt::time::Sleep>>>,
    /// Set when the body timed out.
    stalled: Rc<Cell<bool>>,
}

impl Stream for Stalling {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.stalled.get() {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Pending => {}
            Poll::Ready(Some(Ok(chunk))) => {
                if let Some(timer) = this.timer.as_mut() {
                    let next = actix_rt::time::Instant::now() + this.idle;
                    timer.as_mut().reset(next);
                }
                return Poll::Ready(Some(Ok(chunk)));
            }
            done => return done,
        }
        let idle = this.idle;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(actix_rt::time::sleep(idle)));
        match timer.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                this.stalled.set(true);
                Poll::Ready(Some(Err(PayloadError::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the request body stopped arriving",
                )))))
            }
        }
    }
}
