//! One ACP agent process: the shared supervisor (`adapter/supervisor.rs`) with stdout
//! read as JSON-RPC frames (a malformed line is logged and skipped).

use std::path::Path;

use actix::prelude::*;
use actix::WeakAddr;

use super::wire::{parse_frame, Frame};
use crate::adapter::fleet::Seat;
use crate::adapter::supervisor::{self, Exited, LiveProcess, ProcessHub};
use crate::adapter::VendorProcess;

/// Longest piece of a malformed line quoted in the log.
const LOG_LINE_CHARS: usize = 200;

/// A frame from process generation `generation`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Incoming {
    /// Which process wrote it (frames of an older process are ignored).
    pub generation: u64,
    /// The frame.
    pub frame: Frame,
}

/// Starts the agent for a session in `cwd` with the minimal environment, in fleet seat
/// `seat`. Frames go to `to` tagged with `generation`.
pub fn spawn<A>(
    process: &VendorProcess,
    cwd: &Path,
    generation: u64,
    hub: &ProcessHub,
    seat: Seat,
    to: WeakAddr<A>,
) -> std::io::Result<LiveProcess>
where
    A: Actor<Context = Context<A>> + Handler<Incoming> + Handler<Exited>,
{
    let cmd = process.command_in(cwd);
    supervisor::spawn(cmd, generation, hub, seat, to, "acp agent", move |line| {
        if line.trim().is_empty() {
            return None;
        }
        match parse_frame(&line) {
            Ok(frame) => Some(Incoming { generation, frame }),
            Err(e) => {
                let quoted: String = line.chars().take(LOG_LINE_CHARS).collect();
                tracing::warn!(generation, error = %e, line = %quoted, "malformed frame from acp agent skipped");
                None
            }
        }
    })
}
