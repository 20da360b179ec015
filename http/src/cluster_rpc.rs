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

use crate::cluster_route::{internal, Forward};
use crate::ws_requests::{dispatch, Dispatched, Requester};

/// Answers the requests other nodes forward to this one, for the life of the server.
pub async fn serve(cluster: &Cluster, runtime: Runtime) -> Result<(), ClusterError> {
    cluster
        .serve_requests(move |payload| {
            let runtime = runtime.clone();
            async move { answer(&runtime, &payload).await }
        })
        .await
}

/// Runs one forwarded request here and returns the frame that answers it.
async fn answer(runtime: &Runtime, payload: &[u8]) -> String {
    let forward: Forward = match serde_json::from_slice(payload) {
        Ok(f) => f,
        Err(e) => return internal(None, None, format!("bad forwarded request: {e}")),
    };
    let frame = match parse_client_frame(&forward.frame) {
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
    let principal = Principal {
        user_id: forward.user_id,
        admin: forward.admin,
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
