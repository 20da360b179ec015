//! Continuing a conversation in another session: the transcript read from a stored
//! history, and the bounded snapshot that becomes the new session's first prompt.

use serde_json::Value;

/// Turns the snapshot keeps at most.
pub const MAX_TURNS: usize = 12;
/// Characters kept of one user message.
pub const MAX_USER_CHARS: usize = 5_000;
/// Characters kept of one turn's assistant text.
pub const MAX_ASSISTANT_CHARS: usize = 9_000;
/// Characters of the whole transcript part.
pub const MAX_TRANSCRIPT_CHARS: usize = 24_000;
/// Characters of the whole prompt.
pub const MAX_PROMPT_CHARS: usize = 36_000;

/// The first line of a fork's context ([`fork_context`]).
pub const FORK_CONTEXT_HEAD: &str = "[This conversation continues from a fork of another session]";
/// The line that ends it; the fork's first message follows.
pub const FORK_CONTEXT_END: &str = "[End of the earlier conversation]";

/// Who said a transcript entry (the wire type: `read_handoff_source` returns it).
pub use tandem_protocol::tools::Speaker;

use crate::ids::TurnId;

/// One message of a conversation: user text or assistant text, nothing else (no
/// tool output, no deltas).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The event's seq, given to agents that page the source with `read_handoff_source`.
    pub seq: u64,
    /// The turn it belongs to; the snapshot groups entries into one block per turn.
    pub turn_id: TurnId,
    /// Who said it; picks the label and how much of the text the snapshot keeps.
    pub speaker: Speaker,
    /// What was said, in full (the snapshot cuts it, `read_handoff_source` does not).
    pub text: String,
}

