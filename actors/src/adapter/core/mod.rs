//! What every vendor adapter shares, so each adapter holds only what its vendor's wire
//! format needs:
//!
//! - [`Emitter`]: hands output to the session and paces fast producers at the session's
//!   flow gate;
//! - [`TurnSlot`]: the turn in flight as an enum (`Idle`, `Starting`, `Live`,
//!   `Stopping`); the only place a `TurnEnded` is produced, so every turn ends exactly
//!   once, also when a new turn supersedes it or the adapter stops under it;
//! - [`Approvals`]: tool approvals waiting for a person, answered by themselves when the
//!   session bypasses permissions or a remembered rule matches.
//!
//! - [`line_diff`]: two texts' line diff, for vendors that report an edit as old and
//!   new text.
//!
//! Scripted, Codex, Claude Code and ACP adapters compose these; the vendor
//! registry ([`super::vendors`]) says which adapter serves which vendor id.

mod approvals;
mod emitter;
mod line_diff;
mod turn_slot;

pub use approvals::{Approvals, Asked};
pub use emitter::{Emitter, PaceWait, AWAIT_EVERY};
pub use line_diff::line_diff;
pub use turn_slot::{Phase, Stop, Turn, TurnSlot};
