//! Handing a session's conversation to another vendor when its vendor's limit ended
//! a turn (`onLimit: {handoff: VENDOR}`): the runtime runs the handoff
//! (`runtime/handoff.rs`); sessions reach it through this hook in their services.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A handoff to run: the session, its owner, the vendor to hand to.
#[derive(Debug, Clone)]
pub struct FailoverRequest {
    /// The limited session.
    pub session_id: String,
    /// Its owner, as whom the handoff is made.
    pub owner_id: String,
    /// The vendor that carries on.
    pub vendor: String,
}

/// Runs a handoff to its new session's id, or why it could not.
#[derive(Clone)]
pub struct Failover(pub Arc<FailoverFn>);

/// The handoff a [`Failover`] runs.
pub type FailoverFn =
    dyn Fn(FailoverRequest) -> Pin<Box<dyn Future<Output = Result<String, String>>>> + Send + Sync;
