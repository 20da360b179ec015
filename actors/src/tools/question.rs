//! `ask_driver` (a Worker asks its Driver and waits for the answer) and
//! `answer_worker` (the Driver answers), and the user's answer in the Driver's place
//! (`question.answer`). The question lives in the Worker's session
//! (`crate::session::Ask`); the pair carries it to the Driver
//! (`crate::pair::WorkerAsks`).

use tandem_protocol::pair::PairedWorker;
use tandem_protocol::question::{Answerer, QuestionAnswerParams, QuestionAnswerResult};
use tandem_protocol::tools::{
    AnswerWorkerParams, AnswerWorkerResult, AskDriverParams, AskDriverResult,
};
use tandem_protocol::{ErrorCode, Role};

use super::partner::workers_to_try;
use super::{clamped, optional, required};
use crate::access::Principal;
use crate::cluster_link::QuestionAnswer;
use crate::error::{PairError, RuntimeError, ToolError};
use crate::ids::PairId;
use crate::pair::WorkerAsks;
use crate::runtime::Runtime;
use crate::session::{AnswerQuestion, Ask, SessionState, WithdrawQuestion};

/// Default wait for an answer, seconds.
const DEFAULT_TIMEOUT: u64 = 600;
/// Longest wait for an answer, seconds.
const MAX_TIMEOUT: u64 = 3600;
/// Most choices a question offers; more are refused.
const MAX_CHOICES: usize = 20;

pub(super) async fn ask_driver(
    rt: &Runtime,
    state: &SessionState,
    args: AskDriverParams,
) -> Result<AskDriverResult, ToolError> {
    let question = required("question", args.question)?;
    let choices = choices_of(args.choices)?;
    let timeout_seconds = clamped(args.timeout_seconds, DEFAULT_TIMEOUT, 1, MAX_TIMEOUT);
    let membership = match (&state.info.role, &state.membership) {
        (Some(Role::Worker), Some(m)) => m.clone(),
        _ => {
            return Err(ToolError::NotAllowed(
                "only the Worker of a pair asks its Driver",
            ))
        }
    };
    let pair_id = membership.pair_id.clone();
    // The pair and its Driver must still run, or nobody can answer: on this node
    // they are looked up; on the pair's node, that node refuses.
    let (local, driver_id) = match &membership.pair_node {
        None => {
            let (pair, driver_id) = rt.pairs().driver(&pair_id).ok_or(PairError::DriverGone)?;
            rt.sessions()
                .session_addr(&driver_id)
                .ok_or(PairError::DriverGone)?;
            (Some(pair), driver_id)
        }
        Some(_) => (None, membership.driver_id.clone().unwrap_or_default()),
    };
    let me = rt
        .sessions()
        .session_addr(&state.info.id)
        .ok_or_else(|| RuntimeError::SessionNotFound(state.info.id.clone()))?;
    let (record, answer) = me
        .send(Ask {
            question,
            choices,
            timeout_seconds,
            pair_id,
            driver_id,
            pair_node: membership.pair_node.clone(),
        })
        .await
        .map_err(RuntimeError::from)??;
    let question_id = record.question_id.clone();
    match tell_driver(rt, local, membership.pair_node.as_ref(), record).await {
        Ok(()) => {}
        // Sent, and no answer came back: the pair's node may have it, so the question
        // waits on (answered, or timed out, once).
        Err(RuntimeError::NoAnswer { .. }) => {}
        Err(e) => {
            // Refused: nobody will answer it.
            me.do_send(WithdrawQuestion {
                question_id: question_id.clone(),
            });
            use tandem_protocol::ErrorCode;
            return Err(match e.code() {
                ErrorCode::NotPaired | ErrorCode::NoSuchPair | ErrorCode::SessionNotFound => {
                    PairError::DriverGone.into()
                }
                _ => e.into(),
            });
        }
    }
    // Dropped unanswered: the pair closed (or the session went) while it waited.
    let answered = answer.await.map_err(|_| PairError::DriverGone)?;
    Ok(AskDriverResult {
        question_id,
        answer: answered.answer,
        answered_by: answered.by,
    })
}

/// A question's choices, blank ones dropped; refused beyond [`MAX_CHOICES`].
fn choices_of(choices: Option<Vec<String>>) -> Result<Vec<String>, ToolError> {
    let choices: Vec<String> = choices
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| optional(Some(c)))
        .collect();
    if choices.len() > MAX_CHOICES {
        return Err(ToolError::InvalidArguments {
            tool: tandem_protocol::tools::ASK_DRIVER,
            reason: format!("at most {MAX_CHOICES} choices"),
        });
    }
    Ok(choices)
}

