//! A loop's judge (`check: {judge}`), the pure parts: what the judge is asked and
//! how its answer is read. The runtime runs the judge's turn (`runtime/judge.rs`);
//! sessions reach it through the hook in their checks' environment.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::ids::SessionId;

/// What a judge is asked to decide.
#[derive(Debug, Clone)]
pub struct JudgeRequest {
    /// The session whose iteration is judged (its owner, directory and vendor).
    pub session: tandem_protocol::SessionInfo,
    /// The judge's vendor (default: the session's).
    pub vendor: Option<String>,
    /// The judge's session from an earlier iteration, to ask again.
    pub judge_session_id: Option<SessionId>,
    /// What the judge looks for.
    pub prompt: String,
    /// The loop's goal.
    pub goal: String,
    /// The iteration judged, from 1.
    pub iteration: u32,
    /// The iteration's answer (tail-capped).
    pub answer: String,
}

/// A judge's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// PASS or FAIL.
    pub passed: bool,
    /// Its reasons (its whole answer).
    pub reasons: String,
}

/// Why a judge gave no verdict (it could not start or be asked, its turn did not
/// complete, its answer was neither PASS nor FAIL), in words for the loop's events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoVerdict(pub String);

impl From<String> for NoVerdict {
    fn from(why: String) -> Self {
        NoVerdict(why)
    }
}

impl From<&str> for NoVerdict {
    fn from(why: &str) -> Self {
        NoVerdict(why.to_string())
    }
}

/// How a judge's turn went: its session (when one was made) and its verdict or why
/// there is none.
pub type Judged = (
    Option<tandem_protocol::SessionId>,
    Result<Verdict, NoVerdict>,
);

/// Runs a judge's turn: the runtime's, handed to sessions through
/// [`crate::checks::CheckEnv`].
#[derive(Clone)]
pub struct LoopJudge(pub Arc<JudgeFn>);

/// The turn a [`LoopJudge`] runs.
pub type JudgeFn = dyn Fn(JudgeRequest) -> Pin<Box<dyn Future<Output = Judged>>> + Send + Sync;

/// The judge's message.
pub fn prompt(request: &JudgeRequest) -> String {
    format!(
        "{}\n\n\
         You judge whether another agent's work meets its goal. Read the files in your \
         working directory as you need, but change nothing.\n\
         Goal: {}\n\
         Its answer after iteration {}:\n{}\n\n\
         Answer PASS or FAIL as the first word of your reply, then your reasons.",
        request.prompt.trim(),
        request.goal.trim(),
        request.iteration,
        request.answer.trim()
    )
}

/// The verdict in a judge's answer: its first word, PASS or FAIL (any case, with
/// markdown emphasis or a colon around it); `Err` when it is neither.
pub fn read(answer: &str) -> Result<Verdict, NoVerdict> {
    let first = answer
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .trim_matches(|c: char| !c.is_ascii_alphabetic())
        .to_ascii_uppercase();
    let passed = match first.as_str() {
        "PASS" | "PASSED" => true,
        "FAIL" | "FAILED" => false,
        _ => {
            return Err(NoVerdict(format!(
                "the judge answered neither PASS nor FAIL: {}",
                answer.chars().take(200).collect::<String>()
            )))
        }
    };
    Ok(Verdict {
        passed,
        reasons: answer.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_word_decides() {
        assert!(read("PASS: all tests green").unwrap().passed);
        assert!(read("**Pass** looks right").unwrap().passed);
        assert!(!read("\n fail — the parser still panics").unwrap().passed);
        assert_eq!(
            read("FAILED\nno tests").unwrap().reasons,
            "FAILED\nno tests"
        );
        assert!(read("It passes, I think").is_err());
        assert!(read("").is_err());
    }
}
