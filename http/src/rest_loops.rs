//! REST for loops (as `loop.start` and `loop.stop`).

use actix_web::{web, HttpResponse};
use tandem_protocol::ids::SessionId;
use tandem_protocol::loops::{LoopBody, LoopStartParams, LoopStopParams};

use crate::error::ApiError;
use crate::request::{run, Caller, Json};
use crate::state::AppState;

/// Mounts the routes inside the `/api/v1` scope of `rest.rs`, each made by its `at`.
pub fn routes(cfg: &mut web::ServiceConfig, at: fn(&str) -> actix_web::Resource) {
    cfg.service(
        at("/sessions/{id}/loop")
            .route(web::post().to(start))
            .route(web::delete().to(stop)),
    );
}

/// `POST /sessions/{id}/loop` → 201 `{sessionId, loop}`.
async fn start(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<LoopBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = LoopStartParams {
        session_id: id.into_inner(),
        goal: b.goal,
        check: b.check,
        max_iterations: b.max_iterations,
        cooldown_seconds: b.cooldown_seconds,
    };
    Ok(HttpResponse::Created().json(run(&state, &who, params).await?))
}

/// `DELETE /sessions/{id}/loop` → 200 `{sessionId, loopId, iterations}`.
async fn stop(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    Ok(HttpResponse::Ok().json(run(&state, &who, LoopStopParams { session_id }).await?))
}
