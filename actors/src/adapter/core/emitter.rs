//! [`Emitter`]: an adapter's way to its session.

use actix::Recipient;
use tandem_protocol::EventBody;

use crate::adapter::messages::{AgentItem, AgentOutput, Pace};
use crate::ids::TurnId;

/// Events between two waits at the session's flow gate: the session's mailbox stays
/// short (an interrupt behind it is handled promptly) and a fast vendor cannot outrun
/// fan-out to clients.
pub const AWAIT_EVERY: u64 = 32;

/// Hands an adapter's output to its session and counts events for pacing.
///
/// Every adapter reports through one of these. After emitting, a producer asks
/// [`Emitter::take_due`] whether a pacing window filled and, if so, waits on the
/// returned [`PaceWait`] before producing more (an actor with `ctx.wait`, a stdout
/// reader by returning it from its handler, an async script by awaiting it).
#[derive(Clone)]
pub struct Emitter {
    /// The session actor.
    out: Recipient<AgentOutput>,
    /// The session's pacing endpoint (answers once its events are fanned out).
    pace: Recipient<Pace>,
    /// History events emitted so far.
    emitted: u64,
    /// A window filled since the last [`Emitter::take_due`].
    due: bool,
}

impl Emitter {
    /// An emitter reporting to `out`, pacing at `pace`.
    pub fn new(out: Recipient<AgentOutput>, pace: Recipient<Pace>) -> Self {
        Emitter {
            out,
            pace,
            emitted: 0,
            due: false,
        }
    }

    /// Appends a history event for `turn_id` (`None`: outside any turn).
    pub fn event(&mut self, turn_id: Option<TurnId>, body: EventBody) {
        self.emitted += 1;
        if self.emitted.is_multiple_of(AWAIT_EVERY) {
            self.due = true;
        }
        self.send(turn_id, AgentItem::Event(body));
    }

    /// Appends several history events for `turn_id` as one message (and one store
    /// write); pacing counts each of them.
    pub fn events(&mut self, turn_id: Option<TurnId>, bodies: Vec<EventBody>) {
        if bodies.is_empty() {
            return;
        }
        let before = self.emitted / AWAIT_EVERY;
        self.emitted += bodies.len() as u64;
        if self.emitted / AWAIT_EVERY != before {
            self.due = true;
        }
        self.send(turn_id, AgentItem::Events(bodies));
    }

    /// Hands over an item that is not a history event (tasks, approvals, usage, the
    /// vendor's session id). Turn ends go through [`super::TurnSlot`] only.
    pub fn send(&self, turn_id: Option<TurnId>, item: AgentItem) {
        debug_assert!(
            !matches!(item, AgentItem::TurnEnded { .. }),
            "turn ends go through TurnSlot"
        );
        self.deliver(turn_id, item);
    }

    /// Sends without the turn-end check; for [`super::TurnSlot`].
    pub(super) fn deliver(&self, turn_id: Option<TurnId>, item: AgentItem) {
        // The session's mailbox is unbounded by design: pacing (below) keeps it short.
        self.out.do_send(AgentOutput { turn_id, item });
    }

    /// The session to report to, for what must outlive this emitter (a turn slot).
    pub(super) fn recipient(&self) -> Recipient<AgentOutput> {
        self.out.clone()
    }

    /// A wait at the session's flow gate when a window of events filled since the last
    /// call; `None` otherwise.
    pub fn take_due(&mut self) -> Option<PaceWait> {
        std::mem::take(&mut self.due).then(|| PaceWait(self.pace.clone()))
    }
}

/// A pending wait at the session's flow gate.
#[must_use = "a producer that does not wait can outrun fan-out"]
pub struct PaceWait(Recipient<Pace>);

impl PaceWait {
    /// Resolves once the session's events up to a small window have been fanned out;
    /// false when the session is gone (the producer should stop).
    pub async fn wait(self) -> bool {
        self.0.send(Pace).await.is_ok()
    }
}
