//! The vendor CLI processes that serve sessions one each (Claude Code, ACP agents),
//! across vendors: at most `--max-live-processes` of them run at once. A process
//! needs a [`Seat`] before it starts; when every seat is taken, the least recently
//! used idle process is asked to close ([`Evict`]) and the start waits, in order of
//! arrival, until a seat is given back (a seat goes back when its process has exited,
//! so closing ones still count). A process with a turn or background work running is
//! never asked. What `GET /fleet` shows comes from here too.
//!
//! Codex's app-server, one process for many sessions, takes one seat: it is busy while
//! any of its sessions is, and an idle one closed to make room resumes its threads in
//! the next process (`adapter/codex/server.rs`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use actix::prelude::*;
use tokio::sync::oneshot;

use super::VendorId;

use crate::ids::SessionId;

/// Asks an adapter to close its idle process to make room for another session's; an
/// adapter whose process is busy again by then says so with [`Fleet::kept`].
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Evict {
    /// The seat of the process to close (a process started since has another).
    pub seat: u64,
}

/// The fleet of one server; clones share it.
#[derive(Debug, Clone, Default)]
pub struct Fleet {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// `--max-live-processes`; `None`: no limit.
    limit: Option<usize>,
    /// `--max-process-rss`, bytes: a process tree above it is restarted between turns.
    rss_limit: Option<u64>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The next seat's number.
    next: u64,
    /// Seats taken, by number.
    seats: BTreeMap<u64, Taken>,
    /// Starts waiting for a seat, oldest first.
    waiting: VecDeque<Waiter>,
}

/// A taken seat: the process in it and what the fleet knows of it.
#[derive(Debug)]
struct Taken {
    /// The session it serves.
    session: SessionId,
    /// Its vendor.
    vendor: VendorId,
    /// Its pid, once started.
    pid: Option<u32>,
    /// A turn or background work runs in it: never evicted.
    busy: bool,
    /// Asked to close, or closed by its adapter: it is on its way out.
    evicting: bool,
    /// When it last stopped being busy (the least recently used goes first).
    idle_since: Instant,
    /// When it took the seat, epoch ms.
    since_ms: u64,
    /// Its adapter, asked to close it.
    evict: Recipient<Evict>,
}

/// A start waiting for a seat.
#[derive(Debug)]
struct Waiter {
    /// The session it serves.
    session: SessionId,
    /// Its vendor.
    vendor: VendorId,
    /// Its adapter (the seat's `evict` once granted).
    evict: Recipient<Evict>,
    /// Since when, epoch ms.
    since_ms: u64,
    /// Where the seat goes.
    grant: oneshot::Sender<Seat>,
}

/// A seat: the right to run one process. Given back when dropped (the supervisor
/// holds it until the process has exited).
#[derive(Debug)]
pub struct Seat {
    fleet: Fleet,
    id: u64,
    /// False for a seat the fleet took back itself (a grant nobody received).
    held: bool,
}

impl Seat {
    /// Its number (for [`Fleet::set_busy`] and [`Evict`]).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The process in it has started.
    pub fn started(&self, pid: u32) {
        if let Some(seat) = self.fleet.state().seats.get_mut(&self.id) {
            seat.pid = Some(pid);
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        if self.held {
            self.fleet.give_back(self.id);
        }
    }
}

/// What [`Fleet::take`] answers.
#[derive(Debug)]
pub enum Admission {
    /// A seat now.
    Now(Seat),
    /// Every seat is taken: one comes through here when given back (an idle process
    /// was asked to close, where there was one).
    Wait(oneshot::Receiver<Seat>),
}

/// One process as `GET /fleet` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatView {
    /// The session it serves.
    pub session: SessionId,
    /// Its vendor.
    pub vendor: VendorId,
    /// Its pid, once started.
    pub pid: Option<u32>,
    /// A turn or background work runs in it.
    pub busy: bool,
    /// Asked to close to make room.
    pub closing: bool,
    /// When it took its seat, epoch ms.
    pub since_ms: u64,
}

/// A start waiting for a seat, as `GET /fleet` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaiterView {
    /// The session.
    pub session: SessionId,
    /// Its vendor.
    pub vendor: VendorId,
    /// Since when, epoch ms.
    pub since_ms: u64,
}