/// Carries a Worker's question to its Driver: through the pair actor `local` here,
/// or to the pair's node `pair_node`.
async fn tell_driver(
    rt: &Runtime,
    local: Option<actix::Addr<crate::pair::PairActor>>,
    pair_node: Option<&String>,
    record: crate::record::QuestionRecord,
) -> Result<(), RuntimeError> {
    match (local, pair_node) {
        (Some(pair), _) => match pair.send(WorkerAsks { question: record }).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(RuntimeError::from(e)),
            Err(e) => Err(RuntimeError::from(e)),
        },
        (None, Some(node)) => {
            let cluster = rt.peers().link_to(node, &record.worker_id)?;
            cluster.ask_driver(node, record).await
        }
        (None, None) => Err(PairError::DriverGone.into()),
    }
}

pub(super) async fn answer_worker(
    rt: &Runtime,
    state: &SessionState,
    args: AnswerWorkerParams,
) -> Result<AnswerWorkerResult, ToolError> {
    let question_id = required("questionId", args.question_id)?;
    let answer = required("answer", args.answer)?;
    let workers = workers_to_try(state, optional(args.worker).as_deref())?;
    let answered = first_that_knows(&workers, ErrorCode::NoSuchQuestion, |worker| {
        answer_on(
            rt,
            worker.pair_id.clone(),
            question_id.clone(),
            answer.clone(),
        )
    })
    .await?;
    Ok(AnswerWorkerResult {
        question_id,
        partner_id: answered.worker_id.clone(),
        worker_name: answered.worker_name.clone(),
    })
}

/// Runs `try_one` on each Worker in turn until one answers: a question or request
/// id belongs to one Worker, so the others answer `unknown` (that code). The
/// error is `unknown`'s when every Worker said so, else the first other one.
pub(super) async fn first_that_knows<'w, F, Fut>(
    workers: &'w [PairedWorker],
    unknown: ErrorCode,
    mut try_one: F,
) -> Result<&'w PairedWorker, ToolError>
where
    F: FnMut(&'w PairedWorker) -> Fut,
    Fut: std::future::Future<Output = Result<(), ToolError>>,
{
    let mut failed: Option<ToolError> = None;
    for worker in workers {
        match try_one(worker).await {
            Ok(()) => return Ok(worker),
            Err(e) if e.code() == unknown => failed = failed.or(Some(e)),
            Err(e) => return Err(e),
        }
    }
    Err(failed.unwrap_or_else(|| PairError::NoWorker.into()))
}

/// Answers question `question_id` in the Worker of pair `pair_id`, here or on its
/// node.
async fn answer_on(
    rt: &Runtime,
    pair_id: PairId,
    question_id: String,
    answer: String,
) -> Result<(), ToolError> {
    let (_, worker_id) = rt.pairs().parts(&pair_id).ok_or(PairError::Gone)?;
    let answer = QuestionAnswer {
        question_id,
        answer,
        by: Answerer::Driver,
    };
    match rt.pairs().remote_worker_node(&pair_id) {
        // A Worker on another node: its node answers the question there.
        Some(node) => {
            let cluster = rt.peers().link_to(&node, &worker_id)?;
            cluster.answer_on_worker(&node, &worker_id, answer).await?;
        }
        None => {
            let worker = rt
                .sessions()
                .session_handle(&worker_id)
                .ok_or(PairError::WorkerGone)?;
            worker
                .ask(AnswerQuestion {
                    question_id: answer.question_id,
                    answer: answer.answer,
                    by: answer.by,
                })
                .await??;
        }
    }
    Ok(())
}

impl Runtime {
    /// `question.answer`: a person answers a Worker's waiting question in its
    /// Driver's place (the caller must be able to drive the Worker).
    pub async fn answer_question(
        &self,
        who: &Principal,
        params: QuestionAnswerParams,
    ) -> Result<QuestionAnswerResult, RuntimeError> {
        self.access()
            .drivable(who, &params.session_id)?
            .ask(AnswerQuestion {
                question_id: params.question_id.clone(),
                answer: params.answer,
                by: Answerer::User,
            })
            .await??;
        Ok(QuestionAnswerResult {
            session_id: params.session_id,
            question_id: params.question_id,
        })
    }
}
