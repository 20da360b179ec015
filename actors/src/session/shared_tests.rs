//! The published snapshot: replaced whole, and a reader's copy stays as it was.

use serde_json::json;
use tandem_protocol::server::QueuedEntry;
use tandem_protocol::SessionStatus;

use super::SessionShared;
use crate::record::SessionRecord;

fn record() -> SessionRecord {
    match serde_json::from_value(json!({
        "id": "ses_1", "title": "t", "vendor": "scripted", "model": "", "effort": "",
        "permissionMode": "default", "status": "idle", "turnCount": 0, "createdAt": 1,
        "lastActivity": 1, "ownerId": "admin", "visibility": "private", "cwd": "/",
        "queued": [{"queueId": "q_1", "text": "later"}]
    })) {
        Ok(record) => record,
        Err(e) => panic!("record: {e}"),
    }
}

fn entry(id: &str) -> QueuedEntry {
    QueuedEntry {
        queue_id: id.into(),
        text: id.into(),
        internal: false,
    }
}

#[test]
fn a_stored_session_publishes_its_queue_and_newest_seq() {
    let shared = SessionShared::from_record(&record(), 7);
    assert_eq!(shared.queued().len(), 1);
    assert_eq!(shared.info().last_seq, 7);
    assert_eq!(shared.last_seq(), 7);
}

#[test]
fn a_snapshot_taken_before_a_change_keeps_one_moment() {
    let shared = SessionShared::from_record(&record(), 0);
    let before = shared.snapshot();
    shared.publish(|p| {
        p.info.status = SessionStatus::Running;
        p.queued = vec![entry("q_2"), entry("q_3")];
    });
    // The earlier reader still sees the status and the queue of its moment together.
    assert_eq!(before.info.status, SessionStatus::Idle);
    assert_eq!(before.queued.len(), 1);
    let after = shared.snapshot();
    assert_eq!(after.info.status, SessionStatus::Running);
    assert_eq!(after.queued.len(), 2);
}

#[test]
fn newer_events_move_the_seq_without_a_new_snapshot() {
    let shared = SessionShared::from_record(&record(), 3);
    let snapshot = shared.snapshot();
    shared.set_last_seq(9);
    assert_eq!(shared.info().last_seq, 9);
    assert_eq!(snapshot.info.last_seq, 3);
    assert!(std::sync::Arc::ptr_eq(&snapshot, &shared.snapshot()));
}
