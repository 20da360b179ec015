//! Token usage and cost, totalled from the stored `turn_completed` events: per
//! session, and per delegated Worker turn. Vendors report usage in their own shapes;
//! [`normalize`] reads the parts every vendor has.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;
use tandem_protocol::rest::{DelegationUsage, UsageSummary, UsageTotals};

use super::Runtime;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::store::Store;

/// Events read per store query while totalling a history.
const READ_PAGE: usize = 5000;

impl Runtime {
    /// Usage of session `id`: its own turns, and the delegated Worker turns that it
    /// delegated (a Driver) or ran (a Worker); only turns that ended at or after
    /// `since` (epoch ms) count.
    pub async fn usage(
        &self,
        who: &Principal,
        id: &str,
        since: u64,
    ) -> Result<UsageSummary, RuntimeError> {
        self.visible(who, id)?;
        let store = self.inner.store.clone();
        let sid = id.to_string();
        actix_rt::task::spawn_blocking(move || summarize(&store, &sid, since))
            .await
            .map_err(|e| RuntimeError::Internal(e.to_string()))?
    }
}

/// What one history says about usage.
#[derive(Default)]
struct HistoryUsage {
    total: UsageTotals,
    /// Delegated turns of this session, in order.
    delegated: Vec<DelegationUsage>,
    /// Per delegated turn: whether it ended at or after `since`.
    counted: Vec<bool>,
    /// Sessions this one delegated to (`delegation.to` where `from` is this one).
    workers: BTreeSet<String>,
}

fn summarize(store: &Store, id: &str, since: u64) -> Result<UsageSummary, RuntimeError> {
    let own = read_history(store, id, since)?;
    let mut delegations = own.delegated;
    for worker in own.workers.iter().filter(|w| w.as_str() != id) {
        let theirs = read_history(store, worker, since)?;
        delegations.extend(theirs.delegated.into_iter().filter(|d| d.driver_id == id));
    }
    delegations.sort_by_key(|d| d.started_at);
    Ok(UsageSummary {
        session_id: id.to_string(),
        total: own.total,
        delegations,
    })
}

fn read_history(store: &Store, id: &str, since: u64) -> Result<HistoryUsage, RuntimeError> {
    let mut out = HistoryUsage::default();
    // Delegated turns seen so far, by turn id, until their `turn_completed`.
    let mut open: HashMap<String, usize> = HashMap::new();
    let mut after = 0;
    loop {
        let rows = store.read_events(id, after, READ_PAGE)?;
        let Some(&(last, _)) = rows.last() else {
            break;
        };
        for (_, frame) in &rows {
            // Most events are none of these; skip parsing them.
            if !(frame.contains("\"turn_completed\"")
                || frame.contains("\"delegatedBy\"")
                || frame.contains("\"delegation\""))
            {
                continue;
            }
            let Ok(ev) = serde_json::from_str::<Value>(frame) else {
                continue;
            };
            let turn = ev["turnId"].as_str().unwrap_or_default();
            match ev["kind"].as_str() {
                Some("turn_completed") => {
                    let counted = ev["ts"].as_u64().unwrap_or(0) >= since;
                    let usage = normalize(&ev["usage"]);
                    if counted {
                        add(&mut out.total, &usage);
                    }
                    if let Some(i) = open.remove(turn) {
                        out.delegated[i].usage = usage;
                        out.counted[i] = counted;
                    }
                }
                Some("user_message") => {
                    if let Some(driver) = ev["delegatedBy"].as_str() {
                        open.insert(turn.to_string(), out.delegated.len());
                        out.delegated.push(DelegationUsage {
                            worker_id: id.to_string(),
                            turn_id: turn.to_string(),
                            driver_id: driver.to_string(),
                            started_at: ev["ts"].as_u64().unwrap_or(0),
                            usage: UsageTotals::default(),
                        });
                        out.counted.push(false);
                    }
                }
                Some("delegation") if ev["from"].as_str() == Some(id) => {
                    if let Some(to) = ev["to"].as_str() {
                        out.workers.insert(to.to_string());
                    }
                }
                _ => {}
            }
        }
        if rows.len() < READ_PAGE {
            break;
        }
        after = last;
    }
    let counted = std::mem::take(&mut out.counted);
    out.delegated = std::mem::take(&mut out.delegated)
        .into_iter()
        .zip(counted)
        .filter_map(|(d, keep)| keep.then_some(d))
        .collect();
    Ok(out)
}

fn add(total: &mut UsageTotals, one: &UsageTotals) {
    total.turns += one.turns;
    total.input_tokens += one.input_tokens;
    total.cached_input_tokens += one.cached_input_tokens;
    total.output_tokens += one.output_tokens;
    if let Some(cost) = one.cost_usd {
        total.cost_usd = Some(total.cost_usd.unwrap_or(0.0) + cost);
    }
}

/// One turn's `usage` as totals (`turns` 1), or zeros (`turns` 0) when it has none.
/// Claude Code: `{usage: {input_tokens, cache_read_input_tokens,
/// cache_creation_input_tokens, output_tokens}, totalCostUsd}`; Codex: `{inputTokens,
/// cachedInputTokens, outputTokens}`. Anything else counts what it shares with these.
pub fn normalize(usage: &Value) -> UsageTotals {
    if !usage.is_object() {
        return UsageTotals::default();
    }
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let claude = &usage["usage"];
    let (input, cached, output) = if claude.is_object() {
        let cached = n(&claude["cache_read_input_tokens"]);
        (
            n(&claude["input_tokens"]) + cached + n(&claude["cache_creation_input_tokens"]),
            cached,
            n(&claude["output_tokens"]),
        )
    } else {
        (
            n(&usage["inputTokens"]),
            n(&usage["cachedInputTokens"]),
            n(&usage["outputTokens"]),
        )
    };
    UsageTotals {
        turns: 1,
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
        cost_usd: usage["totalCostUsd"].as_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;
    use serde_json::json;

    #[test]
    fn claude_and_codex_usage_read_alike() {
        let claude = normalize(
            &json!({"usage": {"input_tokens": 10, "cache_read_input_tokens": 5,
            "cache_creation_input_tokens": 2, "output_tokens": 7}, "totalCostUsd": 0.25}),
        );
        assert_eq!(
            (
                claude.input_tokens,
                claude.cached_input_tokens,
                claude.output_tokens
            ),
            (17, 5, 7)
        );
        assert_eq!(claude.cost_usd, Some(0.25));
        let codex = normalize(&json!({"inputTokens": 30, "cachedInputTokens": 4,
            "outputTokens": 9, "totalTokens": 39}));
        assert_eq!(
            (
                codex.input_tokens,
                codex.cached_input_tokens,
                codex.output_tokens,
                codex.cost_usd
            ),
            (30, 4, 9, None)
        );
        assert_eq!(normalize(&json!(null)).turns, 0);
        assert_eq!(normalize(&json!("x")).turns, 0);
    }
}
