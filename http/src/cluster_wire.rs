//! What one cluster node sends another on `tandem.nodes.<node>.rpc` (`--nats`): a
//! request run for a caller this node authenticated. [`crate::operation`],
//! [`crate::cluster_subscribe`] and [`crate::cluster_uploads`] send them;
//! [`crate::cluster_rpc`] answers them.

use serde::{Deserialize, Serialize};
use tandem_protocol::ids::{SessionId, UploadId, UserId};

/// What travels to the owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Forward {
    /// The caller's user id, authenticated by the node it connected to.
    pub user_id: UserId,
    /// Whether the caller is an admin.
    pub admin: bool,
    /// What to run there.
    pub call: Call,
}

/// What a forwarded request asks of the owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Call {
    /// A request of the table (`tandem_protocol::operations`) as a frame's JSON
    /// (`type` and fields, no `requestId`). Answered with a
    /// [`crate::operation::Outcome`].
    Operation {
        /// The request.
        request: String,
    },
    /// The `chat_subscribed` frame a new subscriber (the caller) of a session gets:
    /// its pending permission requests, rules and queue live only on the owner.
    #[serde(rename_all = "camelCase")]
    Subscription {
        /// The session.
        session_id: SessionId,
    },
    /// One part of an upload of the caller's handed over before a request that
    /// names it (see [`crate::cluster_uploads`]).
    UploadPart(PartCall),
    /// A part of an upload used in one of the owner's sessions.
    UploadRead(ReadCall),
    /// Which of the owner's sessions a client of the sending node shows in a visible
    /// tab (none: nothing any more), so the owner pushes nothing about them
    /// (see [`crate::cluster_visible`]). Answered `{}`.
    #[serde(rename_all = "camelCase")]
    Visible {
        /// The client, `NODE:ID`.
        client: String,
        /// The sessions it shows.
        session_ids: Vec<SessionId>,
    },
}

/// One part of an upload handed over ([`Call::UploadPart`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartCall {
    /// Names the hand-over (its parts are gathered under this name).
    pub transfer: String,
    /// The upload.
    pub upload_id: UploadId,
    /// Its media type.
    pub mime_type: String,
    /// Its file name.
    pub name: Option<String>,
    /// Bytes of the whole upload.
    pub total: u64,
    /// Where this part starts.
    pub offset: u64,
    /// The part, base64.
    pub data: String,
}

/// Asks for a part of an upload used in one of the owner's sessions
/// ([`Call::UploadRead`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadCall {
    /// The session that used it.
    pub session_id: SessionId,
    /// The upload.
    pub upload_id: UploadId,
    /// Where the part starts.
    pub offset: u64,
    /// Bytes wanted, at most.
    pub len: usize,
}
