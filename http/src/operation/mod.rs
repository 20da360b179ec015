//! The one path every request takes, whatever carried it: a WebSocket frame, a REST
//! call, a request another cluster node forwarded. The transport authenticates the
//! caller and decodes a typed [`ClientRequest`]; [`execute`] routes it to the node
//! that owns what it names ([`forward`]), runs it there ([`handlers`]), and answers a
//! state-changing request (the table's `writes`) only once its effects are
//! committed, so an acknowledged request survives a crash, on every transport.
//! Authorization is the runtime's: each handler acts as the caller.

mod forward;
mod handlers;

pub use forward::{answer_forwarded, Outcome};
pub use handlers::list_page;

use serde::de::DeserializeOwned;
use tandem_actors::cluster::Cluster;
use tandem_actors::{Principal, Runtime, RuntimeError};
use tandem_protocol::operations::{Effect, Operation, Scope};
use tandem_protocol::results::SessionCreateResult;
use tandem_protocol::{ClientRequest, ErrorCode};

use crate::error::ApiError;

/// What a request runs against.
#[derive(Clone)]
pub struct Context {
    /// This node's runtime.
    pub runtime: Runtime,
    /// This node's cluster membership (`--nats`); `None` on a single node.
    pub cluster: Option<Cluster>,
    /// Which other nodes this node's clients told what they show.
    pub told: crate::cluster_visible::Told,
}

/// A successful request's result, as JSON text (an object): spliced into a reply
/// frame or sent as a REST body without another encoding.
pub type Answer = String;

/// Runs `request` as `who`, wherever it belongs; the result's JSON text or why it
/// failed.
pub async fn execute(
    ctx: &Context,
    who: &Principal,
    request: ClientRequest,
) -> Result<Answer, ApiError> {
    request
        .validate()
        .map_err(|r| ApiError::new(r.code, r.message))?;
    if let (Some(cluster), Scope::Session(id)) = (ctx.cluster.as_ref(), request.scope()) {
        // A session this node has not heard of yet may be one another node just
        // created: the directory is asked before the request is refused as unknown.
        cluster.lookup(id).await;
    }
    match ctx
        .cluster
        .as_ref()
        .map(|c| place(c, &ctx.runtime, &request))
    {
        None | Some(Place::Here) => here(ctx, who, request).await,
        Some(Place::Node(node)) => {
            let answer = forward::to_node(ctx, who, &node, &request).await?;
            if let (Some(cluster), ClientRequest::SessionCreate(_)) = (&ctx.cluster, &request) {
                // Listed and subscribable here as soon as the create answers.
                if let Ok(created) = decode_answer::<SessionCreateResult>(&answer) {
                    cluster.learn(&node, created.session);
                }
            }
            Ok(answer)
        }
        Some(Place::AnyNode(permission)) => {
            forward::to_holder(ctx, who, &permission, &request).await
        }
        Some(Place::Unavailable { node, what }) => Err(ApiError::new(
            ErrorCode::NodeUnavailable,
            format!("node {node} is unavailable (its lease lapsed), so {what} cannot be reached"),
        )),
    }
}

/// Runs the request `params` make, for a caller that wants its typed result (REST).
pub async fn call<P: Operation>(
    ctx: &Context,
    who: &Principal,
    params: P,
) -> Result<P::Result, ApiError> {
    let text = execute(ctx, who, params.into_request()).await?;
    decode_answer(&text)
}

/// A result's JSON text read back as its type.
fn decode_answer<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    serde_json::from_str(text)
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("bad result: {e}")))
}

/// Runs the request on this node. A state change is answered only once the store
/// committed everything written since it started (the failure after the write epoch
/// was taken may have hit it; a [`Effect::Commits`] handler has waited for its own
/// writes already), and in a cluster once the sessions it created are in the
/// directory; a read is answered at once.
pub(crate) async fn here(
    ctx: &Context,
    who: &Principal,
    request: ClientRequest,
) -> Result<Answer, ApiError> {
    let (writes, effect) = (request.writes(), request.effect());
    let epoch = ctx.runtime.write_epoch();
    let answer = handlers::run(ctx, who, request).await?;
    if effect == Effect::Writes && !ctx.runtime.synced_since(epoch).await {
        return Err(RuntimeError::Internal("the store could not commit".into()).into());
    }
    if let Some(cluster) = ctx.cluster.as_ref().filter(|_| writes) {
        // A session the request created is in the directory before it answers: any
        // node that looks it up afterwards finds it.
        cluster.publish_new_sessions().await;
    }
    Ok(answer)
}

/// Where a request runs in a cluster.
enum Place {
    /// On this node.
    Here,
    /// On this other node.
    Node(String),
    /// On whichever node holds this pending permission request.
    AnyNode(String),
    /// On a node whose lease lapsed.
    Unavailable {
        /// The node.
        node: String,
        /// What the request is for, for the message.
        what: String,
    },
}

fn place(cluster: &Cluster, runtime: &Runtime, request: &ClientRequest) -> Place {
    use tandem_actors::cluster::Owner;
    let owner = match request.scope() {
        Scope::Local | Scope::Connection | Scope::Node(None) => return Place::Here,
        Scope::Node(Some(node)) if node == cluster.node() => return Place::Here,
        Scope::Node(Some(node)) if cluster.alive(node) => return Place::Node(node.into()),
        Scope::Node(Some(node)) if cluster.known(node) => {
            return Place::Unavailable {
                node: node.into(),
                what: "its sessions".into(),
            }
        }
        // The handler refuses a node the cluster does not know.
        Scope::Node(Some(_)) => return Place::Here,
        Scope::Permission(id) if runtime.sessions().permission_holder(id).is_some() => {
            return Place::Here
        }
        Scope::Permission(id) => return Place::AnyNode(id.to_string()),
        Scope::Pair(id) if runtime.pairs().addr(id).is_some() => return Place::Here,
        Scope::Pair(id) => (cluster.pair_owner(id), id.as_str()),
        Scope::Session(id) => (cluster.owner(id), id.as_str()),
    };
    match owner {
        (Owner::Local | Owner::Unknown, _) => Place::Here,
        (Owner::Remote { node, .. }, _) => Place::Node(node),
        (Owner::Unavailable { node }, what) => Place::Unavailable {
            node,
            what: what.into(),
        },
    }
}
