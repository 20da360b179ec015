//! A request for another cluster node (`--nats`): a request whose scope names
//! another node's session (or pair, or node), from any transport, is sent there over
//! NATS request/reply (`tandem.nodes.<node>.rpc`) as the typed request with the
//! caller's identity ([`Call::Operation`]), run there through [`super::here`] (never
//! forwarded again: the owner's directory may lag the sender's), and answered with
//! its result or its error ([`Outcome`]). The asking node answers its client with
//! that in its transport's form: the same replies and the same errors as on the
//! owner. A node that does not answer is `NODE_UNAVAILABLE`.
//!
//! Requests that name no session: a pair's actor runs on its Driver's node, so
//! `pair.close` (and `DELETE /api/v1/pairs/{id}`) for a pair with no actor here goes
//! to the node of the session the directory lists as its Driver
//! (`Cluster::pair_owner`; the Worker's node must not take it for a stray pair). A
//! `chat.permission-response` without `sessionId` whose request is pending on no
//! session here goes to each other available node in name order ([`to_holder`]):
//! request ids are random, so at most one node has it, and nodes are few and the
//! answer is what a person clicks, so asking them one after another is off the hot
//! path.
//!
//! The NATS server is trusted like the database: anyone who can publish on it can act
//! as any user. Run it on a private network (or loopback). No HTTP request is made
//! between nodes, and no header stands for "already authenticated".

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tandem_actors::Principal;
use tandem_protocol::error::ErrorDetail;
use tandem_protocol::{ClientRequest, ErrorCode};

use super::{Answer, Context};
use crate::cluster_wire::{Call, Forward};
use crate::error::ApiError;

/// How long a forwarded request may take; `tool.call` may wait for a Worker's turn
/// (`timeoutSeconds` up to 900).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const TOOL_TIMEOUT: Duration = Duration::from_secs(960);

/// What the owner answers a forwarded request with: its result or its error.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// The result, as the handler made it.
    Ok(Box<RawValue>),
    /// Why it failed.
    Err(Failure),
}

/// A forwarded request's error, as the owner's REST would answer it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// The code, message and paths.
    #[serde(flatten)]
    pub detail: ErrorDetail,
    /// The HTTP status (the code's, or 422 for a value the owner cannot use).
    pub status: u16,
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Failure {
        Failure {
            status: e.status,
            detail: ErrorDetail {
                code: e.code,
                message: e.message,
                paths: e.paths,
            },
        }
    }
}

/// [`Outcome::to_json`]'s answer when the outcome cannot be written: an `INTERNAL`
/// failure the asking node reads like any other.
const UNWRITABLE: &str =
    r#"{"err":{"code":"INTERNAL","message":"the owner could not write its answer","status":500}}"#;

impl Outcome {
    /// The outcome as JSON, for the asking node. Its parts are raw JSON, strings and
    /// numbers, so writing it cannot fail; were it to, the asker still gets a failure
    /// it can read (rather than an empty answer), and the log says why.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot serialize a forwarded request's outcome");
            UNWRITABLE.to_string()
        })
    }
}

impl From<Failure> for ApiError {
    fn from(f: Failure) -> ApiError {
        ApiError {
            status: f.status,
            code: f.detail.code,
            message: f.detail.message,
            paths: f.detail.paths,
        }
    }
}

/// Runs `request` on `node` as `who`.
pub async fn to_node(
    ctx: &Context,
    who: &Principal,
    node: &str,
    request: &ClientRequest,
) -> Result<Answer, ApiError> {
    let Some(cluster) = ctx.cluster.as_ref() else {
        return Err(ApiError::new(ErrorCode::Internal, "not in a cluster"));
    };
    let frame = request.to_frame().to_string();
    // Uploads the request names live here; the owner resolves the message.
    crate::cluster_uploads::hand_over(cluster, &ctx.runtime, who, node, &frame)
        .await
        .map_err(|(code, message)| ApiError::new(code, message))?;
    let timeout = match request {
        ClientRequest::ToolCall(_) => TOOL_TIMEOUT,
        _ => REQUEST_TIMEOUT,
    };
    let payload = payload(who, frame)?;
    let reply = cluster.request(node, payload, timeout).await.map_err(|e| {
        tracing::warn!(%node, error = %e, "forwarded request failed");
        ApiError::new(
            ErrorCode::NodeUnavailable,
            format!("node {node} did not answer: {e}"),
        )
    })?;
    outcome(node, &reply)
}

