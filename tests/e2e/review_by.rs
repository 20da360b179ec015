//! `session.review-by` and `review_on_delegation` with the real Codex and Claude Code
//! CLIs against the mock model servers: a read-only session of the other vendor gets
//! the diff, its answer's comments on lines the diff shows come back to the reviewed
//! session as a `review` (a turn quoting them) and the others are named in its
//! summary; an answer without a review is reported as failed, with no turn; a Worker's
//! review travels with its changes to the Driver.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::mock_anthropic::{claude_config, MockAnthropic};
use tandem_tests::mock_openai::MockOpenAi;
use tandem_tests::vendor_clis::{claude_bin, codex_bin, require};
use tandem_tests::{eventually, Server, ServerOptions, TempDir, WsClient};

use crate::workspaces::{git, repo};

/// A server that runs `claude` and `codex` against their mocks (the mocks first in
/// the tuple's drop order's reverse: the server stops before them).
struct Both {
    server: Server,
    _codex: MockOpenAi,
    _claude: MockAnthropic,
}

impl Both {
    fn start(extra: &[&str]) -> Both {
        let claude = MockAnthropic::start();
        let codex = MockOpenAi::start();
        let dir = Arc::new(TempDir::new("review-by"));
        let config = claude_config(
            dir.path(),
            &require(claude_bin(), "the claude CLI"),
            &claude,
            &dir.path().join("claude-home"),
            600,
        );
        let codex_home = dir.path().join("codex-home");
        let user_home = dir.path().join("home");
        for d in [&codex_home, &user_home] {
            std::fs::create_dir_all(d).unwrap();
        }
        let args: Vec<String> = codex
            .codex_args()
            .iter()
            .map(|a| json!(a).to_string())
            .collect();
        let codex_section = format!(
            "\n[vendors.codex]\nbin = {}\nargs = [{}]\nenv = {{ CODEX_HOME = {}, HOME = {} }}\n",
            json!(require(codex_bin(), "the codex CLI").display().to_string()),
            args.join(", "),
            json!(codex_home.display().to_string()),
            json!(user_home.display().to_string()),
        );
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{text}{codex_section}")).unwrap();
        let mut options = ServerOptions::with_config(&config);
        options.args.extend(extra.iter().map(|a| a.to_string()));
        Both {
            server: Server::start_in(dir, options),
            _codex: codex,
            _claude: claude,
        }
    }
}

/// A subscribed scripted session in `dir` whose turn rewrote `a.txt` (was "one two
/// three" on three lines) to "uno".
async fn changed_session(server: &Server, dir: &Path) -> (WsClient, String) {
    let mut ws = server.ws().await;
    let sid = ws.ok(json!({"type": "session.create", "cwd": dir})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&sid, 0).await;
    ws.turn(&sid, "/write a.txt uno").await;
    (ws, sid)
}

/// The first stored `review` event of `sid` written by an agent.
async fn agent_review(server: &Server, sid: &str) -> Value {
    eventually("the reviewer's review", async || {
        server
            .all_events(sid)
            .await
            .into_iter()
            .find(|e| e["kind"] == "review" && e["reviewer"].is_object())
    })
    .await
}

