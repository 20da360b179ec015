//! REST handlers under `/api/v1`.

use actix_web::{web, HttpRequest, HttpResponse};
use tandem_protocol::client::{
    ChatAbortParams, ChatEditSendParams, ChatSendParams, SessionCreateParams, SessionsListParams,
};
use tandem_protocol::ids::SessionId;
use tandem_protocol::queries::{
    ChatQueueParams, PairsListParams, SessionEventsParams, SessionGetParams, SessionMcpTokenParams,
    SessionSchedulesParams, SessionUsageParams, SessionsRunningParams, VendorsListParams,
};
use tandem_protocol::rest::{
    EditSendAccepted, EventsQuery, Health, InterruptAccepted, McpToken, MessageAccepted,
    MessageQueued, PostEditSend, PostMessage, TurnAccepted, UsageQuery,
};
use tandem_protocol::results::ChatSendResult;
use tandem_protocol::review::{ChatReviewParams, ReviewBody};
use tandem_protocol::ErrorCode;

use crate::error::ApiError;
use crate::request::{body, query, run, run_session, run_text, Caller, Json, NoBody};
use crate::state::AppState;

/// Mounts every `/api/v1` route. Each path is a resource whose other methods are
/// answered 405 with a JSON body; unknown paths 404 with one.
pub fn routes(cfg: &mut web::ServiceConfig) {
    fn at(path: &str) -> actix_web::Resource {
        web::resource(path).default_service(web::to(method_not_allowed))
    }
    cfg.service(
        web::scope("/api/v1")
            .service(at("/health").route(web::get().to(health)))
            .service(at("/vendors").route(web::get().to(vendors)))
            .service(at("/fleet").route(web::get().to(fleet)))
            .service(
                at("/sessions")
                    .route(web::get().to(list_sessions))
                    .route(web::post().to(create_session)),
            )
            .service(at("/sessions/running").route(web::get().to(running)))
            .service(
                at("/sessions/{id}")
                    .route(web::get().to(get_session))
                    .route(web::patch().to(crate::rest_edit::patch_session))
                    .route(web::delete().to(crate::rest_edit::delete_session)),
            )
            .service(at("/sessions/{id}/events").route(web::get().to(events)))
            .service(at("/sessions/{id}/messages").route(web::post().to(post_message)))
            .service(at("/sessions/{id}/edit-send").route(web::post().to(post_edit_send)))
            .service(at("/sessions/{id}/review").route(web::post().to(post_review)))
            .service(at("/sessions/{id}/review-by").route(web::post().to(post_review_by)))
            .service(at("/sessions/{id}/seen").route(web::post().to(post_seen)))
            .service(at("/sessions/{id}/interrupt").route(web::post().to(interrupt)))
            .service(at("/sessions/{id}/mcp-token").route(web::post().to(mcp_token)))
            .service(
                at("/sessions/{id}/schedules")
                    .route(web::get().to(schedules))
                    .route(web::post().to(crate::rest_control::create_schedule)),
            )
            .service(at("/sessions/{id}/queue").route(web::get().to(queue)))
            .service(at("/sessions/{id}/usage").route(web::get().to(usage)))
            .service(at("/sessions/{id}/commands").route(web::get().to(commands)))
            .service(at("/external-sessions").route(web::get().to(external_sessions)))
            .service(at("/external-sessions/import").route(web::post().to(import_external)))
            .service(
                at("/mcp-servers")
                    .route(web::get().to(mcp_servers))
                    .route(web::post().to(add_mcp_server)),
            )
            .service(at("/mcp-servers/{name}").route(web::delete().to(remove_mcp_server)))
            .service(at("/mcp-servers/{name}/probe").route(web::post().to(probe_mcp_server)))
            .service(
                at("/sessions/{id}/uploads/{upload}")
                    .route(web::get().to(crate::uploads::session_upload)),
            )
            .service(at("/uploads").route(web::post().to(crate::uploads::upload)))
            .service(at("/uploads/{upload}").route(web::get().to(crate::uploads::own_upload)))
            .service(
                at("/pairs")
                    .route(web::get().to(pairs))
                    .route(web::post().to(crate::rest_control::create_pair)),
            )
            .configure(|cfg| crate::rest_control::routes(cfg, at))
            .configure(|cfg| crate::rest_workspace::routes(cfg, at))
            .configure(|cfg| crate::rest_push::routes(cfg, at))
            .configure(|cfg| crate::rest_loops::routes(cfg, at))
            .configure(|cfg| crate::rest_terminals::routes(cfg, at))
            .configure(|cfg| crate::rest_devices::routes(cfg, at))
            .default_service(web::to(not_found)),
    );
}

/// Any unknown path: 404 with a JSON body.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::new(
        ErrorCode::NotFound,
        format!("no route {} {}", req.method(), req.path()),
    ))
}

