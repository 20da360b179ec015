//! REST for a session's terminals (as `terminal.open`, `terminal.list` and
//! `terminal.close`); their bytes travel over `/ws/terminals/{terminalId}`
//! (`crate::ws_terminal`).

use actix_web::{web, HttpResponse};
use tandem_protocol::ids::SessionId;
use tandem_protocol::terminals::{
    TerminalBody, TerminalCloseParams, TerminalListParams, TerminalOpenParams,
};

use crate::error::ApiError;
use crate::request::{run, Caller, Json};
use crate::state::AppState;

/// Mounts the routes inside the `/api/v1` scope of `rest.rs`, each made by its `at`.
pub fn routes(cfg: &mut web::ServiceConfig, at: fn(&str) -> actix_web::Resource) {
    cfg.service(
        at("/sessions/{id}/terminals")
            .route(web::post().to(open))
            .route(web::get().to(list)),
    )
    .service(at("/sessions/{id}/terminals/{terminalId}").route(web::delete().to(close)));
}

/// `POST /sessions/{id}/terminals` → 201, the terminal.
async fn open(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<TerminalBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = TerminalOpenParams {
        session_id: id.into_inner(),
        cols: b.cols,
        rows: b.rows,
    };
    Ok(HttpResponse::Created().json(run(&state, &who, params).await?))
}

/// `GET /sessions/{id}/terminals` → 200 `{sessionId, terminals}`.
async fn list(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    Ok(HttpResponse::Ok().json(run(&state, &who, TerminalListParams { session_id }).await?))
}

/// `DELETE /sessions/{id}/terminals/{terminalId}` → 200 `{sessionId, terminalId}`.
async fn close(
    who: Caller,
    path: web::Path<(SessionId, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (session_id, terminal_id) = path.into_inner();
    let params = TerminalCloseParams {
        session_id,
        terminal_id,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}
