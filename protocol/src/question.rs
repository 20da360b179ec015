//! Questions from a Worker to its Driver (`ask_driver`): who answered one, and the
//! user's answer from a client (`question.answer`, `POST
//! /sessions/{id}/questions/{questionId}/answer`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

/// What a Worker's `ask_driver` returns when nobody answered within its
/// `timeoutSeconds`.
pub const NO_ANSWER: &str = "no answer: decide yourself";

/// What a question is recorded as answered with when its pair closed first.
pub const PAIR_CLOSED: &str = "no answer: the pair was closed";

/// Who answered a Worker's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Answerer {
    /// The Driver, with `answer_worker`.
    Driver,
    /// A person, with `question.answer`.
    User,
    /// Nobody within `timeoutSeconds`: the answer is [`NO_ANSWER`].
    Timeout,
    /// The pair was closed first: nobody will answer, and the waiting `ask_driver`
    /// is refused (`NOT_PAIRED`). The answer recorded is [`PAIR_CLOSED`].
    PairClosed,
}

/// Fields of `question.answer`: a person answers a Worker's waiting question in its
/// Driver's place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionAnswerParams {
    /// The Worker that asked (the `from` of the `question` event).
    pub session_id: SessionId,
    /// The question (`q_…`).
    pub question_id: String,
    /// The answer the Worker's `ask_driver` returns.
    pub answer: String,
}

/// Body of `POST /sessions/{id}/questions/{questionId}/answer` (as `question.answer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerBody {
    /// The answer the Worker's `ask_driver` returns.
    pub answer: String,
}

/// `question.answer` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnswerResult {
    /// The Worker that asked.
    pub session_id: SessionId,
    /// The question answered.
    pub question_id: String,
}
