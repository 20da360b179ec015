//! REST for paired devices: a pairing code for the caller (as `device.pair-code`),
//! the caller's devices (`devices.list`, `device.revoke`), and the exchange of a code
//! for a device token, the one route here that needs no token (the phone has none
//! yet; the code is its proof).

use actix_web::{web, HttpResponse};
use tandem_protocol::devices::{
    DevicePairCodeParams, DeviceRevokeParams, DevicesListParams, PairDeviceBody, PairDeviceResult,
};
use tandem_protocol::operations::Validate;

use crate::error::ApiError;
use crate::request::{run, Caller, Json, NoBody};
use crate::state::AppState;

/// Mounts the routes inside the `/api/v1` scope of `rest.rs`, each made by its `at`.
pub fn routes(cfg: &mut web::ServiceConfig, at: fn(&str) -> actix_web::Resource) {
    cfg.service(at("/devices").route(web::get().to(list)))
        .service(at("/devices/pair-code").route(web::post().to(pair_code)))
        .service(at("/devices/pair").route(web::post().to(pair)))
        .service(at("/devices/{id}").route(web::delete().to(revoke)));
}

/// `POST /devices/pair-code` → 201 `{code, url, expiresAt, reachable, qr}`.
async fn pair_code(
    who: Caller,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(run(&state, &who, DevicePairCodeParams {}).await?))
}

/// `GET /devices` → 200 `{devices}`.
async fn list(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(run(&state, &who, DevicesListParams {}).await?))
}

/// `DELETE /devices/{id}` → 200 `{deviceId, revoked}`.
async fn revoke(
    who: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let device_id = id.into_inner();
    Ok(HttpResponse::Ok().json(run(&state, &who, DeviceRevokeParams { device_id }).await?))
}

/// `POST /devices/pair {code, label?}` (no token) → 201 `{token, userId, device}`; a
/// code that is unknown, used or expired is 401 saying which.
async fn pair(
    Json(body): Json<PairDeviceBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    body.validate()
        .map_err(|r| ApiError::new(r.code, r.message))?;
    let (user_id, device, token) = state
        .runtime
        .auth()
        .pair_device(&body.code, body.label)
        .await
        .map_err(ApiError::from)?;
    Ok(HttpResponse::Created().json(PairDeviceResult {
        token,
        user_id,
        device,
    }))
}
