//! Histories stored by earlier releases, in the shapes of today: before the adapters
//! wrote vendor-neutral usage, plans and file changes, a `turn_completed`'s `usage`
//! held the vendor's own report (Claude Code's `{usage: {input_tokens,
//! cache_read_input_tokens, ...}, totalCostUsd}`, Codex's `{inputTokens,
//! cachedInputTokens, ..., modelContextWindow}`, an ACP agent's `{inputTokens, ...,
//! thoughtTokens, context: {used, size, cost}, totalCostUsd}`), a `plan`'s entries
//! whatever the agent sent, and a `tool_call` no `changes`. The runtime has the store
//! rewrite them once at start ([`upgrade`]), so every reader of history (replays,
//! pages, usage totals, other nodes' copies) sees one shape whatever the vendor and
//! age.

use serde_json::Value;
use tandem_protocol::history::{ContextUsage, Cost};
use tandem_protocol::{Event, PlanEntry, TurnUsage};

use crate::error::RuntimeError;
use crate::store::Store;

/// Rewrites what earlier releases stored; each step once per database.
pub fn upgrade(store: &Store) -> Result<(), RuntimeError> {
    let shapes = store.rewrite_history_once(
        "history_shapes",
        &["\"kind\":\"turn_completed\"", "\"kind\":\"plan\""],
        rewrite,
    )?;
    let edits = store.rewrite_history_once(
        "history_edits",
        &["\"kind\":\"tool_call\"", "\"kind\":\"permission_request\""],
        with_changes,
    )?;
    if shapes + edits > 0 {
        tracing::info!(
            usage_and_plans = shapes,
            tool_calls = edits,
            "stored history rewritten in the vendor-neutral shapes"
        );
    }
    Ok(())
}

/// A `tool_call` (or a `permission_request` for one) with the `changes` its input
/// makes, or `None` when it has them or edits no file. (A Codex patch is asked about
/// by its item's id alone: such a request stays without.)
fn with_changes(frame: &str) -> Option<String> {
    let mut event: Value = serde_json::from_str(frame).ok()?;
    if event.get("changes").is_some() {
        return None;
    }
    let name = match event["kind"].as_str()? {
        "tool_call" => event["name"].as_str()?,
        "permission_request" => event["toolName"].as_str()?,
        _ => return None,
    };
    let changes = super::edits::any(name, &event["input"]);
    if changes.is_empty() {
        return None;
    }
    event["changes"] = serde_json::to_value(changes).ok()?;
    typed(event)
}

/// The event as new ones are written: through the typed event where it reads.
fn typed(event: Value) -> Option<String> {
    match serde_json::from_value::<Event>(event.clone()) {
        Ok(typed) => serde_json::to_string(&typed).ok(),
        Err(_) => serde_json::to_string(&event).ok(),
    }
}

/// The frame in the neutral shapes, or `None` when it needs no change (or is not
/// JSON: left as it is).
fn rewrite(frame: &str) -> Option<String> {
    let mut event: Value = serde_json::from_str(frame).ok()?;
    match event["kind"].as_str()? {
        "turn_completed" => {
            let usage = event.get("usage").filter(|u| u.is_object())?;
            let neutral = serde_json::to_value(old_usage(usage)).ok()?;
            event["usage"] = neutral;
        }
        "plan" => {
            let entries: Vec<PlanEntry> = event["entries"]
                .as_array()
                .map(|all| all.iter().map(PlanEntry::from_value).collect())
                .unwrap_or_default();
            event["entries"] = serde_json::to_value(entries).ok()?;
        }
        _ => return None,
    }
    typed(event)
}

