//! Requests from other cluster nodes (`--nats`): the owner's side. A node forwards
//! here, as NATS request/reply on `tandem.nodes.<node>.rpc`, a request for a session
//! (or pair) this node owns ([`crate::operation`]), the `chat_subscribed` a remote
//! subscriber needs ([`crate::cluster_subscribe`]), and upload parts
//! ([`crate::cluster_uploads`]); each with the caller's identity, which the sending
//! node authenticated. A request's answer larger than the NATS server's
//! `max_payload` is refused here with `FRAME_TOO_LARGE`.
//!
//! The NATS server is trusted like the database: anyone who can publish on it can
//! act as any user. Run it on a private network (or loopback).

use tandem_actors::cluster::{Cluster, ClusterError};
use tandem_actors::{Principal, Runtime};
use tandem_protocol::{ErrorCode, ServerFrame};

use crate::cluster_wire::{Call, Forward};
use crate::operation::{answer_forwarded, Context, Outcome};

/// Answers the requests other nodes forward to this one, for the life of the server.
pub async fn serve(cluster: &Cluster, runtime: Runtime) -> Result<(), ClusterError> {
    // Room for the reply's headers and subject within what NATS carries.
    let max_answer = cluster
        .client()
        .server_info()
        .max_payload
        .saturating_sub(1024);
    let ctx = std::rc::Rc::new(Context {
        runtime,
        cluster: Some(cluster.clone()),
        told: Default::default(),
    });
    cluster
        .serve_requests(move |payload| {
            let ctx = ctx.clone();
            async move { answer(&ctx, &payload, max_answer).await }
        })
        .await
}

/// Runs one forwarded request here and returns what answers it.
async fn answer(ctx: &Context, payload: &[u8], max_answer: usize) -> String {
    let forward: Forward = match serde_json::from_slice(payload) {
        Ok(f) => f,
        Err(e) => {
            return failure(ErrorCode::Internal, format!("bad forwarded request: {e}"));
        }
    };
    let principal = Principal {
        user_id: forward.user_id,
        admin: forward.admin,
    };
    let runtime = &ctx.runtime;
    match forward.call {
        Call::Operation { request } => {
            let answer = answer_forwarded(ctx, &principal, &request).await;
            if answer.len() > max_answer {
                return failure(
                    ErrorCode::FrameTooLarge,
                    format!(
                        "the answer ({} bytes) is larger than the cluster's NATS server \
                         carries ({max_answer} bytes); ask for less (events: a smaller `limit`)",
                        answer.len()
                    ),
                );
            }
            answer
        }
        Call::Visible {
            client,
            session_ids,
        } => {
            runtime
                .push()
                .set_visible_remote(&client, &principal.user_id, session_ids);
            "{}".to_string()
        }
        Call::Subscription { session_id } => {
            match runtime.clients().subscription_ack(&principal, &session_id) {
                Ok(ack) => ack.to_json(),
                Err(e) => ServerFrame::ProtocolError {
                    code: e.code(),
                    error: e.to_string(),
                    session_id: Some(session_id),
                    request_id: None,
                    paths: e.paths(),
                }
                .to_json(),
            }
        }
        Call::UploadPart(call) => {
            crate::cluster_uploads::answer_part(runtime, &principal, call).await
        }
        Call::UploadRead(call) => {
            crate::cluster_uploads::answer_read(runtime, &principal, call).await
        }
    }
}

/// An [`Outcome`] that failed, as JSON.
fn failure(code: ErrorCode, message: String) -> String {
    Outcome::Err(crate::error::ApiError::new(code, message).into()).to_json()
}
