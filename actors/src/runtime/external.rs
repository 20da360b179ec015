//! `external.list` and `external.import`: the CLI sessions already on this machine
//! whose working directory lies under the caller's roots (`crate::external`), and a
//! tandem session that continues one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tandem_protocol::external::{
    ExternalImportParams, ExternalListParams, ExternalListResult, ExternalSession,
};
use tandem_protocol::{ErrorCode, EventBody, SessionInfo};

use super::create::NewSession;
use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::external::vendors::Item;
use crate::external::{Found, MAX_IMPORT_BYTES};
use crate::ids::SessionId;

/// Longest title shown, in characters (a first prompt can be long).
const TITLE_CHARS: usize = 120;
/// Most transcript messages an import writes into the history (the newest).
const MAX_IMPORTED: usize = 2000;

impl Runtime {
    /// `external.list`: most recently active first. A transcript whose directory is
    /// outside the caller's roots, or gone, is not listed.
    pub async fn external_sessions(
        &self,
        who: &Principal,
        p: ExternalListParams,
    ) -> Result<ExternalListResult, RuntimeError> {
        let sessions = self
            .visible_transcripts(who, &p)
            .await?
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        Ok(ExternalListResult { sessions })
    }

    /// `external.import`: a session of the caller's that continues the CLI session
    /// `p.vendor_session_id` (its next turn resumes it in the CLI), its history
    /// holding the transcript's conversation; the caller's session that already
    /// continues it, if there is one.
    pub async fn import_external(
        &self,
        who: &Principal,
        p: ExternalImportParams,
    ) -> Result<SessionInfo, RuntimeError> {
        let key = (p.vendor.clone(), p.vendor_session_id.clone());
        if let Some(id) = self.continued_by(who).get(&key) {
            return self.sessions().session(who, id);
        }
        let filter = ExternalListParams {
            vendor: Some(p.vendor.clone()),
            cwd: None,
        };
        let (listed, found) = self
            .visible_transcripts(who, &filter)
            .await?
            .into_iter()
            .find(|(s, _)| s.vendor_session_id == p.vendor_session_id)
            .ok_or_else(|| {
                RuntimeError::Missing(format!(
                    "no {} session {} under your roots on this machine",
                    p.vendor, p.vendor_session_id
                ))
            })?;
        let (items, skipped) = read_transcript(&found).await?;
        let info = self
            .new_session(NewSession {
                mcp_servers: None,
                id: None,
                owner_id: who.user_id.clone(),
                visibility: tandem_protocol::Visibility::default(),
                vendor: crate::adapter::VendorId::from(p.vendor.as_str()),
                model: String::new(),
                effort: String::new(),
                title: Some(crate::text::clip(&listed.title, 80)),
                cwd: listed.cwd.clone(),
                permission_mode: tandem_protocol::PermissionMode::default(),
                parent_id: None,
                pending_prompt: None,
                handoff_from: None,
                fork: None,
                worktree: None,
                resume: Some(p.vendor_session_id.clone()),
            })
            .await?;
        let events = imported(p.vendor, p.vendor_session_id, items, skipped);
        self.sessions()
            .session_addr(&info.id)
            .ok_or_else(|| RuntimeError::SessionNotFound(info.id.clone()))?
            .send(crate::session::RecordEvents(events))
            .await?;
        self.sessions().session(who, &info.id)
    }

