//! Driver and Worker side by side: a delegation in flight and its result, the pair
//! buttons, a proposal accepted from its card, spawned sessions under their parent.

use serde_json::json;

use crate::{assert_no_duplicate_items, create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_delegation_shows_in_the_split_view_and_the_pair_can_be_steered() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    // Other sessions, so the list looks like a working day (and the screenshot too).
    let mut ws = page.ws().await;
    for (title, content) in [
        (
            "Refactor the parser",
            "/background lint 60000 cargo clippy --workspace",
        ),
        (
            "Fix flaky CI job",
            "The retry loop hid the real error; fixed in `ci/run`.",
        ),
    ] {
        let id = create_session(&page, title).await;
        ws.ok(json!({"type": "chat.send", "sessionId": id, "content": content}))
            .await;
    }
    let d = create_session(&page, "Driver: release prep").await;
    page.open_session(&d).await;
    page.send(
        &d,
        r#"/tool send_to_partner {"message": "Run the test suite and report failures\n/hold worker\nworker done: **12 passed**"}"#,
    )
    .await;
    // The pair appears: Driver and Worker side by side, the delegation in flight.
    b.wait(
        "the split view",
        "document.querySelector('.split .pane.driver') && document.querySelector('.split .pane.worker')",
    )
    .await;
    b.wait(
        "the delegation in flight",
        "document.querySelector('.pairbar .delegation.active')?.textContent.includes('Run the test suite')",
    )
    .await;
    let w = b
        .exec(
            "return document.querySelector('.pane.worker').dataset.session;",
            vec![],
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    page.wait_text(&w, ".msg.user", "Run the test suite").await;
    page.wait_text(&w, ".msg.user .who", "Delegated by the Driver")
        .await;
    b.screenshot("split").await;
    page.assert_accessible("split").await;
    // On a phone one pane shows at a time, the Driver first (the switch between
    // them: phone.rs).
    b.resize(390, 844).await;
    let one = b
        .exec(
            "const [d, w] = [...document.querySelectorAll('.split .pane')].map(p => p.getClientRects().length > 0);\
             return d && !w && document.documentElement.scrollWidth <= innerWidth;",
            vec![],
        )
        .await;
    assert_eq!(one, true);
    b.screenshot("phone-split").await;
    page.assert_accessible("phone split").await;
    b.resize(1280, 800).await;
    page.server.release("worker").await;
    // The result arrives in the Worker, and in the Driver's tool card.
    page.wait_text(&w, ".msg.assistant strong", "12 passed")
        .await;
    page.wait_text(&d, ".card.tool.ok .tool-out", "\"complete\"")
        .await;
    b.wait(
        "the delegation to end",
        "document.querySelector('.pairbar .delegation') && !document.querySelector('.pairbar .delegation.active')",
    )
    .await;
    // The list shows the Worker under its Driver.
    let nested = b
        .exec(
            "const rows = [...document.querySelectorAll('.session-list li')];\
             const di = rows.findIndex(r => r.querySelector(`[data-id='${arguments[0]}']`));\
             const wi = rows.findIndex(r => r.querySelector(`[data-id='${arguments[1]}']`));\
             return {di, wi, child: rows[wi]?.classList.contains('child'),\
                     badges: rows[di]?.querySelector('.badge.role-driver')?.textContent + rows[wi]?.querySelector('.badge.role-worker')?.textContent};",
            vec![json!(d), json!(w)],
        )
        .await;
    assert_eq!(
        nested["wi"],
        nested["di"].as_i64().unwrap_or(-9) + 1,
        "{nested}"
    );
    assert_eq!(nested["child"], true, "{nested}");
    assert_eq!(nested["badges"], "DW", "{nested}");

    // interrupt_partner from the bar stops a detached delegation.
    page.send(
        &d,
        r#"/tool send_to_partner {"message": "long job\n/hold never", "wait": false}"#,
    )
    .await;
    b.wait(
        "the Worker to run",
        &format!("document.querySelector('.chat[data-session=\"{w}\"] .status.st-running')"),
    )
    .await;
    b.click(".pairbar .btn:not(.danger)").await;
    page.wait_text(&w, ".turn-end.interrupted", "Turn interrupted")
        .await;
    // The Driver is told, once, that the work is partial.
    page.wait_text(&d, ".msg.user.internal", "PARTIAL").await;
    assert_no_duplicate_items(&page, &d).await;
    assert_no_duplicate_items(&page, &w).await;
    b.wait(
        "the Driver to be idle",
        &format!("document.querySelector('.chat[data-session=\"{d}\"] .status.st-idle')"),
    )
    .await;
    // close_partner dissolves the pair: back to one conversation.
    b.click(".pairbar .btn.danger").await;
    b.wait(
        "the single view",
        "!document.querySelector('.split') && document.querySelector('.chat')",
    )
    .await;
    let (_, pairs) = page.server.get("/api/v1/pairs").await;
    assert_eq!(pairs["pairs"], json!([]));
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_proposal_is_accepted_from_its_card_and_spawned_sessions_nest() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let d = create_session(&page, "Planner").await;
    page.open_session(&d).await;
    page.send(
        &d,
        r#"/tool propose_worker {"summary": "Port the parser to Rust", "plan": "1. read the grammar\n2. write `tests`", "message": "parser ported", "recommendedEffort": "high"}"#,
    )
    .await;
    page.wait_text(&d, ".card.proposal .summary", "Port the parser")
        .await;
    let choice = b
        .exec(
            "const c = document.querySelector('.card.proposal');\
             return {vendor: c.querySelector('select[aria-label=\"Worker vendor\"]').value,\
                     effort: c.querySelector('select[aria-label=\"Worker effort\"]').value,\
                     plan: c.querySelectorAll('ol li').length};",
            vec![],
        )
        .await;
    assert_eq!(
        choice,
        json!({"vendor": "scripted", "effort": "high", "plan": 2})
    );
    page.assert_accessible("proposal").await;
    b.screenshot("proposal").await;
    b.click(".card.proposal .btn.primary").await;
    // Accepted: a Worker runs the message; the split view shows it; the card follows.
    b.wait(
        "the Worker pane",
        "document.querySelector('.split .pane.worker')",
    )
    .await;
    let w = b
        .exec(
            "return document.querySelector('.pane.worker').dataset.session;",
            vec![],
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    page.wait_text(&w, ".msg.assistant", "parser ported").await;
    b.wait(
        "the card to show completion",
        "document.querySelector('.card.proposal')?.dataset.status === 'completed'",
    )
    .await;
    page.wait_text(&d, ".msg.user.internal", "parser ported")
        .await;

    // Spawned sessions are listed under their parent.
    let p = create_session(&page, "Parent").await;
    page.open_session(&p).await;
    page.send(
        &p,
        r#"/tool spawn_sessions {"sessions": [{"title": "child alpha", "prompt": "hello from alpha"}, {"title": "child beta", "prompt": "hello from beta"}]}"#,
    )
    .await;
    let nested = b
        .wait(
            "children under the parent",
            &format!(
                "(() => {{ const rows = [...document.querySelectorAll('.session-list li')];\
                   const pi = rows.findIndex(r => r.querySelector(`[data-id='{p}']`));\
                   const kids = rows.slice(pi + 1, pi + 3);\
                   return kids.length === 2 && kids.every(k => k.classList.contains('child')) &&\
                     kids.map(k => k.querySelector('.name').textContent).sort().join(','); }})()"
            ),
        )
        .await;
    assert_eq!(nested, "child alpha,child beta");
    b.screenshot("spawned").await;
}
