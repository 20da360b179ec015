//! Permission prompts end to end: the scripted vendor's `/ask` raises a real
//! `permission_request` and waits; the page's card answers it with
//! `chat.permission-response`, and the agent's words show what it was told.

use serde_json::{json, Value};

use crate::{create_session, Page};

/// The prompt that is still waiting for an answer in session `id`.
fn open_card(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"] .card.permission:not(.done)")
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn allow_deny_and_interrupt_from_the_prompt() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "permissions").await;
    page.open_session(&id).await;
    let card = open_card(&id);

    // Allow with the mouse.
    page.send(&id, r#"/ask Bash {"command":"ls"}"#).await;
    page.wait_text(&id, ".card.permission", "Permission: Bash")
        .await;
    page.wait_text(&id, ".card.permission pre", "\"command\": \"ls\"")
        .await;
    page.assert_accessible("permission prompt").await;
    let request_id = b
        .exec(
            "return document.querySelector(arguments[0]).dataset.request;",
            vec![json!(card)],
        )
        .await;
    assert!(
        request_id.as_str().is_some_and(|r| r.starts_with("perm_")),
        "{request_id}"
    );
    b.click(&format!("{card} .allow")).await;
    page.wait_text(&id, ".msg.assistant", "allowed Bash").await;
    page.wait_text(&id, ".card.permission.done .card-state", "allowed")
        .await;
    let answer = b
        .exec(
            "return window.__tandem.sent.find(f => f.type === 'chat.permission-response');",
            vec![],
        )
        .await;
    assert_eq!(answer["sessionId"], id.as_str());
    assert_eq!(answer["allow"], true);
    assert_eq!(
        answer["requestId"], request_id,
        "the answer names the permission"
    );

    // Deny with a message, from the keyboard: type it, Tab past the two allow choices
    // to Deny, Enter.
    page.send(&id, r#"/ask Bash {"command":"rm -rf build"}"#)
        .await;
    page.wait_text(&id, ".card.permission:not(.done) pre", "rm -rf build")
        .await;
    b.type_into(&format!("{card} input"), "not in this repo")
        .await;
    for _ in 0..3 {
        b.chord("\u{E004}").await;
    }
    let focused = b
        .exec("return document.activeElement?.textContent;", vec![])
        .await;
    assert_eq!(focused, "Deny", "Tab from the message reaches Deny third");
    b.chord("\u{E007}").await;
    page.wait_text(&id, ".msg.assistant", "denied Bash: not in this repo")
        .await;
    page.wait_text(&id, ".card.permission.done .card-state", "denied")
        .await;
    // Both answers were taken: no prompt is open, and the page got the reply to each
    // answer (it comes back on the permission's id, not a page-made one).
    assert_eq!(page.count(&card).await, 0);
    b.wait(
        "the replies to both answers",
        "window.__tandem.app.conn.pending.size === 0",
    )
    .await;

    // An interrupt withdraws the pending request: its prompt goes away.
    page.send(&id, r#"/ask Bash {"command":"make"}"#).await;
    page.wait_text(&id, ".card.permission:not(.done) pre", "make")
        .await;
    b.wait(
        "the running status",
        "document.querySelector('.chat .status.st-running')",
    )
    .await;
    b.click(".chat .stop").await;
    page.wait_text(&id, ".turn-end.interrupted", "Turn interrupted")
        .await;
    b.wait(
        "the withdrawn prompt to go",
        &format!(
            "document.querySelectorAll({}).length === 0 && document.querySelector('.chat .perm-closed')",
            json!(card)
        ),
    )
    .await;
    let closed = b.text(".chat .perm-closed").await;
    assert_eq!(closed, "Permission for Bash is no longer pending");
    let note = b.text(".chat .note").await;
    assert_eq!(note, "");
    b.screenshot("permissions").await;
    page.assert_accessible("answered permissions").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_page_that_opens_later_is_shown_the_pending_request() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "asked before the page looked").await;
    let mut watcher = page.ws().await;
    watcher.subscribe(&id, 0).await;
    let mut ws = page.ws().await;
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": r#"/ask Bash {"command":"cargo test"}"#}))
        .await;
    let frames = watcher
        .recv_until(|v| v["kind"] == "permission_request" && v["sessionId"] == id.as_str())
        .await;
    let request = frames.last().cloned().unwrap_or(Value::Null);
    let request_id = request["requestId"].as_str().unwrap().to_string();
    let request_seq = request["seq"].as_u64().unwrap_or(0);
    // Push the request out of the window the page replays on opening (the last 400
    // events): settings changes are allowed while the turn waits.
    for i in 0..410 {
        let model = if i % 2 == 0 { "model-a" } else { "model-b" };
        ws.ok(json!({"type": "session.configure", "sessionId": id, "model": model}))
            .await;
    }
    page.open_session(&id).await;
    let card = open_card(&id);
    b.find(&card).await;
    let shown = b
        .exec(
            "const c = document.querySelector(arguments[0]); return c.dataset.request;",
            vec![json!(card)],
        )
        .await;
    assert_eq!(shown, json!(request_id));
    let stats = page.stats(&id).await;
    // The card comes from the subscription's `pendingPermissions`, unless the page
    // had already loaded the older page holding the request's own event (it fills
    // a short log at once; on a loaded machine that can finish before the
    // subscription answers), which then shows it.
    let first = stats["first"].as_u64().unwrap();
    assert!(
        stats["pendingShown"] == 1 || first <= request_seq,
        "the pending request is shown from neither: {stats}"
    );
    // The subscription replayed only the events after `tip - applied`: the request's
    // own event was not among them.
    let replayed_from = stats["tip"].as_u64().unwrap_or(0) - stats["applied"].as_u64().unwrap_or(0);
    assert!(
        replayed_from >= request_seq,
        "the request's own event must be outside the replay here: {stats}"
    );
    page.wait_text(&id, ".card.permission pre", "cargo test")
        .await;
    b.click(&format!("{card} .allow")).await;
    page.wait_text(&id, ".msg.assistant", "allowed Bash").await;
    assert_eq!(page.count(&card).await, 0);
}

/// The vendor's "always allow" choice is a button of its own; picking it sends
/// `remember: "session"`, and the next request for the tool never reaches the page.
#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "Chromium, chromedriver or axe-core is not installed"
)]
async fn always_allow_from_the_prompt() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "always allow").await;
    page.open_session(&id).await;
    let card = open_card(&id);
    page.send(&id, r#"/ask Bash {"command":"ls"}"#).await;
    page.wait_text(&id, ".card.permission", "Always allow in this session")
        .await;
    page.assert_accessible("permission prompt with choices")
        .await;
    b.click(&format!("{card} .allow:not(.primary)")).await;
    page.wait_text(&id, ".msg.assistant", "allowed Bash").await;
    let answer = b
        .exec(
            "return window.__tandem.sent.find(f => f.type === 'chat.permission-response');",
            vec![],
        )
        .await;
    assert_eq!(answer["allow"], true, "{answer}");
    assert_eq!(answer["remember"], "session", "{answer}");

    page.send(&id, "/ask Bash {\"command\":\"pwd\"}\nsecond done")
        .await;
    page.wait_text(&id, ".msg.assistant", "second done").await;
    assert_eq!(
        page.count(&format!(".chat[data-session=\"{id}\"] .card.permission"))
            .await,
        1,
        "the remembered tool asked nobody"
    );
}
