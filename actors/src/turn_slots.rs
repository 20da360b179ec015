//! `--max-concurrent-turns`: at most that many turns run at once across the server's
//! sessions. A turn takes a [`TurnSlot`] before its agent starts; when none is free it
//! waits in one line, in order of arrival (its session shows status `waiting` and its
//! place), and starts as slots are given back (a slot goes back when its turn ends,
//! however it ends). A turn a Driver delegated to its Worker never waits: its Driver's
//! turn holds a slot while it waits for that turn, so making it wait could keep both
//! waiting forever; it takes a slot beyond the limit instead ([`TurnSlots::exempt`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use actix::prelude::*;
use tokio::sync::oneshot;

use crate::clock::now_ms;
use crate::ids::SessionId;

/// Tells a session its turn's new place in the line (1 is next).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct LinePlace {
    /// The waiting turn's ticket, as [`Admission::Queued`] gave it.
    pub ticket: u64,
    /// Its place, from 1.
    pub place: usize,
}

/// The turn slots of one server; clones share them.
#[derive(Debug, Clone, Default)]
pub struct TurnSlots {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// `--max-concurrent-turns`; `None`: no limit.
    limit: Option<usize>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Slots held, exempt ones included.
    running: usize,
    /// The next ticket's number.
    next: u64,
    /// Turns waiting, oldest first.
    waiting: VecDeque<Waiter>,
}

/// A turn waiting for a slot.
#[derive(Debug)]
struct Waiter {
    ticket: u64,
    /// Its session.
    session: SessionId,
    /// Since when, epoch ms.
    since_ms: u64,
    /// Where the slot goes.
    grant: oneshot::Sender<TurnSlot>,
    /// Its session, told when its place changes.
    place: Recipient<LinePlace>,
}

/// The right to run one turn; given back when dropped (its turn holds it until it
/// ends).
#[derive(Debug)]
pub struct TurnSlot {
    slots: TurnSlots,
    /// False once the slots took it back themselves (a grant nobody received).
    held: bool,
}

impl Drop for TurnSlot {
    fn drop(&mut self) {
        if self.held {
            self.slots.give_back();
        }
    }
}

/// What a turn asking for a slot gets.
#[derive(Debug)]
pub enum Admission {
    /// A slot: start now.
    Now(TurnSlot),
    /// A place in line: the slot comes through `granted`.
    Queued {
        /// Names the place ([`TurnSlots::withdraw`], [`LinePlace`]).
        ticket: u64,
        /// The place, from 1.
        place: usize,
        /// Where the slot arrives.
        granted: oneshot::Receiver<TurnSlot>,
    },
}

/// A waiting turn as `GET /fleet` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingTurn {
    /// Its session.
    pub session: SessionId,
    /// Since when, epoch ms.
    pub since_ms: u64,
}

impl TurnSlots {
    /// Slots for at most `limit` turns at once (`None`: any number).
    pub fn new(limit: Option<usize>) -> TurnSlots {
        TurnSlots {
            inner: Arc::new(Inner {
                limit,
                state: Mutex::default(),
            }),
        }
    }

    /// The limit, if any.
    pub fn limit(&self) -> Option<usize> {
        self.inner.limit
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves counts that are still whole numbers;
        // going on beats refusing every turn.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn slot(&self) -> TurnSlot {
        TurnSlot {
            slots: self.clone(),
            held: true,
        }
    }

    /// A slot for a turn of `session` now when one is free and nobody waits, else a
    /// place at the end of the line; `place` is told when that place changes.
    pub fn admit(&self, session: &str, place: Recipient<LinePlace>) -> Admission {
        let mut state = self.state();
        let free = self.inner.limit.is_none_or(|limit| state.running < limit);
        if free && state.waiting.is_empty() {
            state.running += 1;
            drop(state);
            return Admission::Now(self.slot());
        }
        state.next += 1;
        let ticket = state.next;
        let (grant, granted) = oneshot::channel();
        state.waiting.push_back(Waiter {
            ticket,
            session: session.into(),
            since_ms: now_ms(),
            grant,
            place,
        });
        Admission::Queued {
            ticket,
            place: state.waiting.len(),
            granted,
        }
    }

    /// A slot that never waits (a delegated turn): it counts while held, so it
    /// delays the turns that wait.
    pub fn exempt(&self) -> TurnSlot {
        self.state().running += 1;
        self.slot()
    }

    /// The turn holding `ticket` ended while it waited: it leaves the line, and the
    /// turns behind it move up.
    pub fn withdraw(&self, ticket: u64) {
        let mut state = self.state();
        let Some(at) = state.waiting.iter().position(|w| w.ticket == ticket) else {
            return;
        };
        state.waiting.remove(at);
        tell_places(&state, at);
    }

