//! What a WebSocket request does: a request bound to the connection (subscriptions,
//! the session watch) is answered here; every other runs through
//! [`crate::operation::execute`], as REST's do, and its result or error becomes the
//! answering frame. Knows nothing of the socket; the connection (`ws.rs`) sends what
//! [`dispatch`] returns.

use futures_util::future::LocalBoxFuture;
use tandem_actors::{Principal, Runtime, RuntimeError};
use tandem_protocol::client::{ChatSubscribeParams, SessionsListParams};
use tandem_protocol::ids::SessionId;
use tandem_protocol::results::{ChatSubscribeResult, ChatUnsubscribeResult};
use tandem_protocol::{ClientFrame, ClientRequest, ErrorCode, ServerFrame};

use crate::error::ApiError;
use crate::operation::{execute, Context};

/// What a request is answered with.
pub enum Dispatched {
    /// Frames to send at once, in order.
    Now(Vec<ServerFrame>),
    /// Frames, as JSON text, to send when the request is done. Requests run
    /// concurrently; `requestId` ties each answer to its request.
    Later(LocalBoxFuture<'static, Vec<String>>),
}

/// Who is asking, on which connection.
pub struct Requester<'a> {
    /// What requests run against.
    pub ctx: &'a Context,
    /// The authenticated caller.
    pub principal: &'a Principal,
    /// The connection's gateway client id (subscriptions and watches are per client).
    pub client_id: u64,
}

/// An error frame; counts it in `protocol_errors`.
pub fn error_frame(
    runtime: &Runtime,
    code: ErrorCode,
    error: String,
    request_id: Option<String>,
    session_id: Option<SessionId>,
) -> ServerFrame {
    tandem_actors::metrics::Metrics::inc(&runtime.metrics().protocol_errors);
    ServerFrame::ProtocolError {
        code,
        error,
        session_id,
        request_id,
        paths: None,
    }
}

fn fail(
    runtime: &Runtime,
    e: ApiError,
    request_id: Option<String>,
    session_id: Option<SessionId>,
) -> ServerFrame {
    let mut frame = error_frame(runtime, e.code, e.message, request_id, session_id);
    if let ServerFrame::ProtocolError { paths, .. } = &mut frame {
        *paths = e.paths;
    }
    frame
}

/// Runs one request.
pub fn dispatch(who: Requester<'_>, frame: ClientFrame) -> Dispatched {
    let ClientFrame {
        request_id,
        request,
    } = frame;
    match request {
        ClientRequest::ChatSubscribe(params) => subscribe_when_known(who, request_id, params),
        ClientRequest::ChatUnsubscribe(params) => {
            let clients = who.ctx.runtime.clients();
            clients.unsubscribe(who.client_id, params.session_ids);
            let reply = request_id
                .is_some()
                .then(|| ServerFrame::reply_with(request_id, &ChatUnsubscribeResult {}));
            Dispatched::Now(reply.into_iter().collect())
        }
        ClientRequest::ClientVisible(p) => {
            // Another node's sessions are told to that node, which decides their
            // pushes (`cluster_visible`); this node's are kept here. Answered once
            // the nodes concerned were told.
            let (here, there) = match &who.ctx.cluster {
                Some(cluster) => crate::cluster_visible::split(cluster, p.session_ids.clone()),
                None => (p.session_ids.clone(), Default::default()),
            };
            let shown = who
                .ctx
                .runtime
                .push()
                .set_visible(who.client_id, who.principal, here);
            let result = tandem_protocol::push::ClientVisibleResult {
                session_ids: p.session_ids,
            };
            match (shown, who.ctx.cluster.clone()) {
                (Err(e), _) => {
                    Dispatched::Now(vec![fail(&who.ctx.runtime, e.into(), request_id, None)])
                }
                (Ok(_), None) => {
                    Dispatched::Now(vec![ServerFrame::reply_with(request_id, &result)])
                }
                (Ok(_), Some(cluster)) => {
                    let told = crate::cluster_visible::tell(
                        cluster,
                        who.ctx.told.clone(),
                        who.client_id,
                        who.principal.clone(),
                        there,
                    );
                    Dispatched::Later(Box::pin(async move {
                        told.await;
                        vec![ServerFrame::reply_with(request_id, &result).to_json()]
                    }))
                }
            }
        }
        ClientRequest::SessionsWatch(p) => {
            let page = SessionsListParams {
                limit: p.limit,
                cursor: p.cursor,
            };
            let frame = match crate::operation::list_page(who.ctx, who.principal, page) {
                Ok(page) => {
                    who.ctx.runtime.clients().watch(who.client_id);
                    ServerFrame::reply_with(request_id, &page)
                }
                Err(e) => fail(&who.ctx.runtime, e.into(), request_id, None),
            };
            Dispatched::Now(vec![frame])
        }
        request => {
            let (ctx, principal) = (who.ctx.clone(), who.principal.clone());
            Dispatched::Later(Box::pin(async move {
                let session_id = session_of(&request);
                vec![match execute(&ctx, &principal, request).await {
                    Ok(result) => reply_text(request_id.as_deref(), &result),
                    Err(e) => fail(&ctx.runtime, e, request_id, session_id).to_json(),
                }]
            }))
        }
    }
}

