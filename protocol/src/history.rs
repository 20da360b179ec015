//! Vendor-neutral parts of history events: what a turn used ([`TurnUsage`]), an
//! agent's plan ([`PlanEntry`]) and the files a tool call changes ([`FileChange`]). The adapters translate their vendor's shapes into
//! these, so the runtime, the page and every other client read one shape whatever
//! the vendor (histories stored before are rewritten to them once, when the database
//! is opened).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one turn used, as its vendor reported it (`turn_completed.usage`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    /// Input tokens, those served from or written to the vendor's cache included.
    pub input_tokens: u64,
    /// Of the input, tokens read from the vendor's cache.
    pub cached_input_tokens: u64,
    /// Of the input, tokens written to the vendor's cache, when the vendor counts
    /// them apart (Claude Code, ACP agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Of the output, reasoning tokens, when the vendor counts them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// The context window after the turn, when the vendor said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
    /// What the turn cost in US dollars, when the vendor reported a cost in dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// What the vendor session has cost so far, in the currency the vendor gave (ACP
    /// agents report the session's cost, not the turn's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_cost: Option<Cost>,
}

impl TurnUsage {
    /// Total tokens: input and output.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// How full the model's context window is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    /// Tokens in use.
    pub used: u64,
    /// The window's size, tokens.
    pub size: u64,
}

/// An amount of money.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// The amount.
    pub amount: f64,
    /// ISO 4217 currency code (`USD`).
    pub currency: String,
}

/// A file a tool call changes (or asks to), as every vendor's edit is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// The file, as the agent named it.
    pub path: String,
    /// What happens to it.
    pub kind: FileChangeKind,
    /// With `rename`: its new path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_path: Option<String>,
    /// The change as the lines of a unified diff: `@@` hunk headers where the vendor
    /// gave them, then lines starting with `' '` (kept), `'-'` or `'+'`; a new file's
    /// lines all `+`. Empty when the vendor did not say.
    pub diff: String,
}

/// What a change does to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileChangeKind {
    /// A new file.
    Add,
    /// An existing file changed.
    Modify,
    /// A file removed.
    Delete,
    /// A file moved to `movePath` (and maybe changed).
    Rename,
}

/// One step of an agent's plan (the `plan` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanEntry {
    /// What the step is.
    pub content: String,
    /// Where it stands.
    #[serde(default)]
    pub status: PlanStatus,
    /// How much it matters.
    #[serde(default)]
    pub priority: PlanPriority,
}

impl PlanEntry {
    /// An entry from what an agent sent: `{content, status, priority}` (ACP's
    /// shape), taken leniently: the text may be called `step`, `text` or `title`, a
    /// status `inProgress`, `active` or `done`; a status or priority it does not know
    /// is left at its default, a bare string is the content, and anything else is
    /// shown as JSON.
    pub fn from_value(value: &serde_json::Value) -> PlanEntry {
        let text = |name: &str| value.get(name).and_then(serde_json::Value::as_str);
        let content = match value {
            serde_json::Value::String(text) => text.clone(),
            _ => ["content", "step", "text", "title"]
                .into_iter()
                .find_map(text)
                .map_or_else(|| value.to_string(), str::to_string),
        };
        let status = match text("status").unwrap_or_default() {
            "in_progress" | "inProgress" | "active" => PlanStatus::InProgress,
            "completed" | "done" => PlanStatus::Completed,
            _ => PlanStatus::Pending,
        };
        let priority = match text("priority").unwrap_or_default() {
            "high" => PlanPriority::High,
            "low" => PlanPriority::Low,
            _ => PlanPriority::Medium,
        };
        PlanEntry {
            content,
            status,
            priority,
        }
    }
}

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// How much a plan step matters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PlanPriority {
    /// Among the first.
    High,
    /// Neither.
    #[default]
    Medium,
    /// Can wait.
    Low,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plan_entries_are_read_leniently() {
        assert_eq!(
            PlanEntry::from_value(
                &json!({"content": "fix", "status": "in_progress", "priority": "high"})
            ),
            PlanEntry {
                content: "fix".into(),
                status: PlanStatus::InProgress,
                priority: PlanPriority::High
            }
        );
        let odd = PlanEntry::from_value(&json!({"content": "x", "status": "paused"}));
        assert_eq!(
            (odd.status, odd.priority),
            (PlanStatus::Pending, PlanPriority::Medium)
        );
        assert_eq!(
            PlanEntry::from_value(&json!("just text")).content,
            "just text"
        );
        let named = PlanEntry::from_value(&json!({"title": "t", "status": "done"}));
        assert_eq!(
            (named.content.as_str(), named.status),
            ("t", PlanStatus::Completed)
        );
        assert_eq!(
            PlanEntry::from_value(&json!({"step": 1})).content,
            r#"{"step":1}"#
        );
    }
}
