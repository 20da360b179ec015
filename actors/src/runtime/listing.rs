//! Session lists a page at a time. With many sessions a whole list is megabytes
//! (100,000 sessions are ~30 MB of JSON), so REST `GET /sessions` and the
//! `sessions.watch` snapshot hand out pages and a cursor for the next one.
//!
//! Order: most recently active first, ties by id. The cursor is the position of the
//! last session returned (`lastActivity` and id), so a page is found by one pass over
//! the sessions without copying more than the page. A session that becomes active
//! while a client pages moves to the front: it may be missed by that walk (the
//! client learns of it from `session_upserted`) or, never, seen twice in one walk.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tandem_protocol::SessionInfo;

use super::SessionService;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::SessionId;

/// Largest page a client may ask for.
pub const MAX_SESSIONS_PAGE: usize = 1000;

/// One page of sessions.
#[derive(Debug, Clone)]
pub struct SessionPage {
    /// Sessions on this page, in list order.
    pub sessions: Vec<SessionInfo>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Sort key: larger `lastActivity` first, then smaller id. As a tuple that sorts
/// ascending in list order.
type Key = (Reverse<u64>, SessionId);

fn encode(key: &Key) -> String {
    format!("{}.{}", key.0 .0, key.1)
}

fn decode(cursor: &str) -> Result<Key, RuntimeError> {
    let bad = || RuntimeError::InvalidArgument(format!("cursor `{cursor:.80}` is not valid"));
    let (at, id) = cursor.split_once('.').ok_or_else(bad)?;
    let at = at.parse::<u64>().map_err(|_| bad())?;
    if id.is_empty() {
        return Err(bad());
    }
    Ok((Reverse(at), SessionId::from(id)))
}

impl SessionService {
    /// Sessions `who` may see after `cursor` (from the start when `None`), at most
    /// `limit` (1..=[`MAX_SESSIONS_PAGE`]).
    pub fn session_page(
        &self,
        who: &Principal,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, RuntimeError> {
        self.session_page_with(who, limit, cursor, &[])
    }

    /// [`SessionService::session_page`] over this node's sessions and `others` (the other
    /// cluster nodes' sessions), in one order.
    pub fn session_page_with(
        &self,
        who: &Principal,
        limit: usize,
        cursor: Option<&str>,
        others: &[SessionInfo],
    ) -> Result<SessionPage, RuntimeError> {
        if limit == 0 || limit > MAX_SESSIONS_PAGE {
            return Err(RuntimeError::InvalidArgument(format!(
                "limit must be 1 to {MAX_SESSIONS_PAGE}"
            )));
        }
        let after = cursor.map(decode).transpose()?;
        // The `limit + 1` smallest keys after the cursor: a max-heap of that size. A
        // session's id is copied only when it enters the heap (with a million
        // sessions, a page is a million comparisons but only a few copies).
        let mut best: BinaryHeap<Key> = BinaryHeap::with_capacity(limit + 2);
        let mut offer = |info: &SessionInfo| {
            if !who.can_see(info) {
                return;
            }
            let key = (Reverse(info.last_activity), info.id.as_str());
            if after
                .as_ref()
                .is_some_and(|(at, id)| key <= (*at, id.as_str()))
            {
                return;
            }
            if best.len() > limit {
                if best
                    .peek()
                    .is_some_and(|(at, id)| key >= (*at, id.as_str()))
                {
                    return;
                }
                best.pop();
            }
            best.push((key.0, info.id.clone()));
        };
        self.services
            .sessions
            .for_each(|_, handle| handle.shared.peek(&mut offer));
        others.iter().for_each(&mut offer);
        let mut keys = best.into_sorted_vec();
        let more = keys.len() > limit;
        keys.truncate(limit);
        let next_cursor = more.then(|| keys.last().map(encode)).flatten();
        let sessions = keys
            .iter()
            .filter_map(|(_, id)| {
                self.services
                    .sessions
                    .get(id)
                    .map(|h| h.shared.info())
                    .or_else(|| others.iter().find(|o| o.id == *id).cloned())
            })
            .collect();
        Ok(SessionPage {
            sessions,
            next_cursor,
        })
    }
}

impl SessionService {
    /// `client.seen` (owner only): a client shows session `id` up to `seq`.
    pub async fn seen(
        &self,
        who: &Principal,
        id: &SessionId,
        seq: u64,
    ) -> Result<tandem_protocol::Attention, RuntimeError> {
        self.access
            .drivable(who, id)?
            .ask(crate::session::Seen { seq })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_order() {
        let a: Key = (Reverse(20), "ses_b".into());
        let b: Key = (Reverse(10), "ses_a".into());
        assert!(a < b, "more recent first");
        assert_eq!(decode(&encode(&a)).ok(), Some(a));
        assert!(decode("nope").is_err() && decode("12.").is_err() && decode("x.y").is_err());
    }
}
