//! The page as the whole control surface: the queue on the server, asking before
//! sending during background work, hand off, session settings, schedules, adding a
//! Worker, two sessions side by side, usage and cost, diffs, notifications and the
//! tab title, requests that time out, and a failed schedule's history line. Each new dialog and panel is checked with
//! axe at desktop and phone width, and screenshotted.

use std::sync::Arc;

use serde_json::json;
use tandem_tests::{eventually, Browser, Server, ServerOptions, TempDir};

use crate::{create_session, Page};

fn chat(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"]")
}

async fn queue_texts(page: &Page, id: &str) -> Vec<String> {
    let (_, list) = page
        .server
        .get(&format!("/api/v1/sessions/{id}/queue"))
        .await;
    list["queued"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|q| q["text"].as_str().map(String::from))
                .collect()
        })
        .unwrap()
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_queue_lives_on_the_server_and_background_work_asks_first() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "queue").await;
    page.open_session(&id).await;
    page.send(&id, "/hold never").await;
    b.wait(
        "running",
        &format!(
            "document.querySelector('{} .status.st-running') && !document.querySelector('{} .stop').disabled",
            chat(&id),
            chat(&id)
        ),
    )
    .await;
    page.send(&id, "queued one").await;
    page.send(&id, "queued two").await;
    b.wait(
        "two chips",
        "document.querySelectorAll('.queued li').length === 2",
    )
    .await;

    // A reload shows the same chips: they come from the server.
    b.exec("location.reload();", vec![]).await;
    b.wait("the page", "document.querySelector('.conn.live')")
        .await;
    page.open_session(&id).await;
    b.wait(
        "the chips after a reload",
        "[...document.querySelectorAll('.queued li')].map(l => l.textContent).join('|').includes('queued one') && document.querySelectorAll('.queued li').length === 2",
    )
    .await;

    // Edit the first in place, cancel the second.
    page.press(&chat(&id), "Edit queued message 1").await;
    page.set_value(
        &format!("{} .queued input", chat(&id)),
        "queued one, edited",
    )
    .await;
    page.press(&chat(&id), "Save").await;
    b.wait(
        "the edited chip",
        "[...document.querySelectorAll('.queued li')].some(l => l.textContent.includes('queued one, edited'))",
    )
    .await;
    page.press(&chat(&id), "Cancel queued message 2").await;
    b.wait(
        "one chip left",
        "document.querySelectorAll('.queued li').length === 1",
    )
    .await;
    assert_eq!(queue_texts(&page, &id).await, ["queued one, edited"]);
    // A message queued elsewhere (another tab, a script) shows up here too.
    let mut ws = page.ws().await;
    ws.ok(
        json!({"type": "chat.send", "sessionId": id, "content": "from elsewhere", "queue": true}),
    )
    .await;
    b.wait(
        "the chip queued elsewhere",
        "[...document.querySelectorAll('.queued li')].some(l => l.textContent.includes('Queued 2: from elsewhere'))",
    )
    .await;
    page.press(&chat(&id), "Cancel queued message 2").await;
    b.wait(
        "one chip left again",
        "document.querySelectorAll('.queued li').length === 1",
    )
    .await;
    page.check_view("queue").await;

    // Stopping the turn sends the queued message; its chip goes.
    b.click(&format!("{} .stop", chat(&id))).await;
    page.wait_text(&id, ".msg.user", "queued one, edited").await;
    b.wait(
        "no chips",
        "document.querySelectorAll('.queued li').length === 0",
    )
    .await;
    page.wait_text(&id, ".turn-end.completed", "Turn completed")
        .await;

    // Background work: the page asks first.
    page.send(&id, "/background build 60000 long build").await;
    b.wait(
        "the background chip",
        &format!("document.querySelector('{} .chip.bg')", chat(&id)),
    )
    .await;
    b.wait(
        "idle with background work",
        &format!("document.querySelector('{} .status.st-idle')", chat(&id)),
    )
    .await;
    page.send(&id, "after the build").await;
    b.wait(
        "the question",
        &format!("!document.querySelector('{} .ask-bg').hidden", chat(&id)),
    )
    .await;
    page.check_view("ask-background").await;
    page.press(&chat(&id), "Queue until the background work ends")
        .await;
    b.wait(
        "the queued chip",
        "[...document.querySelectorAll('.queued li')].some(l => l.textContent.includes('after the build'))",
    )
    .await;
    assert_eq!(queue_texts(&page, &id).await, ["after the build"]);
    page.send(&id, "right now").await;
    page.press(&chat(&id), "Send now").await;
    page.wait_text(&id, ".msg.user", "right now").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn hand_off_and_change_settings_with_refusals_shown() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "source").await;
    let mut ws = page.ws().await;
    ws.subscribe(&id, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": "plan the release"}))
        .await;
    ws.events_until_turn_end(&id).await;
    page.open_session(&id).await;

    // Settings change the session through session.configure.
    page.set_value(&format!("{} select[name=effort]", chat(&id)), "high")
        .await;
    page.set_value(
        &format!("{} select[name=permissionMode]", chat(&id)),
        "plan",
    )
    .await;
    eventually("the session to be configured", async || {
        let (_, info) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
        (info["effort"] == "high" && info["permissionMode"] == "plan").then_some(())
    })
    .await;
    page.wait_text(&id, ".meta", "high").await;

    // Hand off: the dialog takes vendor, model and effort; the new session opens.
    page.press(&chat(&id), "Hand off source").await;
    let dialog = page.dialog("handoff").await;
    let vendors = b
        .exec(
            "return [...document.querySelectorAll(arguments[0] + ' select[name=vendor] option')].map(o => o.value);",
            vec![json!(dialog)],
        )
        .await;
    assert_eq!(vendors, json!(["scripted"]));
    page.set_value(&format!("{dialog} select[name=effort]"), "low")
        .await;
    page.check_view("handoff-dialog").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    let target = b
        .wait(
            "the new session",
            &format!("location.hash.startsWith('#/s/') && location.hash.slice(4) !== '{id}' && location.hash.slice(4)"),
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    page.wait_text(&target, ".line-event", "Continues").await;
    let (_, t) = page.server.get(&format!("/api/v1/sessions/{target}")).await;
    assert_eq!(t["handoffFrom"], id.as_str());
    assert_eq!(t["effort"], "low");
    // The source links to it.
    page.open_session(&id).await;
    b.wait(
        "the link to the new session",
        &format!(
            "[...document.querySelectorAll('{} .line-event a')].some(a => a.getAttribute('href') === '#/s/{target}')",
            chat(&id)
        ),
    )
    .await;

    // A refused change is shown next to its control: another user may read a shared
    // session but not configure it.
    let shared = ws
        .ok(json!({"type": "session.create", "title": "team", "visibility": "shared"}))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bob = page.server.cli(&["user", "add", "bob", "--data-dir"]);
    let other = Browser::start(1280, 800).await;
    other
        .goto(&format!("{}/?token={bob}#/s/{shared}", page.server.base))
        .await;
    other
        .wait(
            "bob's view",
            &format!(
                "document.querySelector('{} select[name=effort]')",
                chat(&shared)
            ),
        )
        .await;
    other
        .exec(
            "const e = document.querySelector(arguments[0]); e.value = 'low'; e.dispatchEvent(new Event('change'));",
            vec![json!(format!("{} select[name=effort]", chat(&shared)))],
        )
        .await;
    let shown = other
        .wait(
            "the refusal next to the control",
            &format!(
                "document.querySelector('{} select[name=effort]').closest('.setting').querySelector('.setting-error').textContent",
                chat(&shared)
            ),
        )
        .await;
    assert!(
        shown
            .as_str()
            .is_some_and(|t| t.starts_with("Effort not changed")),
        "{shown}"
    );
    let value = other
        .exec(
            "return document.querySelector(arguments[0]).value;",
            vec![json!(format!("{} select[name=effort]", chat(&shared)))],
        )
        .await;
    assert_eq!(value, "", "the control shows the session's value again");
    other.screenshot("setting-refused").await;
    let bad = other.axe_serious().await;
    assert!(bad.is_empty(), "refused setting: {bad:?}");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn schedules_are_made_in_local_time_listed_cancelled_and_fired() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "later").await;
    page.open_session(&id).await;
    page.press(&chat(&id), "Schedule…").await;
    let dialog = page.dialog("schedule").await;
    // Two hours ahead, typed as the person's local time.
    let local = b
        .exec(
            "const d = new Date(Date.now() + 7200000), p = n => String(n).padStart(2, '0');\
             return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;",
            vec![],
        )
        .await;
    let local = local.as_str().unwrap().to_string();
    page.set_value(&format!("{dialog} input[name=at]"), &local)
        .await;
    page.set_value(&format!("{dialog} textarea[name=content]"), "later please")
        .await;
    page.check_view("schedule-dialog").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    b.wait(
        "the pending schedule",
        "[...document.querySelectorAll('.schedules li')].some(l => l.textContent.includes('later please'))",
    )
    .await;
    let (_, list) = page
        .server
        .get(&format!("/api/v1/sessions/{id}/schedules"))
        .await;
    let expected = b
        .exec(
            "return new Date(arguments[0]).getTime();",
            vec![json!(local)],
        )
        .await;
    assert_eq!(list["schedules"][0]["at"], expected, "{list}");
    assert_eq!(list["schedules"][0]["status"], "pending");
    page.check_view("schedules").await;

    // Cancel.
    let at = b
        .exec(
            "return document.querySelector('.schedules li button').getAttribute('aria-label');",
            vec![],
        )
        .await;
    page.press(&chat(&id), at.as_str().unwrap()).await;
    b.wait(
        "no pending schedule",
        "document.querySelectorAll('.schedules li').length === 0",
    )
    .await;
    let (_, list) = page
        .server
        .get(&format!("/api/v1/sessions/{id}/schedules"))
        .await;
    assert_eq!(list["schedules"][0]["status"], "cancelled");

    // One due now fires at once and shows in the history.
    page.press(&chat(&id), "Schedule…").await;
    let dialog = page.dialog("schedule").await;
    let now = b
        .exec(
            "const d = new Date(), p = n => String(n).padStart(2, '0');\
             return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;",
            vec![],
        )
        .await;
    page.set_value(&format!("{dialog} input[name=at]"), now.as_str().unwrap())
        .await;
    page.set_value(&format!("{dialog} textarea[name=content]"), "fire now")
        .await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    page.wait_text(&id, ".schedule-fired", "Scheduled message sent")
        .await;
    page.wait_text(&id, ".msg.user", "fire now").await;

    // A bad time is refused in the dialog, which stays open.
    page.press(&chat(&id), "Schedule…").await;
    let dialog = page.dialog("schedule").await;
    page.set_value(&format!("{dialog} input[name=at]"), "")
        .await;
    page.set_value(&format!("{dialog} textarea[name=content]"), "x")
        .await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    b.wait(
        "the dialog's error",
        &format!(
            "document.querySelector('{dialog} .error-text').textContent.includes('Choose a date')"
        ),
    )
    .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn add_a_worker_and_open_any_two_sessions_side_by_side() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let a = create_session(&page, "Alpha").await;
    let other = create_session(&page, "Beta").await;
    page.open_session(&a).await;
    page.press(&chat(&a), "Add Worker").await;
    let dialog = page.dialog("add-worker").await;
    page.set_value(&format!("{dialog} select[name=effort]"), "high")
        .await;
    page.check_view("add-worker-dialog").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    b.wait(
        "the pair's panes",
        "document.querySelector('.split .pane.driver') && document.querySelector('.split .pane.worker')",
    )
    .await;
    let roles = b
        .exec(
            "return [...document.querySelectorAll('.split .pane .pane-role')].map(e => e.textContent);",
            vec![],
        )
        .await;
    assert_eq!(roles, json!(["Driver", "Worker"]));
    let (_, pairs) = page.server.get("/api/v1/pairs").await;
    assert_eq!(pairs["pairs"][0]["driverId"], a.as_str());
    let worker = pairs["pairs"][0]["workerId"].as_str().unwrap().to_string();
    let (_, w) = page.server.get(&format!("/api/v1/sessions/{worker}")).await;
    assert_eq!(w["effort"], "high");

    // Any two sessions side by side, the second chosen from the list; no pairing.
    page.open_session(&other).await;
    page.press(&chat(&other), "Open beside Beta").await;
    let dialog = page.dialog("beside").await;
    page.set_value(&format!("{dialog} select[name=beside]"), &a)
        .await;
    page.check_view("beside-dialog").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    b.wait(
        "two panes",
        &format!(
            "document.querySelector('.split .pane.left{}') && document.querySelector('.split .pane.right{}')",
            format_args!("[data-session=\"{other}\"]"),
            format_args!("[data-session=\"{a}\"]")
        ),
    )
    .await;
    let (_, pairs) = page.server.get("/api/v1/pairs").await;
    assert_eq!(
        pairs["pairs"].as_array().map(Vec::len),
        Some(1),
        "opening side by side pairs nothing"
    );
    page.check_view("side-by-side").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn usage_and_cost_per_turn_session_delegation_and_today() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "costly").await;
    page.open_session(&id).await;
    page.send(&id, "/usage {\"inputTokens\": 1200, \"cachedInputTokens\": 200, \"outputTokens\": 300, \"costUsd\": 0.5}\nhi")
        .await;
    page.wait_text(&id, ".turn-end .turn-usage", "1.2k in · 300 out · $0.50")
        .await;
    page.send(
        &id,
        "/usage {\"inputTokens\": 100, \"cachedInputTokens\": 0, \"outputTokens\": 20}\nagain",
    )
    .await;
    page.wait_text(&id, ".turn-end .turn-usage", "100 in · 20 out")
        .await;
    b.wait(
        "the session total",
        &format!(
            "document.querySelector('{} .usage-total').textContent === 'Total: 1.3k in · 320 out · $0.50'",
            chat(&id)
        ),
    )
    .await;

    // A delegation: the Driver's line says what the Worker's turn cost.
    let mut ws = page.ws().await;
    ws.ok(json!({"type": "pair.create", "driverId": id, "worker": {"vendor": "scripted"}}))
        .await;
    // The page lays the pair out side by side before anything is typed.
    b.wait(
        "the pair's panes",
        "document.querySelector('.split .pane.driver') && document.querySelector('.split .pane.worker')",
    )
    .await;
    page.send(&id, "/tool send_to_partner {\"message\": \"/usage {\\\"inputTokens\\\": 50, \\\"cachedInputTokens\\\": 0, \\\"outputTokens\\\": 5, \\\"costUsd\\\": 0.25}\\nok\"}")
        .await;
    page.wait_text(
        &id,
        ".delegation-cost",
        "Worker's turn: 50 in · 5 out · $0.25",
    )
    .await;

    // The running panel shows today's total over every session active today.
    page.press(".top", "Running").await;
    b.wait(
        "today's total",
        "document.querySelector('.running .today')?.textContent.includes('$0.75')",
    )
    .await;
    page.check_view("running-usage").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn file_edits_render_as_diffs_also_in_permission_requests() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "edits").await;
    page.open_session(&id).await;
    let long: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
    let write = json!({"file_path": "docs/long.md", "content": long.join("\n")});
    let edit = json!({"file_path": "src/lib.rs", "old_string": "fn a() {}\nfn b() {}", "new_string": "fn a() {}\nfn c() {}"});
    let patch = json!({"changes": [{"path": "app.py", "kind": {"type": "update"},
        "diff": "@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"}]});
    page.send(
        &id,
        &format!("/show Edit {edit}\n/show Write {write}\n/show apply_patch {patch}\ndone"),
    )
    .await;
    page.wait_text(&id, ".turn-end", "Turn completed").await;
    let files = b
        .exec(
            "return [...document.querySelectorAll(arguments[0] + ' .diff-file')].map(e => e.textContent);",
            vec![json!(chat(&id))],
        )
        .await;
    assert_eq!(files, json!(["src/lib.rs", "docs/long.md", "app.py"]));
    let edit_lines = b
        .exec(
            "return [...document.querySelectorAll(arguments[0] + ' .file-diff')][0].querySelector('pre').textContent;",
            vec![json!(chat(&id))],
        )
        .await;
    assert_eq!(edit_lines, " fn a() {}\n-fn b() {}\n+fn c() {}\n");
    // The long one is collapsed until asked.
    let shown = b
        .exec(
            "return [...document.querySelectorAll(arguments[0] + ' .file-diff')][1].querySelectorAll('.dl').length;",
            vec![json!(chat(&id))],
        )
        .await;
    assert_eq!(shown, 40);
    page.press(&chat(&id), "Show all 100 lines").await;
    b.wait(
        "the whole diff",
        &format!(
            "[...document.querySelectorAll('{} .file-diff')][1].querySelectorAll('.dl').length === 100",
            chat(&id)
        ),
    )
    .await;

    // A permission request for an edit shows its diff.
    page.send(&id, &format!("/ask Edit {edit}")).await;
    b.wait(
        "the permission's diff",
        &format!(
            "document.querySelector('{} .card.permission .diff-file')?.textContent === 'src/lib.rs'",
            chat(&id)
        ),
    )
    .await;
    page.check_view("diff").await;
    b.click(&format!("{} .card.permission .allow", chat(&id)))
        .await;
    page.wait_text(&id, ".msg.assistant", "allowed Edit").await;

    // A Codex-shaped request: the card shows the patch's diff.
    let codex = create_session(&page, "codex-like").await;
    page.open_session(&codex).await;
    page.send(&codex, &format!("/ask apply_patch {patch}"))
        .await;
    b.wait(
        "the Codex permission's diff",
        &format!(
            "document.querySelector('{} .card.permission .diff-file')?.textContent === 'app.py'",
            chat(&codex)
        ),
    )
    .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn notifications_with_consent_and_a_title_that_counts_attention() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let a = create_session(&page, "watched").await;
    let other = create_session(&page, "elsewhere").await;
    // Without consent the page offers to ask, and shows nothing.
    b.wait(
        "the consent button",
        "[...document.querySelectorAll('.sidebar button')].some(b => b.textContent === 'Enable notifications' && !b.hidden)",
    )
    .await;
    b.set_permission("notifications", "granted").await;
    b.exec("location.reload();", vec![]).await;
    b.wait("the page", "document.querySelector('.conn.live')")
        .await;
    let offered = b
        .exec(
            "return [...document.querySelectorAll('.sidebar button')].some(b => b.textContent === 'Enable notifications' && !b.hidden);",
            vec![],
        )
        .await;
    assert_eq!(offered, false, "consent given: no button");
    page.open_session(&a).await;

    // A turn that ends while the tab is hidden: a notification, and the row says "New"
    // (the page reports nothing while hidden); a turn that ended is not counted.
    b.exec("window.__tandem.setHidden(true);", vec![]).await;
    let mut ws = page.ws().await;
    ws.ok(json!({"type": "chat.send", "sessionId": a, "content": "/hold hidden\nfinished"}))
        .await;
    b.wait(
        "the row running",
        &format!(
            "document.querySelector('.session-list a[data-id=\"{a}\"]')?.dataset.status === 'running'"
        ),
    )
    .await;
    page.server.release("hidden").await;
    b.wait(
        "a notification",
        "window.__tandem.notifications.some(n => n.title === 'watched: turn completed')",
    )
    .await;
    b.wait(
        "the row marked new",
        &format!(
            "document.querySelector('.session-list a[data-id=\"{a}\"] [data-attention=\"done_unseen\"]')"
        ),
    )
    .await;
    assert_eq!(b.exec("return document.title;", vec![]).await, "tandem");
    // Once the list has the session's upsert too, still one notification.
    b.wait(
        "the row idle",
        &format!(
            "document.querySelector('.session-list a[data-id=\"{a}\"]')?.dataset.status === 'idle'"
        ),
    )
    .await;
    let count = b
        .exec(
            "return window.__tandem.notifications.filter(n => n.title === 'watched: turn completed').length;",
            vec![],
        )
        .await;
    assert_eq!(count, 1, "one notification per turn end");
    b.exec("window.__tandem.setHidden(false);", vec![]).await;
    b.wait(
        "the mark cleared",
        &format!(
            "document.querySelector('.session-list a[data-id=\"{a}\"]') && !document.querySelector('.session-list a[data-id=\"{a}\"] [data-attention]')"
        ),
    )
    .await;

    // A permission request while hidden: notified, and counted while it waits.
    b.exec("window.__tandem.setHidden(true);", vec![]).await;
    ws.ok(
        json!({"type": "chat.send", "sessionId": a, "content": "/ask Bash {\"command\": \"ls\"}"}),
    )
    .await;
    b.wait(
        "a permission notification",
        "window.__tandem.notifications.some(n => n.title === 'watched: permission needed' && n.body.includes('Bash'))",
    )
    .await;
    b.wait("the title", "document.title === '(1) tandem'").await;
    b.exec("window.__tandem.setHidden(false);", vec![]).await;
    ws.ok(json!({"type": "chat.abort", "sessionId": a})).await;
    b.wait("the title cleared", "document.title === 'tandem'")
        .await;

    // A session not on screen: its row is marked while the tab is visible (not
    // counted: a turn ended).
    ws.ok(json!({"type": "chat.send", "sessionId": other, "content": "hello"}))
        .await;
    b.wait(
        "the attention mark",
        &format!("document.querySelector('.session-list a[data-id=\"{other}\"] [data-attention=\"done_unseen\"]')"),
    )
    .await;
    assert_eq!(b.exec("return document.title;", vec![]).await, "tandem");
    page.check_view("attention").await;
    page.open_session(&other).await;
    b.wait(
        "the mark cleared",
        &format!(
            "document.querySelector('.session-list a[data-id=\"{other}\"]') && !document.querySelector('.session-list a[data-id=\"{other}\"] [data-attention]')"
        ),
    )
    .await;
}