/// A known path with a method it does not take: 405 with a JSON body and `Allow`
/// (RFC 9110), which lists the path's methods as the OpenAPI route table has them.
pub async fn method_not_allowed(req: HttpRequest) -> HttpResponse {
    let error = ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{} is not allowed on {}", req.method(), req.path()),
    );
    let mut answer = actix_web::ResponseError::error_response(&error);
    let allow = allowed_methods(req.match_pattern().as_deref().unwrap_or_default());
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&allow) {
        answer
            .headers_mut()
            .insert(actix_web::http::header::ALLOW, value);
    }
    answer
}

/// The methods the route table gives the resource `pattern` (`/api/v1/sessions/{id}`;
/// parameter names may differ), as an `Allow` value.
fn allowed_methods(pattern: &str) -> String {
    // Path parameters are compared by position, not by name.
    fn shape(path: &str) -> Vec<&str> {
        path.split('/')
            .map(|seg| if seg.starts_with('{') { "{}" } else { seg })
            .collect()
    }
    let wanted = shape(pattern);
    let mut methods: Vec<String> = tandem_protocol::openapi::routes()
        .iter()
        .filter(|r| shape(&format!("/api/v1{}", r.path)) == wanted)
        .map(|r| r.method.to_ascii_uppercase())
        .collect();
    // In one order whatever the order of the table's rows.
    let rank = |m: &str| {
        ["GET", "POST", "PUT", "PATCH", "DELETE"]
            .iter()
            .position(|x| *x == m)
    };
    methods.sort_by_key(|m| rank(m));
    methods.dedup();
    methods.join(", ")
}

