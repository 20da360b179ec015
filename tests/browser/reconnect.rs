//! The server restarts under an open page: the page says it is reconnecting, resumes
//! from the last seq it holds, and shows every event exactly once. A `lagged` notice
//! takes the same path.

use serde_json::json;
use tandem_tests::{Server, ServerOptions};

use crate::{assert_no_duplicate_items, create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_server_restart_loses_and_repeats_nothing() {
    let page = Page::open_process().await;
    let id = create_session(&page, "resilient").await;
    page.open_session(&id).await;
    page.send(&id, "alpha").await;
    page.wait_text(&id, ".msg.assistant", "alpha").await;
    page.send(&id, "/stream 200\n/hold never").await;
    page.wait_text(&id, ".msg.assistant", "chunk 199").await;

    // SIGKILL mid-turn, then the same port again.
    let port = page.server.base.rsplit(':').next().unwrap().to_string();
    let Page { server, browser } = page;
    let dir = server.kill();
    browser
        .wait(
            "the reconnecting notice",
            "document.querySelector('.conn.down') && !document.querySelector('.banner').hidden",
        )
        .await;
    browser.screenshot("reconnecting").await;
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            args: vec!["--port".into(), port],
        },
    );
    let page = Page { server, browser };
    page.browser
        .wait(
            "the page to reconnect",
            "document.querySelector('.conn.live')",
        )
        .await;
    // The restart ended the turn as interrupted: the page got that event by replay.
    page.wait_text(&id, ".turn-end.interrupted", "Turn interrupted")
        .await;
    page.send(&id, "beta").await;
    page.wait_text(&id, ".msg.assistant", "beta").await;
    page.wait_text(&id, ".turn-end.completed", "Turn completed")
        .await;

    let stored = page.server.all_events(&id).await;
    let last = stored.last().and_then(|e| e["seq"].as_u64()).unwrap_or(0);
    let stats = page.stats(&id).await;
    assert_eq!(stats["gaps"], 0, "{stats}");
    assert_eq!(stats["tip"], last, "{stats}");
    // Every seq from 1 to the last was applied exactly once (duplicates are dropped
    // before they are counted, and there were no gaps).
    assert_eq!(stats["applied"], last, "{stats}");
    assert!(stats["subscribes"].as_u64() >= Some(2), "{stats}");
    assert_no_duplicate_items(&page, &id).await;
    let counts = page
        .browser
        .exec(
            "const c = document.querySelector(`.chat[data-session='${arguments[0]}']`);\
             const msgs = [...c.querySelectorAll('.msg.assistant')].map(m => m.querySelector('.text').textContent);\
             return {alpha: msgs.filter(t => t === 'alpha').length, beta: msgs.filter(t => t === 'beta').length,\
                     users: c.querySelectorAll('.msg.user').length, ends: c.querySelectorAll('.turn-end').length};",
            vec![json!(id)],
        )
        .await;
    assert_eq!(
        counts,
        json!({"alpha": 1, "beta": 1, "users": 3, "ends": 3}),
        "{counts}"
    );

    // A `lagged` notice: the page resubscribes from what it holds; nothing repeats.
    let before = page.stats(&id).await;
    page.browser
        .exec(
            "const v = window.__tandem.view(arguments[0]);\
             window.__tandem.app.onFrame({kind: 'lagged', sessionId: arguments[0], resumeFrom: v.tip + 1});",
            vec![json!(id)],
        )
        .await;
    page.send(&id, "gamma").await;
    page.wait_text(&id, ".msg.assistant", "gamma").await;
    let after = page.stats(&id).await;
    assert_eq!(
        after["subscribes"].as_u64(),
        before["subscribes"].as_u64().map(|n| n + 1)
    );
    assert_eq!(after["gaps"], 0, "{after}");
    assert_no_duplicate_items(&page, &id).await;
    // An event after a hole is never shown: the page asks again from what it holds.
    let healed = page
        .browser
        .exec(
            "const v = window.__tandem.view(arguments[0]), tip = v.tip;\
             window.__tandem.app.onFrame({kind: 'info', sessionId: arguments[0], seq: tip + 5, ts: 0, text: 'ghost'});\
             const last = window.__tandem.sent[window.__tandem.sent.length - 1];\
             return {tip: v.tip === tip, resubscribed: last.type === 'chat.subscribe' && last.sessions[0].lastSeq === tip,\
                     ghost: document.body.textContent.includes('ghost')};",
            vec![json!(id)],
        )
        .await;
    assert_eq!(
        healed,
        json!({"tip": true, "resubscribed": true, "ghost": false})
    );
    let stored = page.server.all_events(&id).await;
    page.browser
        .wait(
            "the page to hold every event",
            &format!(
                "window.__tandem.view('{id}').tip === {}",
                stored.last().and_then(|e| e["seq"].as_u64()).unwrap_or(0)
            ),
        )
        .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_page_that_falls_behind_is_told_it_lagged_and_catches_up() {
    // A small client budget (2 MiB: above the gateway's 1 MiB ring, see the report on
    // budgets below it) and a page too busy to read.
    let page = Page::open(&["--client-queue-bytes", "2097152"]).await;
    let b = &page.browser;
    let id = create_session(&page, "lagging").await;
    page.open_session(&id).await;
    let mut ws = page.ws().await;
    ws.ok(
        json!({"type": "chat.send", "sessionId": id, "content": "/stream 100000\nafter the lag"}),
    )
    .await;
    // Block the page's main thread until the turn has ended on the server (synchronous
    // requests): it reads nothing meanwhile, so the server must drop it as lagged.
    b.exec(
        "const token = localStorage.getItem('tandem.token');\
         for (;;) {\
           const x = new XMLHttpRequest();\
           x.open('GET', '/api/v1/sessions/' + arguments[0], false);\
           x.setRequestHeader('Authorization', 'Bearer ' + token);\
           x.send();\
           if (JSON.parse(x.responseText).status === 'idle') break;\
         }",
        vec![json!(id)],
    )
    .await;
    // Catching up on 100,000 events took up to 35 s on a quiet machine and more
    // than 30 s on a loaded one: this wait has a limit of its own.
    page.wait_text_within(
        &id,
        ".msg.assistant",
        "after the lag",
        std::time::Duration::from_secs(120),
    )
    .await;
    let stored = page.server.all_events(&id).await;
    let last = stored.last().and_then(|e| e["seq"].as_u64()).unwrap_or(0);
    b.wait(
        "every event",
        &format!("window.__tandem.view('{id}').tip === {last}"),
    )
    .await;
    let stats = page.stats(&id).await;
    eprintln!("lagging page: {stats}");
    assert!(
        stats["lagged"].as_u64() >= Some(1),
        "the page never lagged: {stats}"
    );
    assert_eq!(stats["gaps"], 0, "{stats}");
    assert_eq!(stats["applied"], last, "{stats}");
    assert_no_duplicate_items(&page, &id).await;
}