/// Resumes a stopped server even when the test fails.
struct Resume(u32);

impl Drop for Resume {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_request_without_an_answer_times_out_visibly() {
    let page = Page::open_process().await;
    let b = &page.browser;
    let id = create_session(&page, "slow").await;
    page.open_session(&id).await;
    b.exec("window.__tandem.app.conn.timeoutMs = 700;", vec![])
        .await;
    let pid = page.server.pid();
    let status = std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status();
    assert!(status.is_ok_and(|s| s.success()));
    let resume = Resume(pid);
    page.send(&id, "are you there").await;
    let note = b
        .wait(
            "the timeout error",
            &format!(
                "document.querySelector('{} .note.error')?.textContent",
                chat(&id)
            ),
        )
        .await;
    assert!(
        note.as_str()
            .is_some_and(|t| t.starts_with("Not sent: no answer from the server in time")),
        "{note}"
    );
    // The text stays in the composer to send again.
    let kept = b
        .exec(
            "return document.querySelector(arguments[0] + ' textarea').value;",
            vec![json!(chat(&id))],
        )
        .await;
    assert_eq!(kept, "are you there");
    drop(resume);
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_session_list_updates_its_rows_in_place() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let a = create_session(&page, "Alpha").await;
    let other = create_session(&page, "Beta").await;
    b.wait(
        "both rows",
        "document.querySelectorAll('.session-list li[data-row]').length === 2",
    )
    .await;
    // Tag the DOM nodes of both rows; a rebuilt list would drop the tags.
    b.exec(
        "for (const li of document.querySelectorAll('.session-list li[data-row]')) li.tagged = li.dataset.row;",
        vec![],
    )
    .await;
    // A turn in Alpha moves it to the top and changes its status, twice.
    let mut ws = page.ws().await;
    ws.subscribe(&a, 0).await;
    ws.ok(json!({"type": "chat.send", "sessionId": a, "content": "hello"}))
        .await;
    ws.events_until_turn_end(&a).await;
    b.wait(
        "Alpha first and idle",
        &format!(
            "(() => {{ const rows = [...document.querySelectorAll('.session-list li[data-row]')]; return rows[0].dataset.row === '{a}' && rows[0].querySelector('a').dataset.status === 'idle' && rows[0].querySelector('.when').textContent === 'now'; }})()"
        ),
    )
    .await;
    let tags = b
        .exec(
            "return [...document.querySelectorAll('.session-list li[data-row]')].map(li => [li.dataset.row, li.tagged ?? null]);",
            vec![],
        )
        .await;
    // Beta did not change: the same node, moved; Alpha changed: its row was redrawn.
    assert_eq!(tags, json!([[a, null], [other, other]]), "{tags}");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_failed_schedule_shows_in_the_history_with_its_reason() {
    // A schedule fails when its session's adapter cannot start: here the session's ACP
    // vendor is gone from the config when the server comes back and the message is due.
    let dir = Arc::new(TempDir::new("schedule-fails"));
    let config = dir.path().join("tandem.toml");
    let text = format!(
        "[vendors.fake]\nprotocol = \"acp\"\nbin = {}\n",
        json!(env!("CARGO_BIN_EXE_fake-acp"))
    );
    std::fs::write(&config, text).unwrap();
    let with_vendor = ServerOptions {
        token_auth: true,
        args: vec!["--config".into(), config.display().to_string()],
    };
    let server = Server::start_process_in(dir.clone(), with_vendor);
    let mut ws = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "fake", "title": "vendor gone"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    let browser = Browser::start_with(1280, 800, &[]).await;
    let at = browser
        .exec("return new Date(Date.now() + 3000).toISOString();", vec![])
        .await;
    ws.ok(json!({"type": "session.schedule", "sessionId": id,
                 "content": "for the agent that left", "at": at}))
        .await;
    drop(ws);
    let dir = server.kill();
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            args: Vec::new(),
        },
    );
    let path = format!("/api/v1/sessions/{id}/schedules");
    let reason = eventually("the schedule to fail", async || {
        let (status, list) = server.get(&path).await;
        assert_eq!(status, 200, "{list}");
        let schedule = list["schedules"][0].clone();
        assert_ne!(schedule["status"], "sent", "{list}");
        (schedule["status"] == "failed").then(|| schedule["reason"].as_str().unwrap().to_string())
    })
    .await;
    assert!(reason.contains("fake"), "{reason}");