async fn health() -> HttpResponse {
    HttpResponse::Ok().json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

async fn vendors(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let list = run(&state, &who, VendorsListParams {}).await?;
    Ok(HttpResponse::Ok().json(list))
}

/// `GET /fleet` → 200 the vendor processes and waiting turns (as `fleet.get`).
async fn fleet(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let params = tandem_protocol::fleet::FleetGetParams {};
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

async fn list_sessions(
    who: Caller,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let page: SessionsListParams = query(&req)?;
    Ok(HttpResponse::Ok().json(run(&state, &who, page).await?))
}

/// `GET /external-sessions?vendor=&cwd=` → 200 `{sessions}` (as `external.list`).
async fn external_sessions(
    who: Caller,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params: tandem_protocol::external::ExternalListParams = query(&req)?;
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /external-sessions/import {vendor, vendorSessionId}` → 201 `SessionInfo` (as
/// `external.import`).
async fn import_external(
    who: Caller,
    Json(params): Json<tandem_protocol::external::ExternalImportParams>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(run(&state, &who, params).await?))
}

/// `GET /mcp-servers` → 200 `{servers}` (as `mcp-servers.list`).
async fn mcp_servers(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let params = tandem_protocol::mcp_servers::McpServersListParams {};
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /mcp-servers` → 201 the server as listed (as `mcp-servers.add`).
async fn add_mcp_server(
    who: Caller,
    Json(entry): Json<tandem_protocol::mcp_servers::McpServerEntry>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(run(&state, &who, entry).await?))
}

/// `DELETE /mcp-servers/{name}` → 200 `{name}` (as `mcp-servers.remove`).
async fn remove_mcp_server(
    who: Caller,
    name: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = tandem_protocol::mcp_servers::McpServerRemoveParams {
        name: name.into_inner(),
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /mcp-servers/{name}/probe` → 200 (as `mcp-servers.probe`).
async fn probe_mcp_server(
    who: Caller,
    name: web::Path<String>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = tandem_protocol::mcp_servers::McpServerProbeParams {
        name: name.into_inner(),
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

async fn running(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let list = run(&state, &who, SessionsRunningParams {}).await?;
    Ok(HttpResponse::Ok().json(list))
}

/// `POST /sessions` → 201 `SessionInfo`: here, or on the cluster node it names.
async fn create_session(
    who: Caller,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params: SessionCreateParams = body(payload, state.max_frame_bytes, true).await?;
    let session = run_session(&state, &who, params).await?;
    Ok(HttpResponse::Created()
        .content_type("application/json")
        .body(session))
}

async fn get_session(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    let session = run_session(&state, &who, SessionGetParams { session_id }).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(session))
}

async fn events(
    who: Caller,
    req: HttpRequest,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: EventsQuery = query(&req)?;
    let params = SessionEventsParams {
        session_id: id.into_inner(),
        after: q.after,
        limit: q.limit,
    };
    // The page as the operation spliced it from the stored frames.
    let page = run_text(&state, &who, params).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(page))
}

/// `POST /sessions/{id}/messages` → 202 once the turn's start (or the queue entry)
/// is on disk.
async fn post_message(
    who: Caller,
    id: web::Path<SessionId>,
    Json(msg): Json<PostMessage>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    // As a WebSocket frame: larger files go through `POST /uploads` and by id.
    let params = ChatSendParams {
        session_id: id.into_inner(),
        content: msg.content,
        options: msg.options,
        queue: msg.queue,
    };
    Ok(
        HttpResponse::Accepted().json(match run(&state, &who, params).await? {
            ChatSendResult::Started { turn_id, .. } => {
                MessageAccepted::Started(TurnAccepted { turn_id })
            }
            ChatSendResult::Queued { position, .. } => MessageAccepted::Queued(MessageQueued {
                queued: true,
                position,
            }),
        }),
    )
}

/// `POST /sessions/{id}/edit-send` → 202 once the rewind and the new turn's start
/// are on disk.
async fn post_edit_send(
    who: Caller,
    id: web::Path<SessionId>,
    Json(msg): Json<PostEditSend>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = ChatEditSendParams {
        session_id: id.into_inner(),
        anchor_seq: msg.anchor_seq,
        content: msg.content,
        options: msg.options,
        restore_files: msg.restore_files,
    };
    let done = run(&state, &who, params).await?;
    Ok(HttpResponse::Accepted().json(EditSendAccepted {
        turn_id: done.turn_id,
        superseded: done.superseded,
        restored: done.restored,
    }))
}

/// `POST /sessions/{id}/review` → 202 `{turnId}` once the review's turn started and
/// is on disk.
async fn post_review(
    who: Caller,
    id: web::Path<SessionId>,
    Json(body): Json<ReviewBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = ChatReviewParams {
        session_id: id.into_inner(),
        comments: body.comments,
        summary: body.summary,
        to: body.to,
    };
    let done = run(&state, &who, params).await?;
    Ok(HttpResponse::Accepted().json(TurnAccepted {
        turn_id: done.turn_id,
    }))
}

/// `POST /sessions/{id}/review-by` (as `session.review-by`).
async fn post_review_by(
    who: Caller,
    id: web::Path<SessionId>,
    Json(body): Json<tandem_protocol::review::ReviewByBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = tandem_protocol::review::SessionReviewByParams {
        session_id: id.into_inner(),
        vendor: body.vendor,
        model: body.model,
        instructions: body.instructions,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

/// `POST /sessions/{id}/seen` (as `client.seen`).
async fn post_seen(
    who: Caller,
    id: web::Path<SessionId>,
    Json(body): Json<tandem_protocol::session::SeenBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = tandem_protocol::session::ClientSeenParams {
        session_id: id.into_inner(),
        seq: body.seq,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

async fn interrupt(
    who: Caller,
    id: web::Path<SessionId>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    let done = run(&state, &who, ChatAbortParams { session_id }).await?;
    Ok(HttpResponse::Accepted().json(InterruptAccepted {
        session_id: done.session_id,
    }))
}

async fn pairs(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(run(&state, &who, PairsListParams {}).await?))
}

async fn mcp_token(
    who: Caller,
    req: HttpRequest,
    id: web::Path<SessionId>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    let token = run(
        &state,
        &who,
        SessionMcpTokenParams {
            session_id: session_id.clone(),
        },
    )
    .await?;
    let remote = state.cluster.as_ref().is_some_and(|c| {
        matches!(
            c.owner(&session_id),
            tandem_actors::cluster::Owner::Remote { .. }
        )
    });
    // The endpoint as this caller reaches it; another node's session's token is known
    // only there, so its node's own endpoint.
    let info = req.connection_info();
    let here = format!("{}://{}/mcp", info.scheme(), info.host());
    Ok(HttpResponse::Ok().json(McpToken {
        token: token.token,
        url: token.url.filter(|_| remote).unwrap_or(here),
    }))
}

async fn schedules(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    let list = run(&state, &who, SessionSchedulesParams { session_id }).await?;
    Ok(HttpResponse::Ok().json(list))
}

async fn queue(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let session_id = id.into_inner();
    Ok(HttpResponse::Ok().json(run(&state, &who, ChatQueueParams { session_id }).await?))
}

/// `GET /sessions/{id}/commands` → 200 `{sessionId, commands}` (as `session.commands`).
async fn commands(
    who: Caller,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = tandem_protocol::session::SessionCommandsParams {
        session_id: id.into_inner(),
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?))
}

async fn usage(
    who: Caller,
    req: HttpRequest,
    id: web::Path<SessionId>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: UsageQuery = query(&req)?;
    let params = SessionUsageParams {
        session_id: id.into_inner(),
        since: q.since,
    };
    Ok(HttpResponse::Ok().json(run(&state, &who, params).await?.usage))
}
