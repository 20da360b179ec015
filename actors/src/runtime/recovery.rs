//! Start-up recovery of turns a crashed process left open.

use std::sync::Arc;

use tandem_protocol::{EventBody, SessionStatus, TurnStatus};

use crate::clock::now_ms;
use crate::error::RuntimeError;
use crate::session::event_frame;
use crate::store::{LoadedSession, Store, StoredEvent, WriteOp};

/// Closes every turn the previous process left in flight: appends `turn_completed
/// {interrupted}` at the next `seq` and marks the session interrupted, before any
/// actor starts.
pub(super) fn recover_interrupted_turns(
    store: &Store,
    loaded: &mut [LoadedSession],
) -> Result<(), RuntimeError> {
    let mut ops = Vec::new();
    for session in loaded.iter_mut() {
        let record = &mut session.record;
        if !record.status.is_busy() {
            continue;
        }
        let seq = session.last_seq + 1;
        let ts = now_ms();
        let frame = event_frame(
            &record.id,
            seq,
            ts,
            record.current_turn_id.take(),
            EventBody::TurnCompleted {
                status: TurnStatus::Interrupted,
                error: Some("the server restarted during this turn".into()),
                usage: None,
                resets_at: None,
            },
        )?;
        session.last_seq = seq;
        record.status = SessionStatus::Interrupted;
        record.turn_started_at = None;
        record.last_activity = ts;
        tracing::info!(session = %record.id, "closed a turn left open by a restart");
        ops.push(WriteOp::Event(StoredEvent {
            session_id: record.id.as_str().into(),
            seq,
            frame: frame.into(),
            gate: Arc::default(),
        }));
        ops.push(WriteOp::Session(Box::new(record.clone())));
    }
    if !ops.is_empty() {
        store.write_now(&ops)?;
    }
    Ok(())
}
