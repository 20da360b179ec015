//! The gateway on its own: a real store, the gateway actor, and stand-in clients
//! ([`Sink`]) in place of WebSocket actors. Commits are handed to it the way the store
//! writer does: written to SQLite first, then `Committed`.

use std::sync::Arc;

use actix::prelude::*;
use bytestring::ByteString;
use serde_json::json;
use tandem_protocol::EventBody;

use super::*;
use crate::access::Principal;
use crate::flow::FlowGate;
use crate::session::event_frame;
use crate::store::{StoredEvent, WriteOp};
use crate::testkit::{seqs, wait_for, Recorded, Scratch, Sink};

/// A gateway over a fresh store.
struct Fixture {
    _dir: Scratch,
    store: Store,
    metrics: Arc<Metrics>,
    gateway: Addr<Gateway>,
    gate: Arc<FlowGate>,
}

impl Fixture {
    fn new(ring_events: usize) -> Fixture {
        let dir = Scratch::new("gateway");
        let store = Store::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let metrics = Arc::new(Metrics::default());
        let gateway = Gateway::new(
            store.clone(),
            metrics.clone(),
            ring_events,
            std::time::Duration::from_secs(30),
            usize::MAX,
        )
        .start();
        Fixture {
            _dir: dir,
            store,
            metrics,
            gateway,
            gate: Arc::new(FlowGate::new(0)),
        }
    }

    /// Event `seq` of `session`, padded to about `size` bytes.
    fn event(&self, session: &str, seq: u64, size: usize) -> StoredEvent {
        let text = format!("{session} {seq} {}", "x".repeat(size.saturating_sub(100)));
        let frame = event_frame(session, seq, 1, None, EventBody::Info { text })
            .unwrap_or_else(|e| panic!("{e}"));
        StoredEvent {
            session_id: session.into(),
            seq,
            frame: frame.into(),
            gate: self.gate.clone(),
        }
    }

