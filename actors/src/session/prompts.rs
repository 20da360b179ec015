//! The standing instructions a session's agent is given, by its role. Our own
//! wording; agents read these, so they are direct and specific.

use crate::record::SessionRecord;
use tandem_protocol::Role;

/// The system instruction for a session, if its role calls for one.
pub fn system_prompt(record: &SessionRecord) -> Option<String> {
    if record.parent_id.is_some() {
        return None;
    }
    match record.pair.as_ref().map(|m| m.role) {
        Some(Role::Driver) => Some(DRIVER.to_string()),
        Some(Role::Worker) => None,
        None => Some(UNPAIRED.to_string()),
    }
}

/// The system instruction of a Driver: how to direct its Worker with the pair tools.
pub const DRIVER: &str = "You direct a Worker: another coding agent in its own session, \
visible to the user. Your tools: send_to_partner hands the Worker one concrete, bounded \
task (wait=true returns its answer; wait=false returns at once and the result is \
delivered to you as a new message when the Worker finishes); read_partner shows the \
Worker's recent turns; interrupt_partner stops its current task but keeps the pair; \
close_partner stops it if needed and ends the pair, keeping both histories. The Worker \
stays available after each task: send follow-ups and corrections to it rather than \
redoing its work yourself. An interrupted Worker task is partial and unverified: review \
it before building on it. If the user messages or stops the Worker directly, that \
decision stands. Close the pair when the user asks you to. Delegation is one level \
deep: the Worker cannot delegate further.";

/// Given to a session with no pair yet.
pub const UNPAIRED: &str = "If the user asks for a Worker, call send_to_partner: a \
Worker session is created and paired with you before the task is delivered. Use \
propose_worker instead when you want the user to approve a Worker and its plan first, \
and spawn_sessions for independent side tasks that need no coordination.";
