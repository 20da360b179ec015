//! Handing a session's conversation to another vendor when its vendor's limit ended
//! a turn (`onLimit: {handoff: VENDOR}`): the runtime runs the handoff
//! (`runtime/handoff.rs`); sessions reach it through this hook in their services.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::ids::{SessionId, UserId};

/// A handoff to run: the session, its owner, the vendor to hand to.
#[derive(Debug, Clone)]
pub struct FailoverRequest {
    /// The limited session.
    pub session_id: SessionId,
    /// Its owner, as whom the handoff is made.
    pub owner_id: UserId,
    /// The vendor that carries on.
    pub vendor: String,
}

/// Runs a handoff to its new session's id, or why it could not.
#[derive(Clone)]
pub struct Failover(pub Arc<FailoverFn>);

/// Why a handoff at a vendor's limit failed, in words for the session's history.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HandoffFailed(pub String);

/// The handoff a [`Failover`] runs: the new session's id, or why there is none.
pub type FailoverFn = dyn Fn(FailoverRequest) -> Pin<Box<dyn Future<Output = Result<SessionId, HandoffFailed>>>>
    + Send
    + Sync;
