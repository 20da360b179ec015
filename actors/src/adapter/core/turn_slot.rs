//! [`TurnSlot`]: the turn an adapter is running, as one enum, and the only producer of
//! `TurnEnded`.

use actix::Recipient;
use tandem_protocol::{TurnId, TurnStatus};

use super::Emitter;
use crate::adapter::messages::{AgentItem, AgentOutput};

/// Why a turn is being stopped before the vendor ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A person or the Driver interrupted it: a turn that then ends in an error counts
    /// as interrupted.
    Interrupt,
    /// The adapter gave up on it (the model could not be reached): it ends `failed`
    /// with this message, whatever the vendor reports.
    Fail(String),
}

/// Where a turn stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Handed to the vendor, which has not yet started working on it (Codex has not
    /// answered `turn/start`; Claude has not picked up our message).
    Starting,
    /// The vendor is working on it.
    Live,
    /// Asked to stop; waiting for the vendor to confirm.
    Stopping(Stop),
}

/// One turn: the session's id for it and what the vendor adapter keeps about it.
#[derive(Debug)]
pub struct Turn<T> {
    /// The session's turn id; every output of the turn carries it.
    pub id: TurnId,
    /// The adapter's own state for the turn.
    pub data: T,
}

/// The slot's states.
#[derive(Debug)]
enum State<T> {
    Idle,
    Busy(Turn<T>, Phase),
}

/// The turn in flight, if any.
///
/// Every turn that [`TurnSlot::begin`] starts is reported ended exactly once: by
/// [`TurnSlot::end`], by a later `begin` that supersedes it, or, when the adapter stops
/// with a turn still in the slot, by the slot's `Drop`. Nothing else in an adapter can
/// produce `TurnEnded`.
pub struct TurnSlot<T> {
    state: State<T>,
    /// The session, told when a turn ends.
    out: Recipient<AgentOutput>,
}

impl<T> TurnSlot<T> {
    /// An idle slot reporting through `emitter`'s session.
    pub fn new(emitter: &Emitter) -> Self {
        TurnSlot {
            state: State::Idle,
            out: emitter.recipient(),
        }
    }

    /// Starts turn `id` in phase `Starting`. A turn still in the slot (the session never
    /// starts one while another runs, but an adapter must not rely on it) is reported
    /// `interrupted` and returned, so the adapter can stop the vendor's side of it.
    pub fn begin(&mut self, id: TurnId, data: T) -> Option<Turn<T>> {
        let old = self.take();
        if let Some(old) = &old {
            self.report(
                &old.id,
                TurnStatus::Interrupted,
                Some("superseded by a new turn".into()),
            );
        }
        self.state = State::Busy(Turn { id, data }, Phase::Starting);
        old
    }

    /// The turn in flight.
    pub fn get(&self) -> Option<&Turn<T>> {
        match &self.state {
            State::Idle => None,
            State::Busy(turn, _) => Some(turn),
        }
    }

    /// The turn in flight, to change the adapter's state for it.
    pub fn get_mut(&mut self) -> Option<&mut Turn<T>> {
        match &mut self.state {
            State::Idle => None,
            State::Busy(turn, _) => Some(turn),
        }
    }

    /// The id of the turn in flight.
    pub fn id(&self) -> Option<&TurnId> {
        self.get().map(|t| &t.id)
    }

    /// The id of the turn in flight, owned (outputs carry it).
    pub fn turn_id(&self) -> Option<TurnId> {
        self.id().cloned()
    }

    /// True when `id` is the turn in flight.
    pub fn is(&self, id: &str) -> bool {
        self.id().is_some_and(|t| t == id)
    }

    /// True when no turn is in flight.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
    }

    /// Where the turn in flight stands.
    pub fn phase(&self) -> Option<&Phase> {
        match &self.state {
            State::Idle => None,
            State::Busy(_, phase) => Some(phase),
        }
    }

    /// The vendor started working on the turn: `Starting` becomes `Live`. A turn asked
    /// to stop meanwhile stays `Stopping`.
    pub fn go_live(&mut self) {
        if let State::Busy(_, phase @ Phase::Starting) = &mut self.state {
            *phase = Phase::Live;
        }
    }

    /// Asks the turn in flight to stop; returns the phase it was in (`None` when idle),
    /// so the adapter knows whether the vendor can be asked now. A failure replaces an
    /// earlier interrupt; an interrupt does not replace a failure.
    pub fn stop(&mut self, reason: Stop) -> Option<Phase> {
        let State::Busy(_, phase) = &mut self.state else {
            return None;
        };
        let before = phase.clone();
        let keep = matches!(
            (&before, &reason),
            (Phase::Stopping(Stop::Fail(_)), Stop::Interrupt)
        );
        if !keep {
            *phase = Phase::Stopping(reason);
        }
        Some(before)
    }

    /// Ends the turn in flight with what the vendor reported, adjusted by why it was
    /// stopped (see [`Stop`]), and reports it to the session. Returns the turn; `None`
    /// (and nothing reported) when the slot was idle.
    pub fn end(&mut self, status: TurnStatus, error: Option<String>) -> Option<Turn<T>> {
        let State::Busy(turn, phase) = std::mem::replace(&mut self.state, State::Idle) else {
            return None;
        };
        let (status, error) = match phase {
            Phase::Stopping(Stop::Fail(message)) => (TurnStatus::Failed, Some(message)),
            Phase::Stopping(Stop::Interrupt) if status == TurnStatus::Failed => {
                (TurnStatus::Interrupted, None)
            }
            _ => (status, error),
        };
        self.report(&turn.id, status, error);
        Some(turn)
    }

    /// Takes the turn out without reporting it (only for `begin`, which reports it).
    fn take(&mut self) -> Option<Turn<T>> {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Idle => None,
            State::Busy(turn, _) => Some(turn),
        }
    }

    fn report(&self, turn_id: &TurnId, status: TurnStatus, error: Option<String>) {
        self.out.do_send(AgentOutput {
            turn_id: Some(turn_id.clone()),
            item: AgentItem::TurnEnded { status, error },
        });
    }
}