    let page = Page { server, browser };
    page.login().await;
    page.open_session(&id).await;
    page.wait_text(&id, ".schedule-fired.error", "Scheduled message failed")
        .await;
    let line = page
        .browser
        .exec(
            "return document.querySelector(arguments[0]).textContent;",
            vec![json!(format!("{} .schedule-fired.error", chat(&id)))],
        )
        .await;
    let line = line.as_str().unwrap();
    assert!(
        line.contains(&reason) && line.contains("for the agent that left"),
        "{line}"
    );
    page.check_view("schedule-failed").await;
}

#[actix_rt::test]
#[cfg_attr(
    any(not(has_browser), not(has_claude)),
    ignore = "chromium, chromedriver, axe-core or the pinned claude CLI is not installed"
)]
async fn a_first_turn_that_cannot_log_in_shows_the_explained_error_in_the_chat() {
    // The real Claude Code with an empty HOME and no API key (as in
    // tests/e2e/vendor_errors.rs): its first turn fails, explained.
    let bin = tandem_tests::vendor_clis::require(
        tandem_tests::vendor_clis::claude_bin(),
        "the claude CLI",
    );
    let dir = Arc::new(TempDir::new("browser-claude-login"));
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let env: Vec<(String, String)> = [
        ("TANDEM_CLAUDE_BIN", bin.display().to_string()),
        ("TANDEM_CODEX_BIN", "/nonexistent/codex".to_string()),
        ("HOME", home.display().to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let server = Server::start_in_env(
        dir,
        ServerOptions {
            token_auth: true,
            args: Vec::new(),
        },
        &env,
    );
    let browser = Browser::start_with(1280, 800, &[]).await;
    let page = Page { server, browser };
    page.login().await;
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "claude", "title": "no login"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    page.open_session(&id).await;
    page.send(&id, "say hi").await;
    let explained = "Claude Code is not logged in: run `claude` and /login, or set ANTHROPIC_API_KEY in the environment tandem starts in";
    page.wait_text(&id, ".turn-end.failed", explained).await;
    page.check_view("first-turn-error").await;
}