    /// A slot came back: the oldest waiting turns get the free ones.
    fn give_back(&self) {
        let mut state = self.state();
        state.running = state.running.saturating_sub(1);
        let mut moved = false;
        while self.inner.limit.is_none_or(|limit| state.running < limit) {
            let Some(waiter) = state.waiting.pop_front() else {
                break;
            };
            moved = true;
            state.running += 1;
            if let Err(mut slot) = waiter.grant.send(self.slot()) {
                // Its turn is gone: the slot is free again (taken back here, under
                // the lock, so its drop does not give it back twice).
                slot.held = false;
                state.running -= 1;
            }
        }
        if moved {
            tell_places(&state, 0);
        }
    }

    /// The slots held (exempt ones included) and the turns waiting, oldest first.
    pub fn view(&self) -> (usize, Vec<WaitingTurn>) {
        let state = self.state();
        let waiting = state
            .waiting
            .iter()
            .map(|w| WaitingTurn {
                session: w.session.clone(),
                since_ms: w.since_ms,
            })
            .collect();
        (state.running, waiting)
    }
}

/// Tells each waiting turn from index `from` on its new place.
fn tell_places(state: &State, from: usize) {
    for (i, waiter) in state.waiting.iter().enumerate().skip(from) {
        waiter.place.do_send(LinePlace {
            ticket: waiter.ticket,
            place: i + 1,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the places it is told.
    struct Places(Arc<Mutex<Vec<(u64, usize)>>>);

    impl Actor for Places {
        type Context = Context<Self>;
    }

    impl Handler<LinePlace> for Places {
        type Result = ();
        fn handle(&mut self, msg: LinePlace, _: &mut Context<Self>) {
            self.0.lock().unwrap().push((msg.ticket, msg.place));
        }
    }

    fn queued(a: Admission) -> (u64, usize, oneshot::Receiver<TurnSlot>) {
        match a {
            Admission::Queued {
                ticket,
                place,
                granted,
            } => (ticket, place, granted),
            Admission::Now(_) => panic!("expected to wait"),
        }
    }

    #[actix_rt::test]
    async fn turns_beyond_the_limit_wait_in_order_and_start_as_slots_come_back() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let places = Places(told.clone()).start().recipient();
        let slots = TurnSlots::new(Some(2));
        let Admission::Now(a) = slots.admit("a", places.clone()) else {
            panic!("a waits")
        };
        let Admission::Now(b) = slots.admit("b", places.clone()) else {
            panic!("b waits")
        };
        let (_, c_place, mut c) = queued(slots.admit("c", places.clone()));
        let (d_ticket, d_place, d) = queued(slots.admit("d", places.clone()));
        let (_, e_place, mut e) = queued(slots.admit("e", places.clone()));
        assert_eq!((c_place, d_place, e_place), (1, 2, 3));
        let (running, waiting) = slots.view();
        let who: Vec<&str> = waiting.iter().map(|w| w.session.as_str()).collect();
        assert_eq!((running, who), (2, vec!["c", "d", "e"]));
        // d gives up; e moves up to 2.
        slots.withdraw(d_ticket);
        drop(d);
        // A delegated turn never waits, and counts.
        let exempt = slots.exempt();
        assert_eq!(slots.view().0, 3);
        drop(a);
        // Three held by b and the exempt one + nothing: still at the limit after a
        // left (2 of 2), so c still waits.
        assert!(c.try_recv().is_err());
        drop(exempt);
        let c_slot = c.await.unwrap();
        assert!(e.try_recv().is_err());
        drop(b);
        let e_slot = e.await.unwrap();
        assert_eq!(slots.view(), (2, Vec::new()));
        drop((c_slot, e_slot));
        assert_eq!(slots.view().0, 0);
        // The place messages go through the actor's mailbox: wait for e's.
        let e_moved = (d_ticket + 1, 2);
        for _ in 0..200 {
            if told.lock().unwrap().contains(&e_moved) {
                break;
            }
            actix_rt::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let told = told.lock().unwrap().clone();
        assert!(told.contains(&e_moved), "{told:?}");
    }

    #[actix_rt::test]
    async fn a_grant_whose_turn_is_gone_goes_to_the_next() {
        let places = Places(Arc::default()).start().recipient();
        let slots = TurnSlots::new(Some(1));
        let Admission::Now(a) = slots.admit("a", places.clone()) else {
            panic!()
        };
        let (_, _, gone) = queued(slots.admit("b", places.clone()));
        let (_, _, next) = queued(slots.admit("c", places.clone()));
        drop(gone);
        drop(a);
        let slot = next.await.unwrap();
        assert_eq!(slots.view().0, 1);
        drop(slot);
        assert_eq!(slots.view().0, 0);
        // Without a limit nothing waits.
        let free = TurnSlots::default();
        let held: Vec<Admission> = (0..50).map(|_| free.admit("x", places.clone())).collect();
        assert!(held.iter().all(|a| matches!(a, Admission::Now(_))));
    }
}
