//! `read_handoff_source`: page the history a handoff target continues.

use tandem_protocol::tools::{HandoffEntry, ReadHandoffSourceParams, ReadHandoffSourceResult};

use super::clamped;
use crate::error::ToolError;
use crate::runtime::Runtime;
use crate::session::SessionState;

pub(super) async fn read_handoff_source(
    rt: &Runtime,
    state: &SessionState,
    args: ReadHandoffSourceParams,
) -> Result<ReadHandoffSourceResult, ToolError> {
    let offset = clamped(args.offset, 0, 0, u64::MAX / 2) as usize;
    let limit = clamped(args.limit, 30, 1, 100) as usize;
    let history = rt.handoff_history(&state.info).await?;
    let total = history.len();
    // Pages run backwards from the newest message: offset 0 is the latest `limit`.
    let end = total.saturating_sub(offset);
    let start = end.saturating_sub(limit);
    Ok(ReadHandoffSourceResult {
        source_session_id: state.info.handoff_from.clone(),
        total,
        offset,
        limit,
        has_more: start > 0,
        entries: history[start..end]
            .iter()
            .map(|(session, e)| HandoffEntry {
                session_id: session.clone(),
                seq: e.seq,
                role: e.speaker,
                text: e.text.clone(),
            })
            .collect(),
    })
}
