//! The store writer thread on a real database: events grouped into multi-row
//! statements land exactly as written, and a bad row fails its whole commit.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use tandem_protocol::EventBody;

use super::*;
use crate::flow::FlowGate;
use crate::metrics::Metrics;
use crate::session::event_frame;
use crate::testkit::Scratch;

/// A writer over a fresh store, with what its hooks reported.
struct Fixture {
    _dir: Scratch,
    store: Store,
    writer: StoreWriter,
    committed: mpsc::Receiver<Vec<StoredEvent>>,
    failed: mpsc::Receiver<StoreFailure>,
    gate: Arc<FlowGate>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = Scratch::new("writer");
        let store = Store::open(dir.path()).expect("open");
        let (commit_tx, committed) = mpsc::channel();
        let (fail_tx, failed) = mpsc::channel();
        let hooks = WriterHooks {
            on_commit: Box::new(move |events| {
                let _ = commit_tx.send(events);
            }),
            on_failure: Box::new(move |failure| {
                let _ = fail_tx.send(failure);
            }),
            on_give_up: Box::new(|e| panic!("writer gave up: {e}")),
        };
        let writer = StoreWriter::start(
            &store,
            4096,
            Duration::from_secs(3600),
            Arc::new(Metrics::default()),
            hooks,
        )
        .expect("writer");
        Fixture {
            _dir: dir,
            store,
            writer,
            committed,
            failed,
            gate: Arc::new(FlowGate::new(0)),
        }
    }

    fn event(&self, session: &str, seq: u64) -> StoredEvent {
        let frame = event_frame(
            session,
            seq,
            1,
            None,
            EventBody::Info {
                text: format!("{session} {seq}"),
            },
        )
        .expect("frame");
        StoredEvent {
            session_id: session.into(),
            seq,
            frame: frame.into(),
            gate: self.gate.clone(),
        }
    }

    /// Every stored event of `session`: (seq, frame).
    fn history(&self, session: &str) -> Vec<(u64, String)> {
        self.store
            .read_events(session, 0, usize::MAX)
            .expect("read")
    }
}

/// Runs of events longer and shorter than a multi-row group, split by other writes,
/// across sessions: every event is stored once with its exact frame, and the commit
/// hook hands them over in the order written.
#[test]
fn grouped_inserts_store_every_event_as_written() {
    let f = Fixture::new();
    let mut written = Vec::new();
    let mut ops = Vec::new();
    // 70 events of `a` (two full groups and 6), a non-event write, 5 of `b`, then
    // 40 alternating between the two sessions, each a write of its own.
    for seq in 1..=70 {
        written.push(f.event("a", seq));
    }
    ops.push(WriteOp::Batch(
        written.iter().cloned().map(WriteOp::Event).collect(),
    ));
    ops.push(WriteOp::DeletePair("pair_none".into()));
    let mut b: Vec<StoredEvent> = (1..=5).map(|seq| f.event("b", seq)).collect();
    ops.extend(b.iter().cloned().map(WriteOp::Event));
    written.append(&mut b);
    for i in 0..40u64 {
        let ev = if i % 2 == 0 {
            f.event("a", 71 + i / 2)
        } else {
            f.event("b", 6 + i / 2)
        };
        ops.push(WriteOp::Event(ev.clone()));
        written.push(ev);
    }
    for op in ops {
        f.writer.write(op).expect("write");
    }
    let mut handed = Vec::new();
    while handed.len() < written.len() {
        let events = f
            .committed
            .recv_timeout(Duration::from_secs(20))
            .expect("a commit");
        handed.extend(events);
    }
    let key = |e: &StoredEvent| (e.session_id.to_string(), e.seq, e.frame.to_string());
    assert_eq!(
        handed.iter().map(key).collect::<Vec<_>>(),
        written.iter().map(key).collect::<Vec<_>>()
    );
    for session in ["a", "b"] {
        let expected: Vec<(u64, String)> = written
            .iter()
            .filter(|e| &*e.session_id == session)
            .map(|e| (e.seq, e.frame.to_string()))
            .collect();
        assert_eq!(f.history(session), expected, "history of {session}");
    }
    assert_eq!(f.history("a").len(), 90);
    assert_eq!(f.history("b").len(), 25);
}

/// A duplicate `(session, seq)` inside a full group of the multi-row statement, and
/// one among the rows inserted singly: each fails its whole commit, nothing of it is
/// stored or handed to the gateway, and the sessions are reported for reloading.
#[test]
fn a_duplicate_row_fails_its_whole_commit() {
    for (session, duplicate_at) in [("grouped", 20usize), ("single", 40)] {
        let f = Fixture::new();
        let mut events: Vec<StoredEvent> = (1..=40).map(|seq| f.event(session, seq)).collect();
        events[duplicate_at - 1] = f.event(session, 3);
        f.writer
            .write(WriteOp::Batch(
                events.into_iter().map(WriteOp::Event).collect(),
            ))
            .expect("write");
        let failure = f
            .failed
            .recv_timeout(Duration::from_secs(20))
            .expect("a failure");
        assert_eq!(failure.sessions, vec![Arc::<str>::from(session)]);
        assert!(failure.error.contains("UNIQUE"), "{}", failure.error);
        assert!(f.history(session).is_empty(), "{session}: partly stored");
        assert!(
            f.committed.try_recv().is_err(),
            "{session}: a failed commit was published"
        );
    }
}
