//! What REST handlers do with every request: know its caller, read its query and its
//! JSON body within the size limit, and wait until its writes are committed before
//! answering. [`Caller`] and [`Json`] are handler arguments, extracted in the order
//! the handler names them (the caller first, so a request without a valid token is
//! refused before its body is read).

use std::future::{ready, Future, Ready};
use std::ops::Deref;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest};
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use tandem_actors::Principal;
use tandem_protocol::ErrorCode;

use crate::auth::caller;
use crate::error::ApiError;
use crate::state::AppState;

/// The server's state, which every app the server builds carries.
fn app_state(req: &HttpRequest) -> Result<web::Data<AppState>, ApiError> {
    req.app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::new(ErrorCode::Internal, "no application state"))
}

/// The authenticated caller of a request (401 without a valid token).
pub struct Caller(Principal);

impl Deref for Caller {
    type Target = Principal;
    fn deref(&self) -> &Principal {
        &self.0
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Caller, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(app_state(req).and_then(|state| caller(req, &state.runtime, state.auth).map(Caller)))
    }
}

/// A JSON body of at most the frame limit, read as `T` (see [`body`]).
pub struct Json<T>(pub T);

impl<T> Deref for Json<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Json<T>, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let state = app_state(req);
        let payload = web::Payload::from_request(req, payload);
        Box::pin(async move {
            let state = state?;
            let payload = payload.await.map_err(|e| {
                ApiError::new(
                    ErrorCode::InvalidJson,
                    format!("body could not be read: {e}"),
                )
            })?;
            body(payload, state.max_frame_bytes, false).await.map(Json)
        })
    }
}

/// Reads a JSON body of at most the frame limit. An empty body reads as `{}` when
/// `empty_ok`.
pub(crate) async fn body<T: DeserializeOwned>(
    payload: web::Payload,
    limit: usize,
    empty_ok: bool,
) -> Result<T, ApiError> {
    let bytes = payload
        .to_bytes_limited(limit)
        .await
        .map_err(|_| {
            ApiError::new(
                ErrorCode::FrameTooLarge,
                format!("body is larger than {limit} bytes"),
            )
        })?
        .map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidJson,
                format!("body could not be read: {e}"),
            )
        })?;
    let bytes: &[u8] = if empty_ok && bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &bytes
    };
    serde_json::from_slice(bytes).map_err(|e| {
        let code = if e.is_data() {
            ErrorCode::InvalidArgument
        } else {
            ErrorCode::InvalidJson
        };
        ApiError::new(code, format!("bad request body: {e}"))
    })
}

/// Reads the query string as `T`; a malformed one is `INVALID_ARGUMENT`.
pub(crate) fn query<T: DeserializeOwned>(req: &HttpRequest) -> Result<T, ApiError> {
    web::Query::<T>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|e| ApiError::new(ErrorCode::InvalidArgument, format!("bad query: {e}")))
}

/// Runs `write`, a runtime operation not yet started, and gives its result only once
/// what it wrote is committed, so an acknowledged change survives a crash.
pub(crate) async fn durably<T, E>(
    state: &AppState,
    write: impl Future<Output = Result<T, E>>,
) -> Result<T, ApiError>
where
    ApiError: From<E>,
{
    // Before the request's writes: a future runs nothing until it is awaited.
    let epoch = state.runtime.write_epoch();
    let done = write.await?;
    committed(state, epoch).await?;
    Ok(done)
}

/// Waits until what the request wrote is committed, so an acknowledged change
/// survives a crash.
async fn committed(state: &AppState, epoch: u64) -> Result<(), ApiError> {
    if state.runtime.synced_since(epoch).await {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::Internal,
            "the store could not commit",
        ))
    }
}
