//! `read_handoff_source`: page the history a handoff target continues.

use serde_json::{json, Map, Value};

use super::clamped_number;
use crate::runtime::Runtime;
use crate::session::SessionState;

pub(super) async fn read_handoff_source(
    rt: &Runtime,
    state: &SessionState,
    args: &Map<String, Value>,
) -> Result<Value, String> {
    let offset = clamped_number(args, "offset", 0, 0, u64::MAX / 2)? as usize;
    let limit = clamped_number(args, "limit", 30, 1, 100)? as usize;
    let history = rt
        .handoff_history(&state.info)
        .await
        .map_err(|e| e.to_string())?;
    let total = history.len();
    // Pages run backwards from the newest message: offset 0 is the latest `limit`.
    let end = total.saturating_sub(offset);
    let start = end.saturating_sub(limit);
    Ok(json!({
        "sourceSessionId": state.info.handoff_from,
        "total": total,
        "offset": offset,
        "limit": limit,
        "hasMore": start > 0,
        "entries": history[start..end]
            .iter()
            .map(|(session, e)| json!({
                "sessionId": session,
                "seq": e.seq,
                "role": e.speaker.as_str(),
                "text": e.text,
            }))
            .collect::<Vec<_>>(),
    }))
}