#[actix_rt::test]
#[cfg_attr(
    not(all(has_codex, has_claude)),
    ignore = "the pinned CLIs are not installed"
)]
async fn codex_reviews_a_change_and_its_comments_come_back_as_a_review() {
    let both = Both::start(&[]);
    let server = &both.server;
    let dir = repo(server, "proj");
    let (mut ws, sid) = changed_session(server, &dir).await;
    let answer = json!({"summary": "One real issue.", "comments": [
        {"path": "a.txt", "line": 1, "body": "Why Italian?"},
        {"path": "a.txt", "line": 2, "side": "old", "body": "This line went away."},
        {"path": "a.txt", "line": 40, "body": "Not a line of the diff."}]});
    let reply = ws
        .ok(
            json!({"type": "session.review-by", "sessionId": sid, "vendor": "codex",
                   "instructions": format!("review {answer}")}),
        )
        .await;
    let reviewer = reply["reviewSessionId"].as_str().unwrap().to_string();
    assert_eq!(reply["sessionId"], sid.as_str());

    // The reviewer is a read-only Codex session on the same directory, given the diff.
    let (_, info) = server.get(&format!("/api/v1/sessions/{reviewer}")).await;
    assert_eq!(info["vendor"], "codex");
    assert_eq!(info["permissionMode"], "plan");
    assert_eq!(info["cwd"], dir.display().to_string());
    assert!(
        info["title"].as_str().unwrap().starts_with("Review of "),
        "{info}"
    );
    let asked = server
        .all_events(&reviewer)
        .await
        .into_iter()
        .find(|e| e["kind"] == "user_message")
        .unwrap();
    let prompt = asked["text"].as_str().unwrap();
    assert!(
        prompt.contains("-one") && prompt.contains("+uno"),
        "{prompt}"
    );

    // Its comments on lines of the diff come back as a review, with a turn quoting
    // them; the one off the diff is named in the summary.
    let review = agent_review(server, &sid).await;
    assert_eq!(review["reviewer"]["sessionId"], reviewer.as_str());
    assert_eq!(review["reviewer"]["vendor"], "codex");
    assert_eq!(review["comments"].as_array().unwrap().len(), 2, "{review}");
    assert_eq!(review["comments"][1]["side"], "old");
    let summary = review["summary"].as_str().unwrap();
    assert!(summary.starts_with("One real issue."), "{summary}");
    assert!(
        summary.contains("1 comment left out") && summary.contains("40"),
        "{summary}"
    );
    assert!(review.get("failed").is_none(), "{review}");
    let turn = review["turnId"].as_str().unwrap().to_string();
    let events = server.all_events(&sid).await;
    let message = events
        .iter()
        .find(|e| e["kind"] == "user_message" && e["turnId"] == turn.as_str())
        .unwrap();
    let text = message["text"].as_str().unwrap();
    assert!(
        text.starts_with("Review of your changes by codex"),
        "{text}"
    );
    assert!(
        text.contains("Why Italian?") && text.contains("uno"),
        "{text}"
    );

    // Nothing to review: refused, and no reviewer is started.
    let clean = repo(server, "clean");
    let other = ws.ok(json!({"type": "session.create", "cwd": clean})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{other}/review-by"),
            &json!({"vendor": "codex"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{sid}/review-by"),
            &json!({"vendor": "no-such-vendor"}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
}

#[actix_rt::test]
#[cfg_attr(
    not(all(has_codex, has_claude)),
    ignore = "the pinned CLIs are not installed"
)]
async fn an_answer_without_a_review_is_reported_failed_without_a_turn() {
    let both = Both::start(&[]);
    let server = &both.server;
    let dir = repo(server, "proj");
    let (mut ws, sid) = changed_session(server, &dir).await;
    let turns_before = server
        .all_events(&sid)
        .await
        .iter()
        .filter(|e| e["kind"] == "turn_started")
        .count();
    ws.ok(
        json!({"type": "session.review-by", "sessionId": sid, "vendor": "claude",
                 "instructions": "say it looks fine to me"}),
    )
    .await;
    let review = agent_review(server, &sid).await;
    assert_eq!(review["reviewer"]["vendor"], "claude");
    assert!(
        review["failed"]
            .as_str()
            .unwrap()
            .contains("no JSON object"),
        "{review}"
    );
    assert_eq!(review["comments"], json!([]));
    assert!(review.get("turnId").is_none(), "{review}");
    let turns_after = server
        .all_events(&sid)
        .await
        .iter()
        .filter(|e| e["kind"] == "turn_started")
        .count();
    assert_eq!(turns_before, turns_after);
}

/// Writes `.tandem/worktree.toml` into `dir` and commits it (a Worker's worktree
/// reads the file as committed).
fn project(dir: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join(".tandem")).unwrap();
    std::fs::write(dir.join(".tandem/worktree.toml"), text).unwrap();
    git(dir, &["add", ".tandem"]);
    git(dir, &["commit", "-q", "-m", "review on delegation"]);
    dir.to_path_buf()
}

#[actix_rt::test]
#[cfg_attr(
    not(all(has_codex, has_claude)),
    ignore = "the pinned CLIs are not installed"
)]
async fn a_workers_change_is_reviewed_by_claude_and_the_driver_gets_the_verdict() {
    let both = Both::start(&["--worker-workspace", "worktree"]);
    let server = &both.server;
    let base = repo(server, "proj");
    let answer = json!({"summary": "Needs a test.", "comments": [
        {"path": "w.txt", "line": 1, "body": "Say why this file exists."}]});
    project(
        &base,
        &format!(
            "review_on_delegation = \"claude\"\nreview_instructions = {}\n",
            json!(format!("review {answer}"))
        ),
    );
    let mut ws = server.ws().await;
    let d = ws.ok(json!({"type": "session.create", "cwd": base})).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.subscribe(&d, 0).await;
    let (out, err) = ws
        .scripted_tool(
            &d,
            "send_to_partner",
            json!({"message": "/write w.txt by the worker", "workerVendor": "scripted"}),
        )
        .await;
    assert!(!err, "{out}");
    let review = &out["changes"]["review"];
    assert_eq!(review["vendor"], "claude", "{out}");
    assert_eq!(review["summary"], "Needs a test.", "{out}");
    assert_eq!(review["comments"][0]["path"], "w.txt", "{out}");
    assert_eq!(review["comments"][0]["line"], 1, "{out}");
    // The Worker's history shows the review too.
    let w = out["partnerId"].as_str().unwrap().to_string();
    let recorded = agent_review(server, &w).await;
    assert_eq!(recorded["comments"], review["comments"]);
}
