//! A Worker's question to its Driver (`ask_driver`), on the Worker's side. The
//! session keeps the waiting question in its record (so it survives a restart, and
//! the session's attention is `needs_input` meanwhile), holds the waiting tool call,
//! and takes exactly one answer: the Driver's, a person's or the timeout's, whichever
//! comes first. The question and its answer are recorded in both histories.

use std::time::Duration;

use actix::prelude::*;
use tandem_protocol::question::{Answerer, NO_ANSWER, PAIR_CLOSED};
use tandem_protocol::EventBody;
use tokio::sync::oneshot;

use super::pairing::DELIVERED_MEMORY;
use super::{RecordEvent, SessionActor};
use crate::clock::{now_ms, random_id};
use crate::error::RuntimeError;
use crate::ids::{PairId, SessionId};
use crate::record::QuestionRecord;

/// The answer a question got.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    /// What the Worker's `ask_driver` returns.
    pub answer: String,
    /// Who gave it.
    pub by: Answerer,
}

/// The waiting `ask_driver` call, in memory only: a restart cuts it off (the Worker's
/// turn dies with the process) and the answer then comes as a new message.
#[derive(Debug, Default)]
pub(super) struct WaitingCall {
    /// The question it waits for and where its answer goes.
    call: Option<(String, oneshot::Sender<Answered>)>,
    /// The timeout that answers the question if nobody does.
    timer: Option<SpawnHandle>,
}

/// Record a question of this Worker (from the `ask_driver` tool); answers the record
/// and where the answer will come.
#[derive(Debug, Message)]
#[rtype(result = "Result<(QuestionRecord, oneshot::Receiver<Answered>), RuntimeError>")]
pub struct Ask {
    /// What the Worker asks.
    pub question: String,
    /// The answers it offers.
    pub choices: Vec<String>,
    /// Unanswered this long, it is answered [`NO_ANSWER`].
    pub timeout_seconds: u64,
    /// The pair it asks in; must be this session's, as its Worker.
    pub pair_id: PairId,
    /// The pair's Driver.
    pub driver_id: SessionId,
    /// The pair's node, when it is another one.
    pub pair_node: Option<String>,
}

/// Answer this Worker's waiting question; `NO_SUCH_QUESTION` when `question_id` is
/// not the one waiting (never asked, or answered already).
#[derive(Debug, Message)]
#[rtype(result = "Result<(), RuntimeError>")]
pub struct AnswerQuestion {
    /// The question answered.
    pub question_id: String,
    /// The answer.
    pub answer: String,
    /// Who answers.
    pub by: Answerer,
}

/// Drop a question its Driver could not be told (the pair closed meanwhile); the
/// waiting call is dropped with it.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct WithdrawQuestion {
    /// The question.
    pub question_id: String,
}

/// The message a Worker whose `ask_driver` call is gone (a restart, an interrupt)
/// gets instead: a new internal turn, so the answer still reaches it, once.
fn answer_text(question: &QuestionRecord, answered: &Answered) -> String {
    let who = match answered.by {
        Answerer::Driver => "your Driver",
        Answerer::User => "the user",
        Answerer::Timeout | Answerer::PairClosed => "nobody (timed out)",
    };
    format!(
        "[Answer to your question {}, from {who}]\nYou asked: {}\nAnswer: {}",
        question.question_id, question.question, answered.answer
    )
}

impl SessionActor {
    /// Arms the timeout of the waiting question, if any: at `Ask`, and at start for
    /// a question a restart left (its deadline kept; a past one answers at once).
    pub(super) fn arm_question(&mut self, ctx: &mut Context<Self>) {
        let Some(question) = &self.record.question else {
            return;
        };
        if let Some(timer) = self.question.timer.take() {
            ctx.cancel_future(timer);
        }
        let id = question.question_id.clone();
        let left = question.deadline().saturating_sub(now_ms());
        self.question.timer = Some(ctx.run_later(Duration::from_millis(left), move |act, ctx| {
            act.question.timer = None;
            let answered = Answered {
                answer: NO_ANSWER.to_string(),
                by: Answerer::Timeout,
            };
            // Answered by someone else first: nothing to do.
            let _ = act.answer_question(&id, answered, ctx);
        }));
    }

    /// Takes the answer of question `id`: clears it from the record, records
    /// `question_answered` in both histories and hands the answer to the waiting
    /// call once that is on disk, or, with no call waiting, queues it as a new
    /// internal turn in the same write (so a restart neither loses nor repeats it).
    fn answer_question(
        &mut self,
        id: &str,
        answered: Answered,
        ctx: &mut Context<Self>,
    ) -> Result<(), RuntimeError> {
        let Some(question) = self.record.question.take_if(|q| q.question_id == id) else {
            return Err(RuntimeError::NoSuchQuestion(id.to_string()));
        };
        if let Some(timer) = self.question.timer.take() {
            ctx.cancel_future(timer);
        }
        let body = EventBody::QuestionAnswered {
            question_id: question.question_id.clone(),
            pair_id: question.pair_id.clone(),
            answer: answered.answer.clone(),
            by: answered.by,
        };
        self.emit(None, body.clone());
        self.record_on_driver(&question, body);
        let call = self
            .question
            .call
            .take()
            .filter(|(q, tx)| *q == question.question_id && !tx.is_closed());
        let epoch = self.services.writer.epoch();
        if call.is_none() {
            self.deliver_answer(&question, &answered, ctx);
        }
        self.touch();
        self.flush();
        let Some((_, tx)) = call else {
            return Ok(());
        };
        // The call gets the answer only once its question is cleared on disk: after
        // a crash before that, the restarted session still waits for an answer (its
        // turn, and so the call, died with the process).
        let synced = self.services.writer.synced_since(epoch);
        ctx.spawn(
            actix::fut::wrap_future(synced).map(move |_, act: &mut SessionActor, ctx| {
                if let Err(answered) = tx.send(answered) {
                    // The call stopped waiting meanwhile (the turn was interrupted).
                    act.deliver_answer(&question, &answered, ctx);
                    act.flush();
                }
            }),
        );
        Ok(())
    }

