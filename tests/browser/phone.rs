//! The page on a phone: Chromium's mobile emulation (DevTools protocol: a 390 × 844
//! mobile viewport, touch) over the real server. Each main view (the session list
//! and its drawer, a conversation and its actions, a Driver and its Worker one pane
//! at a time, the Changes and Files panels) is checked, not only photographed: every
//! control on it is at least 44 × 44 CSS px (a checkbox counts its label), nothing is
//! wider than the screen, axe finds nothing serious; the drawer opens and closes by
//! keyboard and by touch; the composer stays above an on-screen keyboard. Each view's
//! screenshot is `target/screenshots/phone-view-*.png`. The desktop layout is checked
//! unchanged after the emulation ends.

use serde_json::{json, Value};
use tandem_tests::Browser;

use crate::workspaces::repo;
use crate::{assert_accessible, create_session, Page};

const WIDTH: u32 = 390;
const HEIGHT: u32 = 844;

/// The visible controls smaller than 44 × 44 CSS px or reaching past the screen's
/// edges (at most 12, described), and whether the page is wider than the screen. A control is skipped when it is not
/// rendered, hidden, inert, moved out of sight on purpose (the skip link, left of the
/// screen) or a link inside running text (WCAG 2.5.5's inline exception). An input
/// inside a label counts the label: a tap on it works the input.
const TARGETS: &str = r#"
const small = [];
let checked = 0;
for (const el of document.querySelectorAll('button, a[href], input:not([type=hidden]), select, textarea, summary, [role=button]')) {
  if (!el.getClientRects().length || getComputedStyle(el).visibility === 'hidden' || el.closest('[inert]')) continue;
  if (el.closest('.text a, .md a') && el.tagName === 'A') continue;
  let r = el.getBoundingClientRect();
  if (r.right <= 0) continue;
  const label = el.tagName === 'INPUT' ? el.closest('label') : null;
  if (label) {
    const l = label.getBoundingClientRect();
    r = { width: Math.max(r.width, l.width), height: Math.max(r.height, l.height) };
  }
  checked++;
  const box = el.getBoundingClientRect();
  if (box.left < -1 || box.right > innerWidth + 1) {
    small.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} "${(el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 30)}" cut off at ${Math.round(box.left)}..${Math.round(box.right)}`);
  } else if (r.width < 43.5 || r.height < 43.5) {
    small.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} "${(el.getAttribute('aria-label') || el.textContent || el.placeholder || '').trim().slice(0, 30)}" ${Math.round(r.width)}x${Math.round(r.height)}`);
  }
}
return { small: small.slice(0, 12), checked, innerWidth, scrollWidth: document.documentElement.scrollWidth };
"#;

/// Puts the page in a phone: 390 × 844 CSS px, mobile (the viewport meta applies),
/// touch events on.
async fn emulate_phone(b: &Browser, height: u32) {
    b.cdp(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": WIDTH, "height": height, "deviceScaleFactor": 2, "mobile": true}),
    )
    .await;
    b.cdp(
        "Emulation.setTouchEmulationEnabled",
        json!({"enabled": true, "maxTouchPoints": 5}),
    )
    .await;
}

/// A tap (touch start and end) at the middle of the element `css` matches.
async fn tap(b: &Browser, css: &str) {
    let at = b
        .wait(
            &format!("{css} to be tappable"),
            &format!(
                "(() => {{ const e = document.querySelector({}); if (!e || !e.getClientRects().length) return null;\
                 const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()",
                json!(css)
            ),
        )
        .await;
    tap_at(b, at[0].as_f64().unwrap(), at[1].as_f64().unwrap()).await;
}

async fn tap_at(b: &Browser, x: f64, y: f64) {
    b.cdp(
        "Input.dispatchTouchEvent",
        json!({"type": "touchStart", "touchPoints": [{"x": x, "y": y}]}),
    )
    .await;
    b.cdp(
        "Input.dispatchTouchEvent",
        json!({"type": "touchEnd", "touchPoints": []}),
    )
    .await;
}

