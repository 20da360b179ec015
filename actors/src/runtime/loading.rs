//! Reading the stored sessions at start, split by whether their actor starts with the
//! server.
//!
//! Most stored sessions are idle: nothing of theirs runs until someone asks. Such a
//! session becomes its published metadata at once and its parsed record is dropped
//! (its actor reads the record back at the first request, see
//! [`crate::session::SessionHandle`]), so a server with a million stored sessions
//! never holds a million records. The rest (work of their own, or named by a pair
//! that start-up reconciles) are kept whole for recovery and reconciliation.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::RuntimeError;
use crate::ids::{SessionId, UserId};
use crate::record::PairRecord;
use crate::session::SessionShared;
use crate::store::{LoadedSession, Store};

/// The stored sessions that are not archived.
#[derive(Default)]
pub(super) struct Loaded {
    /// Sessions whose actor starts with the server, with their records.
    pub active: Vec<LoadedSession>,
    /// Idle sessions: their actor starts at the first request for them.
    pub dormant: Vec<Dormant>,
}

/// An idle session as it is kept until its actor starts.
pub(super) struct Dormant {
    /// Its id.
    pub id: SessionId,
    /// Its owner (counted against `max_sessions_per_user`).
    pub owner_id: UserId,
    /// What it publishes.
    pub shared: Arc<SessionShared>,
}

/// Reads every stored session that is not archived. A session from before the node
/// joined a cluster (`node` unset) is given `node`, as its actor would record.
pub(super) fn load(
    store: &Store,
    pairs: &[PairRecord],
    node: Option<&String>,
) -> Result<Loaded, RuntimeError> {
    // Reconciliation looks at every session a pair names, member or not.
    let in_pairs: HashSet<&str> = pairs
        .iter()
        .flat_map(|p| [p.driver_id.as_str(), p.worker_id.as_str()])
        .collect();
    let mut loaded = Loaded::default();
    store.each_session(|mut session| {
        let record = &mut session.record;
        // Archived sessions keep their rows but get no actor and no slot.
        if record.archived_at.is_some() {
            return;
        }
        if record.node.is_none() {
            record.node = node.cloned();
        }
        if record.needs_actor_at_start() || in_pairs.contains(record.id.as_str()) {
            loaded.active.push(session);
        } else {
            loaded.dormant.push(Dormant {
                shared: Arc::new(SessionShared::from_record(record, session.last_seq)),
                id: std::mem::take(&mut record.id),
                owner_id: std::mem::take(&mut record.owner_id),
            });
        }
    })?;
    Ok(loaded)
}