impl Fleet {
    /// A fleet of at most `limit` processes (`None`: no limit), each restarted
    /// between turns once its memory is over `rss_limit` bytes.
    pub fn new(limit: Option<usize>, rss_limit: Option<u64>) -> Fleet {
        Fleet {
            inner: Arc::new(Inner {
                limit: limit.map(|l| l.max(1)),
                rss_limit,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The limit, if any.
    pub fn limit(&self) -> Option<usize> {
        self.inner.limit
    }

    /// The `info` text of a process that reopened a conversation its predecessor
    /// (`who`) left to make room.
    pub fn resumed_note(&self, who: &str) -> String {
        let limit = self.limit().unwrap_or_default();
        format!(
            "resumed: {who} was closed while idle to make room for another session's (at most {limit} agent processes run at once); its conversation goes on"
        )
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A seat for a process of `session`, whose adapter `evict` is asked to close it
    /// later if it is idle when room is needed. The new process counts as busy (it
    /// starts for a turn).
    pub fn take(&self, session: &str, vendor: &VendorId, evict: Recipient<Evict>) -> Admission {
        let mut state = self.state();
        if self
            .inner
            .limit
            .is_none_or(|limit| state.seats.len() < limit)
        {
            let id = state.seat(session, vendor, evict);
            return Admission::Now(Seat {
                fleet: self.clone(),
                id,
                held: true,
            });
        }
        let (grant, granted) = oneshot::channel();
        state.waiting.push_back(Waiter {
            session: session.into(),
            vendor: vendor.clone(),
            evict,
            since_ms: crate::clock::now_ms(),
            grant,
        });
        state.make_room();
        Admission::Wait(granted)
    }

    /// The process in seat `id` is busy (a turn or background work runs) or idle.
    /// Idle while starts wait, it is asked to close at once when it is the least
    /// recently used.
    pub fn set_busy(&self, id: u64, busy: bool) {
        let mut state = self.state();
        let Some(seat) = state.seats.get_mut(&id) else {
            return;
        };
        if seat.busy && !busy {
            seat.idle_since = Instant::now();
        }
        seat.busy = busy;
        state.make_room();
    }

    /// `session`'s waiting start gave up (its turn was interrupted): it leaves the
    /// line at once (its adapter then sees the wait end without a seat).
    pub fn withdraw(&self, session: &str) {
        let mut state = self.state();
        state.waiting.retain(|w| w.session != session);
        state.make_room();
    }

    /// The process in seat `id` is on its way out (its adapter closed or killed it):
    /// it counts as leaving, so a start waiting for it does not make another close.
    pub fn leaving(&self, id: u64) {
        let mut state = self.state();
        if let Some(seat) = state.seats.get_mut(&id) {
            seat.evicting = true;
        }
        state.make_room();
    }

    /// The adapter asked to close seat `id` kept its process (busy again by then):
    /// another idle one is asked instead, if starts still wait.
    pub fn kept(&self, id: u64) {
        let mut state = self.state();
        if let Some(seat) = state.seats.get_mut(&id) {
            seat.evicting = false;
            seat.busy = true;
        }
        state.make_room();
    }

    /// Seat `id` is free: the oldest waiting start gets it.
    fn give_back(&self, id: u64) {
        let mut state = self.state();
        state.seats.remove(&id);
        while self
            .inner
            .limit
            .is_none_or(|limit| state.seats.len() < limit)
        {
            let Some(waiter) = state.waiting.pop_front() else {
                break;
            };
            let seat_id = state.seat(&waiter.session, &waiter.vendor, waiter.evict);
            let seat = Seat {
                fleet: self.clone(),
                id: seat_id,
                held: true,
            };
            if let Err(mut unwanted) = waiter.grant.send(seat) {
                // The start gave up waiting (its turn was interrupted): the seat goes
                // to the next (taken back here, under the lock, not by its drop).
                unwanted.held = false;
                state.seats.remove(&seat_id);
            }
        }
        state.make_room();
    }

    /// The processes and the waiting starts, oldest first.
    pub fn view(&self) -> (Vec<SeatView>, Vec<WaiterView>) {
        let state = self.state();
        let seats = state
            .seats
            .values()
            .map(|s| SeatView {
                session: s.session.clone(),
                vendor: s.vendor.clone(),
                pid: s.pid,
                busy: s.busy,
                closing: s.evicting,
                since_ms: s.since_ms,
            })
            .collect();
        let waiting = state
            .waiting
            .iter()
            .filter(|w| !w.grant.is_closed())
            .map(|w| WaiterView {
                session: w.session.clone(),
                vendor: w.vendor.clone(),
                since_ms: w.since_ms,
            })
            .collect();
        (seats, waiting)
    }
}

impl State {
    /// Takes a new seat (the caller checked there is room).
    fn seat(&mut self, session: &str, vendor: &VendorId, evict: Recipient<Evict>) -> u64 {
        self.next += 1;
        let id = self.next;
        self.seats.insert(
            id,
            Taken {
                session: session.into(),
                vendor: vendor.clone(),
                pid: None,
                busy: true,
                evicting: false,
                idle_since: Instant::now(),
                since_ms: crate::clock::now_ms(),
                evict,
            },
        );
        id
    }

    /// While more starts wait than processes are on their way out, asks the least
    /// recently used idle process to close.
    fn make_room(&mut self) {
        self.waiting.retain(|w| !w.grant.is_closed());
        loop {
            let leaving = self.seats.values().filter(|s| s.evicting).count();
            if self.waiting.len() <= leaving {
                return;
            }
            let oldest = self
                .seats
                .iter_mut()
                .filter(|(_, s)| !s.busy && !s.evicting)
                .min_by_key(|(_, s)| s.idle_since);
            let Some((id, seat)) = oldest else {
                return;
            };
            seat.evicting = true;
            tracing::info!(session = %seat.session, vendor = %seat.vendor, pid = ?seat.pid, "closing an idle agent process to make room");
            seat.evict.do_send(Evict { seat: *id });
        }
    }
}

/// An adapter's place in the fleet: the seat of its live process, whether a start
/// waits for one, and whether its last process was closed to make room.
#[derive(Debug)]
pub struct Place {
    fleet: Fleet,
    /// The session.
    session: SessionId,
    /// Its vendor.
    vendor: VendorId,
    /// The seat of the live process.
    seat: Option<u64>,
    /// A start waits for a seat.
    pub waiting: bool,
    /// The last process was closed to make room: said when the next one has reopened
    /// the conversation.
    pub evicted: bool,
}

impl Place {
    /// The place of `session`'s adapter of `vendor` in `fleet`.
    pub fn new(fleet: Fleet, session: &str, vendor: &VendorId) -> Place {
        Place {
            fleet,
            session: session.into(),
            vendor: vendor.clone(),
            seat: None,
            waiting: false,
            evicted: false,
        }
    }

    /// A seat for a new process (see [`Fleet::take`]).
    pub fn take(&self, evict: Recipient<Evict>) -> Admission {
        self.fleet.take(&self.session, &self.vendor, evict)
    }

    /// The live process sits in `seat`.
    pub fn seated(&mut self, seat: &Seat) {
        self.seat = Some(seat.id());
    }

    /// The live process is going (closed, killed or exited): its seat goes back when
    /// it has exited, and counts as leaving until then.
    pub fn left(&mut self) {
        if let Some(seat) = self.seat.take() {
            self.fleet.leaving(seat);
        }
    }

    /// Whether `seat` is the live process's.
    pub fn is(&self, seat: u64) -> bool {
        self.seat == Some(seat)
    }

    /// The turn whose start waits for a seat was interrupted: it leaves the line.
    pub fn withdraw(&mut self) {
        if std::mem::take(&mut self.waiting) {
            self.fleet.withdraw(&self.session);
        }
    }

    /// A turn or background work runs in the live process, or nothing does.
    pub fn busy(&self, busy: bool) {
        if let Some(seat) = self.seat {
            self.fleet.set_busy(seat, busy);
        }
    }

    /// Asked to close, the adapter keeps its process (busy again).
    pub fn kept(&self) {
        if let Some(seat) = self.seat {
            self.fleet.kept(seat);
        }
    }

    /// When the live process `pid` (with the processes it started) uses more memory
    /// than `--max-process-rss`: the `info` text saying it is restarted.
    pub fn over_memory(&self, pid: u32, who: &str) -> Option<String> {
        let limit = self.fleet.inner.rss_limit?;
        let rss = process_usage(pid).rss_bytes;
        (rss > limit).then(|| {
            format!(
                "restarted: {who} used {} MiB, over --max-process-rss {} MiB; it is closed between turns and its session resumed at the next",
                rss >> 20,
                limit >> 20
            )
        })
    }

    /// The `info` text of a start that waits for a seat.
    pub fn waiting_note(&self, who: &str) -> String {
        let limit = self.fleet.limit().unwrap_or_default();
        format!(
            "waiting to start {who}: {limit} agent processes run at once (--max-live-processes), and none is idle"
        )
    }

    /// The `info` text of a process that reopened a conversation its predecessor
    /// left to make room.
    pub fn resumed_note(&self, who: &str) -> String {
        self.fleet.resumed_note(who)
    }
}

/// What a process and the processes it started use now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// CPU time (user and system) of those still running, milliseconds.
    pub cpu_ms: u64,
}

/// Linux's `USER_HZ`: `/proc/PID/stat` counts CPU time in these ticks a second (100
/// on every Linux architecture tandem builds for).
const TICKS_PER_SECOND: u64 = 100;

/// Which process started which, read once from `/proc`, to measure several process
/// trees (`GET /fleet`) without reading it again for each.
#[derive(Debug, Default)]
pub struct ProcessTable {
    /// Children by parent pid.
    children: BTreeMap<u32, Vec<u32>>,
}

impl ProcessTable {
    /// The machine's processes now.
    pub fn read() -> ProcessTable {
        let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(child) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                if let Some(parent) = stat_fields(child).and_then(|f| f.first()?.parse().ok()) {
                    children.entry(parent).or_default().push(child);
                }
            }
        }
        ProcessTable { children }
    }

    /// The memory and CPU of `pid` and its descendants (an ACP agent's CLI, Claude
    /// Code's helpers); zero for what cannot be read (a process that just exited).
    pub fn usage(&self, pid: u32) -> Usage {
        let mut usage = Usage::default();
        let mut todo = vec![pid];
        let mut seen = 0;
        while let Some(p) = todo.pop() {
            // A pid reused into a loop cannot keep this going.
            seen += 1;
            if seen > 10_000 {
                break;
            }
            usage.rss_bytes += rss_bytes(p);
            if let Some(fields) = stat_fields(p) {
                // After the comm: state(0) ppid(1) ... utime(11) stime(12).
                let ticks: u64 = [11, 12]
                    .iter()
                    .filter_map(|i| fields.get(*i)?.parse::<u64>().ok())
                    .sum();
                usage.cpu_ms += ticks * 1000 / TICKS_PER_SECOND;
            }
            todo.extend(self.children.get(&p).into_iter().flatten());
        }
        usage
    }
}

/// [`ProcessTable::usage`] of one process tree.
pub fn process_usage(pid: u32) -> Usage {
    ProcessTable::read().usage(pid)
}

/// The fields of `/proc/PID/stat` after its `(comm)` (which may hold spaces), from
/// the parent pid on.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    Some(
        rest.split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect(),
    )
}