/// A `chat.permission-response` without `sessionId` whose request is pending on no
/// session here: each other available node is asked in turn (by name order); the
/// first answer that is not `NO_SUCH_PERMISSION` is the answer. When every node says
/// so (or none answers), the caller gets `NO_SUCH_PERMISSION`, as on a single node.
pub async fn to_holder(
    ctx: &Context,
    who: &Principal,
    permission_id: &str,
    request: &ClientRequest,
) -> Result<Answer, ApiError> {
    let missing: ApiError =
        tandem_actors::RuntimeError::NoSuchPermission(permission_id.into()).into();
    let Some(cluster) = ctx.cluster.as_ref() else {
        return Err(missing);
    };
    let payload = payload(who, request.to_frame().to_string())?;
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
        match outcome(&node, &reply) {
            Err(e) if e.code == ErrorCode::NoSuchPermission => continue,
            answer => return answer,
        }
    }
    Err(missing)
}

fn payload(who: &Principal, frame: String) -> Result<Vec<u8>, ApiError> {
    let forward = Forward {
        user_id: who.user_id.clone(),
        admin: who.admin,
        call: Call::Operation { request: frame },
    };
    serde_json::to_vec(&forward).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

fn outcome(node: &str, reply: &[u8]) -> Result<Answer, ApiError> {
    match serde_json::from_slice::<Outcome>(reply) {
        Ok(Outcome::Ok(result)) => Ok(result.get().to_string()),
        Ok(Outcome::Err(failure)) => Err(failure.into()),
        Err(e) => Err(ApiError::new(
            ErrorCode::Internal,
            format!("bad answer from node {node}: {e}"),
        )),
    }
}

/// The owner's side: runs a forwarded request here, whatever its scope says (this
/// node's directory may lag the sender's; a forwarded request is never forwarded
/// again), and answers with its [`Outcome`] as JSON.
pub async fn answer_forwarded(ctx: &Context, who: &Principal, frame: &str) -> String {
    let result = match decode(frame) {
        Ok(request) => match request.validate() {
            Ok(()) => super::here(ctx, who, request).await,
            Err(r) => Err(ApiError::new(r.code, r.message)),
        },
        Err(e) => Err(e),
    };
    let outcome = match result.and_then(|text| {
        RawValue::from_string(text).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
    }) {
        Ok(raw) => Outcome::Ok(raw),
        Err(e) => Outcome::Err(e.into()),
    };
    outcome.to_json()
}

/// A forwarded request's frame read back as the typed request.
fn decode(frame: &str) -> Result<ClientRequest, ApiError> {
    let bad = |m: String| ApiError::new(ErrorCode::InvalidArgument, m);
    let mut fields = match serde_json::from_str(frame) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => return Err(bad("a forwarded request is not a JSON object".into())),
    };
    let kind = match fields.remove("type") {
        Some(serde_json::Value::String(kind)) => kind,
        _ => return Err(bad("a forwarded request has no `type`".into())),
    };
    match ClientRequest::decode(&kind, fields) {
        Some(Ok(request)) => Ok(request),
        Some(Err(r)) => Err(ApiError::new(r.code, r.message)),
        None => Err(ApiError::new(
            ErrorCode::UnknownMessageType,
            format!("unknown request `{kind}`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fallback answer reads back as an `INTERNAL` failure.
    #[test]
    fn the_unwritable_answer_is_a_failure() {
        match serde_json::from_str::<Outcome>(UNWRITABLE) {
            Ok(Outcome::Err(f)) => {
                assert_eq!(f.detail.code, ErrorCode::Internal);
                assert_eq!(f.status, 500);
            }
            other => panic!("{other:?}"),
        }
    }
}
