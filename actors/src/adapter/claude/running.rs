//! The running-sessions view's Claude part: sessions of ours that a Claude Code
//! process started outside tandem is working on right now.

use tandem_protocol::rest::RunningSession;
use tandem_protocol::SessionInfo;

use super::ClaudeHub;
use crate::adapter::VendorId;

/// What the view says about such a session.
pub const STATUS_TEXT: &str = "Running in Claude Code outside tandem";

/// One entry per visible Claude session whose Claude session id a busy outside process
/// works on, unless `listed` already has the session (our own turn or background work
/// wins). They cannot be interrupted from here.
pub fn external(
    hub: &ClaudeHub,
    vendor: &VendorId,
    visible: &[SessionInfo],
    listed: &[RunningSession],
) -> Vec<RunningSession> {
    if !visible.iter().any(|s| *vendor == s.vendor.as_str()) {
        return Vec::new();
    }
    let mut out: Vec<RunningSession> = Vec::new();
    for run in hub.external_runs() {
        let Some(info) = visible.iter().find(|s| {
            *vendor == s.vendor.as_str()
                && s.vendor_session_id.as_deref() == Some(&run.claude_session_id)
        }) else {
            continue;
        };
        let known = |id: &str| {
            listed.iter().any(|r| r.session_id == id) || out.iter().any(|r| r.session_id == id)
        };
        if known(&info.id) {
            continue;
        }
        out.push(RunningSession {
            session_id: info.id.clone(),
            vendor: info.vendor.clone(),
            started_at: run.started_at,
            last_seq: info.last_seq,
            background: None,
            can_interrupt: Some(false),
            status_text: Some(STATUS_TEXT.into()),
            tasks: None,
        });
    }
    out
}
