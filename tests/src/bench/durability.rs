//! `bench durability`: the fanout point with a SQLite commit per event
//! (`--commit-batch 1`) against the default group commit. Runs alternate between the
//! two servers so machine noise hits both alike.

use serde_json::json;

use super::args::Flags;
use super::fanout::{run_once, summary, FanoutConfig, FanoutRun};
use super::report;
use super::stats::{median, round};

/// `bench durability`.
pub fn main(mut flags: Flags) -> Result<(), String> {
    let cfg = FanoutConfig::from_flags(&mut flags)?;
    let extra = flags.all("server-arg");
    flags.done()?;
    let batched = extra.clone();
    let mut per_event = extra;
    per_event.extend(["--commit-batch".to_string(), "1".to_string()]);

    let mut batched_runs: Vec<FanoutRun> = Vec::new();
    let mut per_event_runs: Vec<FanoutRun> = Vec::new();
    for run in 1..=cfg.runs {
        for (args, runs, label) in [
            (&batched, &mut batched_runs, "default"),
            (&per_event, &mut per_event_runs, "1"),
        ] {
            let r = run_once(&cfg, args)?;
            let mut line = r.to_json(&cfg, run, args);
            line["commit_batch"] = json!(label);
            report::line(&line);
            runs.push(r);
        }
    }
    let mut a = summary(&cfg, &batched_runs, &batched);
    a["commit_batch"] = json!("default");
    report::line(&a);
    let mut b = summary(&cfg, &per_event_runs, &per_event);
    b["commit_batch"] = json!("1");
    report::line(&b);
    let rate = |runs: &[FanoutRun]| median(&runs.iter().map(FanoutRun::rate).collect::<Vec<_>>());
    report::line(&json!({
        "mode": "durability",
        "summary": true,
        "throughput_ratio_commit_per_event_vs_default":
            round(rate(&per_event_runs) / rate(&batched_runs), 3),
    }));
    Ok(())
}