/// The conversation in stored frames (oldest first). Server-written messages
/// (pushed-back results) count as user messages: the agent saw them as such.
pub fn transcript(frames: &[(u64, String)]) -> Vec<Entry> {
    frames
        .iter()
        .filter_map(|(seq, frame)| {
            let v: Value = serde_json::from_str(frame).ok()?;
            let speaker = match v["kind"].as_str()? {
                "user_message" => Speaker::User,
                "assistant_message" => Speaker::Assistant,
                _ => return None,
            };
            Some(Entry {
                seq: *seq,
                turn_id: TurnId::from(v["turnId"].as_str().unwrap_or_default()),
                speaker,
                text: v["text"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// The newest message a person wrote (not one the server wrote), verbatim. A session
/// that is itself a handoff target and has no message of its own yet carries its
/// source's request in its `handoff_context`.
pub fn latest_request(frames: &[(u64, String)]) -> Option<String> {
    frames.iter().rev().find_map(|(_, frame)| {
        let v: Value = serde_json::from_str(frame).ok()?;
        match v["kind"].as_str()? {
            "user_message" if v["internal"] != true => v["text"].as_str().map(String::from),
            "handoff_context" => v["request"].as_str().map(String::from),
            _ => None,
        }
    })
}

/// The first `max` characters of `text`, marked when cut.
fn head(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push_str(" […]");
    cut
}

/// What the new session is told first.
pub fn snapshot(
    source_title: &str,
    source_vendor: &str,
    request: &str,
    git_status: &str,
    entries: &[Entry],
) -> String {
    let mut turns = recent_turns(entries);
    let request = head(request, MAX_PROMPT_CHARS / 3);
    let build = |git: &str, turns: &[String]| {
        format!(
            "[Continuing a conversation from another session]\n\
             You are taking over \"{source_title}\", which ran on {source_vendor}. Pick up \
             where it left off. Use read_handoff_source to page through the full earlier \
             history if you need more than this summary.\n\n\
             Latest request (verbatim):\n{request}\n\n\
             Working tree (git status --short --branch):\n{git}\n\n\
             Recent conversation (oldest first):\n{}",
            turns.join("\n")
        )
    };
    let mut git = git_status.to_string();
    let mut prompt = build(&git, &turns);
    while prompt.chars().count() > MAX_PROMPT_CHARS && !turns.is_empty() {
        turns.remove(0);
        prompt = build(&git, &turns);
    }
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        git = head(&git, 2_000);
        prompt = build(&git, &turns);
    }
    prompt
}

/// What a fork's agent reads ahead of the fork's first message when its vendor did
/// not fork the conversation itself: the source's turns up to the fork point, bounded
/// like a handoff's, newest kept. Ends with the line the message follows.
pub fn fork_context(source_title: &str, source_vendor: &str, entries: &[Entry]) -> String {
    let mut turns = recent_turns(entries);
    let build = |turns: &[String]| {
        format!(
            "{FORK_CONTEXT_HEAD}\n\
             Below is the conversation so far, from \"{source_title}\" on {source_vendor} \
             (oldest first; older turns may be left out). Continue from it: the user's \
             new message follows the end marker.\n\n{}\n{FORK_CONTEXT_END}\n\n",
            turns.join("\n")
        )
    };
    let mut context = build(&turns);
    while context.chars().count() > MAX_PROMPT_CHARS && !turns.is_empty() {
        turns.remove(0);
        context = build(&turns);
    }
    context
}

/// The entries as one text block per turn (newest last), at most [`MAX_TURNS`] and
/// [`MAX_TRANSCRIPT_CHARS`], each message cut to its speaker's limit.
fn recent_turns(entries: &[Entry]) -> Vec<String> {
    // One block per turn, newest last.
    let mut turns: Vec<String> = Vec::new();
    let mut current: Option<(&str, String)> = None;
    for entry in entries {
        if current.as_ref().map(|(id, _)| *id) != Some(entry.turn_id.as_str()) {
            if let Some((_, block)) = current.take() {
                turns.push(block);
            }
            current = Some((entry.turn_id.as_str(), String::new()));
        }
        if let Some((_, block)) = current.as_mut() {
            let (label, max) = match entry.speaker {
                Speaker::User => ("User", MAX_USER_CHARS),
                Speaker::Assistant => ("Assistant", MAX_ASSISTANT_CHARS),
            };
            block.push_str(&format!("{label}: {}\n", head(&entry.text, max)));
        }
    }
    if let Some((_, block)) = current {
        turns.push(block);
    }
    let skip = turns.len().saturating_sub(MAX_TURNS);
    let mut turns: Vec<String> = turns.into_iter().skip(skip).collect();
    let size = |turns: &[String]| turns.iter().map(|t| t.chars().count() + 1).sum::<usize>();
    while size(&turns) > MAX_TRANSCRIPT_CHARS && !turns.is_empty() {
        turns.remove(0);
    }
    turns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: &str, turn: &str, text: &str) -> String {
        serde_json::json!({"kind": kind, "turnId": turn, "text": text}).to_string()
    }

    #[test]
    fn transcript_keeps_only_user_and_assistant_text() {
        let frames = vec![
            (1, frame("turn_started", "turn_1", "")),
            (2, frame("user_message", "turn_1", "fix the bug")),
            (3, frame("text_delta", "turn_1", "on it")),
            (4, frame("tool_result", "turn_1", "huge output")),
            (5, frame("assistant_message", "turn_1", "on it")),
        ];
        let t = transcript(&frames);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].speaker, Speaker::User);
        assert_eq!(t[1].text, "on it");
        assert_eq!(latest_request(&frames).as_deref(), Some("fix the bug"));
    }

    #[test]
    fn latest_request_skips_server_messages() {
        let frames = vec![
            (1, frame("user_message", "turn_1", "real request")),
            (
                2,
                serde_json::json!({"kind": "user_message", "turnId": "turn_2", "text": "[Worker finished]", "internal": true})
                    .to_string(),
            ),
        ];
        assert_eq!(latest_request(&frames).as_deref(), Some("real request"));
    }

    #[test]
    fn snapshot_is_bounded_and_drops_oldest_turns_first() {
        let mut entries = Vec::new();
        for i in 0..40 {
            entries.push(Entry {
                seq: i * 2,
                turn_id: TurnId::nth(i),
                speaker: Speaker::User,
                text: format!("question {i} ").repeat(300),
            });
            entries.push(Entry {
                seq: i * 2 + 1,
                turn_id: TurnId::nth(i),
                speaker: Speaker::Assistant,
                text: "a".repeat(20_000),
            });
        }
        let prompt = snapshot("t", "Scripted", "the request", "## main", &entries);
        assert!(prompt.chars().count() <= MAX_PROMPT_CHARS);
        assert!(prompt.contains("the request"));
        assert!(prompt.contains("question 39"), "newest turn kept");
        assert!(
            !prompt.contains("question 27 "),
            "only the last 12 turns at most"
        );
        assert!(!prompt.contains(&"a".repeat(MAX_ASSISTANT_CHARS + 1)));
    }
}