    /// The pair of the waiting question closed: nobody will answer it. It ends with
    /// `question_answered {by: pairClosed}` in both histories, and the waiting call is
    /// dropped (its `ask_driver` is refused `NOT_PAIRED`); nothing is delivered later.
    pub(super) fn close_question(&mut self, pair_id: &PairId, ctx: &mut Context<Self>) {
        let Some(question) = self.record.question.take_if(|q| q.pair_id == pair_id) else {
            return;
        };
        if let Some(timer) = self.question.timer.take() {
            ctx.cancel_future(timer);
        }
        self.question.call = None;
        let body = EventBody::QuestionAnswered {
            question_id: question.question_id.clone(),
            pair_id: question.pair_id.clone(),
            answer: PAIR_CLOSED.to_string(),
            by: Answerer::PairClosed,
        };
        self.emit(None, body.clone());
        self.record_on_driver(&question, body);
        self.touch();
    }

    /// Appends `body` to the Driver's history: here, or on the pair's node (best
    /// effort there, as a pair's events on a Worker's node are).
    fn record_on_driver(&self, question: &QuestionRecord, body: EventBody) {
        match &question.pair_node {
            None => {
                if let Some(driver) = self.services.sessions.get(&question.driver_id) {
                    driver.do_send(RecordEvent(body));
                }
            }
            Some(node) => {
                if let Some(cluster) = self.services.cluster.get().cloned() {
                    let (node, driver) = (node.clone(), question.driver_id.clone());
                    actix::spawn(
                        async move { cluster.record_on_worker(&node, &driver, body).await },
                    );
                }
            }
        }
    }

    /// Queues the answer as a new internal turn, keyed by the question id so it is
    /// taken once.
    fn deliver_answer(
        &mut self,
        question: &QuestionRecord,
        answered: &Answered,
        ctx: &mut Context<Self>,
    ) {
        if self.record.delivered.contains(&question.question_id) {
            return;
        }
        self.record.delivered.push(question.question_id.clone());
        if self.record.delivered.len() > DELIVERED_MEMORY {
            self.record.delivered.remove(0);
        }
        self.run_or_queue(answer_text(question, answered), true, ctx);
    }
}

impl Handler<Ask> for SessionActor {
    type Result = Result<(QuestionRecord, oneshot::Receiver<Answered>), RuntimeError>;

    fn handle(&mut self, msg: Ask, ctx: &mut Context<Self>) -> Self::Result {
        if !self
            .record
            .in_pair(&msg.pair_id, Some(tandem_protocol::Role::Worker))
        {
            return Err(RuntimeError::Conflict(
                "this session is not the Worker of that pair".into(),
            ));
        }
        if let Some(waiting) = &self.record.question {
            return Err(RuntimeError::Conflict(format!(
                "question {} still waits for an answer; one question at a time",
                waiting.question_id
            )));
        }
        let question = QuestionRecord {
            question_id: random_id("q_", 8),
            pair_id: msg.pair_id,
            driver_id: msg.driver_id,
            pair_node: msg.pair_node,
            worker_id: self.record.id.clone(),
            question: msg.question,
            choices: msg.choices,
            asked_at: now_ms(),
            timeout_seconds: msg.timeout_seconds,
        };
        // The pair records it in the Driver's history as it tells the Driver.
        self.emit(None, question.asked_event(&self.record.id));
        let (tx, rx) = oneshot::channel();
        self.question.call = Some((question.question_id.clone(), tx));
        self.record.question = Some(question.clone());
        self.arm_question(ctx);
        self.touch();
        self.flush();
        Ok((question, rx))
    }
}

impl Handler<AnswerQuestion> for SessionActor {
    type Result = Result<(), RuntimeError>;

    fn handle(&mut self, msg: AnswerQuestion, ctx: &mut Context<Self>) -> Self::Result {
        self.answer_question(
            &msg.question_id,
            Answered {
                answer: msg.answer,
                by: msg.by,
            },
            ctx,
        )
    }
}

impl Handler<WithdrawQuestion> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: WithdrawQuestion, ctx: &mut Context<Self>) {
        if self
            .record
            .question
            .take_if(|q| q.question_id == msg.question_id)
            .is_none()
        {
            return;
        }
        if let Some(timer) = self.question.timer.take() {
            ctx.cancel_future(timer);
        }
        self.question.call = None;
        self.touch();
        self.flush();
    }
}
