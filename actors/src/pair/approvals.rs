//! A Worker's permission request answered by its Driver (`workerApprovals: driver`):
//! the Worker's session tells the pair (`WorkerNeedsApproval`), and the pair hands
//! the request to a waiting `send_to_partner` (status `approval`) or pushes it into
//! the Driver as a message. The answer (`approve_worker`) goes straight to the
//! Worker's session, which holds the pending request; a person may answer first.

use actix::prelude::*;
use tandem_protocol::ApprovalAsk;

use super::{DelegateReply, PairActor};
use crate::record::PairRecord;
use crate::session::{Resume, WorkerNeedsApproval};
use crate::text::clip;

/// How much of a request's input the pushed message quotes, in characters.
const MAX_INPUT_CHARS: usize = 2000;

/// The message a Driver that does not wait gets for a request, keyed by the
/// request's id so it is taken once.
pub(crate) fn approval_resume(ask: &ApprovalAsk, pair: &PairRecord) -> Resume {
    // A JSON value writes as JSON by `Display`, which cannot fail.
    let input = ask.input.to_string();
    Resume {
        id: format!("approval:{}", ask.request_id),
        text: format!(
            "[Permission request from your Worker, requestId {}]\nTool: {}\nInput: {}\n\
             Answer it with approve_worker {{requestId: \"{}\", allow: true|false, remember?, \
             message?}}; the Worker waits for it.",
            ask.request_id,
            ask.tool_name,
            clip(&input, MAX_INPUT_CHARS),
            ask.request_id
        ) + &super::texts::signature(pair),
        proposal: None,
    }
}

impl Handler<WorkerNeedsApproval> for PairActor {
    type Result = ();

    fn handle(&mut self, msg: WorkerNeedsApproval, ctx: &mut Context<Self>) {
        let need = msg.0;
        if self.closed() || !self.current(&need.delegation_id) {
            // The delegation is over: its turn, and the request with it, ended.
            return;
        }
        if let Some(DelegateReply::Approval(ask)) =
            self.answer_waiter(DelegateReply::Approval(need.ask), ctx)
        {
            self.driver.do_send(approval_resume(&ask, &self.record));
        }
    }
}