    /// Stores events `seqs` of `session` and hands them to the gateway as one commit,
    /// waiting until the gateway has handled it.
    async fn commit(&self, session: &str, seqs: std::ops::RangeInclusive<u64>, size: usize) {
        let events: Vec<StoredEvent> = seqs.map(|s| self.event(session, s, size)).collect();
        let ops: Vec<WriteOp> = events.iter().cloned().map(WriteOp::Event).collect();
        self.store.write_now(&ops).unwrap_or_else(|e| panic!("{e}"));
        self.gateway
            .send(Committed(events))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// A client with a `limit`-byte budget; `drains` says whether it keeps up.
    async fn client(&self, id: u64, limit: usize, drains: bool) -> Addr<Sink> {
        let queue = Arc::new(ClientQueue::new(limit, self.metrics.clone()));
        let sink = Sink::new(id, queue.clone(), drains.then(|| self.gateway.clone())).start();
        self.connect(id, &sink, queue).await;
        sink
    }

    /// Connects `sink` as client `id` (an admin) with `queue` as its budget.
    async fn connect(&self, id: u64, sink: &Addr<Sink>, queue: Arc<ClientQueue>) {
        self.gateway
            .send(Connect {
                client_id: id,
                sink: sink.clone().recipient(),
                queue,
                principal: Principal {
                    user_id: "admin".into(),
                    admin: true,
                },
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    async fn subscribe(&self, client: u64, session: &str, after: u64) {
        let ack: ByteString = json!({"kind": "chat_subscribed", "sessionId": session})
            .to_string()
            .into();
        self.gateway
            .send(Subscribe {
                client_id: client,
                session_id: session.into(),
                after,
                ack,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

async fn recorded(sink: &Addr<Sink>) -> (Vec<serde_json::Value>, Option<u16>) {
    sink.send(Recorded).await.unwrap_or_else(|e| panic!("{e}"))
}

/// A subscription that starts deep in a stored history, while commits keep coming,
/// receives every later event once, in order: store pages (held back until the client
/// drains), then the ring, then live, with no gap and no duplicate at the seams.
#[actix_rt::test]
async fn replay_then_live_has_no_gap_and_no_duplicate() {
    // A small ring, so the replay must go to the store for most of the history.
    let fx = Fixture::new(64);
    let sid = "ses_replay";
    let stored = 3000;
    for start in (1..=stored).step_by(500) {
        fx.commit(sid, start..=start + 499, 300).await;
    }
    // A 64 KiB budget: replay pages of 32 KiB, about a hundred events each.
    let sink = fx.client(1, 64 << 10, true).await;
    let after = 17;
    fx.subscribe(1, sid, after).await;
    // Commits land while the first pages are being read and sent.
    let total = stored + 400;
    for start in (stored + 1..=total).step_by(20) {
        fx.commit(sid, start..=start + 19, 300).await;
    }
    let frames = wait_for("the whole history", || async {
        let (frames, _) = recorded(&sink).await;
        (seqs(&frames, sid).last() == Some(&total)).then_some(frames)
    })
    .await;
    assert_eq!(frames[0]["kind"], "chat_subscribed", "the ack comes first");
    let got = seqs(&frames, sid);
    let want: Vec<u64> = (after + 1..=total).collect();
    assert_eq!(got.len(), want.len(), "events missing or repeated");
    assert_eq!(got, want);
    // Live from here on.
    fx.commit(sid, total + 1..=total + 1, 300).await;
    let (frames, _) = wait_for("a live event", || async {
        let r = recorded(&sink).await;
        (seqs(&r.0, sid).last() == Some(&(total + 1))).then_some(r)
    })
    .await;
    assert_eq!(seqs(&frames, sid).len(), want.len() + 1);
}

/// A subscription from the ring (recent history in memory) also joins live without a
/// gap, and a second subscription to the same session replaces the first.
#[actix_rt::test]
async fn ring_replay_and_resubscribe() {
    let fx = Fixture::new(1024);
    let sid = "ses_ring";
    fx.commit(sid, 1..=50, 200).await;
    let sink = fx.client(1, 1 << 20, true).await;
    fx.subscribe(1, sid, 40).await;
    fx.commit(sid, 51..=60, 200).await;
    fx.subscribe(1, sid, 55).await;
    fx.commit(sid, 61..=70, 200).await;
    let (frames, _) = wait_for("event 70", || async {
        let r = recorded(&sink).await;
        (seqs(&r.0, sid).last() == Some(&70)).then_some(r)
    })
    .await;
    let got = seqs(&frames, sid);
    // First subscription: 41..=60 (at least up to the re-subscribe); second: 56..=70.
    let second = got
        .iter()
        .rposition(|s| *s == 56)
        .unwrap_or_else(|| panic!("no replay from 56: {got:?}"));
    assert_eq!(got[second..], (56..=70).collect::<Vec<_>>()[..]);
    assert_eq!(got[..second], (41..=60).collect::<Vec<_>>()[..]);
}

/// A live subscriber that stops draining is cut off once its budget would overflow:
/// it gets every event that fit, in order, then `lagged` naming the first it missed,
/// and nothing more of that session; other subscribers are unaffected.
#[actix_rt::test]
async fn a_client_over_budget_is_told_where_to_resume() {
    let fx = Fixture::new(1024);
    let sid = "ses_lag";
    let stalled = fx.client(1, 8 << 10, false).await;
    let healthy = fx.client(2, 8 << 10, true).await;
    // Subscribed at the newest event, both go live at once (a replay, by contrast,
    // would wait for a stalled client to drain rather than drop it).
    fx.commit(sid, 1..=1, 100).await;
    fx.subscribe(1, sid, 1).await;
    fx.subscribe(2, sid, 1).await;
    for seq in 2..=40 {
        fx.commit(sid, seq..=seq, 1000).await;
    }
    let (frames, close) = recorded(&stalled).await;
    assert_eq!(close, None, "one lag does not close the client");
    let got = seqs(&frames, sid);
    assert!(!got.is_empty() && got.len() < 39, "{got:?}");
    assert_eq!(got, (2..=got.len() as u64 + 1).collect::<Vec<_>>());
    let notices: Vec<&serde_json::Value> =
        frames.iter().filter(|f| f["kind"] == "lagged").collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["sessionId"], sid);
    assert_eq!(notices[0]["resumeFrom"], got.len() as u64 + 2);
    assert_eq!(frames.last().map(|f| &f["kind"]), Some(&json!("lagged")));
    let (frames, _) = wait_for("the healthy client's events", || async {
        let r = recorded(&healthy).await;
        (seqs(&r.0, sid).len() == 39).then_some(r)
    })
    .await;
    assert_eq!(seqs(&frames, sid), (2..=40).collect::<Vec<_>>());
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(fx.metrics.lagged_notices.load(Relaxed), 1);
    assert_eq!(fx.metrics.clients_closed_slow.load(Relaxed), 0);
}

/// A client whose queue overflows lags on every busy subscription at once; that is
/// one event for the client, not one strike per subscription: it is told where to
/// resume each session, and stays connected.
#[actix_rt::test]
async fn many_subscriptions_lagging_together_do_not_close_the_client() {
    let fx = Fixture::new(1024);
    let stalled = fx.client(1, 8 << 10, false).await;
    let sessions: Vec<String> = (0..10).map(|i| format!("ses_{i}")).collect();
    for sid in &sessions {
        fx.commit(sid, 1..=1, 100).await;
        fx.subscribe(1, sid, 1).await;
    }
    for seq in 2..=12 {
        for sid in &sessions {
            fx.commit(sid, seq..=seq, 1000).await;
        }
    }
    let (frames, close) = recorded(&stalled).await;
    assert_eq!(close, None, "lagging subscriptions do not close the client");
    let notices: Vec<serde_json::Value> = frames
        .iter()
        .filter(|f| f["kind"] == "lagged")
        .map(|n| n["sessionId"].clone())
        .collect();
    assert_eq!(notices.len(), sessions.len(), "{notices:?}");
    for sid in &sessions {
        assert!(notices.contains(&json!(sid)), "{sid}: {notices:?}");
    }
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(fx.metrics.clients_closed_slow.load(Relaxed), 0);
}

/// A subscription taken up again and lagging again, three times within the window,
/// while the client writes nothing at all, closes the client with 1008 instead of a
/// third notice.
#[actix_rt::test]
async fn a_subscription_lagging_thrice_without_a_write_closes_the_client() {
    let fx = Fixture::new(1024);
    let stalled = fx.client(1, 8 << 10, false).await;
    let sid = "ses_a";
    fx.commit(sid, 1..=1, 100).await;
    let mut last = 1;
    for _ in 0..3 {
        // Subscribed at the newest event, it goes live at once (nothing to replay),
        // and the next commits overflow the queue it never writes.
        fx.subscribe(1, sid, last).await;
        for seq in last + 1..=last + 12 {
            fx.commit(sid, seq..=seq, 1000).await;
        }
        last += 12;
    }
    let (frames, close) = recorded(&stalled).await;
    let notices = frames.iter().filter(|f| f["kind"] == "lagged").count();
    assert_eq!(notices, 2, "{frames:?}");
    assert_eq!(close, Some(1008));
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(fx.metrics.lagged_notices.load(Relaxed), 2);
    assert_eq!(fx.metrics.clients_closed_slow.load(Relaxed), 1);
}

/// Positions never wrap: a subscription after the largest `seq` gets nothing from a
/// history, where `after + 1` wrapping to 0 would replay all of it.
#[actix_rt::test]
async fn the_largest_position_replays_nothing() {
    let fx = Fixture::new(1024);
    let sid = "ses_max";
    fx.commit(sid, 1..=5, 200).await;
    let sink = fx.client(1, 1 << 20, true).await;
    fx.subscribe(1, sid, u64::MAX).await;
    fx.subscribe(1, "ses_other", 0).await;
    let (frames, _) = wait_for("both acks", || async {
        let r = recorded(&sink).await;
        (r.0.iter()
            .filter(|f| f["kind"] == "chat_subscribed")
            .count()
            == 2)
            .then_some(r)
    })
    .await;
    assert!(seqs(&frames, sid).is_empty(), "{frames:?}");
}

/// The gateway's wish to hear that a client's queue drained is taken exactly once:
/// by the writer's `delivered` when the queue drains after the wish, or by the
/// gateway's own `drained_already` when it drained before the wish was made (the
/// writer looked for it too early and never reports). Before `drained_already`, a
/// replay parked in that window waited for the connection's next write, its ping.
#[test]
fn a_drain_before_the_wish_is_noticed_by_the_gateway_once() {
    let queue = ClientQueue::new(1000, Arc::new(crate::metrics::Metrics::default()));
    queue.add(800);
    // The writer drains while nobody asked to hear it.
    assert!(!queue.delivered(800));
    queue.want_drain();
    assert!(queue.drained_already());
    assert!(!queue.drained_already(), "taken once");
    // Asked while over half: the writer's report takes the wish, the gateway's does not.
    queue.add(800);
    queue.want_drain();
    assert!(!queue.drained_already(), "still over half");
    assert!(queue.delivered(800));
    assert!(!queue.drained_already(), "the writer took it");
}

/// How many replays [`replays_drained_from_another_thread_all_finish`] runs: without
/// `drained_already`, one in about fifty stalled.
const REPLAYS: u64 = 200;

/// Replays whose client drains on another thread, as a connection does: none is left
/// parked with a drained queue (each must finish; nothing else would wake it here,
/// as no ping is ever written).
#[actix_rt::test]
async fn replays_drained_from_another_thread_all_finish() {
    let fx = Fixture::new(16);
    let sid = "ses_drain";
    let stored = 1000;
    for start in (1..=stored).step_by(500) {
        fx.commit(sid, start..=start + 499, 300).await;
    }
    let writer = Arbiter::new();
    for id in 1..=REPLAYS {
        // A 2 KiB budget: pages of 1 KiB, about three events each.
        let queue = Arc::new(ClientQueue::new(2 << 10, fx.metrics.clone()));
        let (q, g) = (queue.clone(), fx.gateway.clone());
        let sink = Sink::start_in_arbiter(&writer.handle(), move |_| Sink::new(id, q, Some(g)));
        fx.connect(id, &sink, queue).await;
        fx.subscribe(id, sid, 0).await;
        let started = std::time::Instant::now();
        loop {
            let (frames, _) = recorded(&sink).await;
            if seqs(&frames, sid).last() == Some(&stored) {
                break;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "replay {id} stalled at {:?}",
                seqs(&frames, sid).last()
            );
            actix_rt::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        fx.gateway.do_send(Disconnect { client_id: id });
    }
    writer.stop();
}

/// A commit held back for subscribers over their soft limit asks one of them, the one
/// with the most queued, to report its drain, not every one: with a hundred clients
/// each commit used to cost a hundred `Drained` reports, each re-checking all hundred.
/// The gate still opens as soon as the last of them has drained.
#[actix_rt::test]
async fn a_held_commit_asks_only_the_fullest_subscriber_to_report() {
    let fx = Fixture::new(1024);
    let sid = "ses_held";
    // Subscribed at the newest event, both go live at once: the commit below reaches
    // them live, not through a replay (which asks for drain reports of its own).
    fx.commit(sid, 1..=1, 100).await;
    let mut queues = Vec::new();
    for id in [1, 2] {
        // Stalled sinks: the test drains their queues itself, as sockets would.
        let queue = Arc::new(ClientQueue::new(1 << 20, fx.metrics.clone()));
        let sink = Sink::new(id, queue.clone(), None).start();
        fx.connect(id, &sink, queue.clone()).await;
        fx.subscribe(id, sid, 1).await;
        queues.push(queue);
    }
    let (fullest, other) = (&queues[0], &queues[1]);
    // Client 1 also has 5 KB of its own replies waiting: it has the most queued.
    fullest.add(5000);
    fx.commit(sid, 2..=11, 1000).await;
    assert!(other.queued() > other.soft_limit());
    assert!(
        !other.delivered(other.queued()),
        "the other subscriber was not asked to report"
    );
    assert!(
        fullest.delivered(fullest.queued()),
        "the fullest subscriber reports its drain"
    );
    fx.gateway
        .send(Drained { client_id: 1 })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fx.gate.published(), 11, "both drained: the gate is open");
}
