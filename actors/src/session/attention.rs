//! What a session asks of its owner (`attention` in its info): kept from the record
//! ([`crate::record::SessionRecord::attention`]) and the pending approvals; a client
//! of the owner that shows the session clears what was only to be seen.

use actix::prelude::*;
use tandem_protocol::Attention;

use super::SessionActor;

/// A client of the owner shows the session up to `seq` (`client.seen`); answers the
/// attention after it.
#[derive(Debug, Message)]
#[rtype(result = "Attention")]
pub struct Seen {
    /// The newest event shown (more than the last counts as the last).
    pub seq: u64,
}

impl Handler<Seen> for SessionActor {
    type Result = MessageResult<Seen>;

    fn handle(&mut self, msg: Seen, _: &mut Context<Self>) -> Self::Result {
        let seq = msg.seq.min(self.next_seq - 1);
        if seq > self.record.seen_seq {
            let before = self.info().attention;
            self.record.seen_seq = seq;
            // Written only when what clients show changes: a page reports often.
            if self.info().attention != before {
                self.touch();
                self.flush();
            }
        }
        MessageResult(self.info().attention)
    }
}
