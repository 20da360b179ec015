//! REST routes of workspaces: a session's changes and diff, merging and discarding
//! its worktree, and reading and saving the files of its working directory. Each
//! calls a runtime operation that runs git or file I/O on the blocking pool.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use tandem_protocol::workspace::{
    DiffQuery, FileSave, MergeBody, PathQuery, DEFAULT_DIFF_CAP, MAX_FILE_BYTES,
};
use tandem_protocol::ErrorCode;

use crate::error::ApiError;
use crate::request::{body, durably, query, Caller, Json, NoBody};
use crate::state::AppState;

/// Mounts the routes inside the `/api/v1` scope (see `rest_control::routes`).
pub fn routes(cfg: &mut web::ServiceConfig, at: fn(&str) -> actix_web::Resource) {
    cfg.service(at("/sessions/{id}/changes").route(web::get().to(changes)))
        .service(at("/sessions/{id}/changes/diff").route(web::get().to(diff)))
        .service(at("/sessions/{id}/merge").route(web::post().to(merge)))
        .service(at("/sessions/{id}/discard").route(web::post().to(discard)))
        .service(at("/sessions/{id}/files").route(web::get().to(list)))
        .service(
            at("/sessions/{id}/files/content")
                .route(web::get().to(read))
                .route(web::put().to(write)),
        );
}

/// `GET /sessions/{id}/changes`.
async fn changes(
    who: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let changes = state.runtime.session_changes(&who, &id).await?;
    Ok(HttpResponse::Ok().json(changes))
}

/// `GET /sessions/{id}/changes/diff?path=`.
async fn diff(
    who: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: DiffQuery = query(&req)?;
    let diff = state
        .runtime
        .session_diff(&who, &id, q.path, DEFAULT_DIFF_CAP)
        .await?;
    Ok(HttpResponse::Ok().json(diff))
}

/// `POST /sessions/{id}/merge` (as `session.merge`).
async fn merge(
    who: Caller,
    id: web::Path<String>,
    Json(b): Json<MergeBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let merge = state
        .runtime
        .merge_session(&who, &id, b.strategy, b.message);
    let done = durably(&state, merge).await?;
    Ok(HttpResponse::Ok().json(done))
}

/// `POST /sessions/{id}/discard` (as `session.discard`).
async fn discard(
    who: Caller,
    id: web::Path<String>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let done = durably(&state, state.runtime.discard_session(&who, &id)).await?;
    Ok(HttpResponse::Ok().json(done))
}

/// `GET /sessions/{id}/files?path=`.
async fn list(
    who: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: PathQuery = query(&req)?;
    let listing = state
        .runtime
        .list_files(&who, &id, q.path.unwrap_or_default())
        .await?;
    Ok(HttpResponse::Ok().json(listing))
}

fn required_path(q: PathQuery) -> Result<String, ApiError> {
    q.path
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidArgument, "`path` names no file"))
}

/// `GET /sessions/{id}/files/content?path=`, with `ETag`.
async fn read(
    who: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let path = required_path(query(&req)?)?;
    let file = state.runtime.read_file(&who, &id, path).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::ETAG, file.etag.clone()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(file))
}

/// `PUT /sessions/{id}/files/content?path=` with `If-Match`.
async fn write(
    who: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let path = required_path(query(&req)?)?;
    // Room for a 2 MiB file whose every character JSON escapes.
    let limit = usize::try_from(MAX_FILE_BYTES * 6 + 4096).unwrap_or(usize::MAX);
    let b: FileSave = body(payload, limit, false).await?;
    let if_match = req
        .headers()
        .get(header::IF_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let saved = state
        .runtime
        .write_file(&who, &id, path, b.content, if_match)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::ETAG, saved.etag.clone()))
        .json(saved))
}
