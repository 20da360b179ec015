//! The messages the gateway takes.

use std::sync::Arc;

use actix::prelude::*;
use bytestring::ByteString;
use tandem_protocol::SessionInfo;

use super::{ClientQueue, Deliver};
use crate::access::Principal;
use crate::ids::SessionId;
use crate::store::StoredEvent;

/// A WebSocket client joins.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Connect {
    /// Unique per connection (the runtime counts them up); later messages name it.
    pub client_id: u64,
    /// The client's actor: frames are `try_send`-ed to it, never awaited.
    pub sink: Recipient<Deliver>,
    /// Its byte budget, shared with the client's actor, which subtracts what it writes.
    pub queue: Arc<ClientQueue>,
    /// Who it is (for `sessions.watch` filtering).
    pub principal: Principal,
}

/// A WebSocket client left.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Disconnect {
    /// The connection whose subscriptions and queue are dropped.
    pub client_id: u64,
}

/// Subscribe a client to a session from `after + 1` on. Access was checked by the
/// runtime; `ack` is the `chat_subscribed` frame to send before any event.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    /// The connection to deliver to; ignored if it already left.
    pub client_id: u64,
    /// The session to follow; a subscription it already had there starts over.
    pub session_id: Arc<str>,
    /// The last `seq` the client has.
    pub after: u64,
    /// The serialized `chat_subscribed` frame, queued ahead of any event.
    pub ack: ByteString,
}

/// Stop delivering these sessions to a client.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unsubscribe {
    /// The connection to stop delivering to.
    pub client_id: u64,
    /// Sessions to drop; ids it does not follow are ignored.
    pub session_ids: Vec<SessionId>,
}

/// Send `session_upserted` for every visible session change to this client.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Watch {
    /// The connection that now gets `session_upserted` for sessions it may see.
    pub client_id: u64,
}

/// A client's queue fell below half its budget after the gateway asked to know.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drained {
    /// The connection whose parked replays resume and whose live sessions may release.
    pub client_id: u64,
}

/// Events the store has committed, in commit order.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Committed(pub Vec<StoredEvent>);

/// A session's metadata changed (for watchers).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SessionChanged(pub SessionInfo);
