//! What REST handlers do with every request: read its query and its JSON body within
//! the size limit, and wait until its writes are committed before answering.

use std::future::Future;

use actix_web::{web, HttpRequest};
use serde::de::DeserializeOwned;
use tandem_protocol::ErrorCode;

use crate::error::ApiError;
use crate::state::AppState;

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
pub(crate) async fn committed(state: &AppState, epoch: u64) -> Result<(), ApiError> {
    if state.runtime.synced_since(epoch).await {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::Internal,
            "the store could not commit",
        ))
    }
}