/// A usage report as the previous release stored it, in the neutral shape.
fn old_usage(usage: &Value) -> TurnUsage {
    let n = |v: &Value| v.as_u64();
    let claude = &usage["usage"];
    let context = &usage["context"];
    let cost = &context["cost"];
    let session_cost = match (cost["amount"].as_f64(), cost["currency"].as_str()) {
        (Some(amount), Some(currency)) => Some(Cost {
            amount,
            currency: currency.to_string(),
        }),
        _ => None,
    };
    let cost_usd = usage["totalCostUsd"].as_f64();
    if claude.is_object() {
        // Claude Code: input apart from cache reads and writes.
        let read = n(&claude["cache_read_input_tokens"]).unwrap_or(0);
        let write = n(&claude["cache_creation_input_tokens"]).unwrap_or(0);
        return TurnUsage {
            input_tokens: n(&claude["input_tokens"]).unwrap_or(0) + read + write,
            cached_input_tokens: read,
            cache_write_tokens: Some(write),
            output_tokens: n(&claude["output_tokens"]).unwrap_or(0),
            reasoning_tokens: None,
            context: None,
            cost_usd,
            session_cost,
        };
    }
    let input = n(&usage["inputTokens"]).unwrap_or(0);
    // An ACP agent's last `usage_update`; else Codex's window, with the turn's input
    // as what it held (what the previous release told editors).
    let context = match (n(&context["used"]), n(&context["size"])) {
        (Some(used), Some(size)) => Some(ContextUsage { used, size }),
        _ => n(&usage["modelContextWindow"]).map(|size| ContextUsage { used: input, size }),
    };
    TurnUsage {
        input_tokens: input,
        cached_input_tokens: n(&usage["cachedInputTokens"])
            .or_else(|| n(&usage["cachedReadTokens"]))
            .unwrap_or(0),
        cache_write_tokens: n(&usage["cachedWriteTokens"]),
        output_tokens: n(&usage["outputTokens"]).unwrap_or(0),
        reasoning_tokens: n(&usage["reasoningOutputTokens"]).or_else(|| n(&usage["thoughtTokens"])),
        context,
        cost_usd,
        session_cost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_protocol::history::{PlanPriority, PlanStatus};

    fn usage_of(frame: &str) -> TurnUsage {
        let v: Value = serde_json::from_str(&rewrite(frame).unwrap()).unwrap();
        serde_json::from_value(v["usage"].clone()).unwrap()
    }

    #[test]
    fn each_vendors_old_usage_reads_in_the_neutral_shape() {
        let claude = usage_of(
            r#"{"sessionId":"s","seq":7,"ts":1,"turnId":"turn_1","kind":"turn_completed","status":"completed","usage":{"durationMs":1200,"totalCostUsd":0.5,"usage":{"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"input_tokens":100,"output_tokens":30}}}"#,
        );
        assert_eq!(
            (
                claude.input_tokens,
                claude.cached_input_tokens,
                claude.cache_write_tokens
            ),
            (125, 20, Some(5))
        );
        assert_eq!((claude.output_tokens, claude.cost_usd), (30, Some(0.5)));
        let codex = usage_of(
            r#"{"sessionId":"s","seq":7,"ts":1,"kind":"turn_completed","status":"completed","usage":{"cachedInputTokens":40,"inputTokens":300,"modelContextWindow":272000,"outputTokens":60,"reasoningOutputTokens":12,"totalTokens":360}}"#,
        );
        assert_eq!((codex.input_tokens, codex.cached_input_tokens), (300, 40));
        assert_eq!(
            (codex.output_tokens, codex.reasoning_tokens),
            (60, Some(12))
        );
        assert_eq!(
            codex.context,
            Some(ContextUsage {
                used: 300,
                size: 272000
            })
        );
        let acp = usage_of(
            r#"{"sessionId":"s","seq":8,"ts":1,"kind":"turn_completed","status":"completed","usage":{"cachedReadTokens":1,"context":{"cost":{"amount":0.75,"currency":"USD"},"size":200000,"used":8000},"inputTokens":7,"outputTokens":3,"thoughtTokens":2,"totalCostUsd":0.25,"totalTokens":10}}"#,
        );
        assert_eq!((acp.input_tokens, acp.cached_input_tokens), (7, 1));
        assert_eq!((acp.reasoning_tokens, acp.cost_usd), (Some(2), Some(0.25)));
        assert_eq!(
            acp.context,
            Some(ContextUsage {
                used: 8000,
                size: 200000
            })
        );
        assert_eq!(acp.session_cost.map(|c| c.amount), Some(0.75));
    }

    #[test]
    fn old_plans_read_as_entries_and_other_events_are_left_alone() {
        let new = rewrite(
            r#"{"sessionId":"s","seq":3,"ts":1,"kind":"plan","entries":[{"content":"a","priority":"high","status":"completed"},"b"]}"#,
        )
        .unwrap();
        let event: Event = serde_json::from_str(&new).unwrap();
        let tandem_protocol::EventBody::Plan { entries } = event.body else {
            panic!("{new}");
        };
        assert_eq!(entries[0].status, PlanStatus::Completed);
        assert_eq!(entries[0].priority, PlanPriority::High);
        assert_eq!(entries[1].content, "b");
        assert_eq!(rewrite(r#"{"kind":"text_delta","text":"x"}"#), None);
        assert_eq!(rewrite("not json"), None);
        let without =
            r#"{"sessionId":"s","seq":2,"ts":1,"kind":"turn_completed","status":"completed"}"#;
        assert_eq!(rewrite(without), None);
    }
}
