//! Browser tests: the real server (scripted vendor) and the page in a real headless
//! Chromium, driven over WebDriver. Without Chromium, chromedriver or axe-core they
//! are built ignored, so nextest lists them as skipped (`tests/build.rs`); under CI
//! they run and fail instead. Screenshots of the main views land in
//! `target/screenshots/`.

// Test code fails loudly on a missing value: `unwrap`/`expect` are allowed here (the
// workspace denies them in product code; clippy.toml allows them in unit tests, and
// these helpers are not `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attachments;
mod attention;
mod chat;
mod checkpoints;
mod checks;
mod commands;
mod controls;
mod cooperation;
mod history;
mod install;
mod machine;
mod mcp;
mod overlaps;
mod pairing;
mod pairs;
mod permissions;
mod phone;
mod push_display;
mod push_visible;
mod reconnect;
mod review;
mod rewind;
mod scripts;
mod sessions;
mod terminal;
mod workers;
mod workspaces;

use serde_json::{json, Value};
use tandem_tests::{Browser, Server, ServerOptions};

/// A server with token auth and a browser logged in to it.
pub struct Page {
    pub server: Server,
    pub browser: Browser,
}

impl Page {
    /// Starts a token-auth server with `args` and logs a 1280×800 browser in to it.
    pub async fn open(args: &[&str]) -> Page {
        Page::open_with(args, &[]).await
    }

    /// Like [`Page::open`], with extra Chromium flags.
    pub async fn open_with(args: &[&str], browser_args: &[&str]) -> Page {
        let server = Server::start_with(ServerOptions {
            token_auth: true,
            args: args.iter().map(|s| s.to_string()).collect(),
        });
        Page::log_in_to(server, browser_args).await
    }

    /// Like [`Page::open`], with the server a process of its own: for a test that
    /// kills or stops it.
    pub async fn open_process() -> Page {
        let server = Server::start_process(ServerOptions {
            token_auth: true,
            args: Vec::new(),
        });
        Page::log_in_to(server, &[]).await
    }

    /// Like [`Page::open`], for a server in `dir` (where the test has put a config
    /// file or the files its server must find).
    pub async fn open_in(dir: std::sync::Arc<tandem_tests::TempDir>, args: &[&str]) -> Page {
        let server = Server::start_in(
            dir,
            ServerOptions {
                token_auth: true,
                args: args.iter().map(|s| s.to_string()).collect(),
            },
        );
        Page::log_in_to(server, &[]).await
    }

    /// A 1280×800 browser logged in to `server`.
    async fn log_in_to(server: Server, browser_args: &[&str]) -> Page {
        let browser = Browser::start_with(1280, 800, browser_args).await;
        let page = Page { server, browser };
        page.login().await;
        page
    }

    /// Opens the printed URL (`/?token=…`) and waits for the session list.
    pub async fn login(&self) {
        let token = self.server.token.clone().unwrap();
        self.browser
            .goto(&format!("{}/?token={token}", self.server.base))
            .await;
        self.browser
            .wait(
                "the page to connect",
                "document.querySelector('.conn.live')",
            )
            .await;
    }

    /// Reloads the page and waits until it is connected again.
    pub async fn reload(&self) {
        self.browser.exec("location.reload();", vec![]).await;
        self.browser
            .wait(
                "the page to connect",
                "document.querySelector('.conn.live')",
            )
            .await;
    }

    /// A WebSocket client as the admin.
    pub async fn ws(&self) -> tandem_tests::WsClient {
        self.server.ws().await
    }

    /// Opens a session in the page and waits for its conversation view.
    pub async fn open_session(&self, id: &str) {
        self.browser
            .exec("location.hash = '#/s/' + arguments[0];", vec![json!(id)])
            .await;
        self.browser
            .wait(
                "the session view",
                &format!("document.querySelector('.chat[data-session=\"{id}\"] .log')"),
            )
            .await;
    }

    /// Types into a session's composer and presses Enter.
    pub async fn send(&self, id: &str, text: &str) {
        let css = format!(".chat[data-session=\"{id}\"] textarea.input");
        // Shift+Enter would be a newline; the test sends one line per call, or uses
        // the value setter for multi-line text.
        if text.contains('\n') {
            self.browser
                .exec(
                    "const t = document.querySelector(arguments[0]); t.value = arguments[1]; t.focus();",
                    vec![json!(css), json!(text)],
                )
                .await;
            self.browser.type_into(&css, "\u{E007}").await;
        } else {
            self.browser
                .type_into(&css, &format!("{text}\u{E007}"))
                .await;
        }
    }

    /// Waits until some rendered item of session `id` matching `sel` contains `text`.
    pub async fn wait_text(&self, id: &str, sel: &str, text: &str) {
        self.wait_text_within(id, sel, text, tandem_tests::webdriver::WAIT)
            .await;
    }

    /// [`Page::wait_text`] with its own limit.
    pub async fn wait_text_within(
        &self,
        id: &str,
        sel: &str,
        text: &str,
        limit: std::time::Duration,
    ) {
        let expr = format!(
            "[...document.querySelectorAll('.chat[data-session=\"{id}\"] {sel}')].some(e => e.textContent.includes({}))",
            json!(text)
        );
        self.browser
            .wait_within(&format!("{sel} containing {text:?}"), &expr, limit)
            .await;
    }

    /// Counts elements matching `css` in the page.
    pub async fn count(&self, css: &str) -> u64 {
        self.browser
            .exec(
                "return document.querySelectorAll(arguments[0]).length;",
                vec![json!(css)],
            )
            .await
            .as_u64()
            .unwrap_or(0)
    }

