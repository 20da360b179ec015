//! Backpressure across nodes: a session's producer also waits for the clients of the
//! other nodes that copy it.
//!
//! On one node a producer waits at its session's flow gate until the clients that
//! keep up have drained (see [`crate::flow`]). Another node's clients are served from
//! that node's copy ([`super::mirror`]), whose own gate its gateway advances the same
//! way; without more, the session's node would produce as fast as it can commit and
//! publish, and the events would wait in queues between the nodes (issue 38, point 3:
//! cross-node p99 5–9× one node's).
//!
//! So a node that copies a session reports, on `tandem.nodes.<owner>.delivered`, how
//! far its gate got (`<session> <node> <seq>`, core NATS, at each advance). The owner
//! keeps the newest report per session and node ([`Followers`]) and limits the
//! session's gate ([`crate::flow::FlowGate::limit_remote`]) to the slowest follower's
//! seq plus [`SLACK`]. A follower does not hold the gate when it has not reported for
//! [`STALE`] (its node is gone or stuck) or is more than [`FAR`] behind (it is
//! catching up on the history), so a node that leaves never stops a session for
//! more than [`STALE`] and a producer never waits at the gate for more than it
//! already did (`PACE_LIMIT`). Reports are advisory: losing one only lets a producer
//! run further ahead, never loses or reorders an event.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Cluster;
use crate::flow::FlowGate;

/// Events a producer may be ahead of the slowest follower's delivery, beyond the
/// flow window it has anyway.
pub(super) const SLACK: u64 = 256;
/// A follower silent this long no longer holds the gate.
pub(super) const STALE: Duration = Duration::from_millis(250);
/// A follower this far behind is catching up and does not hold the gate.
pub(super) const FAR: u64 = 8192;
/// How often the owner drops stale followers.
pub(super) const SWEEP: Duration = Duration::from_millis(100);

/// The subject a node hears its sessions' delivery reports on.
pub(super) fn subject(owner: &str) -> String {
    format!("tandem.nodes.{owner}.delivered")
}

/// Reports how far this node's copy of `session_id` was delivered, at each advance of
/// its gate, for as long as it runs (see [`Stop`]).
pub(super) async fn report(cluster: Cluster, session_id: Arc<str>, gate: Arc<FlowGate>) {
    let mut told = gate.published();
    loop {
        gate.wait_for(told + 1, Duration::from_secs(60)).await;
        let now = gate.published();
        if now <= told {
            continue;
        }
        told = now;
        let Some(owner) = cluster
            .inner
            .remote
            .get(&*session_id)
            .map(|r| r.node.clone())
        else {
            continue;
        };
        let payload = format!("{session_id} {} {now}", cluster.node());
        if let Err(e) = cluster
            .inner
            .client
            .publish(subject(&owner), payload.into())
            .await
        {
            tracing::debug!(session = %session_id, error = %e, "delivery report not sent");
        }
    }
}

/// Stops a spawned task when dropped.
pub(super) struct Stop(pub tokio::task::JoinHandle<()>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The owner's side: who copies its sessions and how far they delivered.
#[derive(Default)]
pub(super) struct Followers {
    sessions: HashMap<Arc<str>, Session>,
}

/// One local session's gate and followers.
struct Session {
    gate: Arc<FlowGate>,
    /// Per follower node: the seq it delivered and when it said so.
    nodes: HashMap<String, (u64, Instant)>,
}

impl Followers {
    /// Remembers a local session's gate (from its committed events).
    pub fn gate(&mut self, sid: &Arc<str>, gate: &Arc<FlowGate>) {
        match self.sessions.get_mut(sid) {
            Some(s) if Arc::ptr_eq(&s.gate, gate) => {}
            Some(s) => {
                s.gate.limit_remote(u64::MAX);
                s.gate = gate.clone();
            }
            None => {
                self.sessions.insert(
                    sid.clone(),
                    Session {
                        gate: gate.clone(),
                        nodes: HashMap::new(),
                    },
                );
            }
        }
    }

    /// Takes a report; `head` is the newest seq of the session this node published.
    pub fn heard(&mut self, payload: &[u8], head: impl Fn(&str) -> Option<u64>) {
        let Some((sid, node, seq)) = std::str::from_utf8(payload).ok().and_then(|p| {
            let mut words = p.split(' ');
            let sid = words.next()?;
            let node = words.next()?;
            let seq = words.next()?.parse::<u64>().ok()?;
            Some((sid, node, seq))
        }) else {
            return;
        };
        let Some(session) = self.sessions.get_mut(sid) else {
            return;
        };
        let entry = session
            .nodes
            .entry(node.to_string())
            .or_insert((0, Instant::now()));
        *entry = (entry.0.max(seq), Instant::now());
        apply(session, head(sid), Instant::now());
    }

    /// Drops followers that went silent, and sessions that have none.
    pub fn sweep(&mut self, head: impl Fn(&str) -> Option<u64>) {
        let now = Instant::now();
        self.sessions.retain(|sid, session| {
            if session.nodes.is_empty() {
                return false;
            }
            session
                .nodes
                .retain(|_, (_, at)| now.duration_since(*at) < STALE * 4);
            apply(session, head(sid), now);
            true
        });
    }
}

/// Limits a session's gate by its followers that keep up.
fn apply(session: &Session, head: Option<u64>, now: Instant) {
    let limit = session
        .nodes
        .values()
        .filter(|(seq, at)| {
            now.duration_since(*at) < STALE && head.is_some_and(|h| h.saturating_sub(*seq) <= FAR)
        })
        .map(|(seq, _)| seq.saturating_add(SLACK))
        .min()
        .unwrap_or(u64::MAX);
    session.gate.limit_remote(limit);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_follower_that_keeps_up_limits_the_gate() {
        let gate = Arc::new(FlowGate::new(0));
        let mut f = Followers::default();
        let sid: Arc<str> = Arc::from("s1");
        f.gate(&sid, &gate);
        let head = |_: &str| Some(1000);
        f.heard(b"s1 b 900", head);
        f.heard(b"s1 c 700", head);
        assert_eq!(gate.remote_limit(), 700 + SLACK);
        // A follower far behind (catching up) holds nothing.
        f.heard(b"s1 d 10", |_| Some(10 + FAR + 1));
        assert_eq!(gate.remote_limit(), 700 + SLACK);
        // Garbage and unknown sessions are ignored.
        f.heard(b"s2 b 5", head);
        f.heard(b"nonsense", head);
        assert_eq!(gate.remote_limit(), 700 + SLACK);
    }
}
