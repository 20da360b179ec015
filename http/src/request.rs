//! What REST handlers do with every request: know its caller, read its query and its
//! JSON body within the size limit, and wait until its writes are committed before
//! answering. [`Caller`] and [`Json`] are handler arguments, extracted in the order
//! the handler names them (the caller first, so a request without a valid token is
//! refused before its body is read).

use std::future::{ready, Ready};
use std::ops::Deref;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest};
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use tandem_actors::Principal;
use tandem_protocol::client::{SessionConfigureParams, SessionCreateParams};
use tandem_protocol::operations::Operation;
use tandem_protocol::queries::{SessionGetParams, SessionGetResult};
use tandem_protocol::rest::EmptyBody;
use tandem_protocol::results::{SessionConfigureResult, SessionCreateResult};
use tandem_protocol::session::SessionInfo;
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
        // In this order: a caller without a valid token learns nothing about the
        // request's target or media type; then a target the server cannot use, then
        // the cross-site simple-request check, both before any body is read (the
        // handler names its body after the caller).
        ready(app_state(req).and_then(|state| {
            let who = caller(req, &state.runtime, state.auth)?;
            usable_target(req)?;
            crate::guard::require_json(req)?;
            Ok(Caller(who))
        }))
    }
}

/// Refuses a request whose path or query decodes to bytes no id, name or path the
/// server keeps can hold: a NUL, or bytes that are not UTF-8 (which would otherwise
/// be read with replacement characters).
pub(crate) fn usable_target(req: &HttpRequest) -> Result<(), ApiError> {
    let query = req.query_string();
    let parts = query
        .split('&')
        .flat_map(|pair| pair.split('='))
        .map(|part| ("query", part));
    for (what, raw) in std::iter::once(("path", req.uri().path())).chain(parts) {
        let bytes: Vec<u8> = percent_decode(raw);
        if bytes.contains(&0) || std::str::from_utf8(&bytes).is_err() {
            return Err(ApiError::new(
                ErrorCode::InvalidArgument,
                format!("the request's {what} holds a NUL byte or bytes that are not UTF-8"),
            ));
        }
    }
    Ok(())
}

/// `%XX` escapes decoded (a malformed escape stays as it is, as the router reads it).
fn percent_decode(raw: &str) -> Vec<u8> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// The body of a POST that takes no fields: empty or `{}` (anything else is 400, as
/// an unknown field of any other body is).
pub struct NoBody;

impl FromRequest for NoBody {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<NoBody, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let read = Json::<EmptyBody>::read(req, payload, true);
        Box::pin(async move { read.await.map(|_| NoBody) })
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
        Json::read(req, payload, false)
    }
}

impl<T: DeserializeOwned + 'static> Json<T> {
    /// Reads the body as `T` (see [`body`]).
    fn read(
        req: &HttpRequest,
        payload: &mut Payload,
        empty_ok: bool,
    ) -> LocalBoxFuture<'static, Result<Json<T>, ApiError>> {
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
            body(payload, state.max_frame_bytes, empty_ok)
                .await
                .map(Json)
        })
    }
}

/// Reads a JSON body of at most the frame limit. An empty body (no byte at all) reads
/// as `{}` when `empty_ok`; white space alone is not JSON, so it is refused like any
/// other body that is not an object.
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
    let bytes: &[u8] = if empty_ok && bytes.is_empty() {
        b"{}"
    } else {
        &bytes
    };
    // Every body is an object; serde would also read a struct from an array (`[]`
    // as a body of only optional fields), so anything else is refused first.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::new(
            ErrorCode::InvalidJson,
            "the body must be a JSON object",
        ));
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("bad request body: {e}")))?;
    integral_numbers(&mut value);
    serde_json::from_value(value)
        .map_err(|e| ApiError::new(ErrorCode::InvalidArgument, format!("bad request body: {e}")))
}

/// Writes every number with no fraction (`1754.0`) as the integer it is: JSON, and
/// the JSON Schema of the OpenAPI document, do not tell them apart, serde does.
fn integral_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) else {
                return;
            };
            // Only within the range an `f64` holds exactly; beyond it the integer
            // the text meant is unknown, and the field's own type refuses it.
            const EXACT: f64 = 9_007_199_254_740_992.0;
            if f.abs() <= EXACT {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(fields) => fields.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// Reads the query string as `T`; a malformed one is `INVALID_ARGUMENT`.
pub(crate) fn query<T: DeserializeOwned>(req: &HttpRequest) -> Result<T, ApiError> {
    web::Query::<T>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|e| ApiError::new(ErrorCode::InvalidArgument, format!("bad query: {e}")))
}

/// Runs the request `params` make through the one operation path
/// ([`crate::operation::execute`]: routed to the owning node, answered once
/// committed) and gives its typed result.
pub(crate) async fn run<P: Operation>(
    state: &AppState,
    who: &Principal,
    params: P,
) -> Result<P::Result, ApiError> {
    crate::operation::call(&state.context(), who, params).await
}

/// A result that is the session and nothing else, which REST answers with alone
/// (`POST`, `GET` and `PATCH /sessions/{id}`). The impls take the result apart
/// field by field, so a field added to one of them fails to compile here rather
/// than being dropped from the cut in [`run_session`].
pub(crate) trait SessionEnvelope: Operation
where
    Self::Result: Sized,
{
    /// The session the result holds.
    fn session(result: Self::Result) -> SessionInfo;
}

impl SessionEnvelope for SessionCreateParams {
    fn session(result: SessionCreateResult) -> SessionInfo {
        let SessionCreateResult { session } = result;
        session
    }
}

impl SessionEnvelope for SessionGetParams {
    fn session(result: SessionGetResult) -> SessionInfo {
        let SessionGetResult { session } = result;
        session
    }
}

impl SessionEnvelope for SessionConfigureParams {
    fn session(result: SessionConfigureResult) -> SessionInfo {
        let SessionConfigureResult { session } = result;
        session
    }
}

/// As [`run`], the session of the result as JSON text. serde writes a result of one
/// field as `{"session":…}`, so the session is cut out of the text without being
/// read again (reading it cost about as much as making it); a text in another
/// spelling (a forwarded answer) is decoded and the session written anew.
pub(crate) async fn run_session<P: SessionEnvelope>(
    state: &AppState,
    who: &Principal,
    params: P,
) -> Result<String, ApiError> {
    const OPEN: &str = r#"{"session":"#;
    let mut text = run_text(state, who, params).await?;
    if text.starts_with(OPEN) && text.ends_with('}') {
        text.truncate(text.len() - 1);
        text.drain(..OPEN.len());
        return Ok(text);
    }
    let result: P::Result = serde_json::from_str(&text)
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("bad result: {e}")))?;
    serde_json::to_string(&P::session(result))
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("bad result: {e}")))
}

/// As [`run`], the result's JSON text as the operation made it (a page of events is
/// spliced, not decoded and encoded again).
pub(crate) async fn run_text<P: Operation>(
    state: &AppState,
    who: &Principal,
    params: P,
) -> Result<String, ApiError> {
    crate::operation::execute(&state.context(), who, params.into_request()).await
}
