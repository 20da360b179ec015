//! Token usage and cost, totalled from the stored `turn_completed` events (whose
//! `usage` the adapters wrote in the neutral `TurnUsage` shape): per session, and per
//! delegated Worker turn.

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use tandem_protocol::rest::{DelegationUsage, UsageSummary, UsageTotals};
use tandem_protocol::TurnUsage;

use super::SessionService;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::{SessionId, TurnId};
use crate::store::Store;

/// Events read per store query while totalling a history.
const READ_PAGE: usize = 5000;

impl SessionService {
    /// Usage of session `id`: its own turns, and the delegated Worker turns that it
    /// delegated (a Driver) or ran (a Worker); only turns that ended at or after
    /// `since` (epoch ms) count.
    pub async fn usage(
        &self,
        who: &Principal,
        id: &SessionId,
        since: u64,
    ) -> Result<UsageSummary, RuntimeError> {
        self.access.visible(who, id)?;
        let store = self.store.clone();
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
        session_id: id.into(),
        total: own.total,
        delegations,
    })
}

fn read_history(store: &Store, id: &str, since: u64) -> Result<HistoryUsage, RuntimeError> {
    let mut out = HistoryUsage::default();
    // Delegated turns seen so far, by turn id, until their `turn_completed`.
    let mut open: HashMap<TurnId, usize> = HashMap::new();
    let mut after = 0;
    loop {
        let rows = store.read_events(id, after, READ_PAGE)?;
        let Some(&(last, _)) = rows.last() else {
            break;
        };
        for (_, frame) in &rows {
            // The fields read here, of any event; an event none of them fits is skipped.
            let Ok(ev) = serde_json::from_str::<Slim>(frame) else {
                continue;
            };
            let turn = ev.turn_id.unwrap_or_default();
            match ev.kind.as_str() {
                "turn_completed" => {
                    let counted = ev.ts >= since;
                    let usage = totals(ev.usage.as_ref());
                    if counted {
                        add(&mut out.total, &usage);
                    }
                    if let Some(i) = open.remove(&turn) {
                        out.delegated[i].usage = usage;
                        out.counted[i] = counted;
                    }
                }
                "user_message" => {
                    if let Some(driver) = ev.delegated_by {
                        open.insert(turn.clone(), out.delegated.len());
                        out.delegated.push(DelegationUsage {
                            worker_id: id.into(),
                            turn_id: turn,
                            driver_id: driver,
                            started_at: ev.ts,
                            usage: UsageTotals::default(),
                        });
                        out.counted.push(false);
                    }
                }
                "delegation" if ev.from.as_deref() == Some(id) => {
                    if let Some(to) = ev.to {
                        out.workers.insert(to);
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

/// The fields of a stored event this module reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Slim {
    kind: String,
    #[serde(default)]
    turn_id: Option<TurnId>,
    #[serde(default)]
    ts: u64,
    /// `turn_completed`'s usage.
    #[serde(default)]
    usage: Option<TurnUsage>,
    /// A `user_message` a Driver delegated.
    #[serde(default)]
    delegated_by: Option<SessionId>,
    /// A `delegation`'s Driver.
    #[serde(default)]
    from: Option<String>,
    /// A `delegation`'s Worker.
    #[serde(default)]
    to: Option<String>,
}

/// One turn's usage as totals (`turns` 1), or zeros (`turns` 0) when it has none.
fn totals(usage: Option<&TurnUsage>) -> UsageTotals {
    let Some(usage) = usage else {
        return UsageTotals::default();
    };
    UsageTotals {
        turns: 1,
        input_tokens: usage.input_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        output_tokens: usage.output_tokens,
        cost_usd: usage.cost_usd,
    }
}