/// The session an error frame names: the one the request is scoped by.
fn session_of(request: &ClientRequest) -> Option<SessionId> {
    match request.scope() {
        tandem_protocol::operations::Scope::Session(id) => Some(id.clone()),
        _ => None,
    }
}

/// A `reply` frame around a result's JSON text (an object), spliced, not re-encoded:
/// `{"kind":"reply","requestId":...,"ok":true,` and the result's fields.
fn reply_text(request_id: Option<&str>, result: &str) -> String {
    let fields = result
        .trim()
        .strip_prefix('{')
        .map(|rest| rest.trim_start())
        .unwrap_or("}");
    let mut out = String::with_capacity(result.len() + 64);
    out.push_str("{\"kind\":\"reply\"");
    if let Some(id) = request_id {
        out.push_str(",\"requestId\":");
        out.push_str(&serde_json::Value::from(id).to_string());
    }
    out.push_str(",\"ok\":true");
    if !fields.starts_with('}') {
        out.push(',');
    }
    out.push_str(fields);
    out
}

/// `chat.subscribe`; in a cluster, a session neither this node nor its copy of the
/// directory knows is looked up in the directory first (another node may have just
/// created it), so the subscription waits for that.
fn subscribe_when_known(
    who: Requester<'_>,
    request_id: Option<String>,
    params: ChatSubscribeParams,
) -> Dispatched {
    let unknown: Vec<SessionId> = match &who.ctx.cluster {
        Some(c) => params
            .sessions
            .iter()
            .filter(|e| {
                matches!(
                    c.owner(&e.session_id),
                    tandem_actors::cluster::Owner::Unknown
                )
            })
            .map(|e| e.session_id.clone())
            .collect(),
        None => Vec::new(),
    };
    let (Some(cluster), false) = (who.ctx.cluster.clone(), unknown.is_empty()) else {
        return Dispatched::Now(subscribe(&who, request_id, params));
    };
    let (ctx, principal, client_id) = (who.ctx.clone(), who.principal.clone(), who.client_id);
    Dispatched::Later(Box::pin(async move {
        for id in &unknown {
            cluster.lookup(id).await;
        }
        let who = Requester {
            ctx: &ctx,
            principal: &principal,
            client_id,
        };
        subscribe(&who, request_id, params)
            .iter()
            .map(ServerFrame::to_json)
            .collect()
    }))
}

/// `chat.subscribe`: each session subscribed or refused on its own (a
/// `protocol_error` each), then the reply when a `requestId` was given.
fn subscribe(
    who: &Requester<'_>,
    request_id: Option<String>,
    params: ChatSubscribeParams,
) -> Vec<ServerFrame> {
    let rt = &who.ctx.runtime;
    let mut frames = Vec::new();
    let mut subscribed = Vec::new();
    for entry in params.sessions {
        let last_seq = entry.last_seq.unwrap_or(0);
        let subscribed_here: Result<(), RuntimeError> = match &who.ctx.cluster {
            Some(c) => crate::cluster_subscribe::subscribe(
                c,
                rt,
                who.principal,
                who.client_id,
                &entry.session_id,
                last_seq,
            ),
            None => {
                rt.clients()
                    .subscribe(who.principal, who.client_id, &entry.session_id, last_seq)
            }
        };
        match subscribed_here {
            Ok(()) => subscribed.push(entry.session_id),
            Err(e) => frames.push(fail(
                rt,
                e.into(),
                request_id.clone(),
                Some(entry.session_id),
            )),
        }
    }
    if request_id.is_some() {
        frames.push(ServerFrame::reply_with(
            request_id,
            &ChatSubscribeResult { subscribed },
        ));
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::reply_text;

    #[test]
    fn replies_splice_the_result() {
        assert_eq!(
            reply_text(Some("r\"1"), r#"{"pong":true}"#),
            r#"{"kind":"reply","requestId":"r\"1","ok":true,"pong":true}"#
        );
        assert_eq!(reply_text(None, "{}"), r#"{"kind":"reply","ok":true}"#);
        for text in [
            reply_text(Some("a"), r#"{"pong":true}"#),
            reply_text(None, "{ }"),
        ] {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["kind"], "reply");
        }
    }
}
