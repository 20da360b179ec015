//! REST errors: `{"error": {"code", "message"}}` with the status the code implies.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use tandem_actors::RuntimeError;
use tandem_protocol::error::{ErrorBody, ErrorDetail};
use tandem_protocol::ErrorCode;

/// An error answered to a REST caller.
#[derive(Debug, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct ApiError {
    /// Machine-readable code.
    pub code: ErrorCode,
    /// The HTTP status: the code's, or the runtime error's own
    /// ([`RuntimeError::http_status`]).
    pub status: u16,
    /// Human-readable message, sent as `error.message`.
    pub message: String,
    /// The files the error is about (`BASE_DIRTY`, `MERGE_CONFLICT`).
    pub paths: Option<Vec<String>>,
}

impl ApiError {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            status: code.http_status(),
            message: message.into(),
            paths: None,
        }
    }

    /// A well-formed value this server cannot use (REST 422; see
    /// [`RuntimeError::Unusable`]).
    pub fn unusable(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            status: 422,
            ..ApiError::new(code, message)
        }
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        ApiError {
            paths: e.paths(),
            status: e.http_status(),
            ..ApiError::new(e.code(), e.to_string())
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code()).json(ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message.clone(),
                paths: self.paths.clone(),
            },
        })
    }
}