impl<T> Drop for TurnSlot<T> {
    /// An adapter that stops with a turn in flight (its actor was stopped) still ends
    /// it, so the session never waits for a turn no one runs.
    fn drop(&mut self) {
        if let Some(turn) = self.take() {
            self.report(
                &turn.id,
                TurnStatus::Failed,
                Some("the vendor adapter stopped during the turn".into()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use actix::prelude::*;

    use super::*;
    use crate::adapter::messages::Pace;

    /// Records every turn end it receives.
    #[derive(Default)]
    struct Sink {
        ends: Vec<(TurnId, TurnStatus, Option<String>)>,
    }

    impl Actor for Sink {
        type Context = Context<Self>;
    }

    impl Handler<AgentOutput> for Sink {
        type Result = ();
        fn handle(&mut self, msg: AgentOutput, _: &mut Context<Self>) {
            if let AgentItem::TurnEnded { status, error } = msg.item {
                let turn_id = msg.turn_id.unwrap_or_else(|| "(no turn)".into());
                self.ends.push((turn_id, status, error));
            }
        }
    }

    impl Handler<Pace> for Sink {
        type Result = ();
        fn handle(&mut self, _: Pace, _: &mut Context<Self>) {}
    }

    #[derive(Message)]
    #[rtype(result = "Vec<(TurnId, TurnStatus, Option<String>)>")]
    struct Ends;

    impl Handler<Ends> for Sink {
        type Result = MessageResult<Ends>;
        fn handle(&mut self, _: Ends, _: &mut Context<Self>) -> Self::Result {
            MessageResult(std::mem::take(&mut self.ends))
        }
    }

    fn slot(sink: &Addr<Sink>) -> TurnSlot<u32> {
        TurnSlot::new(&Emitter::new(
            sink.clone().recipient(),
            sink.clone().recipient(),
        ))
    }

    #[actix_rt::test]
    async fn every_turn_ends_exactly_once() {
        let sink = Sink::default().start();
        {
            let mut slot = slot(&sink);
            assert!(slot.begin("t1".into(), 1).is_none());
            assert_eq!(slot.phase(), Some(&Phase::Starting));
            slot.go_live();
            // Superseded: reported interrupted, handed back.
            let old = slot.begin("t2".into(), 2).map(|t| t.data);
            assert_eq!(old, Some(1));
            // A stopped turn that the vendor ends in an error is interrupted.
            assert_eq!(slot.stop(Stop::Interrupt), Some(Phase::Starting));
            slot.go_live();
            assert_eq!(slot.phase(), Some(&Phase::Stopping(Stop::Interrupt)));
            assert!(slot
                .end(TurnStatus::Failed, Some("aborted".into()))
                .is_some());
            // Ending an idle slot reports nothing.
            assert!(slot.end(TurnStatus::Completed, None).is_none());
            // A failure wins over an interrupt, in either order.
            slot.begin("t3".into(), 3);
            slot.stop(Stop::Fail("unreachable".into()));
            slot.stop(Stop::Interrupt);
            slot.end(TurnStatus::Interrupted, None);
            // Dropped with a turn in flight: still ends.
            slot.begin("t4".into(), 4);
        }
        let ends = sink.send(Ends).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ends,
            vec![
                (
                    TurnId::from("t1"),
                    TurnStatus::Interrupted,
                    Some("superseded by a new turn".to_string())
                ),
                (TurnId::from("t2"), TurnStatus::Interrupted, None),
                (
                    TurnId::from("t3"),
                    TurnStatus::Failed,
                    Some("unreachable".to_string())
                ),
                (
                    TurnId::from("t4"),
                    TurnStatus::Failed,
                    Some("the vendor adapter stopped during the turn".to_string())
                ),
            ]
        );
    }
}
