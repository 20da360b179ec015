//! Test builds only (feature `test-hooks`): the control of the scripted vendor's
//! `/hold NAME` step (see `tandem_actors::holds`). Admin only.
//!
//! - `GET /debug/holds` → `{"holds": [{"name", "waiting"}]}`: the holds scripts wait at
//!   right now, so a test can wait until a turn *is* at a hold;
//! - `POST /debug/holds/{name}/release` (body `{}`) → `{"name", "released"}`: opens the
//!   hold for the rest of the server's life; `released` is how many scripts were
//!   waiting there. A release before any script reached the hold makes the step pass
//!   at once when it is reached.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use tandem_actors::holds;
use tandem_protocol::ErrorCode;

use crate::auth::caller;
use crate::error::ApiError;
use crate::state::AppState;

/// One hold scripts wait at, in `GET /debug/holds`.
#[derive(Debug, Serialize)]
struct Held {
    /// The hold's name, as the script's `/hold NAME` gives it.
    name: String,
    /// How many scripts wait there now.
    waiting: usize,
}

/// Answer of `GET /debug/holds`.
#[derive(Debug, Serialize)]
struct HeldList {
    /// The holds with at least one script waiting, by name.
    holds: Vec<Held>,
}

/// Answer of `POST /debug/holds/{name}/release`.
#[derive(Debug, Serialize)]
struct Released<'a> {
    /// The hold released, echoed.
    name: &'a str,
    /// How many scripts were waiting there and now go on.
    released: usize,
}

/// Registers the routes.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/debug/holds", web::get().to(list))
        .route("/debug/holds/{name}/release", web::post().to(release));
}

/// Refuses callers that are not admins: a hold stops other people's turns.
fn admin_only(req: &HttpRequest, state: &AppState) -> Result<(), ApiError> {
    let who = caller(req, &state.runtime, state.auth)?;
    if who.admin {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::AccessDenied, "admins only"))
    }
}

async fn list(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    admin_only(&req, &state)?;
    let holds = holds::reached()
        .into_iter()
        .map(|(name, waiting)| Held { name, waiting })
        .collect();
    Ok(HttpResponse::Ok().json(HeldList { holds }))
}

async fn release(
    req: HttpRequest,
    name: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    admin_only(&req, &state)?;
    if !holds::valid_name(&name) {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            "a hold's name is 1 to 64 of A-Z a-z 0-9 _ -",
        ));
    }
    let released = holds::release(&name);
    tracing::info!(name = %name, released, "hold released");
    Ok(HttpResponse::Ok().json(Released {
        name: &name,
        released,
    }))
}
