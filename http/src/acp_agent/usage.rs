//! A turn's usage (`turn_completed.usage`, the neutral `TurnUsage` the adapters write)
//! as ACP says it, pure: the turn's tokens as `PromptResponse.usage`, and the context
//! window as a `usage_update` where the vendor told it.

use serde_json::{json, Map, Value};
use tandem_protocol::TurnUsage;

/// The turn's tokens as ACP's `Usage` (`totalTokens`, `inputTokens`, `outputTokens`,
/// and `cachedReadTokens`, `cachedWriteTokens`, `thoughtTokens` where counted), or
/// `None` when the vendor reported no tokens.
pub fn turn_tokens(usage: &TurnUsage) -> Option<Value> {
    if usage.input_tokens == 0 && usage.output_tokens == 0 {
        return None;
    }
    let mut out = Map::new();
    out.insert("totalTokens".into(), json!(usage.total_tokens()));
    out.insert("inputTokens".into(), json!(usage.input_tokens));
    out.insert("outputTokens".into(), json!(usage.output_tokens));
    let cached = (usage.cached_input_tokens > 0).then_some(usage.cached_input_tokens);
    for (key, value) in [
        ("cachedReadTokens", cached),
        ("cachedWriteTokens", usage.cache_write_tokens),
        ("thoughtTokens", usage.reasoning_tokens),
    ] {
        if let Some(v) = value {
            out.insert(key.into(), json!(v));
        }
    }
    Some(Value::Object(out))
}

/// The `usage_update` of a turn's usage: the context in use and its size, and the
/// session's cost so far when the agent gave it. `None` without a context window:
/// ACP needs both numbers.
pub fn context_update(usage: &TurnUsage) -> Option<Value> {
    let context = usage.context?;
    let mut update =
        json!({"sessionUpdate": "usage_update", "used": context.used, "size": context.size});
    if let Some(cost) = &usage.session_cost {
        update["cost"] = json!({"amount": cost.amount, "currency": cost.currency});
    }
    Some(update)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_protocol::history::{ContextUsage, Cost};

    #[test]
    fn tokens_and_context_as_acp_says_them() {
        let usage = TurnUsage {
            input_tokens: 17,
            cached_input_tokens: 5,
            cache_write_tokens: Some(2),
            output_tokens: 7,
            ..Default::default()
        };
        assert_eq!(
            turn_tokens(&usage),
            Some(
                json!({"totalTokens": 24, "inputTokens": 17, "outputTokens": 7,
                "cachedReadTokens": 5, "cachedWriteTokens": 2})
            )
        );
        assert_eq!(turn_tokens(&TurnUsage::default()), None);
        assert_eq!(context_update(&usage), None, "no window");
        let with_window = TurnUsage {
            context: Some(ContextUsage { used: 8, size: 100 }),
            session_cost: Some(Cost {
                amount: 0.5,
                currency: "USD".into(),
            }),
            ..usage
        };
        assert_eq!(
            context_update(&with_window),
            Some(
                json!({"sessionUpdate": "usage_update", "used": 8, "size": 100,
                "cost": {"amount": 0.5, "currency": "USD"}})
            )
        );
    }
}
