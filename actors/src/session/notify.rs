//! When the session's attention changes to a moment its `notify` setting asks for,
//! its owner's devices are told ([`crate::push`]), with what waits.

use tandem_protocol::{Attention, PermissionKind};

use super::SessionActor;
use crate::ids::RequestId;
use crate::push::{wanted, Moment};

/// The longest tool input shown in a notification.
const MAX_INPUT: usize = 160;

impl SessionActor {
    /// Pushes to the owner's devices if the attention changed to a moment they are
    /// told of. Called as every message's writes are flushed.
    pub(super) fn push_if_needed(&mut self) {
        let attention = self.record.attention(!self.permissions.is_empty());
        if attention == self.pushed {
            return;
        }
        self.pushed = attention;
        if wanted(self.record.notify, attention) {
            let (what, request_id) = self.what_waits(attention);
            self.services.push.notify(Moment {
                user_id: self.record.owner_id.clone(),
                session_id: self.record.id.clone(),
                title: self.record.title.clone(),
                attention,
                what,
                request_id,
            });
        }
    }

    /// What the owner is asked for, for a person, and the permission request that
    /// waits, if one does.
    fn what_waits(&self, attention: Attention) -> (String, Option<RequestId>) {
        match attention {
            Attention::NeedsInput => match self.permissions.first() {
                Some(p) if p.permission_kind == PermissionKind::Plan => (
                    "A plan waits for approval".into(),
                    Some(p.request_id.clone()),
                ),
                Some(p) => {
                    let input = ["command", "file_path", "path", "url"]
                        .iter()
                        .find_map(|k| p.input.get(*k).and_then(|v| v.as_str()))
                        .map(|s| format!("({})", s.chars().take(MAX_INPUT).collect::<String>()))
                        .unwrap_or_default();
                    (
                        format!("Permission: {}{input}", p.tool_name),
                        Some(p.request_id.clone()),
                    )
                }
                None => match &self.record.question {
                    Some(q) => (format!("Question for the Driver: {}", q.question), None),
                    None => ("A Worker's proposal waits for approval".into(), None),
                },
            },
            Attention::Failed => ("The last turn failed".into(), None),
            Attention::DoneUnseen => {
                let response = self.recent.back().map(|t| t.response.trim()).unwrap_or("");
                if response.is_empty() {
                    ("The turn finished".into(), None)
                } else {
                    (response.to_string(), None)
                }
            }
            Attention::None => (String::new(), None),
        }
    }
}
