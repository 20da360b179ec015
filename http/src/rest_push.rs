//! REST for Web Push: the server's public key and the caller's devices (as
//! `push.key`, `push.subscribe`, `push.subscriptions`, `push.unsubscribe`).

use actix_web::{web, HttpResponse};
use tandem_protocol::push::{
    PushKeyParams, PushSubscribeParams, PushSubscriptionsParams, PushUnsubscribeParams,
};

use crate::error::ApiError;
use crate::request::{run, Caller, Json};
use crate::state::AppState;

/// Mounts the routes inside the `/api/v1` scope of `rest.rs`, each made by its `at`.
pub fn routes(cfg: &mut web::ServiceConfig, at: fn(&str) -> actix_web::Resource) {
    cfg.service(at("/push/key").route(web::get().to(key)))
        .service(
            at("/push/subscriptions")
                .route(web::get().to(list))
                .route(web::post().to(subscribe)),
        )
        .service(at("/push/subscriptions/{id}").route(web::delete().to(unsubscribe)));
}

/// `GET /push/key` → 200 `{publicKey}`.
async fn key(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(run(&state, &who, PushKeyParams {}).await?))
}

/// `POST /push/subscriptions` → 201 `{subscription}`.
async fn subscribe(
    who: Caller,
    Json(p): Json<PushSubscribeParams>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(run(&state, &who, p).await?))
}

/// `GET /push/subscriptions` → 200 `{subscriptions}`.
async fn list(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(run(&state, &who, PushSubscriptionsParams {}).await?))
}

/// `DELETE /push/subscriptions/{id}` → 200 `{subscriptionId, removed}`.
async fn unsubscribe(
    who: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let subscription_id = id.into_inner();
    Ok(
        HttpResponse::Ok()
            .json(run(&state, &who, PushUnsubscribeParams { subscription_id }).await?),
    )
}
