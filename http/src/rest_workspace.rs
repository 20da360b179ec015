//! REST routes of workspaces: a session's changes, diff, checkpoints and restore, merging and discarding
//! its worktree, and reading and saving the files of its working directory. Each
//! runs as its request of the table (`crate::operation`); git and file I/O run on
//! the blocking pool.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use tandem_protocol::client::SessionDiscardParams;
use tandem_protocol::ids::SessionId;
use tandem_protocol::queries::{
    SessionChangesParams, SessionCheckpointsParams, SessionDiffParams, SessionFileReadParams,
    SessionFileWriteParams, SessionFilesParams, SessionRestoreParams,
};
use tandem_protocol::rest_control::RestoreBody;
use tandem_protocol::workspace::{
    DiffQuery, FileSave, MergeBody, PathQuery, SessionMergeParams, MAX_FILE_BYTES,
};
use tandem_protocol::workspace::{
    PushBody, SessionCheckParams, SessionPushParams, SessionRebaseParams,
};

use tandem_protocol::scripts::{SessionRunLogParams, SessionRunParams, SessionRunStopParams};

use tandem_protocol::operations::Operation;

use crate::error::ApiError;
use crate::request::{body, query, run, Caller, Json, NoBody};
use crate::state::AppState;

/// Mounts the routes inside the `/api/v1` scope (see `rest_control::routes`).
pub fn routes(cfg: &mut web::ServiceConfig, at: fn(&str) -> actix_web::Resource) {
    cfg.service(at("/sessions/{id}/changes").route(web::get().to(changes)))
        .service(at("/sessions/{id}/changes/diff").route(web::get().to(diff)))
        .service(at("/sessions/{id}/checkpoints").route(web::get().to(checkpoints)))
        .service(at("/sessions/{id}/restore").route(web::post().to(restore)))
        .service(at("/sessions/{id}/merge").route(web::post().to(merge)))
        .service(at("/sessions/{id}/discard").route(web::post().to(post::<SessionDiscardParams>)))
        .service(at("/sessions/{id}/rebase").route(web::post().to(post::<SessionRebaseParams>)))
        .service(at("/sessions/{id}/check").route(web::post().to(post::<SessionCheckParams>)))
        .service(at("/sessions/{id}/push").route(web::post().to(push)))
        .service(at("/sessions/{id}/run").route(web::post().to(post::<SessionRunParams>)))
        .service(at("/sessions/{id}/run/stop").route(web::post().to(post::<SessionRunStopParams>)))
        .service(at("/sessions/{id}/run/log").route(web::get().to(get::<SessionRunLogParams>)))
        .service(at("/sessions/{id}/files").route(web::get().to(list)))
        .service(
            at("/sessions/{id}/files/content")
                .route(web::get().to(read))
                .route(web::put().to(write)),
        );
}

/// A request whose one field is the session the path names: its route is one of
/// [`post`] or [`get`], not a handler of its own.
trait OfSession: Operation<Result: serde::Serialize> + 'static {
    /// The request for `session_id`.
    fn of(session_id: SessionId) -> Self;
}

/// [`OfSession`] for request types whose one field is `session_id`.
macro_rules! of_session {
    ($($params:ty),* $(,)?) => {
        $(impl OfSession for $params {
            fn of(session_id: SessionId) -> Self {
                Self { session_id }
            }
        })*
    };
}

of_session!(
    SessionDiscardParams,
    SessionRebaseParams,
    SessionCheckParams,
    SessionRunParams,
    SessionRunStopParams,
    SessionRunLogParams,
);

/// `POST /sessions/{id}/…` with no body (`{}`), as the request `P`.
async fn post<P: OfSession>(
    who: Caller,
    id: web::Path<SessionId>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(run(&state, &who, P::of(id.into_inner())).await?))
}

/// `GET /sessions/{id}/…`, as the request `P`.
async fn get<P: OfSession>(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(run(&state, &who, P::of(id.into_inner())).await?))
}

/// `GET /sessions/{id}/changes`.
async fn changes(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    let done = run(&state, &who, SessionChangesParams { session_id }).await?;
    Ok(HttpResponse::Ok().json(done.changes))
}

/// `GET /sessions/{id}/checkpoints`.
async fn checkpoints(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    let list = run(&state, &who, SessionCheckpointsParams { session_id }).await?;
    Ok(HttpResponse::Ok().json(list))
}

/// `POST /sessions/{id}/restore {turnId}`.
async fn restore(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<RestoreBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = SessionRestoreParams {
        session_id: id.into_inner(),
        turn_id: b.turn_id,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `GET /sessions/{id}/changes/diff?path=`.
async fn diff(
    who: Caller,
    req: HttpRequest,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: DiffQuery = query(&req)?;
    let params = SessionDiffParams {
        session_id: id.into_inner(),
        path: q.path,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?.diff))
}

/// `POST /sessions/{id}/merge` (as `session.merge`).
async fn merge(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<MergeBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = SessionMergeParams {
        session_id: id.into_inner(),
        strategy: b.strategy,
        message: b.message,
        force: b.force,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /sessions/{id}/push` (as `session.push`).
async fn push(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<PushBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = SessionPushParams {
        session_id: id.into_inner(),
        remote: b.remote,
        branch: b.branch,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `GET /sessions/{id}/files?path=`.
async fn list(
    who: Caller,
    req: HttpRequest,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: PathQuery = query(&req)?;
    let params = SessionFilesParams {
        session_id: id.into_inner(),
        path: q.path,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?.listing))
}

/// `GET /sessions/{id}/files/content?path=`, with `ETag`.
async fn read(
    who: Caller,
    req: HttpRequest,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: PathQuery = query(&req)?;
    let params = SessionFileReadParams {
        session_id: id.into_inner(),
        path: q.path.unwrap_or_default(),
    };
    let file = run(&state, &who, params).await?.file;
    Ok(HttpResponse::Ok()
        .insert_header((header::ETAG, file.etag.clone()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(file))
}

/// `PUT /sessions/{id}/files/content?path=` with `If-Match`.
async fn write(
    who: Caller,
    req: HttpRequest,
    id: web::Path<SessionId>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: PathQuery = query(&req)?;
    // Room for a 2 MiB file whose every character JSON escapes.
    let limit = usize::try_from(MAX_FILE_BYTES * 6 + 4096).unwrap_or(usize::MAX);
    let b: FileSave = body(payload, limit, false).await?;
    let if_match = req
        .headers()
        .get(header::IF_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let params = SessionFileWriteParams {
        session_id: id.into_inner(),
        path: q.path.unwrap_or_default(),
        content: b.content,
        if_match,
    };
    let saved = run(&state, &who, params).await?.saved;
    Ok(HttpResponse::Ok()
        .insert_header((header::ETAG, saved.etag.clone()))
        .json(saved))
}