    /// Runs axe-core and fails on any serious or critical violation; also fails on any
    /// Content-Security-Policy violation the page has seen so far.
    pub async fn assert_accessible(&self, view: &str) {
        assert_accessible(&self.browser, view).await;
    }

    /// The view's counters: duplicates dropped, gaps, events applied, tip.
    pub async fn stats(&self, id: &str) -> Value {
        self.browser
            .exec(
                "const v = window.__tandem.view(arguments[0]); return v ? {...v.stats, tip: v.tip, first: v.first} : null;",
                vec![json!(id)],
            )
            .await
    }
}

impl Page {
    /// Clicks the button inside `scope` (CSS) whose accessible name (its
    /// `aria-label`, else its text) is `name`.
    pub async fn press(&self, scope: &str, name: &str) {
        // The button is marked, then clicked by its mark: should the page render it
        // anew in between (a new element, without the mark), the new one is marked.
        for _ in 0..20 {
            let mark = self
                .browser
                .wait(
                    &format!("the {name:?} button"),
                    &format!(
                        "(() => {{ const b = [...document.querySelectorAll({} + ' button')].find(b => !b.hidden && b.offsetParent !== null && (b.getAttribute('aria-label') || b.textContent).trim() === {}); if (!b) return null; b.dataset.press = b.dataset.press || String(Math.random()).slice(2); return b.dataset.press; }})()",
                        serde_json::json!(scope),
                        serde_json::json!(name)
                    ),
                )
                .await;
            let mark = mark.as_str().unwrap().to_string();
            match self
                .browser
                .try_click(&format!("button[data-press=\"{mark}\"]"))
                .await
            {
                Ok(()) => return,
                Err(e)
                    if e["error"] == "no such element"
                        || e["error"] == "stale element reference" =>
                {
                    continue
                }
                Err(e) => panic!("press {name:?} in {scope}: {e}"),
            }
        }
        panic!("press {name:?} in {scope}: the button kept being replaced");
    }

    /// The open dialog's CSS selector, once one is open.
    pub async fn dialog(&self, class: &str) -> String {
        let css = format!("dialog.{class}[open]");
        self.browser
            .wait(
                &format!("the {class} dialog"),
                &format!("document.querySelector({})", serde_json::json!(css)),
            )
            .await;
        css
    }

    /// Sets a select or input (inside `css`) and fires its change event.
    pub async fn set_value(&self, css: &str, value: &str) {
        self.browser
            .exec(
                "const e = document.querySelector(arguments[0]); e.value = arguments[1];\
                 e.dispatchEvent(new Event('input', {bubbles: true}));\
                 e.dispatchEvent(new Event('change', {bubbles: true}));",
                vec![json!(css), json!(value)],
            )
            .await;
    }

    /// Axe and phone width for what is on screen now: no serious violation at
    /// 1280 px and at 390 px, and nothing wider than a phone. Saves screenshots
    /// `NAME.png` and `phone-NAME.png`.
    pub async fn check_view(&self, name: &str) {
        check_view(&self.browser, name).await;
    }
}

/// Runs axe-core and fails on any serious or critical violation; also fails on any
/// Content-Security-Policy violation the page has seen so far.
pub async fn assert_accessible(browser: &Browser, view: &str) {
    let csp = browser
        .exec(
            "return window.__tandem ? window.__tandem.cspViolations : 'the test hooks are missing';",
            vec![],
        )
        .await;
    assert_eq!(csp, json!([]), "CSP violations in the {view} view");
    let bad = browser.axe_serious().await;
    assert!(
        bad.is_empty(),
        "accessibility violations in the {view} view: {}",
        Value::Array(bad)
    );
}

/// Axe and phone width for what is on screen now: no serious violation at 1280 px and
/// at 390 px, and nothing wider than a phone. Saves screenshots `NAME.png` and
/// `phone-NAME.png`. (For a page whose server is gone, see `install.rs`.)
pub async fn check_view(browser: &Browser, name: &str) {
    browser.screenshot(name).await;
    assert_accessible(browser, name).await;
    browser.resize(390, 844).await;
    let overflow = browser
        .exec(
            "const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1 && e.getClientRects().length)\
               .slice(0, 5).map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`);\
             return document.documentElement.scrollWidth > innerWidth || wide.some(w => w.startsWith('DIALOG')) ? wide : false;",
            vec![],
        )
        .await;
    assert_eq!(overflow, false, "{name} is wider than a phone");
    browser.screenshot(&format!("phone-{name}")).await;
    assert_accessible(browser, &format!("phone {name}")).await;
    browser.resize(1280, 800).await;
}

/// Creates a scripted session over WebSocket and returns its id.
pub async fn create_session(page: &Page, title: &str) -> String {
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": title}))
        .await;
    reply["session"]["id"].as_str().unwrap().to_string()
}

/// Asserts that rendered items of session `id` carry strictly increasing seqs.
pub async fn assert_no_duplicate_items(page: &Page, id: &str) {
    let seqs = page
        .browser
        .exec(
            "return [...document.querySelectorAll('.chat[data-session=\"' + arguments[0] + '\"] .items > [data-seq]')].map(e => +e.dataset.seq);",
            vec![json!(id)],
        )
        .await;
    let seqs: Vec<u64> = seqs
        .as_array()
        .cloned()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert!(!seqs.is_empty(), "no rendered items");
    for w in seqs.windows(2) {
        assert!(w[0] < w[1], "items out of order or repeated: {seqs:?}");
    }
}
