//! `fleet.get`: the vendor processes serving one session each and the turns waiting
//! for one (`crate::adapter::fleet`), with each process's memory and CPU, and the
//! turn slots (`crate::turn_slots`).

use tandem_protocol::fleet::{FleetInfo, FleetProcess, FleetWaiting, FleetWaitingTurn};

use super::VendorService;
use crate::adapter::fleet::ProcessTable;
use crate::error::RuntimeError;
use crate::Principal;

impl VendorService {
    /// `fleet.get`, for admins: every process with its session, vendor, memory and
    /// CPU, and the waiting turns.
    pub fn fleet(&self, who: &Principal) -> Result<FleetInfo, RuntimeError> {
        if !who.admin {
            return Err(RuntimeError::AccessDenied(
                "the fleet is for admins: it shows every user's sessions".into(),
            ));
        }
        let fleet = &self.services.fleet;
        let (seats, waiting) = fleet.view();
        let table = ProcessTable::read();
        let processes = seats
            .into_iter()
            .map(|seat| {
                let usage = seat.pid.map(|pid| table.usage(pid)).unwrap_or_default();
                FleetProcess {
                    session_id: seat.session,
                    vendor: seat.vendor.to_string(),
                    pid: seat.pid,
                    busy: seat.busy,
                    closing: seat.closing,
                    rss_bytes: usage.rss_bytes,
                    cpu_ms: usage.cpu_ms,
                    since: seat.since_ms,
                }
            })
            .collect();
        let waiting = waiting
            .into_iter()
            .map(|w| FleetWaiting {
                session_id: w.session,
                vendor: w.vendor.to_string(),
                since: w.since_ms,
            })
            .collect();
        let turns = &self.services.turns;
        let (running, waiting_turns) = turns.view();
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(FleetInfo {
            limit: fleet.limit().map(count),
            processes,
            waiting,
            turn_limit: turns.limit().map(count),
            turns_running: count(running),
            waiting_turns: waiting_turns
                .into_iter()
                .enumerate()
                .map(|(i, w)| FleetWaitingTurn {
                    session_id: w.session,
                    place: count(i + 1),
                    since: w.since_ms,
                })
                .collect(),
        })
    }
}