/// `VmRSS` of `/proc/PID/status`, in bytes.
fn rss_bytes(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the evictions it is asked for.
    struct Recorder(Arc<Mutex<Vec<u64>>>);

    impl Actor for Recorder {
        type Context = Context<Self>;
    }

    impl Handler<Evict> for Recorder {
        type Result = ();
        fn handle(&mut self, msg: Evict, _: &mut Context<Self>) {
            self.0.lock().unwrap().push(msg.seat);
        }
    }

    fn recorder() -> (Recipient<Evict>, Arc<Mutex<Vec<u64>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        (Recorder(asked.clone()).start().recipient(), asked)
    }

    fn now(admission: Admission) -> Seat {
        match admission {
            Admission::Now(seat) => seat,
            Admission::Wait(_) => panic!("waits"),
        }
    }

    async fn settle() {
        for _ in 0..10 {
            actix::clock::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    #[actix_rt::test]
    async fn without_a_limit_every_start_gets_a_seat() {
        let fleet = Fleet::new(None, None);
        let (evict, _) = recorder();
        let seats: Vec<Seat> = (0..50)
            .map(|i| now(fleet.take(&format!("s{i}"), &VendorId::CLAUDE, evict.clone())))
            .collect();
        assert_eq!(fleet.view().0.len(), 50);
        drop(seats);
        assert!(fleet.view().0.is_empty());
    }

    #[actix_rt::test]
    async fn a_full_fleet_closes_the_least_recently_used_idle_process() {
        let fleet = Fleet::new(Some(2), None);
        let (evict, asked) = recorder();
        let a = now(fleet.take("a", &VendorId::CLAUDE, evict.clone()));
        let b = now(fleet.take("b", &VendorId::CLAUDE, evict.clone()));
        fleet.set_busy(b.id(), false);
        fleet.set_busy(a.id(), false);
        // Both idle, b longer: b is asked to close; the start waits for its seat.
        let Admission::Wait(mut granted) = fleet.take("c", &VendorId::CLAUDE, evict.clone()) else {
            panic!("a seat beyond the limit");
        };
        settle().await;
        assert_eq!(*asked.lock().unwrap(), [b.id()]);
        assert!(granted.try_recv().is_err(), "b still runs");
        let (seats, waiting) = fleet.view();
        assert!(seats.iter().any(|s| s.session == "b" && s.closing));
        assert_eq!(waiting.len(), 1);
        drop(b);
        let c = granted.try_recv().expect("the seat b gave back");
        assert_eq!(fleet.view().0.len(), 2);
        drop((a, c));
    }

    #[actix_rt::test]
    async fn busy_processes_are_never_asked_and_a_start_waits_for_one_to_idle() {
        let fleet = Fleet::new(Some(1), None);
        let (evict, asked) = recorder();
        let a = now(fleet.take("a", &VendorId::CLAUDE, evict.clone()));
        let Admission::Wait(mut granted) = fleet.take("b", &VendorId::CLAUDE, evict.clone()) else {
            panic!("a seat beyond the limit");
        };
        settle().await;
        assert!(asked.lock().unwrap().is_empty(), "a is busy");
        // a's turn ends: it is asked at once, since a start waits.
        fleet.set_busy(a.id(), false);
        settle().await;
        assert_eq!(*asked.lock().unwrap(), [a.id()]);
        // Its adapter had started another turn meanwhile: it keeps the process.
        fleet.kept(a.id());
        fleet.set_busy(a.id(), false);
        settle().await;
        assert_eq!(*asked.lock().unwrap(), [a.id(), a.id()]);
        drop(a);
        assert!(granted.try_recv().is_ok());
    }

    #[actix_rt::test]
    async fn a_start_that_gave_up_passes_its_seat_on() {
        let fleet = Fleet::new(Some(1), None);
        let (evict, _) = recorder();
        let a = now(fleet.take("a", &VendorId::CLAUDE, evict.clone()));
        let Admission::Wait(first) = fleet.take("b", &VendorId::CLAUDE, evict.clone()) else {
            panic!("a seat beyond the limit");
        };
        let Admission::Wait(mut second) = fleet.take("c", &VendorId::CLAUDE, evict.clone()) else {
            panic!("a seat beyond the limit");
        };
        drop(first);
        assert_eq!(fleet.view().1.len(), 1, "b no longer waits");
        drop(a);
        let c = second.try_recv().expect("c gets the seat");
        assert_eq!(fleet.view().0[0].session, "c");
        drop(c);
        assert!(fleet.view().0.is_empty());
    }

    #[test]
    fn a_process_tree_is_measured_with_its_children() {
        // A shell whose child sleeps: the tree holds both.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & wait"])
            // Not this test's output: the orphaned sleep must not hold it open.
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        for _ in 0..500 {
            let kids = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            if !kids.trim().is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let usage = process_usage(pid);
        let alone = rss_bytes(pid);
        assert!(alone > 0);
        assert!(usage.rss_bytes > alone, "{usage:?} vs {alone}");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(process_usage(pid), Usage::default(), "gone");
    }

    #[actix_rt::test]
    async fn a_process_its_adapter_closes_counts_as_leaving() {
        let fleet = Fleet::new(Some(2), None);
        let (evict, asked) = recorder();
        let mut a = Place::new(fleet.clone(), "a", &VendorId::CLAUDE);
        let a_seat = now(a.take(evict.clone()));
        a.seated(&a_seat);
        let b = now(fleet.take("b", &VendorId::CLAUDE, evict.clone()));
        fleet.set_busy(b.id(), false);
        // A restarts its process (new settings): the old one is closing, so the new
        // one waits for its seat and B's idle process is left alone.
        a.left();
        let Admission::Wait(mut granted) = a.take(evict.clone()) else {
            panic!("a seat beyond the limit");
        };
        settle().await;
        assert!(
            asked.lock().unwrap().is_empty(),
            "{:?}",
            asked.lock().unwrap()
        );
        drop(a_seat);
        assert!(granted.try_recv().is_ok());
        drop(b);
    }

    #[actix_rt::test]
    async fn a_withdrawn_start_leaves_the_line_at_once() {
        let fleet = Fleet::new(Some(1), None);
        let (evict, _) = recorder();
        let a = now(fleet.take("a", &VendorId::CLAUDE, evict.clone()));
        let mut b = Place::new(fleet.clone(), "b", &VendorId::CLAUDE);
        let Admission::Wait(mut granted) = b.take(evict.clone()) else {
            panic!("a seat beyond the limit");
        };
        b.waiting = true;
        assert_eq!(fleet.view().1.len(), 1);
        b.withdraw();
        assert!(fleet.view().1.is_empty());
        assert!(granted.try_recv().is_err(), "no seat comes");
        drop(a);
        assert!(fleet.view().0.is_empty(), "the freed seat went to nobody");
    }
}