    /// The transcripts `who` may see, as listed and as found.
    async fn visible_transcripts(
        &self,
        who: &Principal,
        p: &ExternalListParams,
    ) -> Result<Vec<(ExternalSession, Found)>, RuntimeError> {
        let sources: Vec<_> = crate::external::sources(&self.inner.config.vendors)
            .into_iter()
            .filter(|s| p.vendor.as_deref().is_none_or(|v| v == s.vendor))
            .collect();
        let external = self.inner.external.clone();
        let found = actix_rt::task::spawn_blocking(move || external.scan(&sources))
            .await
            .map_err(|e| RuntimeError::Internal(format!("reading transcripts failed: {e}")))?;
        let roots: Vec<PathBuf> = self
            .inner
            .config
            .roots_of(&who.user_id, who.admin)
            .iter()
            .filter_map(|r| r.canonicalize().ok())
            .collect();
        let within = match p.cwd.as_deref() {
            Some(dir) => match Path::new(dir).canonicalize() {
                Ok(dir) => Some(dir),
                // Nothing lies under a directory that does not exist.
                Err(_) => return Ok(Vec::new()),
            },
            None => None,
        };
        let continued = self.continued_by(who);
        let mut sessions: Vec<(ExternalSession, Found)> = found
            .into_iter()
            .filter_map(|f| {
                let id = f.summary.session_id.clone()?;
                let cwd = Path::new(f.summary.cwd.as_deref()?).canonicalize().ok()?;
                let visible = roots.iter().any(|r| cwd.starts_with(r))
                    && within.as_ref().is_none_or(|w| cwd.starts_with(w));
                if !visible {
                    return None;
                }
                let title = f
                    .summary
                    .title
                    .clone()
                    .or_else(|| f.summary.first_prompt.clone())
                    .map(|t| crate::text::clip(t.lines().next().unwrap_or_default(), TITLE_CHARS))
                    .unwrap_or_else(|| "(no prompt)".into());
                let listed = ExternalSession {
                    session_id: continued.get(&(f.vendor.clone(), id.clone())).cloned(),
                    vendor: f.vendor.clone(),
                    vendor_session_id: id,
                    cwd: cwd.display().to_string(),
                    title,
                    messages: f.summary.messages,
                    last_activity: f.summary.last_at.unwrap_or(0).max(f.modified_ms),
                    size_bytes: f.size,
                    skipped_lines: f.summary.skipped,
                };
                Some((listed, f))
            })
            .collect();
        sessions.sort_by(|(a, _), (b, _)| {
            (b.last_activity, &a.vendor_session_id).cmp(&(a.last_activity, &b.vendor_session_id))
        });
        Ok(sessions)
    }

    /// The caller's live sessions by (vendor, the CLI's session id).
    fn continued_by(&self, who: &Principal) -> HashMap<(String, String), SessionId> {
        let mut by = HashMap::new();
        self.inner.services.sessions.for_each(|_, h| {
            let info = h.shared.info();
            if info.owner_id == who.user_id && info.archived_at.is_none() {
                if let Some(vid) = info.vendor_session_id.clone() {
                    by.insert((info.vendor.clone(), vid), info.id.clone());
                }
            }
        });
        by
    }
}

/// The history event of one imported message.
fn event_of(item: Item) -> EventBody {
    match item {
        Item::Prompt(text) => EventBody::UserMessage {
            text,
            internal: false,
            delegated_by: None,
            content: Vec::new(),
        },
        Item::Answer(text) => EventBody::AssistantMessage { text },
        Item::Call { id, name, input } => EventBody::ToolCall {
            call_id: id,
            changes: crate::adapter::edits::any(&name, &input),
            name,
            input,
        },
        Item::Result {
            id,
            output,
            is_error,
        } => EventBody::ToolResult {
            call_id: id,
            output,
            is_error,
        },
    }
}

/// The conversation of transcript `found` and how many lines were skipped; refused
/// when it is larger than an import reads.
async fn read_transcript(found: &Found) -> Result<(Vec<Item>, u64), RuntimeError> {
    if found.size > MAX_IMPORT_BYTES {
        return Err(RuntimeError::Unusable {
            code: ErrorCode::FileTooLarge,
            message: format!(
                "its transcript is {} MiB; an import reads at most {} MiB",
                found.size >> 20,
                MAX_IMPORT_BYTES >> 20
            ),
        });
    }
    let (path, claude) = (found.path.clone(), found.claude);
    let read =
        actix_rt::task::spawn_blocking(move || crate::external::conversation(&path, claude)).await;
    Ok(read.map_err(|e| RuntimeError::Internal(format!("reading the transcript failed: {e}")))??)
}

/// The events an imported session's history starts with: `imported` (how many
/// messages there were, how many are shown), then the last [`MAX_IMPORTED`] items.
fn imported(
    vendor: String,
    vendor_session_id: String,
    items: Vec<Item>,
    skipped: u64,
) -> Vec<EventBody> {
    let messages = items
        .iter()
        .filter(|i| !matches!(i, Item::Result { .. }))
        .count();
    let from = items.len().saturating_sub(MAX_IMPORTED);
    let shown = items[from..]
        .iter()
        .filter(|i| !matches!(i, Item::Result { .. }))
        .count();
    let mut events = vec![EventBody::Imported {
        vendor,
        vendor_session_id,
        messages: messages as u64,
        shown: shown as u64,
        skipped_lines: skipped,
    }];
    events.extend(items.into_iter().skip(from).map(event_of));
    events
}
