//! `fleet.get`: the vendor processes serving one session each and the turns waiting
//! for one (`crate::adapter::fleet`), with each process's memory and CPU.

use tandem_protocol::fleet::{FleetInfo, FleetProcess, FleetWaiting};

use super::Runtime;
use crate::adapter::fleet::ProcessTable;
use crate::error::RuntimeError;
use crate::Principal;

impl Runtime {
    /// `fleet.get`, for admins: every process with its session, vendor, memory and
    /// CPU, and the waiting turns.
    pub fn fleet(&self, who: &Principal) -> Result<FleetInfo, RuntimeError> {
        if !who.admin {
            return Err(RuntimeError::AccessDenied(
                "the fleet is for admins: it shows every user's sessions".into(),
            ));
        }
        let fleet = &self.inner.services.fleet;
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
        Ok(FleetInfo {
            limit: fleet.limit().map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
            processes,
            waiting,
        })
    }
}
