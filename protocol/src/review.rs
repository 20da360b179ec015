//! `chat.review`: line comments on a session's diff, sent to its agent as one message;
//! `session.review-by`: such a review written by an agent of another vendor.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{SessionId, TurnId};
use crate::operations::{Refusal, Validate};

/// Comments one review holds at most.
pub const MAX_COMMENTS: usize = 50;
/// Characters of one comment's body, and of the summary, at most.
pub const MAX_BODY_CHARS: usize = 20_000;

/// Which side of the diff a comment's lines are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ReviewSide {
    /// The changed file's lines (`+` and context lines).
    New,
    /// The lines as they were (`-` and context lines).
    Old,
}

/// A comment on lines of the session's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewComment {
    /// The file, `/`-separated, relative to the top of the working tree (as the diff
    /// names it).
    #[schemars(regex(pattern = crate::content::NOT_BLANK))]
    pub path: String,
    /// The first line commented on, 1-based, on `side`.
    #[schemars(range(min = 1, max = 4_294_967_295_u32))]
    #[serde(deserialize_with = "crate::strict::whole")]
    pub line: u32,
    /// The last line (default `line`); the lines between must all be in the diff.
    #[serde(
        default,
        deserialize_with = "crate::strict::whole_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = 4_294_967_295_u32))]
    pub end_line: Option<u32>,
    /// `new` (default) or `old`.
    #[serde(default = "new_side", deserialize_with = "crate::strict::name")]
    pub side: ReviewSide,
    /// What the reviewer says.
    #[schemars(regex(pattern = crate::content::NOT_BLANK), length(max = 20_000))]
    pub body: String,
}

fn new_side() -> ReviewSide {
    ReviewSide::New
}

/// Who a review goes to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ReviewTarget {
    /// The session whose diff it is (its agent fixes it).
    #[default]
    Session,
    /// That session is a Worker: its Driver, as a message about the Worker's change.
    Driver,
}

/// Fields of `chat.review`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatReviewParams {
    /// The session whose diff is reviewed; its agent gets the review as a turn.
    pub session_id: SessionId,
    /// The comments, 1 to 50.
    #[schemars(length(min = 1, max = 50))]
    pub comments: Vec<ReviewComment>,
    /// A general remark, put before the comments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20_000))]
    pub summary: Option<String>,
    /// `session` (default) or, for a Worker's diff, `driver`.
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub to: Option<ReviewTarget>,
}

impl Validate for ChatReviewParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.comments.is_empty() || self.comments.len() > MAX_COMMENTS {
            return Err(Refusal::invalid(format!(
                "a review holds 1 to {MAX_COMMENTS} comments"
            )));
        }
        for c in &self.comments {
            if c.path.trim().is_empty() || c.body.trim().is_empty() {
                return Err(Refusal::invalid(
                    "every comment needs a `path` and a `body`",
                ));
            }
            if c.line == 0 || c.end_line == Some(0) {
                return Err(Refusal::invalid("lines are numbered from 1"));
            }
            if c.body.chars().count() > MAX_BODY_CHARS {
                return Err(Refusal::invalid(format!(
                    "a comment's body is at most {MAX_BODY_CHARS} characters"
                )));
            }
        }
        if self
            .summary
            .as_ref()
            .is_some_and(|s| s.chars().count() > MAX_BODY_CHARS)
        {
            return Err(Refusal::invalid(format!(
                "the summary is at most {MAX_BODY_CHARS} characters"
            )));
        }
        Ok(())
    }
}

/// `chat.review` reply: the turn that carries the review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatReviewResult {
    /// The session whose turn it is: the reviewed one, or its Driver.
    pub session_id: SessionId,
    /// The turn whose user message is the review.
    pub turn_id: TurnId,
}

/// `POST /api/v1/sessions/{id}/review` body: the fields of `chat.review` but the id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewBody {
    /// The comments, 1 to 50.
    #[schemars(length(min = 1, max = 50))]
    pub comments: Vec<ReviewComment>,
    /// A general remark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20_000))]
    pub summary: Option<String>,
    /// `session` (default) or, for a Worker's diff, `driver`.
    #[serde(
        default,
        deserialize_with = "crate::strict::name_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub to: Option<ReviewTarget>,
}

/// Characters of `session.review-by`'s instructions, at most.
pub const MAX_INSTRUCTIONS_CHARS: usize = 20_000;

/// Fields of `session.review-by`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionReviewByParams {
    /// The session whose diff is reviewed; it gets the review.
    pub session_id: SessionId,
    /// The reviewer's vendor (any installed one, usually another than the author's).
    #[schemars(regex(pattern = crate::content::NOT_BLANK))]
    pub vendor: String,
    /// The reviewer's model (default: the vendor's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What to look for; put before the diff in the reviewer's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20_000))]
    pub instructions: Option<String>,
}

impl Validate for SessionReviewByParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.vendor.trim().is_empty() {
            return Err(Refusal::invalid("`vendor` is empty"));
        }
        if self
            .instructions
            .as_ref()
            .is_some_and(|s| s.chars().count() > MAX_INSTRUCTIONS_CHARS)
        {
            return Err(Refusal::invalid(format!(
                "the instructions are at most {MAX_INSTRUCTIONS_CHARS} characters"
            )));
        }
        Ok(())
    }
}

/// `POST /api/v1/sessions/{id}/review-by` body: the fields of `session.review-by` but
/// the id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewByBody {
    /// The reviewer's vendor.
    #[schemars(regex(pattern = crate::content::NOT_BLANK))]
    pub vendor: String,
    /// The reviewer's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What to look for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20_000))]
    pub instructions: Option<String>,
}

/// `session.review-by` reply: the review runs in the background, in its own session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionReviewByResult {
    /// The reviewed session.
    pub session_id: SessionId,
    /// The reviewer's session (read-only, on the same working directory).
    pub review_session_id: SessionId,
}

/// Who wrote a review that an agent wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reviewer {
    /// The reviewer's session.
    pub session_id: SessionId,
    /// Its vendor.
    pub vendor: String,
}

/// What a review by another vendor found, as it travels with a Worker's changes
/// (`review_on_delegation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewVerdict {
    /// Who reviewed.
    #[serde(flatten)]
    pub reviewer: Reviewer,
    /// Its overall verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Its line comments, each on a line of the diff.
    pub comments: Vec<ReviewComment>,
    /// Why the review gave no usable answer (its turn failed, or its answer held no
    /// review); absent when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}
