//! A database written by the previous release (before the adapters wrote usage and
//! plans in the vendor-neutral shapes): `tests/fixtures/history-before-neutral-shapes.db`,
//! made by that release's `tandem serve` with scripted sessions whose turns reported
//! usage as Claude Code, Codex and an ACP agent did (one with an ACP plan), and one
//! that showed file edits as each vendor's tool calls. Opened by this release, its
//! usage and plans read in the new shapes everywhere, and each edit's tool call
//! carries its `changes`.

use serde_json::Value;
use tandem_tests::{Server, ServerOptions, TempDir};

/// The sessions of the fixture, by title.
const CLAUDE: &str = "ses_f168a223c59ee538f2b407d1";
const CODEX: &str = "ses_51adfa2b33e2b585d0712c94";
const EDITS: &str = "ses_a7d19d2c22d7c18bd0f4f602";
const ACP: &str = "ses_e78d82132243e51483d5b06f";

fn kind<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
}

#[actix_rt::test]
async fn a_database_of_the_previous_release_reads_in_the_neutral_shapes() {
    let dir = TempDir::new("old-histories");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/history-before-neutral-shapes.db");
    std::fs::copy(&fixture, data.join("tandem.db")).unwrap();
    let server = Server::start_in(std::sync::Arc::new(dir), ServerOptions::default());

    // Claude Code's report: input counts its cache reads and writes.
    let claude = server.all_events(CLAUDE).await;
    let usage = &kind(&claude, "turn_completed")["usage"];
    assert_eq!(
        usage,
        &serde_json::json!({"inputTokens": 125, "cachedInputTokens": 20,
            "cacheWriteTokens": 5, "outputTokens": 30, "costUsd": 0.5}),
        "{usage}"
    );
    // Codex's: reasoning and the context window kept.
    let codex = server.all_events(CODEX).await;
    let usage = &kind(&codex, "turn_completed")["usage"];
    assert_eq!(
        usage,
        &serde_json::json!({"inputTokens": 300, "cachedInputTokens": 40,
            "outputTokens": 60, "reasoningTokens": 12,
            "context": {"used": 300, "size": 272000}}),
        "{usage}"
    );
    // An ACP agent's: its context, the session's cost and the turn's; its plan typed.
    let acp = server.all_events(ACP).await;
    let usage = &kind(&acp, "turn_completed")["usage"];
    assert_eq!(
        usage,
        &serde_json::json!({"inputTokens": 7, "cachedInputTokens": 1, "outputTokens": 3,
            "reasoningTokens": 2, "context": {"used": 8000, "size": 200000},
            "costUsd": 0.25, "sessionCost": {"amount": 0.75, "currency": "USD"}}),
        "{usage}"
    );
    assert_eq!(
        kind(&acp, "plan")["entries"],
        serde_json::json!([
            {"content": "read the code", "status": "completed", "priority": "high"},
            {"content": "write the fix", "status": "in_progress", "priority": "medium"}
        ])
    );

    // A subscriber's replay is the same rows.
    let mut ws = server.ws().await;
    ws.subscribe(ACP, 0).await;
    let replayed = ws.events_until_turn_end(ACP).await;
    assert_eq!(replayed, acp);

    // Each vendor's edit: its tool call keeps its input and gains its changes.
    let edits = server.all_events(EDITS).await;
    let calls: Vec<&Value> = edits.iter().filter(|e| e["kind"] == "tool_call").collect();
    let names: Vec<&str> = calls.iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names, ["Edit", "Write", "MultiEdit", "apply_patch", "edit"]);
    assert_eq!(calls[0]["input"]["old_string"], "one\ntwo\n");
    let changes: Vec<Value> = calls.iter().map(|c| c["changes"].clone()).collect();
    assert_eq!(
        changes,
        [
            serde_json::json!([{"path": "/tmp/fx/ws/a.txt", "kind": "modify",
                "diff": " one\n-two\n+2\n"}]),
            serde_json::json!([{"path": "/tmp/fx/ws/new.txt", "kind": "add",
                "diff": "+fresh\n+file\n"}]),
            serde_json::json!([{"path": "/tmp/fx/ws/b.txt", "kind": "modify",
                "diff": "@@ edit 1 of 2 @@\n-x\n+y\n@@ edit 2 of 2 @@\n p\n-q\n+r\n"}]),
            serde_json::json!([
                {"path": "/tmp/fx/ws/c.txt", "kind": "modify",
                    "diff": "@@ -1,2 +1,2 @@\n-old\n+new\n keep\n"},
                {"path": "/tmp/fx/ws/gone.txt", "kind": "delete", "diff": "-bye\n"}
            ]),
            serde_json::json!([{"path": "/tmp/fx/ws/d.txt", "kind": "modify",
                "diff": " a\n-b\n+c\n"}]),
        ]
    );

    // Totals read them too.
    let (status, totals) = server
        .get(&format!("/api/v1/sessions/{CLAUDE}/usage"))
        .await;
    assert_eq!(status, 200, "{totals}");
    assert_eq!(totals["total"]["inputTokens"], 125, "{totals}");
    assert_eq!(totals["total"]["costUsd"], 0.5, "{totals}");
}