/// Checks the view on screen (targets, width, axe) and saves `phone-NAME.png`,
/// which must be a PNG of the emulated screen (2 device px per CSS px).
async fn check_phone_view(b: &Browser, name: &str) {
    let t = b.exec(TARGETS, vec![]).await;
    assert_eq!(t["innerWidth"], WIDTH, "{name}: not at phone width: {t}");
    assert!(
        t["scrollWidth"].as_u64().unwrap() <= u64::from(WIDTH),
        "{name} is wider than the phone: {t}"
    );
    assert!(
        t["checked"].as_u64().unwrap() > 0,
        "{name}: no control found: {t}"
    );
    assert_eq!(
        t["small"],
        json!([]),
        "{name}: touch targets under 44 × 44 px: {t}"
    );
    assert_accessible(b, &format!("phone {name}")).await;
    let path = b.screenshot(&format!("phone-view-{name}")).await;
    let png = std::fs::read(&path).unwrap();
    assert!(
        png.len() > 1000 && png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        path.display()
    );
    // IHDR: width and height, big-endian, at bytes 16..24.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, WIDTH * 2, "{name}: screenshot width");
}

/// What the page shows of the drawer and the focus.
async fn drawer_state(b: &Browser) -> Value {
    b.exec(
        "const nav = document.querySelector('.sidebar'); const r = nav.getBoundingClientRect();\
         const btn = document.querySelector('.drawer-btn');\
         return {open: document.body.classList.contains('drawer-open'), expanded: btn.getAttribute('aria-expanded'),\
                 display: getComputedStyle(nav).display, left: r.left, right: r.right,\
                 focusInside: nav.contains(document.activeElement), focusOnButton: document.activeElement === btn,\
                 mainInert: document.querySelector('.main').inert};",
        vec![],
    )
    .await
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn every_view_works_at_phone_width_with_touch() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    // A repository with a change, for the Changes and Files panels.
    let dir = repo(
        &page.server.dir.path().join("app"),
        &[("README.md", "# App\n"), ("src/main.rs", "fn main() {}\n")],
    );
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": "Fix the login form on small screens", "cwd": dir.to_str().unwrap()}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    let other = create_session(&page, "Update the changelog").await;
    ws.ok(json!({"type": "chat.send", "sessionId": other, "content": "Changelog updated."}))
        .await;
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": "/write src/main.rs fn main() { println!(\"hi\"); }\n/tool Read {\"file_path\": \"src/main.rs\"}\nThe form now wraps on **small screens**; see `src/main.rs`.\n/ask Bash {\"command\":\"cargo test\"}"}))
        .await;

    emulate_phone(b, HEIGHT).await;
    b.wait("the phone width", &format!("innerWidth === {WIDTH}"))
        .await;
    let touch = b
        .exec(
            "return {touch: navigator.maxTouchPoints, coarse: matchMedia('(pointer: coarse)').matches};",
            vec![],
        )
        .await;
    assert!(touch["touch"].as_u64().unwrap() > 0, "{touch}");

    // The list: the page's home on a phone, no drawer button (it is the list).
    b.wait(
        "the sessions in the list",
        "document.querySelectorAll('.session-list a.session').length === 2",
    )
    .await;
    let home = b
        .exec(
            "return {drawerBtn: getComputedStyle(document.querySelector('.drawer-btn')).display,\
                     main: getComputedStyle(document.querySelector('.main')).display};",
            vec![],
        )
        .await;
    assert_eq!(home, json!({"drawerBtn": "none", "main": "none"}));
    check_phone_view(b, "list").await;
    // The "New session" dialog: its fields and buttons too (the checkbox counts its
    // label); Escape closes it.
    tap(b, ".top .btn.primary").await;
    b.wait(
        "the new session dialog",
        "document.querySelector('dialog.create[open]')",
    )
    .await;
    check_phone_view(b, "new-session").await;
    b.chord("\u{E00C}").await;
    b.wait(
        "the dialog to close",
        "!document.querySelector('dialog.create[open]')",
    )
    .await;

    // A session's conversation, opened by a tap on its row.
    tap(b, &format!("a.session[data-id=\"{id}\"]")).await;
    let chat = format!(".chat[data-session=\"{id}\"]");
    page.wait_text(&id, ".card.permission:not(.done) pre", "cargo test")
        .await;
    page.wait_text(&id, ".msg.assistant", "small screens").await;
    let shown = b
        .exec(
            "return {sidebar: getComputedStyle(document.querySelector('.sidebar')).display,\
                     drawerBtn: getComputedStyle(document.querySelector('.drawer-btn')).display,\
                     actions: getComputedStyle(document.querySelector(arguments[0] + ' .head-actions')).display,\
                     more: document.querySelector(arguments[0] + ' .head-more').getAttribute('aria-expanded')};",
            vec![json!(chat)],
        )
        .await;
    assert_eq!(shown["sidebar"], "none", "{shown}");
    assert_ne!(shown["drawerBtn"], "none", "{shown}");
    // The session's actions and settings are folded behind one button.
    assert_eq!(shown["actions"], "none", "{shown}");
    assert_eq!(shown["more"], "false", "{shown}");
    check_phone_view(b, "chat").await;
    tap(b, &format!("{chat} .head-more")).await;
    b.wait(
        "the session's actions",
        &format!(
            "getComputedStyle(document.querySelector({})).display !== 'none'",
            json!(format!("{chat} .head-actions"))
        ),
    )
    .await;
    assert_eq!(
        b.exec(
            "return document.querySelector(arguments[0]).getAttribute('aria-expanded');",
            vec![json!(format!("{chat} .head-more"))]
        )
        .await,
        "true"
    );
    check_phone_view(b, "chat-actions").await;

    // The Changes panel, over the conversation; then the Files panel.
    page.press(&chat, "Changes").await;
    b.wait(
        "the changed file",
        &format!(
            "[...document.querySelectorAll({})].some(e => e.textContent.includes('src/main.rs'))",
            json!(format!("{chat} .ws-file"))
        ),
    )
    .await;
    check_phone_view(b, "changes").await;
    page.press(&chat, "Files").await;
    b.wait(
        "the tree",
        &format!(
            "[...document.querySelectorAll({})].some(e => e.textContent.includes('README.md'))",
            json!(format!("{chat} .ws-entry"))
        ),
    )
    .await;
    check_phone_view(b, "files").await;
    page.press(&chat, "Files").await;
    tap(b, &format!("{chat} .head-more")).await;

    // The drawer, by keyboard: Enter on its button opens it with the focus inside,
    // the conversation behind it inert; Escape closes it and gives the focus back.
    b.exec("document.querySelector('.drawer-btn').focus();", vec![])
        .await;
    b.chord("\u{E007}").await;
    b.wait(
        "the drawer to open",
        "document.body.classList.contains('drawer-open')",
    )
    .await;
    let open = drawer_state(b).await;
    assert_eq!(open["expanded"], "true", "{open}");
    assert_eq!(open["display"], "block", "{open}");
    assert_eq!(open["left"], 0.0, "{open}");
    assert!(
        open["right"].as_f64().unwrap() <= f64::from(WIDTH),
        "{open}"
    );
    assert_eq!(open["focusInside"], true, "{open}");
    assert_eq!(open["mainInert"], true, "{open}");
    check_phone_view(b, "drawer").await;
    b.chord("\u{E00C}").await;
    b.wait(
        "the drawer to close",
        "!document.body.classList.contains('drawer-open')",
    )
    .await;
    let closed = drawer_state(b).await;
    assert_eq!(closed["expanded"], "false", "{closed}");
    assert_eq!(closed["display"], "none", "{closed}");
    assert_eq!(closed["focusOnButton"], true, "{closed}");
    assert_eq!(closed["mainInert"], false, "{closed}");
    // Escape closed the drawer only: the turn waiting for its permission runs on.
    page.wait_text(&id, ".card.permission:not(.done) .card-state", "waiting")
        .await;

    // By touch: the button opens it, a tap beside it (on the backdrop) closes it, a
    // tap on its close button too; a tap on a session opens that one and closes it.
    tap(b, ".drawer-btn").await;
    b.wait(
        "the drawer to open by touch",
        "document.body.classList.contains('drawer-open')",
    )
    .await;
    tap_at(b, f64::from(WIDTH) - 10.0, 400.0).await;
    b.wait(
        "the backdrop to close the drawer",
        "!document.body.classList.contains('drawer-open')",
    )
    .await;
    tap(b, ".drawer-btn").await;
    b.wait(
        "the drawer to open by touch",
        "document.body.classList.contains('drawer-open')",
    )
    .await;
    tap(b, ".drawer-close").await;
    b.wait(
        "the close button to close the drawer",
        "!document.body.classList.contains('drawer-open')",
    )
    .await;
    tap(b, ".drawer-btn").await;
    tap(b, &format!(".sidebar a.session[data-id=\"{other}\"]")).await;
    b.wait(
        "the other session",
        &format!(
            "document.querySelector('.chat[data-session=\"{other}\"]') && !document.body.classList.contains('drawer-open')"
        ),
    )
    .await;

    // The session already shown, tapped in the drawer, closes it too.
    tap(b, ".drawer-btn").await;
    tap(b, &format!(".sidebar a.session[data-id=\"{other}\"]")).await;
    b.wait(
        "the drawer to close on the current session",
        "!document.body.classList.contains('drawer-open') && document.activeElement === document.querySelector('.main')",
    )
    .await;

    // The composer stays above an on-screen keyboard: the keyboard takes the lower
    // part of the screen (with `interactive-widget=resizes-content` the browser
    // resizes the page; elsewhere the page follows the visual viewport itself).
    let meta = b
        .exec(
            "return document.querySelector('meta[name=viewport]').content;",
            vec![],
        )
        .await;
    assert!(
        meta.as_str()
            .unwrap()
            .contains("interactive-widget=resizes-content"),
        "{meta}"
    );
    let input = format!(".chat[data-session=\"{other}\"] textarea.input");
    tap(b, &input).await;
    emulate_phone(b, 460).await;
    let fits = "(() => { const f = document.querySelector('.chat .composer').getBoundingClientRect();\
                const vv = visualViewport; const top = vv.offsetTop, bottom = vv.offsetTop + vv.height;\
                return vv.height < 500 && f.top >= top && f.bottom <= bottom + 1 && f.height > 40\
                  && getComputedStyle(document.documentElement).getPropertyValue('--app-height').trim() === Math.round(vv.height) + 'px'; })()";
    b.wait("the composer above the keyboard", fits).await;
    let kb = b
        .exec(
            "const f = document.querySelector('.chat .composer').getBoundingClientRect();\
             const s = document.querySelector('.chat .send').getBoundingClientRect();\
             return {composer: [f.top, f.bottom], send: [s.top, s.bottom], vv: visualViewport.height,\
                     focus: document.activeElement === document.querySelector(arguments[0]), scrollWidth: document.documentElement.scrollWidth};",
            vec![json!(input)],
        )
        .await;
    assert!(
        kb["send"][1].as_f64().unwrap() <= kb["vv"].as_f64().unwrap() + 1.0,
        "Send is under the keyboard: {kb}"
    );
    assert_eq!(kb["focus"], true, "{kb}");
    b.screenshot("phone-view-keyboard").await;
    emulate_phone(b, HEIGHT).await;
    // Pinch zoom makes the visual viewport smaller too, by its scale: the page keeps
    // its height then (only a keyboard shrinks it).
    b.cdp(
        "Emulation.setPageScaleFactor",
        json!({"pageScaleFactor": 2}),
    )
    .await;
    b.wait(
        "the zoom",
        "visualViewport.scale > 1.5 && getComputedStyle(document.documentElement).getPropertyValue('--app-height').trim() === innerHeight + 'px'",
    )
    .await;
    b.cdp(
        "Emulation.setPageScaleFactor",
        json!({"pageScaleFactor": 1}),
    )
    .await;
    b.wait(
        "the composer at the bottom again",
        "Math.abs(document.querySelector('.chat .composer').getBoundingClientRect().bottom - innerHeight) <= 1",
    )
    .await;

    // Answer the waiting permission so its turn ends.
    page.open_session(&id).await;
    tap(b, &format!("{chat} .card.permission:not(.done) .allow")).await;
    page.wait_text(&id, ".msg.assistant", "allowed Bash").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_pair_shows_one_pane_at_a_time_with_a_switch() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let d = create_session(&page, "Driver: release prep").await;
    page.open_session(&d).await;
    page.send(
        &d,
        r#"/tool send_to_partner {"message": "Run the test suite and report failures\n/ask Bash {\"command\":\"cargo test\"}\n/hold worker\nworker done: **12 passed**"}"#,
    )
    .await;
    b.wait(
        "the split view",
        "document.querySelector('.split .pane.driver') && document.querySelector('.split .pane.worker')",
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

    // Desktop: both panes side by side, no switch (as before).
    let desk = pane_state(b).await;
    assert_eq!(desk["switch"], "none", "{desk}");
    assert_eq!(desk["driver"], true, "{desk}");
    assert_eq!(desk["worker"], true, "{desk}");
    assert_eq!(desk["sideBySide"], true, "{desk}");

    emulate_phone(b, HEIGHT).await;
    b.wait("the phone width", &format!("innerWidth === {WIDTH}"))
        .await;
    // The Driver first; the switch says which pane is shown, and that the Worker,
    // not shown, waits for an answer.
    let worker_mark =
        "document.querySelector('.pane-switch .btn:nth-child(2) .pane-att').textContent";
    b.wait(
        "the Worker's mark on the switch",
        &format!("{worker_mark} === ', Needs you'"),
    )
    .await;
    let driver = pane_state(b).await;
    assert_ne!(driver["switch"], "none", "{driver}");
    assert_eq!(driver["pressed"], json!(["Driver"]), "{driver}");
    assert_eq!(driver["driver"], true, "{driver}");
    assert_eq!(driver["worker"], false, "{driver}");
    assert_eq!(driver["fullWidth"], true, "{driver}");
    check_phone_view(b, "pair-driver").await;

    // A tap on "Worker" shows the Worker alone.
    tap(b, ".pane-switch .btn:nth-child(2)").await;
    b.wait(
        "the Worker's pane",
        "document.querySelector('.split').dataset.show === '1'",
    )
    .await;
    let worker = pane_state(b).await;
    assert_eq!(worker["pressed"], json!(["Worker"]), "{worker}");
    assert_eq!(worker["driver"], false, "{worker}");
    assert_eq!(worker["worker"], true, "{worker}");
    assert_eq!(worker["fullWidth"], true, "{worker}");
    check_phone_view(b, "pair-worker").await;
    // Its permission answered by touch, the mark goes.
    page.wait_text(&w, ".card.permission:not(.done) pre", "cargo test")
        .await;
    tap(
        b,
        &format!(".chat[data-session=\"{w}\"] .card.permission:not(.done) .allow"),
    )
    .await;
    page.wait_text(&w, ".msg.assistant", "allowed Bash").await;
    b.wait("the Worker's mark to go", &format!("{worker_mark} === ''"))
        .await;
    // The Worker's pane keeps its place while the pair changes (a new delegation
    // state re-renders the bar, not the panes).
    page.server.release("worker").await;
    page.wait_text(&w, ".msg.assistant strong", "12 passed")
        .await;
    assert_eq!(pane_state(b).await["pressed"], json!(["Worker"]));
    // And back, by keyboard.
    b.exec(
        "document.querySelector('.pane-switch .btn:nth-child(1)').focus();",
        vec![],
    )
    .await;
    b.chord("\u{E007}").await;
    b.wait(
        "the Driver's pane",
        "document.querySelector('.split').dataset.show === '0'",
    )
    .await;

    // The emulation ends: the desktop layout is as it was.
    b.cdp("Emulation.clearDeviceMetricsOverride", json!({}))
        .await;
    b.wait("the desktop width", "innerWidth > 1000").await;
    let back = pane_state(b).await;
    assert_eq!(back["switch"], "none", "{back}");
    assert_eq!(back["sideBySide"], true, "{back}");
    let top = b
        .exec(
            "return {drawerBtn: getComputedStyle(document.querySelector('.drawer-btn')).display,\
                     sidebar: getComputedStyle(document.querySelector('.sidebar')).display,\
                     more: getComputedStyle(document.querySelector('.chat .head-more')).display,\
                     actions: getComputedStyle(document.querySelector('.chat .head-actions')).display};",
            vec![],
        )
        .await;
    assert_eq!(
        top,
        json!({"drawerBtn": "none", "sidebar": "block", "more": "none", "actions": "flex"})
    );
}

/// The split's panes and the switch: which are displayed, which button is pressed.
async fn pane_state(b: &Browser) -> Value {
    b.exec(
        "const shown = (e) => !!e && e.getClientRects().length > 0;\
         const d = document.querySelector('.split .pane.driver'), w = document.querySelector('.split .pane.worker');\
         const sw = document.querySelector('.pane-switch');\
         const rd = d.getBoundingClientRect(), rw = w.getBoundingClientRect();\
         const full = (r) => r.width >= innerWidth - 1;\
         return {switch: sw ? getComputedStyle(sw).display : 'none',\
                 pressed: [...document.querySelectorAll('.pane-switch [aria-pressed=true]')].map(b => b.firstChild.textContent),\
                 driver: shown(d), worker: shown(w),\
                 sideBySide: shown(d) && shown(w) && rw.left >= rd.right - 1,\
                 fullWidth: (shown(d) ? full(rd) : true) && (shown(w) ? full(rw) : true)};",
        vec![],
    )
    .await
}
