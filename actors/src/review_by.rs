//! A review by another vendor's agent, the pure parts: the prompt it gets (the diff
//! and the answer's shape) and the reading of its answer into line comments (those on
//! lines the diff lacks are dropped by [`crate::review::split_anchored`]).

use tandem_protocol::review::{ReviewComment, ReviewSide, MAX_BODY_CHARS, MAX_COMMENTS};

/// Runs a review of a Worker's change by an agent of the vendor named, to its verdict
/// (`None` when no review could start): the runtime's, handed to the pairs through
/// the checks' environment.
#[derive(Clone)]
pub struct DelegationReviewer(pub std::sync::Arc<ReviewFn>);

/// The review a [`DelegationReviewer`] runs: the Worker and the reviewer's vendor in,
/// the verdict out.
pub type ReviewFn =
    dyn Fn(tandem_protocol::SessionInfo, ReviewRequest) -> VerdictFuture + Send + Sync;

/// A review the repository asks for (`review_on_delegation`, `review_instructions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewRequest {
    /// The reviewer's vendor.
    pub vendor: String,
    /// What it is told to look for.
    pub instructions: Option<String>,
}

/// The verdict of a review under way (a local future: it runs on the caller's arbiter).
pub type VerdictFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Option<tandem_protocol::review::ReviewVerdict>>>,
>;

/// What the reviewer is asked to look for when the request says nothing.
const DEFAULT_INSTRUCTIONS: &str =
    "Review this change for bugs, risks, missing tests and unclear code.";

/// The reviewer's prompt: `instructions`, the rules of a review, the answer's shape
/// and `diff`.
pub fn prompt(instructions: Option<&str>, diff: &str) -> String {
    let instructions = instructions
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_INSTRUCTIONS);
    let fence = fence_for(diff);
    format!(
        "{instructions}\n\n\
         You are reviewing another agent's change to the repository in your working \
         directory. Read the files as you need, but change nothing: this is a review.\n\n\
         Answer with one JSON object in a fenced code block marked json, and nothing \
         after it. Its shape:\n\
         {{\"summary\": <your overall verdict, one paragraph>, \"comments\": [{{\"path\": \
         <the file as the diff names it>, \"line\": <first line>, \"endLine\": <last line, \
         optional>, \"side\": \"new\" or \"old\", \"body\": <what is wrong and how to fix \
         it>}}]}}\n\
         `line` and `endLine` are line \
         numbers of the changed file (`\"side\": \"new\"`) or, for removed lines, of the old \
         one (`\"side\": \"old\"`), and must be lines the diff below shows. At most \
         {MAX_COMMENTS} comments; an empty list when nothing needs to change.\n\n\
         The change:\n{fence}diff\n{diff}\n{fence}\n"
    )
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// A reviewer's answer, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its overall verdict.
    pub summary: Option<String>,
    /// Its comments, as it wrote them (not yet checked against the diff).
    pub comments: Vec<ReviewComment>,
}

/// A reviewer's answer that holds no review.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its answer holds no JSON object with `comments`")]
pub struct NoReview;

/// The review in `text`: the last ```json block holding an object with `comments`,
/// else the last such object anywhere. Comments without a path, a line or a body are
/// left out.
pub fn parse_answer(text: &str) -> Result<Answer, NoReview> {
    let value = blocks(text)
        .into_iter()
        .rev()
        .find_map(review_object)
        .or_else(|| {
            text.match_indices('{')
                .rev()
                .find_map(|(at, _)| review_object(&text[at..]))
        })
        .ok_or(NoReview)?;
    let summary = value["summary"]
        .as_str()
        .map(|s| s.trim().chars().take(MAX_BODY_CHARS).collect::<String>())
        .filter(|s| !s.is_empty());
    let comments = value["comments"]
        .as_array()
        .map(|list| list.iter().filter_map(comment).take(MAX_COMMENTS).collect())
        .unwrap_or_default();
    Ok(Answer { summary, comments })
}

/// The contents of every ```json (or bare ```) fenced block of `text`, in order.
fn blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let Some(line_end) = after.find('\n') else {
            break;
        };
        let body = &after[line_end + 1..];
        let Some(close) = body.find("```") else {
            break;
        };
        out.push(&body[..close]);
        rest = &body[close + 3..];
    }
    out
}

/// The first JSON value at the start of `text` (trailing text allowed), if it is an
/// object with a `comments` list.
fn review_object(text: &str) -> Option<serde_json::Value> {
    let mut values = serde_json::Deserializer::from_str(text.trim_start()).into_iter();
    let value: serde_json::Value = values.next()?.ok()?;
    value["comments"].is_array().then_some(value)
}

/// One comment of the answer, if it has what a comment needs.
fn comment(value: &serde_json::Value) -> Option<ReviewComment> {
    let number = |key: &str| {
        value[key]
            .as_u64()
            .or_else(|| {
                value[key]
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 1.0)
                    .map(|f| f as u64)
            })
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n >= 1)
    };
    let path = value["path"]
        .as_str()?
        .trim()
        .trim_start_matches("b/")
        .to_string();
    let body: String = value["body"]
        .as_str()?
        .trim()
        .chars()
        .take(MAX_BODY_CHARS)
        .collect();
    if path.is_empty() || body.is_empty() {
        return None;
    }
    let line = number("line")?;
    Some(ReviewComment {
        path,
        line,
        end_line: number("endLine").filter(|end| *end > line),
        side: match value["side"].as_str() {
            Some("old") => ReviewSide::Old,
            _ => ReviewSide::New,
        },
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";

    #[test]
    fn the_last_json_block_is_read_and_comments_off_the_diff_are_dropped() {
        let answer = "Looking at it.\n```json\n{\"comments\": []}\n```\nOn second thought:\n\
            ```json\n{\"summary\": \"One problem.\", \"comments\": [\
            {\"path\": \"a.txt\", \"line\": 2, \"body\": \"why upper case?\"},\
            {\"path\": \"b/a.txt\", \"line\": 2.0, \"side\": \"old\", \"body\": \"was fine\"},\
            {\"path\": \"a.txt\", \"line\": 40, \"body\": \"not in the diff\"},\
            {\"path\": \"a.txt\", \"body\": \"no line\"}]}\n```\n";
        let read = parse_answer(answer).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.summary.as_deref(), Some("One problem."));
        assert_eq!(read.comments.len(), 3);
        assert_eq!(read.comments[1].path, "a.txt");
        assert_eq!(read.comments[1].side, ReviewSide::Old);
        let (kept, dropped) = crate::review::split_anchored(DIFF, read.comments);
        assert_eq!(kept.len(), 2);
        assert_eq!(dropped.len(), 1);
        assert!(dropped[0].contains("40"), "{dropped:?}");
    }

    #[test]
    fn a_bare_object_is_read_and_an_answer_without_one_is_refused() {
        let read = parse_answer("Verdict: {\"summary\": \"fine\", \"comments\": []} done")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.summary.as_deref(), Some("fine"));
        assert!(read.comments.is_empty());
        assert!(parse_answer("Hello from mock.").is_err());
        assert!(parse_answer("```json\n{\"summary\": 1}\n```").is_err());
    }

    #[test]
    fn the_prompt_carries_the_instructions_and_the_diff() {
        // An agent that repeats its prompt gives no review of the prompt's own example.
        assert!(parse_answer(&prompt(None, DIFF)).is_err());
        let p = prompt(Some("Look for races."), DIFF);
        assert!(p.starts_with("Look for races.\n"));
        assert!(p.contains("+TWO"));
        assert!(prompt(None, DIFF).starts_with(DEFAULT_INSTRUCTIONS));
    }
}
