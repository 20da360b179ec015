//! A Worker's question reaches its Driver through the pair: a `send_to_partner` that
//! waits for the delegation returns it (status `question`), else it is pushed into
//! the Driver as a message. The answer goes straight to the Worker's session (see
//! `crate::session::AnswerQuestion`), which holds the question.

use actix::prelude::*;

use super::{DelegateReply, PairActor, Token};
use crate::error::PairError;
use crate::record::{PairRecord, QuestionRecord};
use crate::session::{RecordEvent, Resume};

/// The Worker asks its Driver `question` (already recorded in the Worker's record and
/// both histories).
#[derive(Debug, Message)]
#[rtype(result = "Result<(), PairError>")]
pub struct WorkerAsks {
    /// The question.
    pub question: QuestionRecord,
}

/// The message a Driver that does not wait gets for a question, keyed by its id so it
/// is taken once.
pub(crate) fn question_resume(question: &QuestionRecord, pair: &PairRecord) -> Resume {
    let choices = match question.choices.is_empty() {
        true => String::new(),
        false => format!("\nChoices: {}", question.choices.join(" | ")),
    };
    Resume {
        id: question.question_id.clone(),
        text: format!(
            "[Question from your Worker, questionId {}]\n{}{choices}\nAnswer it with \
             answer_worker {{questionId: \"{}\", answer}}; the Worker waits (at most {} s, \
             then it decides itself).",
            question.question_id, question.question, question.question_id, question.timeout_seconds
        ) + &super::texts::signature(pair),
        proposal: None,
    }
}

impl Handler<WorkerAsks> for PairActor {
    type Result = Result<(), PairError>;

    fn handle(&mut self, msg: WorkerAsks, ctx: &mut Context<Self>) -> Self::Result {
        if self.closed() {
            return Err(PairError::Closed);
        }
        let question = msg.question;
        if question.worker_id != self.record.worker_id {
            // Not this pair's Worker (never sent so): nobody here answers it.
            return Err(PairError::NoSuchPair(self.record.pair_id.clone()));
        }
        self.driver
            .do_send(RecordEvent(question.asked_event(&self.record.worker_id)));
        // Nobody waits (or the caller stopped waiting meanwhile): pushed into the
        // Driver as an internal turn (queued while the Driver runs one).
        if let Some(DelegateReply::Question(q)) =
            self.answer_waiter(DelegateReply::Question(question), ctx)
        {
            self.driver.do_send(question_resume(&q, &self.record));
        }
        Ok(())
    }
}

impl PairActor {
    /// Hands `reply` to a caller waiting for the current delegation, which then goes
    /// on detached: its outcome is pushed back when the Worker's turn ends. Gives
    /// `reply` back when nobody waits for it.
    pub(super) fn answer_waiter(
        &mut self,
        reply: DelegateReply,
        ctx: &mut Context<Self>,
    ) -> Option<DelegateReply> {
        let waits = self.record.delegation.as_ref().is_some_and(|d| !d.detached);
        let Some(waiter) = waits.then(|| self.take_waiter()).flatten() else {
            return Some(reply);
        };
        if let Token::Held { timeout, .. } = &mut self.token {
            if let Some(timer) = timeout.take() {
                ctx.cancel_future(timer);
            }
        }
        if let Some(d) = self.record.delegation.as_mut() {
            d.detached = true;
        }
        self.save();
        match waiter.send(Ok(reply)) {
            Ok(()) => None,
            Err(Ok(reply)) => Some(reply),
            Err(Err(_)) => None,
        }
    }
}
