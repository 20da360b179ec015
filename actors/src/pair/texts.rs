//! What the pair says to a Driver: pushed-back results. Our own wording; agents read
//! these, so they are direct and specific.

use crate::record::{DelegationRecord, PairRecord};

use super::{DelegationStatus, Outcome};

/// The last line of what a pair pushes into its Driver: which Worker speaks, since a
/// Driver may have several.
pub fn signature(record: &PairRecord) -> String {
    format!(
        "\n\n(From your Worker `{}`, session {}; the partner tools take `worker: \"{}\"`.)",
        record.worker_name, record.worker_id, record.worker_name
    )
}

/// The message pushed into the Driver when a delegation it no longer waits for ends.
pub fn pushback(delegation: &DelegationRecord, outcome: &Outcome) -> String {
    let text = pushback_text(delegation, outcome);
    match &outcome.changes {
        Some(c) => format!(
            "{text}\n\nThe Worker works in its own git worktree, on branch {}: {} files \
             changed, +{} -{} lines against its base. Review that branch before it is \
             merged (session.merge); nothing of it is in your checkout yet.{}{}",
            c.branch,
            c.files,
            c.added,
            c.removed,
            checks_line(c.checks.as_deref()),
            review_line(c.review.as_deref())
        ),
        None => text,
    }
}

/// The checks a delegation's end ran, for the Driver: " Checks: unit passed, lint
/// failed (exit 2)." and the output of those that did not pass; empty when none ran.
fn checks_line(checks: Option<&[tandem_protocol::workspace::CheckResult]>) -> String {
    use tandem_protocol::workspace::CheckStatus;
    let Some(checks) = checks.filter(|c| !c.is_empty()) else {
        return String::new();
    };
    let said: Vec<String> = checks
        .iter()
        .map(|c| match (c.status, c.exit_code) {
            (CheckStatus::Passed, _) => format!("{} passed", c.name),
            (CheckStatus::Failed, Some(code)) => format!("{} FAILED (exit {code})", c.name),
            (CheckStatus::Failed, None) => format!("{} FAILED", c.name),
            (CheckStatus::TimedOut, _) => format!("{} TIMED OUT", c.name),
        })
        .collect();
    let mut line = format!("\n\nChecks on its branch: {}.", said.join(", "));
    for c in checks.iter().filter(|c| c.status != CheckStatus::Passed) {
        let tail: String = {
            let lines: Vec<&str> = c.log_tail.lines().collect();
            lines[lines.len().saturating_sub(20)..].join("\n")
        };
        line.push_str(&format!("\n\nEnd of {}'s output:\n{tail}", c.name));
    }
    line
}

/// A review by another vendor run as the delegation ended, for the Driver: its
/// verdict and each comment with its place; empty when none ran.
fn review_line(review: Option<&tandem_protocol::review::ReviewVerdict>) -> String {
    let Some(r) = review else {
        return String::new();
    };
    if let Some(why) = &r.failed {
        return format!(
            "\n\nThe review by {} (session {}) gave no usable answer: {why}",
            r.reviewer.vendor, r.reviewer.session_id
        );
    }
    let mut line = format!(
        "\n\nReview by {} (session {}): {} comment{}.",
        r.reviewer.vendor,
        r.reviewer.session_id,
        r.comments.len(),
        if r.comments.len() == 1 { "" } else { "s" }
    );
    if let Some(summary) = &r.summary {
        line.push_str(&format!(" {summary}"));
    }
    for c in &r.comments {
        let side = match c.side {
            tandem_protocol::review::ReviewSide::New => "",
            tandem_protocol::review::ReviewSide::Old => " (old version)",
        };
        line.push_str(&format!("\n- {}:{}{side}: {}", c.path, c.line, c.body));
    }
    line
}

fn pushback_text(delegation: &DelegationRecord, outcome: &Outcome) -> String {
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

#[cfg(test)]
mod tests {
    use tandem_protocol::review::{ReviewComment, ReviewSide, ReviewVerdict, Reviewer};

    use super::review_line;

    #[test]
    fn a_review_is_told_with_its_verdict_and_each_comments_place() {
        let reviewer = Reviewer {
            session_id: "ses_r".into(),
            vendor: "codex".into(),
        };
        let verdict = ReviewVerdict {
            reviewer: reviewer.clone(),
            summary: Some("Needs a test.".into()),
            comments: vec![ReviewComment {
                path: "w.txt".into(),
                line: 3,
                end_line: None,
                side: ReviewSide::Old,
                body: "Why remove it?".into(),
            }],
            failed: None,
        };
        assert_eq!(
            review_line(Some(&verdict)),
            "\n\nReview by codex (session ses_r): 1 comment. Needs a test.\n\
             - w.txt:3 (old version): Why remove it?"
        );
        let failed = ReviewVerdict {
            reviewer,
            summary: None,
            comments: Vec::new(),
            failed: Some("its turn was interrupted".into()),
        };
        assert!(
            review_line(Some(&failed)).contains("gave no usable answer: its turn was interrupted")
        );
        assert_eq!(review_line(None), "");
    }
}
