//! Logging in, creating a session, chatting, stopping, queueing, the XSS case,
//! keyboard and phone-width use, and accessibility. Permission prompts are in
//! `permissions.rs`, the session list, rename and archive in `sessions.rs`.

use serde_json::json;
use tandem_tests::{Browser, Server, ServerOptions};

use crate::{assert_no_duplicate_items, create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn wrong_or_missing_token_shows_the_login_page() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..Default::default()
    });
    let browser = Browser::start(1280, 800).await;
    browser.goto(&format!("{}/", server.base)).await;
    let why = browser
        .wait(
            "the login page",
            "document.querySelector('#login-why')?.textContent",
        )
        .await;
    assert!(
        why.as_str().is_some_and(|w| w.contains("No access token")),
        "{why}"
    );
    browser.goto(&format!("{}/?token=wrong", server.base)).await;
    let why = browser
        .wait(
            "the login page to say the token was refused",
            "document.querySelector('#login-why')?.textContent.includes('not accepted') && document.querySelector('#login-why').textContent",
        )
        .await;
    assert!(why.as_str().is_some_and(|w| w.contains("not accepted")));
    // The token is never left in the address bar.
    let search = browser.exec("return location.search;", vec![]).await;
    assert_eq!(search, "");
    let bad = browser.axe_serious().await;
    assert!(bad.is_empty(), "login page: {bad:?}");
    browser.screenshot("login").await;
    // Signing in with the right token from the form.
    let token = server.token.clone().unwrap();
    browser
        .type_into("#token", &format!("{token}\u{E007}"))
        .await;
    browser
        .wait(
            "the page to connect",
            "document.querySelector('.conn.live')",
        )
        .await;
    let stored = browser
        .exec("return localStorage.getItem('tandem.token');", vec![])
        .await;
    assert_eq!(stored, json!(token));
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn create_send_stream_stop_and_queue() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    assert_eq!(b.exec("return location.search;", vec![]).await, "");
    // A few sessions for the list.
    for title in ["Refactor the parser", "Fix flaky CI job"] {
        let id = create_session(&page, title).await;
        let mut ws = page.ws().await;
        ws.ok(json!({"type": "chat.send", "sessionId": id, "content": "Looking at it now.\nDone: **3 files** changed."}))
            .await;
    }
    // Create one through the dialog.
    b.click(".top .btn.primary").await;
    b.wait(
        "the dialog",
        "document.querySelector('dialog.create[open]')",
    )
    .await;
    let vendors = b
        .exec(
            "return [...document.querySelectorAll('dialog.create select[name=vendor] option')].map(o => o.value);",
            vec![],
        )
        .await;
    assert_eq!(
        vendors,
        json!(["scripted"]),
        "only installed vendors are offered"
    );
    b.exec(
        "document.querySelector('dialog.create select[name=effort]').value = 'high';\
         document.querySelector('dialog.create select[name=permissionMode]').value = 'acceptEdits';",
        vec![],
    )
    .await;
    b.type_into("dialog.create input[name=title]", "Browser session")
        .await;
    let cwd = page.server.dir.path().display().to_string();
    b.type_into("dialog.create input[name=cwd]", &cwd).await;
    b.click("dialog.create button[type=submit]").await;
    let id = b
        .wait(
            "the new session to open",
            "location.hash.startsWith('#/s/') && document.activeElement?.tagName === 'TEXTAREA' && location.hash.slice(4)",
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    let (_, info) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["title"], "Browser session");
    assert_eq!(info["effort"], "high");
    assert_eq!(info["permissionMode"], "acceptEdits");
    assert_eq!(info["cwd"], cwd.as_str());

    // Streamed text: the bubble grows while the turn runs, then is final.
    // Record what the streaming bubble showed before the final message replaced it.
    b.exec(
        "window.__streamed = 0; new MutationObserver(() => {\
           for (const s of document.querySelectorAll('.msg.assistant.streaming'))\
             window.__streamed = Math.max(window.__streamed, s.textContent.split('chunk').length - 1);\
         }).observe(document.querySelector('.chat .items'), {subtree: true, childList: true, characterData: true});",
        vec![],
    )
    .await;
    page.send(&id, "/stream 3000\n/hold shown\nall **done**")
        .await;
    page.wait_text(&id, ".msg.assistant", "chunk 2999").await;
    page.server.release("shown").await;
    page.wait_text(&id, ".msg.assistant strong", "done").await;
    page.wait_text(&id, ".turn-end.completed", "Turn completed")
        .await;
    let streamed = b.exec("return window.__streamed;", vec![]).await;
    assert!(
        streamed.as_u64() > Some(1),
        "no text was shown while streaming: {streamed}"
    );
    assert_eq!(
        page.count(&format!(".chat[data-session=\"{id}\"] .msg.user"))
            .await,
        1
    );

    // A failed turn shows its error.
    page.send(&id, "/fail compiler exploded").await;
    page.wait_text(&id, ".turn-end.failed", "Turn failed: compiler exploded")
        .await;

    // Stop with Esc.
    page.send(&id, "/hold never").await;
    b.wait(
        "running status",
        "document.querySelector('.chat .status.st-running')",
    )
    .await;
    b.type_into(
        &format!(".chat[data-session=\"{id}\"] textarea"),
        "\u{E00C}",
    )
    .await;
    page.wait_text(&id, ".turn-end.interrupted", "Turn interrupted")
        .await;

    // Queue while a turn runs, then stop it with the button: the queued one runs next.
    page.send(&id, "/hold never").await;
    b.wait(
        "running status",
        "document.querySelector('.chat .status.st-running') && !document.querySelector('.chat .stop').disabled",
    )
    .await;
    page.send(&id, "queued hello").await;
    b.wait(
        "the queued chip",
        "[...document.querySelectorAll('.queued li')].some(l => l.textContent.includes('queued hello'))",
    )
    .await;
    b.click(".chat .stop").await;
    page.wait_text(&id, ".msg.assistant", "queued hello").await;
    b.wait(
        "the queued chip to go",
        "document.querySelectorAll('.queued li').length === 0",
    )
    .await;
    assert_no_duplicate_items(&page, &id).await;

    // Screens and accessibility of the list and the chat.
    b.wait("idle", "document.querySelector('.chat .status.st-idle')")
        .await;
    b.screenshot("chat").await;
    page.assert_accessible("chat").await;
    b.exec("location.hash = '#/';", vec![]).await;
    b.wait("the list view", "document.querySelector('.empty-main')")
        .await;
    assert_eq!(page.count(".session-list a.session").await, 3);
    b.screenshot("list").await;
    page.assert_accessible("list").await;

    // Keyboard: Alt+ArrowDown walks the list and opens a session.
    b.exec("document.querySelector('a.session').focus();", vec![])
        .await;
    b.chord("\u{E00A}\u{E015}").await;
    b.wait(
        "a session opened by keyboard",
        "location.hash.startsWith('#/s/')",
    )
    .await;

    // Phone width: list or conversation, with a way back.
    b.resize(390, 844).await;
    page.open_session(&id).await;
    let layout = b
        .exec(
            "return {sidebar: getComputedStyle(document.querySelector('.sidebar')).display,\
                     back: getComputedStyle(document.querySelector('.chat .back')).display,\
                     overflow: document.documentElement.scrollWidth > innerWidth};",
            vec![],
        )
        .await;
    assert_eq!(layout["sidebar"], "none", "{layout}");
    assert_ne!(layout["back"], "none", "{layout}");
    assert_eq!(layout["overflow"], false, "{layout}");
    b.screenshot("phone-chat").await;
    page.assert_accessible("phone chat").await;
    b.click(".chat .back").await;
    b.wait(
        "the list on a phone",
        "getComputedStyle(document.querySelector('.sidebar')).display !== 'none'",
    )
    .await;
    b.screenshot("phone-list").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn agent_html_is_shown_as_text_never_run() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "xss").await;
    page.open_session(&id).await;
    let evil = "<script>window.__xss = 1</script>\n<img src=x onerror=\"window.__xss = 2\">\n[click](javascript:window.__xss=3) and **bold** and `code`";
    page.send(&id, evil).await;
    page.wait_text(&id, ".msg.assistant", "<img src=x onerror=")
        .await;
    page.wait_text(&id, ".turn-end", "Turn completed").await;
    let state = b
        .exec(
            "const c = document.querySelector('.chat .items');\
             return {xss: window.__xss ?? null, imgs: c.querySelectorAll('img').length,\
                     scripts: c.querySelectorAll('script').length,\
                     jsLinks: [...c.querySelectorAll('a')].filter(a => a.href.startsWith('javascript')).length,\
                     bold: c.querySelectorAll('.msg.assistant strong').length,\
                     code: c.querySelectorAll('.msg.assistant code').length,\
                     userText: c.querySelector('.msg.user .text').textContent};",
            vec![],
        )
        .await;
    assert_eq!(state["xss"], json!(null), "{state}");
    assert_eq!(state["imgs"], 0, "{state}");
    assert_eq!(state["scripts"], 0, "{state}");
    assert_eq!(state["jsLinks"], 0, "{state}");
    assert_eq!(state["bold"], 1, "{state}");
    assert_eq!(state["code"], 1, "{state}");
    assert_eq!(state["userText"], evil, "{state}");

    // Markdown blocks from one assistant message (injected into the view: the scripted
    // agent answers line by line, so it cannot send a multi-line message).
    b.exec(
        "window.__tandem.inject(arguments[0], {kind: 'assistant_message', turnId: 'turn_9', text:\
          '## Plan\\n- one <b>x</b>\\n- two\\n\\n1. first\\n2. second\\n\\n```rust\\nfn main() { println!(\"<script>alert(1)</script>\"); }\\n```\\n<img src=x onerror=\"window.__xss=4\">'});",
        vec![json!(id)],
    )
    .await;
    let md = b
        .exec(
            "const m = [...document.querySelectorAll('.chat .msg.assistant')].pop();\
             return {ul: m.querySelectorAll('ul > li').length, ol: m.querySelectorAll('ol > li').length,\
                     pre: m.querySelector('pre code')?.textContent, h: m.querySelector('h4')?.textContent,\
                     imgs: m.querySelectorAll('img').length, b: m.querySelectorAll('b').length,\
                     xss: window.__xss ?? null};",
            vec![],
        )
        .await;
    assert_eq!(md["ul"], 2, "{md}");
    assert_eq!(md["ol"], 2, "{md}");
    assert_eq!(md["h"], "Plan", "{md}");
    assert_eq!(
        md["pre"], "fn main() { println!(\"<script>alert(1)</script>\"); }",
        "{md}"
    );
    assert_eq!(md["imgs"], 0, "{md}");
    assert_eq!(md["b"], 0, "{md}");
    assert_eq!(md["xss"], json!(null), "{md}");
    // Thinking is collapsed; opening it shows the text.
    b.exec(
        "window.__tandem.inject(arguments[0], {kind: 'thinking', turnId: 'turn_9', text: 'weighing <b>options</b>'});",
        vec![json!(id)],
    )
    .await;
    let thinking = b
        .exec(
            "const t = [...document.querySelectorAll('.chat details.thinking')].pop();\
             return {open: t.open, text: t.querySelector('.text').textContent, b: t.querySelectorAll('b').length};",
            vec![],
        )
        .await;
    assert_eq!(
        thinking,
        json!({"open": false, "text": "weighing <b>options</b>", "b": 0})
    );
    // The page runs under a strict CSP (no inline script could run anyway), and its
    // assets are served with their types.
    let served = b
        .exec_async(
            "const done = arguments[arguments.length - 1];\
             Promise.all([fetch('/'), fetch('/assets/app.js'), fetch('/assets/style.css'), fetch('/assets/nope.js')])\
               .then(([i, j, c, n]) => done({csp: i.headers.get('content-security-policy'),\
                 html: i.headers.get('content-type'), js: j.headers.get('content-type'),\
                 css: c.headers.get('content-type'), missing: n.status,\
                 inline: document.querySelectorAll('script:not([src])').length}));",
            vec![],
        )
        .await;
    let csp = served["csp"].as_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe"),
        "{served}"
    );
    assert_eq!(served["html"], "text/html; charset=utf-8");
    assert_eq!(served["js"], "text/javascript; charset=utf-8");
    assert_eq!(served["css"], "text/css; charset=utf-8");
    assert_eq!(served["missing"], 404);
    assert_eq!(served["inline"], 0);
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn dark_mode_is_readable() {
    let page = Page::open_with(
        &[],
        &[
            "--force-dark-mode",
            "--blink-settings=preferredColorScheme=0",
        ],
    )
    .await;
    let b = &page.browser;
    let dark = b
        .exec(
            "return matchMedia('(prefers-color-scheme: dark)').matches;",
            vec![],
        )
        .await;
    assert_eq!(dark, true, "the browser did not prefer dark");
    let id = create_session(&page, "Dark session").await;
    page.open_session(&id).await;
    page.send(
        &id,
        "Checking the **build** with `cargo check`\n/tool check_spawned_sessions {}\n/fail linker not found",
    )
    .await;
    page.wait_text(&id, ".turn-end.failed", "linker not found")
        .await;
    page.send(&id, "/background watch 60000 cargo watch").await;
    page.wait_text(&id, ".chat-head .chip.bg", "cargo watch")
        .await;
    b.screenshot("chat-dark").await;
    page.assert_accessible("dark chat").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn keyboard_only_create_send_and_stop() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    // Tab from the top of the page to "New session", open it with Enter.
    b.exec(
        "document.activeElement?.blur(); document.body.focus();",
        vec![],
    )
    .await;
    let mut reached = false;
    for _ in 0..12 {
        b.chord("\u{E004}").await;
        let label = b
            .exec("return document.activeElement?.textContent;", vec![])
            .await;
        if label == "New session" {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never reached the New session button");
    b.chord("\u{E007}").await;
    b.wait(
        "the dialog",
        "document.querySelector('dialog.create[open]')",
    )
    .await;
    // Focus starts in the title; type it and submit with Enter.
    b.keys_text("Keyboard session\u{E007}").await;
    let id = b
        .wait(
            "the new session with focus in its composer",
            "document.activeElement?.tagName === 'TEXTAREA' && location.hash.slice(4)",
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    b.keys_text("/hold never\u{E007}").await;
    b.wait(
        "running status",
        "document.querySelector('.chat .status.st-running')",
    )
    .await;
    b.keys_text("\u{E00C}").await;
    page.wait_text(&id, ".turn-end.interrupted", "Turn interrupted")
        .await;
    // One Esc, one interrupt: no second abort was refused.
    let note = b.text(".chat .note").await;
    assert_eq!(note, "");
    let aborts = b
        .exec(
            "return window.__tandem.sent.filter(f => f.type === 'chat.abort').length;",
            vec![],
        )
        .await;
    assert_eq!(aborts, 1);
    // The live list re-renders often; a focused row keeps the focus.
    let kept = b
        .exec(
            "document.querySelector(`a.session[data-id='${arguments[0]}']`).focus();\
             window.__tandem.app.renderList();\
             return document.activeElement?.dataset.id === arguments[0];",
            vec![json!(id)],
        )
        .await;
    assert_eq!(kept, true);
    // "/" jumps to the filter; typing narrows the list.
    create_session(&page, "Another one").await;
    b.wait(
        "two sessions",
        "document.querySelectorAll('a.session').length === 2",
    )
    .await;
    b.exec("document.activeElement.blur();", vec![]).await;
    b.keys_text("/Keyb").await;
    b.wait(
        "the filtered list",
        "document.activeElement.classList.contains('filter') && document.querySelectorAll('a.session').length === 1",
    )
    .await;
}
