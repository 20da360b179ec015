//! REST routes for what was WebSocket-only, so a script needs no socket for them:
//! handoff, fork, schedules (create, cancel; the list is in `rest.rs`), stopping a background
//! task, answering a tool approval, creating and closing a pair. Each calls the same
//! runtime operation as its WebSocket request, so it is refused with the same code,
//! and answers only once its writes are on disk (`crate::operation`).

use actix_web::{web, HttpResponse};
use tandem_protocol::client::{
    ChatPermissionResponseParams, ChatStopTaskParams, PairCloseParams, PairCreateParams,
    SessionForkParams, SessionHandoffParams, SessionScheduleCancelParams, SessionScheduleParams,
};
use tandem_protocol::ids::{PairId, RequestId, SessionId};
use tandem_protocol::rest_control::{ForkBody, HandoffBody, PermissionAnswer, ScheduleBody};

use crate::error::ApiError;
use crate::request::{run, Caller, Json, NoBody};
use crate::state::AppState;

/// Mounts the routes inside the `/api/v1` scope of `rest.rs`, each made by its `at`
/// (a resource whose other methods are answered 405), which is passed in so this
/// module does not import `rest.rs` back.
pub fn routes(cfg: &mut web::ServiceConfig, at: fn(&str) -> actix_web::Resource) {
    cfg.service(at("/openapi.json").route(web::get().to(openapi)))
        .service(at("/sessions/{id}/handoff").route(web::post().to(handoff)))
        .service(at("/sessions/{id}/fork").route(web::post().to(fork)))
        .service(
            at("/sessions/{id}/schedules/{schedule_id}").route(web::delete().to(cancel_schedule)),
        )
        .service(at("/sessions/{id}/tasks/{task_id}/stop").route(web::post().to(stop_task)))
        .service(
            at("/sessions/{id}/permissions/{request_id}").route(web::post().to(answer_permission)),
        )
        .service(
            at("/sessions/{id}/questions/{question_id}/answer")
                .route(web::post().to(answer_question)),
        )
        .service(at("/pairs/{pair_id}").route(web::delete().to(close_pair)));
}

/// `GET /openapi.json`: the OpenAPI 3.1 description (no token needed), generated once.
async fn openapi() -> HttpResponse {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let text = DOCUMENT.get_or_init(|| tandem_protocol::openapi::document().to_string());
    HttpResponse::Ok()
        .content_type("application/json")
        .body(text.clone())
}

/// `POST /sessions/{id}/handoff` → 201 `{sourceSessionId, targetSessionId, targetVendor}`.
async fn handoff(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<HandoffBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = SessionHandoffParams {
        session_id: id.into_inner(),
        target_vendor: b.target_vendor,
        model: b.model,
        effort: b.effort,
    };
    Ok(HttpResponse::Created().json(run(&state, &who, params).await?))
}

/// `POST /sessions/{id}/fork` → 201 `{session, conversation}`.
async fn fork(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<ForkBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = SessionForkParams {
        session_id: id.into_inner(),
        anchor_seq: b.anchor_seq,
        title: b.title,
        vendor: b.vendor,
        workspace: b.workspace,
    };
    Ok(HttpResponse::Created().json(run(&state, &who, params).await?))
}

/// `POST /sessions/{id}/schedules` → 201 `{scheduleId, at, status}`.
pub async fn create_schedule(
    who: Caller,
    id: web::Path<SessionId>,
    Json(b): Json<ScheduleBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = SessionScheduleParams {
        session_id: id.into_inner(),
        content: b.content,
        at: b.at,
        rrule: b.rrule,
        time_zone: b.time_zone,
        if_busy: b.if_busy,
    };
    Ok(HttpResponse::Created().json(run(&state, &who, params).await?))
}

/// `DELETE /sessions/{id}/schedules/{scheduleId}` → 200 `{scheduleId, status}`.
async fn cancel_schedule(
    who: Caller,
    path: web::Path<(SessionId, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (session_id, schedule_id) = path.into_inner();
    let params = SessionScheduleCancelParams {
        session_id,
        schedule_id,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /sessions/{id}/tasks/{taskId}/stop` → 202 `{sessionId, taskId}`.
async fn stop_task(
    who: Caller,
    path: web::Path<(SessionId, String)>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (session_id, task_id) = path.into_inner();
    let params = ChatStopTaskParams {
        session_id,
        task_id: Some(task_id),
    };
    Ok(HttpResponse::Accepted().json(run(&state, &who, params).await?))
}

/// `POST /sessions/{id}/permissions/{requestId}` → 200 `{permissionId}`.
async fn answer_permission(
    who: Caller,
    path: web::Path<(SessionId, RequestId)>,
    Json(b): Json<PermissionAnswer>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (session_id, request_id) = path.into_inner();
    let params = ChatPermissionResponseParams {
        request_id,
        session_id: Some(session_id),
        allow: b.allow,
        updated_input: b.updated_input,
        message: b.message,
        remember: b.remember,
        permission_mode: b.permission_mode,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /sessions/{id}/questions/{questionId}/answer` → 200 `{sessionId, questionId}`.
async fn answer_question(
    who: Caller,
    path: web::Path<(SessionId, String)>,
    Json(b): Json<tandem_protocol::question::AnswerBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (session_id, question_id) = path.into_inner();
    let params = tandem_protocol::question::QuestionAnswerParams {
        session_id,
        question_id,
        answer: b.answer,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /pairs` → 201 `{pair}`.
pub async fn create_pair(
    who: Caller,
    Json(p): Json<PairCreateParams>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(run(&state, &who, p).await?))
}

/// `DELETE /pairs/{pairId}` → 200 `{pairId, interrupted}`.
async fn close_pair(
    who: Caller,
    pair_id: web::Path<PairId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let pair_id = pair_id.into_inner();
    Ok(HttpResponse::Ok().json(run(&state, &who, PairCloseParams { pair_id }).await?))
}
