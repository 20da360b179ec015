//! Summaries of recent turns, for `read_partner`.

use std::collections::BTreeMap;

use actix::prelude::*;
use serde_json::Value;

use super::SessionActor;
use crate::error::RuntimeError;

/// Events scanned backwards from the end of a history to rebuild turn summaries
/// that are no longer in memory (older turns, or turns before a restart).
const SCAN_EVENTS: usize = 20_000;
/// Turn summaries kept in memory.
pub(super) const KEEP_TURNS: usize = 5;

/// What one turn asked and answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnSummary {
    /// The turn's number (`turn_N`).
    pub number: u64,
    /// The user's (or Driver's) message.
    pub user: String,
    /// True when a Driver delegated it.
    pub delegated: bool,
    /// The assistant text of the turn.
    pub response: String,
}

impl TurnSummary {
    /// As `read_partner` shows it.
    pub fn to_partner_turn(&self) -> tandem_protocol::tools::PartnerTurn {
        tandem_protocol::tools::PartnerTurn {
            user: self.user.clone(),
            delegated: self.delegated,
            response: self.response.clone(),
        }
    }
}

/// The last `count` turns, oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<TurnSummary>, RuntimeError>")]
pub struct RecentTurns {
    /// How many (at least 1); older ones are read back from the store when needed.
    pub count: usize,
}

/// Parses the number out of `turn_N`.
pub(super) fn turn_number(turn_id: &str) -> Option<u64> {
    turn_id.strip_prefix("turn_")?.parse().ok()
}

/// Rebuilds summaries from stored frames (oldest first).
fn summaries_from_frames(frames: &[(u64, String)]) -> BTreeMap<u64, TurnSummary> {
    let mut out: BTreeMap<u64, TurnSummary> = BTreeMap::new();
    for (_, frame) in frames {
        let Ok(v) = serde_json::from_str::<Value>(frame) else {
            continue;
        };
        let Some(number) = v["turnId"].as_str().and_then(turn_number) else {
            continue;
        };
        let entry = out.entry(number).or_insert_with(|| TurnSummary {
            number,
            ..TurnSummary::default()
        });
        let text = v["text"].as_str().unwrap_or_default();
        match v["kind"].as_str() {
            Some("user_message") => {
                entry.user = text.to_string();
                entry.delegated = v.get("delegatedBy").is_some();
            }
            Some("assistant_message") => {
                if !entry.response.is_empty() {
                    entry.response.push_str("\n\n");
                }
                entry.response.push_str(text);
            }
            _ => {}
        }
    }
    out
}

impl Handler<RecentTurns> for SessionActor {
    type Result = ResponseActFuture<Self, Result<Vec<TurnSummary>, RuntimeError>>;

    fn handle(&mut self, msg: RecentTurns, _: &mut Context<Self>) -> Self::Result {
        let count = msg.count.max(1);
        let newest = self.record.turn_count;
        let oldest_wanted = newest.saturating_sub(count as u64) + 1;
        let in_memory = self.recent_turns();
        let covered = newest == 0 || in_memory.first().is_some_and(|t| t.number <= oldest_wanted);
        if covered {
            let skip = in_memory.len().saturating_sub(count);
            let result = in_memory.into_iter().skip(skip).collect();
            return Box::pin(actix::fut::ready(Ok(result)));
        }
        let store = self.services.store.clone();
        let id = self.id.to_string();
        let after = self.next_seq.saturating_sub(SCAN_EVENTS as u64 + 1);
        let read =
            actix_rt::task::spawn_blocking(move || store.read_events(&id, after, SCAN_EVENTS));
        Box::pin(
            actix::fut::wrap_future(read).map(move |res, act: &mut SessionActor, _| {
                let frames = res.map_err(|e| RuntimeError::Internal(e.to_string()))??;
                let mut all = summaries_from_frames(&frames);
                // What this actor remembers is newer than (or equal to) what was stored.
                for t in act.recent_turns() {
                    all.insert(t.number, t);
                }
                let list: Vec<TurnSummary> = all.into_values().collect();
                let skip = list.len().saturating_sub(count);
                Ok(list.into_iter().skip(skip).collect())
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuilds_turns_from_frames() {
        let frames = vec![
            (
                1,
                r#"{"kind":"turn_started","turnId":"turn_1"}"#.to_string(),
            ),
            (
                2,
                r#"{"kind":"user_message","turnId":"turn_1","text":"do it","delegatedBy":"ses_d"}"#
                    .to_string(),
            ),
            (
                3,
                r#"{"kind":"assistant_message","turnId":"turn_1","text":"done"}"#.to_string(),
            ),
            (
                4,
                r#"{"kind":"user_message","turnId":"turn_2","text":"again"}"#.to_string(),
            ),
        ];
        let map = summaries_from_frames(&frames);
        assert_eq!(map.len(), 2);
        assert_eq!(
            map.get(&1),
            Some(&TurnSummary {
                number: 1,
                user: "do it".into(),
                delegated: true,
                response: "done".into()
            })
        );
        assert_eq!(map.get(&2).map(|t| t.delegated), Some(false));
    }
}
