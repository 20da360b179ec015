//! Test builds only (feature `failpoints`): `POST /debug/failpoints {name, actions}`
//! sets one of the runtime's named failpoints (the `fail` crate's action syntax, e.g.
//! `return(0)`, `panic`, `off`), so end-to-end tests can break the store or crash the
//! server at a chosen step. Admin only.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use tandem_protocol::ErrorCode;

use crate::auth::caller;
use crate::error::ApiError;
use crate::state::AppState;

/// Body of `POST /debug/failpoints`.
#[derive(Debug, Deserialize)]
struct FailpointParams {
    /// The failpoint's name, as the code declares it (e.g. a crash point's).
    name: String,
    /// What it does from now on (`off` removes it).
    actions: String,
}

/// Answer of `POST /debug/failpoints`: the failpoint that was set.
#[derive(Debug, Serialize)]
struct FailpointSet<'a> {
    /// The failpoint's name, echoed so the caller sees which one was set.
    name: &'a str,
}

/// Registers the route.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/debug/failpoints", web::post().to(set));
}

async fn set(
    req: HttpRequest,
    body: web::Json<FailpointParams>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let who = caller(&req, &state.runtime, state.auth)?;
    if !who.admin {
        return Err(ApiError::new(ErrorCode::AccessDenied, "admins only"));
    }
    let result = if body.actions == "off" {
        fail::remove(&body.name);
        Ok(())
    } else {
        fail::cfg(&body.name, &body.actions)
    };
    match result {
        Ok(()) => {
            tracing::warn!(name = %body.name, actions = %body.actions, "failpoint set");
            Ok(HttpResponse::Ok().json(FailpointSet { name: &body.name }))
        }
        Err(e) => Err(ApiError::new(ErrorCode::InvalidArgument, e)),
    }
}
