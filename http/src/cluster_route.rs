//! Where a WebSocket request runs in a cluster (`--nats`): here, or on the node that
//! owns the session it names, as NATS request/reply (see [`crate::cluster_rpc`] for
//! the owner's side); and `chat.subscribe` to another node's session.

use std::time::Duration;

use bytestring::ByteString;
use futures_util::future::LocalBoxFuture;
use tandem_actors::cluster::{Cluster, Owner};
use tandem_actors::{Principal, Runtime, RuntimeError};
use tandem_protocol::{ClientRequest, ErrorCode, ServerFrame};

use crate::cluster_wire::{Call, Forward};

/// A request that does not run here.
pub enum Routed {
    /// The owner's answer, serialized, to pass on unchanged.
    Forwarded(LocalBoxFuture<'static, String>),
    /// Refused at once (the owner is unavailable).
    Refused(ServerFrame),
}

/// How long a forwarded request may take; `tool.call` may wait for a Worker's turn
/// (`timeoutSeconds` up to 900).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const TOOL_TIMEOUT: Duration = Duration::from_secs(960);

/// The session (or node, or pair) a request is for, when it names one.
enum Target<'a> {
    Session(&'a str),
    Node(&'a str),
    /// `pair.close`: the pair runs on its Driver's node.
    Pair(&'a str),
    /// `chat.permission-response` without `sessionId`: whichever node has the request
    /// pending.
    Permission(&'a str),
}

fn target(request: &ClientRequest) -> Option<Target<'_>> {
    use ClientRequest as R;
    Some(match request {
        R::ChatPermissionResponse(p) if p.session_id.as_deref().is_none_or(str::is_empty) => {
            Target::Permission(&p.request_id)
        }
        R::PairClose(p) => Target::Pair(&p.pair_id),
        R::SessionCreate(p) => Target::Node(p.node.as_deref()?),
        R::ChatSend(p) => Target::Session(&p.session_id),
        R::ChatEditSend(p) => Target::Session(&p.session_id),
        R::ChatAbort(p) => Target::Session(&p.session_id),
        R::ChatStopTask(p) => Target::Session(&p.session_id),
        R::ChatPermissionResponse(p) => Target::Session(p.session_id.as_deref()?),
        R::SessionConfigure(p) => Target::Session(&p.session_id),
        R::ToolCall(p) => Target::Session(&p.session_id),
        R::ProposalRespond(p) => Target::Session(&p.session_id),
        R::PairCreate(p) => Target::Session(&p.driver_id),
        R::SessionHandoff(p) => Target::Session(&p.session_id),
        R::SessionSchedule(p) => Target::Session(&p.session_id),
        R::SessionScheduleCancel(p) => Target::Session(&p.session_id),
        R::SessionMerge(p) => Target::Session(&p.session_id),
        R::SessionDiscard(p) => Target::Session(&p.session_id),
        R::ChatQueueCancel(p) => Target::Session(&p.session_id),
        R::ChatQueueEdit(p) => Target::Session(&p.session_id),
        // Run here: subscriptions follow a remote session from this node's copy
        // (`subscribe`) and lists merge every node's sessions. No catch-all arm: a
        // new request must say where it runs.
        R::ChatSubscribe(_)
        | R::ChatUnsubscribe(_)
        | R::SessionsWatch(_)
        | R::SessionsList(_)
        | R::Ping => return None,
    })
}

/// Routes a request to the node that owns its session; `None` when it runs here.
pub fn route(
    cluster: &Cluster,
    runtime: &Runtime,
    who: &Principal,
    request_id: &Option<String>,
    request: &ClientRequest,
    raw: &str,
) -> Option<Routed> {
    let (node, session_id) = match target(request)? {
        Target::Pair(id) if runtime.pair_addr(id).is_some() => return None,
        Target::Pair(id) => match cluster.pair_owner(id) {
            Owner::Local | Owner::Unknown => return None,
            Owner::Remote { node, .. } => (node, None),
            Owner::Unavailable { node } => {
                return Some(unavailable(request_id, None, &node, id));
            }
        },
        Target::Permission(id) if runtime.permission_holder(id).is_some() => return None,
        Target::Permission(id) => {
            return Some(ask_every_node(cluster, who, request_id, id, raw));
        }
        Target::Node(node) if node == cluster.node() => return None,
        Target::Node(node) if cluster.alive(node) => (node.to_string(), None),
        Target::Node(node) if cluster.known(node) => {
            return Some(unavailable(request_id, None, node, "its sessions"))
        }
        Target::Node(_) => return None,
        Target::Session(id) => match cluster.owner(id) {
            Owner::Local | Owner::Unknown => return None,
            Owner::Remote { node, .. } => (node, Some(id.to_string())),
            Owner::Unavailable { node } => {
                return Some(unavailable(request_id, Some(id), &node, id));
            }
        },
    };
    let timeout = match request {
        ClientRequest::ToolCall(_) => TOOL_TIMEOUT,
        _ => REQUEST_TIMEOUT,
    };
    let forward = Forward {
        user_id: who.user_id.clone(),
        admin: who.admin,
        call: Call::Frame {
            frame: raw.to_string(),
        },
    };
    let cluster = cluster.clone();
    let (runtime, who) = (runtime.clone(), who.clone());
    let request_id = request_id.clone();
    Some(Routed::Forwarded(Box::pin(async move {
        // Uploads the request names live here; the owner resolves the message.
        let raw = match &forward.call {
            Call::Frame { frame } => frame.as_str(),
            _ => "",
        };
        if let Err((code, error)) =
            crate::cluster_uploads::hand_over(&cluster, &runtime, &who, &node, raw).await
        {
            return ServerFrame::ProtocolError {
                code,
                error,
                session_id,
                request_id,
                paths: None,
            }
            .to_json();
        }
        let payload = match serde_json::to_vec(&forward) {
            Ok(p) => p,
            Err(e) => return internal(request_id, session_id, e.to_string()),
        };
        match cluster.request(&node, payload, timeout).await {
            Ok(reply) => match String::from_utf8(reply) {
                Ok(json) => json,
                Err(e) => internal(request_id, session_id, e.to_string()),
            },
            Err(e) => {
                tracing::warn!(%node, error = %e, "forwarded request failed");
                let what = session_id.clone().unwrap_or_else(|| "its sessions".into());
                ServerFrame::ProtocolError {
                    code: ErrorCode::NodeUnavailable,
                    error: format!("node {node} did not answer for {what}: {e}"),
                    session_id,
                    request_id,
                    paths: None,
                }
                .to_json()
            }
        }
    })))
}

/// A `chat.permission-response` without `sessionId` whose request is pending on no
/// session here: each other available node is asked in turn (by name order); the
/// first answer that is not `NO_SUCH_PERMISSION` is the answer. When every node says
/// so (or none answers), the caller gets `NO_SUCH_PERMISSION`, as on a single node.
fn ask_every_node(
    cluster: &Cluster,
    who: &Principal,
    request_id: &Option<String>,
    permission_id: &str,
    raw: &str,
) -> Routed {
    let forward = Forward {
        user_id: who.user_id.clone(),
        admin: who.admin,
        call: Call::Frame {
            frame: raw.to_string(),
        },
    };
    let (cluster, request_id) = (cluster.clone(), request_id.clone());
    let missing = RuntimeError::NoSuchPermission(permission_id.to_string());
    Routed::Forwarded(Box::pin(async move {
        let payload = match serde_json::to_vec(&forward) {
            Ok(p) => p,
            Err(e) => return internal(request_id, None, e.to_string()),
        };
        for node in cluster.other_nodes() {
            let reply = match cluster
                .request(&node, payload.clone(), REQUEST_TIMEOUT)
                .await
            {
                Ok(reply) => reply,
                Err(e) => {
                    tracing::warn!(%node, error = %e, "a node did not answer a permission response");
                    continue;
                }
            };
            let not_there = serde_json::from_slice::<serde_json::Value>(&reply)
                .is_ok_and(|v| v["code"] == "NO_SUCH_PERMISSION");
            if !not_there {
                match String::from_utf8(reply) {
                    Ok(json) => return json,
                    Err(e) => return internal(request_id, None, e.to_string()),
                }
            }
        }
        ServerFrame::ProtocolError {
            code: missing.code(),
            error: missing.to_string(),
            session_id: None,
            request_id,
            paths: None,
        }
        .to_json()
    }))
}

/// `POST /api/v1/sessions` naming another node: the `session.create` a WebSocket
/// client would send, forwarded the same way, its answer turned into REST's.
pub async fn create_on(
    cluster: &Cluster,
    runtime: &Runtime,
    who: &Principal,
    params: tandem_protocol::client::CreateSessionParams,
) -> Result<tandem_protocol::SessionInfo, crate::error::ApiError> {
    use crate::error::ApiError;
    let mut raw = serde_json::to_value(&params)
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    raw["type"] = "session.create".into();
    let raw = raw.to_string();
    let node = params.node.clone().unwrap_or_default();
    let request = ClientRequest::SessionCreate(params);
    let answer = match route(cluster, runtime, who, &None, &request, &raw) {
        Some(Routed::Forwarded(answer)) => answer.await,
        Some(Routed::Refused(frame)) => frame.to_json(),
        None => {
            return Err(ApiError::unusable(
                ErrorCode::InvalidArgument,
                format!("no node `{node:.64}` in the cluster"),
            ));
        }
    };
    match serde_json::from_str::<ServerFrame>(&answer) {
        Ok(ServerFrame::Reply { mut payload, .. }) => payload
            .remove("session")
            .and_then(|s| serde_json::from_value(s).ok())
            .ok_or_else(|| ApiError::new(ErrorCode::Internal, "the node answered no session")),
        Ok(ServerFrame::ProtocolError { code, error, .. }) => Err(ApiError::new(code, error)),
        _ => Err(ApiError::new(
            ErrorCode::Internal,
            format!("bad answer from the node: {answer:.200}"),
        )),
    }
}

fn unavailable(
    request_id: &Option<String>,
    session_id: Option<&str>,
    node: &str,
    what: &str,
) -> Routed {
    Routed::Refused(ServerFrame::ProtocolError {
        code: ErrorCode::NodeUnavailable,
        error: format!(
            "node {node} is unavailable (its lease lapsed), so {what} cannot be reached"
        ),
        session_id: session_id.map(str::to_string),
        request_id: request_id.clone(),
        paths: None,
    })
}

pub(crate) fn internal(
    request_id: Option<String>,
    session_id: Option<String>,
    error: String,
) -> String {
    ServerFrame::ProtocolError {
        code: ErrorCode::Internal,
        error,
        session_id,
        request_id,
        paths: None,
    }
    .to_json()
}

/// `chat.subscribe` in a cluster: a local session as usual; another node's session
/// from this node's copy of its events, which the cluster keeps from JetStream (also
/// while that node is away: what JetStream holds is still served). Its
/// `chat_subscribed` is the owner's, asked for over NATS (pending permission
/// requests, rules and queue live there), so the subscription starts once that
/// answer came (or did not: a node that is away or does not answer within
/// [`ACK_TIMEOUT`] leaves the ack made from the directory, without them).
pub fn subscribe(
    cluster: &Cluster,
    rt: &Runtime,
    who: &Principal,
    client_id: u64,
    session_id: &str,
    last_seq: u64,
) -> Result<(), RuntimeError> {
    let info = match cluster.remote_session(session_id) {
        Some(info) if !rt.hosts(session_id) => info,
        _ => return rt.subscribe(who, client_id, session_id, last_seq),
    };
    rt.check_remote_subscription(who, &info, last_seq)?;
    cluster.follow(session_id);
    let (cluster, rt, who) = (cluster.clone(), rt.clone(), who.clone());
    actix::spawn(async move {
        let ack = owner_ack(&cluster, &who, &info.id).await;
        if let Err(e) = rt.subscribe_remote(&who, client_id, &info, last_seq, ack) {
            tracing::warn!(session = %info.id, error = %e, "remote subscription failed");
        }
    });
    Ok(())
}

/// How long a subscription waits for the owner's `chat_subscribed`.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);

/// The owner's `chat_subscribed` for this caller, if it answers with one.
async fn owner_ack(cluster: &Cluster, who: &Principal, session_id: &str) -> Option<ByteString> {
    let Owner::Remote { node, .. } = cluster.owner(session_id) else {
        return None;
    };
    let forward = Forward {
        user_id: who.user_id.clone(),
        admin: who.admin,
        call: Call::Subscription {
            session_id: session_id.to_string(),
        },
    };
    let payload = serde_json::to_vec(&forward).ok()?;
    let answer = match cluster.request(&node, payload, ACK_TIMEOUT).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(%node, session = %session_id, error = %e, "no chat_subscribed from the owner");
            return None;
        }
    };
    let is_ack = serde_json::from_slice::<serde_json::Value>(&answer)
        .is_ok_and(|v| v["kind"] == "chat_subscribed" && v["sessionId"] == session_id);
    if !is_ack {
        tracing::warn!(%node, session = %session_id, "the owner answered no chat_subscribed");
        return None;
    }
    ByteString::try_from(answer).ok()
}
