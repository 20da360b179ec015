//! A turn's usage (`turn_completed.usage`, in its vendor's shape) as ACP says it,
//! pure: the turn's tokens as `PromptResponse.usage`, and the context window as a
//! `usage_update` where the vendor told it.

use serde_json::{json, Map, Value};

/// The turn's tokens as ACP's `Usage` (`totalTokens`, `inputTokens`, `outputTokens`,
/// `cachedReadTokens`, `cachedWriteTokens`, `thoughtTokens`), or `None` when the vendor
/// reported no tokens. Claude Code: `{usage: {input_tokens,
/// cache_read_input_tokens, cache_creation_input_tokens, output_tokens}}`; Codex and
/// ACP agents: `{inputTokens, cachedInputTokens, outputTokens, reasoningOutputTokens,
/// totalTokens}` (an ACP agent's own `PromptResponse.usage` has ACP's names, read too).
pub fn turn_tokens(usage: &Value) -> Option<Value> {
    let n = |v: &Value| v.as_u64();
    let claude = &usage["usage"];
    let (input, output, cached_read, cached_write, thought) = if claude.is_object() {
        let read = n(&claude["cache_read_input_tokens"]);
        let write = n(&claude["cache_creation_input_tokens"]);
        (
            n(&claude["input_tokens"]).map(|i| i + read.unwrap_or(0) + write.unwrap_or(0)),
            n(&claude["output_tokens"]),
            read,
            write,
            None,
        )
    } else {
        (
            n(&usage["inputTokens"]),
            n(&usage["outputTokens"]),
            n(&usage["cachedInputTokens"]).or_else(|| n(&usage["cachedReadTokens"])),
            n(&usage["cachedWriteTokens"]),
            n(&usage["reasoningOutputTokens"]).or_else(|| n(&usage["thoughtTokens"])),
        )
    };
    if input.is_none() && output.is_none() {
        return None;
    }
    let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
    let total = n(&usage["totalTokens"])
        .filter(|_| !claude.is_object())
        .unwrap_or(input + output);
    let mut out = Map::new();
    out.insert("totalTokens".into(), json!(total));
    out.insert("inputTokens".into(), json!(input));
    out.insert("outputTokens".into(), json!(output));
    for (key, value) in [
        ("cachedReadTokens", cached_read),
        ("cachedWriteTokens", cached_write),
        ("thoughtTokens", thought),
    ] {
        if let Some(v) = value {
            out.insert(key.into(), json!(v));
        }
    }
    Some(Value::Object(out))
}

/// The `usage_update` of a turn's usage: the context in use and its size, where the
/// vendor said them (an ACP agent's last `usage_update`, kept as `context: {used,
/// size, cost?}`; Codex's `modelContextWindow`, with the turn's input as used), and
/// the session's cost so far when the agent gave it. `None` without a window: ACP
/// needs both numbers.
pub fn context_update(usage: &Value) -> Option<Value> {
    let context = &usage["context"];
    let (used, size) = match (context["used"].as_u64(), context["size"].as_u64()) {
        (Some(used), Some(size)) => (used, size),
        _ => (
            usage["inputTokens"].as_u64()?,
            usage["modelContextWindow"].as_u64()?,
        ),
    };
    let mut update = json!({"sessionUpdate": "usage_update", "used": used, "size": size});
    let cost = &context["cost"];
    if let (Some(amount), Some(currency)) = (cost["amount"].as_f64(), cost["currency"].as_str()) {
        update["cost"] = json!({"amount": amount, "currency": currency});
    }
    Some(update)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codex_and_acp_tokens() {
        assert_eq!(
            turn_tokens(
                &json!({"usage": {"input_tokens": 10, "cache_read_input_tokens": 5,
                "cache_creation_input_tokens": 2, "output_tokens": 7}, "totalCostUsd": 0.25})
            ),
            Some(
                json!({"totalTokens": 24, "inputTokens": 17, "outputTokens": 7,
                "cachedReadTokens": 5, "cachedWriteTokens": 2})
            )
        );
        assert_eq!(
            turn_tokens(
                &json!({"inputTokens": 30, "cachedInputTokens": 4, "outputTokens": 9,
                "reasoningOutputTokens": 3, "totalTokens": 39})
            ),
            Some(
                json!({"totalTokens": 39, "inputTokens": 30, "outputTokens": 9,
                "cachedReadTokens": 4, "thoughtTokens": 3})
            )
        );
        assert_eq!(
            turn_tokens(&json!({"context": {"used": 1, "size": 2}})),
            None
        );
        assert_eq!(turn_tokens(&Value::Null), None);
    }

    #[test]
    fn context_windows() {
        assert_eq!(
            context_update(&json!({"inputTokens": 5,
                "context": {"used": 8, "size": 100, "cost": {"amount": 0.5, "currency": "USD"}}})),
            Some(
                json!({"sessionUpdate": "usage_update", "used": 8, "size": 100,
                "cost": {"amount": 0.5, "currency": "USD"}})
            )
        );
        assert_eq!(
            context_update(&json!({"inputTokens": 30, "modelContextWindow": 200000})),
            Some(json!({"sessionUpdate": "usage_update", "used": 30, "size": 200000}))
        );
        assert_eq!(context_update(&json!({"inputTokens": 30})), None);
    }
}
