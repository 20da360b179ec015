//! What the server says to agents: the Driver's instruction and pushed-back results.
//! Our own wording; agents read these, so they are direct and specific.

use crate::record::{DelegationRecord, SessionRecord};
use tandem_protocol::Role;

use super::{DelegationStatus, Outcome};

/// The system instruction for a session, if its role calls for one.
pub fn system_prompt(record: &SessionRecord) -> Option<String> {
    if record.parent_id.is_some() {
        return None;
    }
    match record.role {
        Some(Role::Driver) => Some(DRIVER.to_string()),
        Some(Role::Worker) => None,
        None => Some(UNPAIRED.to_string()),
    }
}

/// Given to a Driver.
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

/// The message pushed into the Driver when a delegation it no longer waits for ends.
pub fn pushback(delegation: &DelegationRecord, outcome: &Outcome) -> String {
    let answer = if outcome.response.trim().is_empty() {
        "(the Worker wrote no text)".to_string()
    } else {
        outcome.response.clone()
    };
    if delegation.proposal_id.is_some() {
        return match outcome.status {
            DelegationStatus::Complete => format!(
                "[Worker finished the proposed task]\nCheck its result before you rely on it. \
                 The Worker is still available: send corrections or follow-ups with \
                 send_to_partner rather than redoing its work.\n\n{answer}"
            ),
            DelegationStatus::Interrupted => format!(
                "[Worker stopped before finishing the proposed task]\nIts work is PARTIAL and \
                 unverified. Review what it did and decide the next step with the user.\n\n\
                 Partial answer:\n{answer}"
            ),
            DelegationStatus::Error => format!(
                "[Worker failed on the proposed task]\n{}\n\nWhat it wrote:\n{answer}",
                outcome.error.as_deref().unwrap_or("unknown error")
            ),
        };
    }
    match outcome.status {
        DelegationStatus::Complete => format!(
            "[Worker finished a delegated task]\nTask:\n{}\n\nWorker's answer:\n{answer}\n\n\
             Check the result and carry on.",
            delegation.message
        ),
        DelegationStatus::Interrupted => format!(
            "[Worker interrupted]\nThe Worker was stopped before it finished the task you \
             delegated{}. Its work is PARTIAL and unverified: review it before relying on it \
             and decide the next step with the user.\n\nTask:\n{}\n\nPartial answer:\n{answer}",
            outcome
                .error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default(),
            delegation.message
        ),
        DelegationStatus::Error => format!(
            "[Worker failed a delegated task]\nTask:\n{}\n\nError:\n{}\n\nWhat it wrote:\n{answer}\n\n\
             Decide how to proceed.",
            delegation.message,
            outcome.error.as_deref().unwrap_or("unknown error")
        ),
    }
}
