//! Background work and the running panel; a session with 100,000 events opens at its
//! newest part and pages older parts in while the DOM stays bounded.

use std::time::{Duration, Instant};

use serde_json::json;
use tandem_tests::eventually_within;

use crate::{create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_background_task_is_stopped_from_the_running_panel() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "indexer").await;
    page.open_session(&id).await;
    page.send(&id, "/background idx 120000 indexing the repository")
        .await;
    page.wait_text(&id, ".chat-head .chip.bg", "indexing the repository")
        .await;
    b.wait(
        "the list badge",
        "document.querySelector('.session-list .badge.bg')",
    )
    .await;
    b.click(".top .btn[aria-controls=running]").await;
    b.wait(
        "the task in the running panel",
        "document.querySelector('#running button[data-task=idx]')",
    )
    .await;
    b.screenshot("running").await;
    page.assert_accessible("running panel").await;
    b.click("#running button[data-task=idx]").await;
    b.wait(
        "the panel to empty",
        "!document.querySelector('#running button[data-task]') && document.querySelector('#running p.muted')",
    )
    .await;
    b.wait(
        "the header chip to go",
        "!document.querySelector('.chat-head .chip.bg')",
    )
    .await;
    let (_, running) = page.server.get("/api/v1/sessions/running").await;
    assert_eq!(running["sessions"], json!([]));
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_hundred_thousand_events_open_fast_with_a_bounded_dom() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "huge").await;
    let mut ws = page.ws().await;
    // 100,000 streamed chunks, then 2,500 short answers (about 10,000 more events, one
    // rendered item each) so that scrolling back crosses many items.
    let lines: Vec<String> = (0..2500).map(|i| format!("answer {i}: **ok**")).collect();
    for content in ["/stream 100000".to_string(), lines.join("\n")] {
        ws.ok(json!({"type": "chat.send", "sessionId": id, "content": content}))
            .await;
        // A long turn: bounded well past the default poll limit.
        eventually_within("the turn to end", Duration::from_secs(120), async || {
            let (_, info) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
            (info["status"] == "idle").then_some(())
        })
        .await;
    }
    let (_, info) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
    let last_seq = info["lastSeq"].as_u64().unwrap_or(0);
    assert!(last_seq > 110_000, "the turns did not finish: {info}");

    b.exec("location.reload();", vec![]).await;
    b.wait(
        "the page to connect",
        "document.querySelector('.conn.live')",
    )
    .await;
    let started = Instant::now();
    page.open_session(&id).await;
    page.wait_text(&id, ".msg.assistant", "answer 2499").await;
    let first_paint = started.elapsed();
    let opened = dom(b, &id, "opened").await;
    assert!(opened["nodes"].as_u64() < Some(3000), "{opened}");
    assert!(opened["first"].as_u64() > Some(last_seq - 1000), "{opened}");
    b.screenshot("large-history").await;

    // Scroll up repeatedly: older pages come in through REST; the DOM stays bounded.
    let mut first = opened["first"].as_u64().unwrap_or(0);
    for _ in 0..16 {
        b.exec(
            "document.querySelector(`.chat[data-session='${arguments[0]}'] .log`).scrollTop = 0;",
            vec![json!(id)],
        )
        .await;
        first = b
            .wait(
                "an older page",
                &format!("window.__tandem.view('{id}').first < {first} && window.__tandem.view('{id}').first"),
            )
            .await
            .as_u64()
            .unwrap_or(0);
    }
    let scrolled = dom(b, &id, "after scrolling up").await;
    assert!(scrolled["items"].as_u64() <= Some(1200), "{scrolled}");
    assert!(scrolled["nodes"].as_u64() < Some(12_000), "{scrolled}");
    // The newest part was dropped to stay bounded; one click brings it back.
    b.click(&format!(".chat[data-session='{id}'] .jump")).await;
    page.wait_text(&id, ".msg.assistant", "answer 2499").await;
    let back = dom(b, &id, "back at the newest").await;
    assert!(back["items"].as_u64() <= Some(1200), "{back}");
    assert!(
        b.exec(
            "return window.__tandem.view(arguments[0]).liveEdge;",
            vec![json!(id)]
        )
        .await
            == json!(true)
    );
    eprintln!(
        "{last_seq}-event session: newest part shown {first_paint:?} after opening; {} events paged in",
        opened["first"].as_u64().unwrap_or(0) - first
    );
}

/// DOM size, rendered items, JS heap and the window's first seq, printed and returned.
async fn dom(b: &tandem_tests::Browser, id: &str, label: &str) -> serde_json::Value {
    let v = b
        .exec(
            "return {nodes: document.getElementsByTagName('*').length,\
                     items: document.querySelectorAll('.items > *').length,\
                     heap: performance.memory ? performance.memory.usedJSHeapSize : null,\
                     first: window.__tandem.view(arguments[0]).first};",
            vec![json!(id)],
        )
        .await;
    eprintln!("{label}: {v}");
    v
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_fast_live_stream_arrives_whole_and_in_order() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "live stream").await;
    page.open_session(&id).await;
    let started = Instant::now();
    page.send(&id, "/stream 20000\nstream over").await;
    page.wait_text(&id, ".msg.assistant", "stream over").await;
    let shown = started.elapsed();
    let stored = page.server.all_events(&id).await;
    let last = stored.last().and_then(|e| e["seq"].as_u64()).unwrap_or(0);
    b.wait(
        "every event",
        &format!("window.__tandem.view('{id}').tip === {last}"),
    )
    .await;
    let stats = page.stats(&id).await;
    assert_eq!(stats["gaps"], 0, "{stats}");
    assert_eq!(stats["applied"], last, "{stats}");
    // The streamed text was replaced by the final message, once.
    let text = b
        .exec(
            "const m = document.querySelectorAll('.chat .msg.assistant');\
             return {n: m.length, chunks: m[0].textContent.split('chunk ').length - 1};",
            vec![],
        )
        .await;
    assert_eq!(text, json!({"n": 2, "chunks": 20000}), "{text}");
    eprintln!("20,000 live chunks shown in {shown:?}");
    // The page's own cost per event, without the network: 20,000 deltas through the
    // same path a frame takes.
    let other = create_session(&page, "synthetic").await;
    page.open_session(&other).await;
    let per_event = b
        .exec(
            "const app = window.__tandem.app, v = app.views.get(arguments[0]);\
             const t = performance.now();\
             for (let i = 0; i < 20000; i++) app.onFrame({kind: 'text_delta', sessionId: arguments[0], seq: v.tip + 1, ts: 0, turnId: 'turn_1', text: `chunk ${i} `});\
             return (performance.now() - t) / 20000 * 1000;",
            vec![json!(other)],
        )
        .await;
    eprintln!("page cost per streamed event: {per_event} µs");
}
