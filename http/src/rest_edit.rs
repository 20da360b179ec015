//! REST edits of a session, so a script needs no WebSocket for them:
//! `PATCH /api/v1/sessions/{id}` renames, configures and (admins) reassigns (the
//! fields of `session.configure`), `DELETE /api/v1/sessions/{id}` archives.

use actix_web::{web, HttpResponse};
use tandem_protocol::client::SessionConfigureParams;
use tandem_protocol::ids::SessionId;
use tandem_protocol::queries::SessionArchiveParams;
use tandem_protocol::rest::SessionPatch;

use crate::error::ApiError;
use crate::request::{run, run_session, Caller, Json};
use crate::state::AppState;

/// `PATCH /sessions/{id}` → 200 `SessionInfo`.
pub async fn patch_session(
    who: Caller,
    id: web::Path<SessionId>,
    Json(patch): Json<SessionPatch>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = SessionConfigureParams {
        session_id: id.into_inner(),
        model: patch.model,
        effort: patch.effort,
        vendor: patch.vendor,
        permission_mode: patch.permission_mode,
        title: patch.title,
        owner_id: patch.owner_id,
        notify: patch.notify,
        on_limit: patch.on_limit,
    };
    let session = run_session(&state, &who, params).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(session))
}

/// `DELETE /sessions/{id}` → 200 `{sessionId, archived: true}`.
pub async fn delete_session(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    Ok(HttpResponse::Ok().json(run(&state, &who, SessionArchiveParams { session_id }).await?))
}
