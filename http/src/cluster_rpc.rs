//! Requests for sessions of other cluster nodes (`--nats`): the owner's side.
//! [`crate::cluster_route`] decides where a request goes; this module answers the
//! requests other nodes forward here.
//!
//! A request that names a session (by `sessionId`, or `driverId` for `pair.create`,
//! or `node` for `session.create`) owned by another node travels there as NATS
//! request/reply on `tandem.nodes.<node>.rpc`: the frame exactly as the client sent
//! it, with the caller's identity. The owner runs it through its own request handling
//! ([`crate::ws_requests::dispatch`]) and replies with the frame it would have sent;
//! that frame goes to the client unchanged, so errors are the owner's own. A session
//! whose node's lease lapsed answers `NODE_UNAVAILABLE`, as does a node that does not
//! answer.
//!
//! The NATS server is trusted like the database: anyone who can publish on it can
//! act as any user. Run it on a private network (or loopback).

use tandem_actors::cluster::{Cluster, ClusterError};
use tandem_actors::{Principal, Runtime};
use tandem_protocol::{parse_client_frame, ServerFrame};

use crate::cluster_route::internal;
use crate::cluster_wire::{Call, Forward};
use crate::ws_requests::{dispatch, Dispatched, Requester};

/// Answers the requests other nodes forward to this one, for the life of the server;
/// REST requests are run against this server's own listener at `local`.
pub async fn serve(
    cluster: &Cluster,
    runtime: Runtime,
    local: crate::cluster_rest::Loopback,
) -> Result<(), ClusterError> {
    let local = std::rc::Rc::new(local);
    cluster
        .serve_requests(move |payload| {
            let (runtime, local) = (runtime.clone(), local.clone());
            async move { answer(&runtime, &local, &payload).await }
        })
        .await
}

/// Runs one forwarded request here and returns what answers it.
async fn answer(
    runtime: &Runtime,
    local: &crate::cluster_rest::Loopback,
    payload: &[u8],
) -> String {
    let forward: Forward = match serde_json::from_slice(payload) {
        Ok(f) => f,
        Err(e) => return internal(None, None, format!("bad forwarded request: {e}")),
    };
    let principal = Principal {
        user_id: forward.user_id,
        admin: forward.admin,
    };
    let raw = match forward.call {
        Call::Frame { frame } => frame,
        Call::Subscription { session_id } => {
            return match runtime.subscription_ack(&principal, &session_id) {
                Ok(ack) => ack.to_json(),
                Err(e) => ServerFrame::ProtocolError {
                    code: e.code(),
                    error: e.to_string(),
                    session_id: Some(session_id),
                    request_id: None,
                    paths: e.paths(),
                }
                .to_json(),
            };
        }
        Call::UploadPart(call) => {
            return crate::cluster_uploads::answer_part(runtime, &principal, call).await
        }
        Call::UploadRead(call) => {
            return crate::cluster_uploads::answer_read(runtime, &principal, call).await
        }
        Call::Rest {
            method,
            path,
            content_type,
            body,
        } => {
            let call = crate::cluster_rest::RestCall {
                method,
                path,
                content_type,
                body,
            };
            return local.run(&principal, call).await;
        }
    };
    let frame = match parse_client_frame(&raw) {
        Ok(frame) => frame,
        Err(e) => {
            return ServerFrame::ProtocolError {
                code: e.code,
                error: e.message,
                session_id: e.session_id,
                request_id: e.request_id,
                paths: None,
            }
            .to_json()
        }
    };
    // No cluster here: the request runs on this node, whatever it names.
    let who = Requester {
        runtime,
        principal: &principal,
        client_id: 0,
        cluster: None,
        raw: None,
    };
    match dispatch(who, frame) {
        Dispatched::Now(frames) => frames
            .first()
            .map(ServerFrame::to_json)
            .unwrap_or_else(|| internal(None, None, "the request had no answer".into())),
        Dispatched::Later(fut) => fut.await.to_json(),
        Dispatched::Forwarded(fut) => fut.await,
    }
}
