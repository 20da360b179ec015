//! The slash commands a session's agent offers (`session.commands`), as its vendor
//! last listed them (kept in the record; the change is a `commands` event).

use actix::prelude::*;
use tandem_protocol::session::VendorCommand;

use super::SessionActor;

/// Ask for the session's slash commands.
#[derive(Debug, Message)]
#[rtype(result = "Vec<VendorCommand>")]
pub struct ListCommands;

impl Handler<ListCommands> for SessionActor {
    type Result = Vec<VendorCommand>;

    fn handle(&mut self, _: ListCommands, _: &mut Context<Self>) -> Self::Result {
        self.record.commands.clone()
    }
}
