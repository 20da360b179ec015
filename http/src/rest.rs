//! REST handlers under `/api/v1`.

use actix_web::{web, HttpRequest, HttpResponse};
use tandem_actors::session::SendOutcome;
use tandem_protocol::client::{CreateSessionParams, ListParams};
use tandem_protocol::rest::{
    EditSendAccepted, EventsQuery, Health, InterruptAccepted, McpToken, MessageAccepted,
    MessageQueued, PairList, PostEditSend, PostMessage, QueueList, RunningList, ScheduleList,
    SessionList, TurnAccepted, UsageQuery, VendorList,
};
use tandem_protocol::ErrorCode;

use crate::error::ApiError;
use crate::request::{body, durably, query, Caller, Json, NoBody};
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
            .service(at("/sessions/{id}/interrupt").route(web::post().to(interrupt)))
            .service(at("/sessions/{id}/mcp-token").route(web::post().to(mcp_token)))
            .service(
                at("/sessions/{id}/schedules")
                    .route(web::get().to(schedules))
                    .route(web::post().to(crate::rest_control::create_schedule)),
            )
            .service(at("/sessions/{id}/queue").route(web::get().to(queue)))
            .service(at("/sessions/{id}/usage").route(web::get().to(usage)))
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
    methods.dedup();
    methods.join(", ")
}

async fn health() -> HttpResponse {
    HttpResponse::Ok().json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

async fn vendors(_: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(VendorList {
        vendors: state.runtime.vendors(),
    }))
}

async fn list_sessions(
    who: Caller,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query: ListParams = query(&req)?;
    // In a cluster the other nodes' sessions are listed too, in the same order.
    let others = state
        .cluster
        .as_ref()
        .map(|c| c.remote_sessions())
        .unwrap_or_default();
    let page = state.runtime.session_page_with(
        &who,
        query.limit.unwrap_or(ListParams::DEFAULT_LIMIT),
        query.cursor.as_deref(),
        &others,
    )?;
    Ok(HttpResponse::Ok().json(SessionList {
        sessions: page.sessions,
        next_cursor: page.next_cursor,
    }))
}

async fn running(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    // In a cluster the other nodes' running sessions are listed too.
    let others = state
        .cluster
        .as_ref()
        .map(|c| c.remote_sessions())
        .unwrap_or_default();
    Ok(HttpResponse::Ok().json(RunningList {
        sessions: state.runtime.running_with(&who, &others),
    }))
}

async fn create_session(
    who: Caller,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params: CreateSessionParams = body(payload, state.max_frame_bytes, true).await?;
    if let Some(node) = params.node.as_deref() {
        match state.cluster.as_ref() {
            // Created where it is pinned, as `session.create` naming that node is.
            Some(cluster) if node != cluster.node() => {
                let info =
                    crate::cluster_route::create_on(cluster, &state.runtime, &who, params).await?;
                return Ok(HttpResponse::Created().json(info));
            }
            Some(_) => {}
            None => return Err(no_such_node(node)),
        }
    }
    let info = state.runtime.create_session(&who, params).await?;
    Ok(HttpResponse::Created().json(info))
}

/// `node` names no node of this server's cluster (or there is no cluster): a
/// well-formed value this server cannot use (422).
fn no_such_node(node: &str) -> ApiError {
    ApiError::unusable(
        ErrorCode::InvalidArgument,
        format!("no node `{node:.64}` in the cluster"),
    )
}

async fn get_session(
    who: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.runtime.session(&who, &id)?))
}

async fn events(
    who: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query: EventsQuery = query(&req)?;
    if query.after > tandem_protocol::MAX_SEQ {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            format!(
                "`after` must be at most {} (positions are never wrapped)",
                tandem_protocol::MAX_SEQ
            ),
        ));
    }
    let max = tandem_actors::runtime::MAX_EVENTS_PAGE;
    if query.limit == 0 || query.limit > max {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            format!("limit must be 1 to {max}"),
        ));
    }
    let (frames, last_seq, has_more) = state
        .runtime
        .events(&who, &id, query.after, query.limit)
        .await?;
    // Frames are stored exactly as sent; splice them in rather than re-encoding.
    let size = frames.iter().map(|f| f.len() + 1).sum::<usize>() + 64;
    let mut out = String::with_capacity(size);
    out.push_str("{\"events\":[");
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(frame);
    }
    out.push_str(&format!(
        "],\"lastSeq\":{last_seq},\"hasMore\":{has_more}}}"
    ));
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(out))
}

async fn post_message(
    who: Caller,
    id: web::Path<String>,
    Json(msg): Json<PostMessage>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    // As a WebSocket frame: larger files go through `POST /uploads` and by id.
    let send = state
        .runtime
        .send(&who, &id, msg.content, msg.options, msg.queue);
    // 202 only once the turn's start (or the queue entry) is on disk.
    let outcome = durably(&state, send).await?;
    Ok(HttpResponse::Accepted().json(match outcome {
        SendOutcome::Started { turn_id } => MessageAccepted::Started(TurnAccepted { turn_id }),
        SendOutcome::Queued { position } => MessageAccepted::Queued(MessageQueued {
            queued: true,
            position,
        }),
    }))
}

async fn post_edit_send(
    who: Caller,
    id: web::Path<String>,
    Json(msg): Json<PostEditSend>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    if msg.anchor_seq == 0 || msg.anchor_seq > tandem_protocol::MAX_SEQ {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            format!(
                "`anchorSeq` must be between 1 and {}",
                tandem_protocol::MAX_SEQ
            ),
        ));
    }
    let edit = state
        .runtime
        .edit_send(&who, &id, msg.anchor_seq, msg.content, msg.options);
    // 202 only once the rewind and the new turn's start are on disk.
    let outcome = durably(&state, edit).await?;
    Ok(HttpResponse::Accepted().json(EditSendAccepted {
        turn_id: outcome.turn_id,
        superseded: outcome.superseded,
    }))
}

async fn interrupt(
    who: Caller,
    id: web::Path<String>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    state.runtime.abort(&who, &id).await?;
    Ok(HttpResponse::Accepted().json(InterruptAccepted {
        session_id: id.into_inner(),
    }))
}

async fn pairs(who: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(PairList {
        pairs: state.runtime.list_pairs(&who),
    }))
}

async fn mcp_token(
    who: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    _: NoBody,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let token = state.runtime.mcp_token(&who, &id)?;
    let info = req.connection_info();
    Ok(HttpResponse::Ok().json(McpToken {
        token,
        url: format!("{}://{}/mcp", info.scheme(), info.host()),
    }))
}

async fn schedules(
    who: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let schedules = state.runtime.schedules(&who, &id).await?;
    Ok(HttpResponse::Ok().json(ScheduleList { schedules }))
}

async fn queue(
    who: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let queued = state.runtime.queued(&who, &id)?;
    Ok(HttpResponse::Ok().json(QueueList {
        session_id: id.into_inner(),
        queued,
    }))
}

async fn usage(
    who: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query: UsageQuery = query(&req)?;
    Ok(HttpResponse::Ok().json(state.runtime.usage(&who, &id, query.since).await?))
}
