//! `POST /api/v1/uploads` (the raw bytes of one file) and the GETs that serve an
//! upload's bytes back: to its owner, and to whoever may read a session that used it
//! (the page's thumbnails).

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use tandem_protocol::ids::{SessionId, UploadId};
use tandem_protocol::rest::UploadQuery;
use tandem_protocol::ErrorCode;

use crate::error::ApiError;
use crate::request::{query, Caller};
use crate::state::AppState;

/// `POST /api/v1/uploads?name=FILE`: stores the body as a file of its `Content-Type`
/// and answers 201 `{uploadId, size, mimeType}`.
pub async fn upload(
    who: Caller,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query: UploadQuery = query(&req)?;
    let mime_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidAttachment,
                "an upload needs a `Content-Type` naming the file's media type",
            )
        })?
        .to_string();
    let limit = state.runtime.uploads().max_file_bytes();
    let bytes = payload
        .to_bytes_limited(usize::try_from(limit).unwrap_or(usize::MAX))
        .await
        .map_err(|_| {
            ApiError::new(
                ErrorCode::AttachmentTooLarge,
                format!("the file is larger than {limit} bytes (--max-upload-bytes)"),
            )
        })?
        .map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidAttachment,
                format!("the body could not be read: {e}"),
            )
        })?;
    let info = state
        .runtime
        .uploads()
        .put(&who, bytes, &mime_type, query.name)
        .await?;
    Ok(HttpResponse::Created().json(info))
}

/// `GET /api/v1/uploads/{upload}`: the caller's own upload.
pub async fn own_upload(
    who: Caller,
    path: web::Path<UploadId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (mime, bytes) = state.runtime.uploads().bytes(&who, &path, None).await?;
    Ok(serve(&mime, bytes))
}

/// `GET /api/v1/sessions/{id}/uploads/{upload}`: an upload used in a session the
/// caller may read.
pub async fn session_upload(
    who: Caller,
    path: web::Path<(SessionId, UploadId)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (session, upload) = path.into_inner();
    use tandem_actors::cluster::Owner;
    let owner = state.cluster.as_ref().map(|c| (c, c.owner(&session)));
    let (mime, bytes) = match owner {
        // Bytes, not JSON: read from the owner in parts and served as here.
        Some((cluster, Owner::Remote { node, .. })) => {
            crate::cluster_uploads::fetch(cluster, &who, &node, &session, &upload)
                .await
                .map_err(|(code, message)| ApiError::new(code, message))?
        }
        Some((_, Owner::Unavailable { node })) => {
            return Err(ApiError::new(
                tandem_protocol::ErrorCode::NodeUnavailable,
                format!(
                    "node {node} is unavailable (its lease lapsed), so {session} cannot be reached"
                ),
            ))
        }
        _ => {
            state
                .runtime
                .uploads()
                .bytes(&who, &upload, Some(&session))
                .await?
        }
    };
    Ok(serve(&mime, bytes))
}

/// The bytes with their type; only images are shown inline, anything else is a
/// download, and nothing served here may run script on this origin.
pub(crate) fn serve(mime: &str, bytes: Vec<u8>) -> HttpResponse {
    let image = tandem_actors::uploads::sniff::IMAGE_TYPES.contains(&mime);
    let mut resp = HttpResponse::Ok();
    resp.content_type(mime)
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; sandbox",
        ))
        .insert_header((header::CACHE_CONTROL, "private, max-age=86400, immutable"));
    if !image {
        resp.insert_header((header::CONTENT_DISPOSITION, "attachment"));
    }
    resp.body(bytes)
}
