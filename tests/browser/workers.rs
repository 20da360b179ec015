//! A Driver with several Workers: a pane each, side by side and named; the pair bar
//! steers each Worker by name; a Worker added (over REST or from the Add Worker
//! dialog, whose Name field may be refused) or closed re-lays the page live; a reload
//! keeps the layout; at phone width the switch has a button per pane.

use serde_json::{json, Value};
use tandem_tests::eventually;

use crate::{create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_driver_shows_a_pane_per_worker_and_steers_each_by_name() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let d = create_session(&page, "Driver: two Workers").await;
    page.open_session(&d).await;

    // alpha over REST while the Driver is open: the page pairs them live.
    let (status, alpha) = page
        .server
        .post(
            "/api/v1/pairs",
            &json!({"driverId": d, "worker": {"vendor": "scripted"}, "workerName": "alpha"}),
        )
        .await;
    assert_eq!(status, 201, "{alpha}");
    let a = alpha["pair"]["workerId"].as_str().unwrap().to_string();
    b.wait(
        "alpha's pane",
        &format!("document.querySelector('.split .pane.worker[data-session=\"{a}\"]')"),
    )
    .await;

    // beta from the Driver's Add Worker dialog, named there.
    let scope = format!(".chat[data-session=\"{d}\"]");
    page.press(&scope, "Add Worker").await;
    let dialog = page.dialog("add-worker").await;
    page.set_value(&format!("{dialog} input[name=workerName]"), "beta")
        .await;
    page.press(&dialog, "Add Worker").await;
    b.wait(
        "three panes",
        "document.querySelectorAll('.split > .pane').length === 3",
    )
    .await;
    let w = pair_of(&page, &d, "beta").await;

    // A name taken is refused in the dialog, which stays open. (Three panes are
    // narrow: each header folds its actions behind "Actions", as on a phone.)
    page.press(&scope, "Actions").await;
    page.press(&scope, "Add Worker").await;
    let dialog = page.dialog("add-worker").await;
    page.set_value(&format!("{dialog} input[name=workerName]"), "alpha")
        .await;
    page.press(&dialog, "Add Worker").await;
    b.wait(
        "the refusal in the dialog",
        &format!(
            "document.querySelector({})?.textContent.includes('already has a Worker named `alpha`')",
            json!(format!("{dialog} .error-text"))
        ),
    )
    .await;
    crate::assert_accessible(b, "add worker refused").await;
    page.press(&dialog, "Cancel").await;
    assert_eq!(workers_of(&page, &d).await, ["alpha", "beta"]);

    // Driver, alpha, beta: side by side, each Worker's pane named.
    let layout = panes(&page).await;
    assert_eq!(layout["ids"], json!([d, a, w]), "{layout}");
    assert_eq!(
        layout["roles"],
        json!(["Driver", "Worker · alpha", "Worker · beta"]),
        "{layout}"
    );
    assert_eq!(layout["sideBySide"], true, "{layout}");
    // The Driver keeps its Add Worker button; a Worker has none.
    assert_eq!(
        add_worker_buttons(&page).await,
        json!([true, false, false]),
        "{layout}"
    );

    // A delegation to each, not waited for: the bar shows both.
    let mut ws = page.ws().await;
    ws.subscribe(&d, 0).await;
    assert_eq!(ws.recv().await["kind"], "chat_subscribed");
    for (name, message) in [
        ("alpha", "Alpha: sort the imports\n/hold alpha\nalpha done"),
        ("beta", "Beta: fix the docs\n/hold beta\nbeta done"),
    ] {
        let (out, err) = ws
            .scripted_tool(
                &d,
                "send_to_partner",
                json!({"worker": name, "message": message, "wait": false}),
            )
            .await;
        assert!(!err, "{out}");
    }
    page.server.wait_held("alpha").await;
    page.server.wait_held("beta").await;
    for (name, asked) in [("alpha", "Alpha: sort"), ("beta", "Beta: fix")] {
        b.wait(
            &format!("{name}'s delegation in the bar"),
            &format!(
                "document.querySelector('.pairbar .pair-worker[data-worker=\"{name}\"] .delegation.active')?.textContent.includes({})",
                json!(asked)
            ),
        )
        .await;
    }
    page.check_view("workers").await;

    // Opening a Worker shows its Driver's whole group; a reload keeps it.
    page.open_session(&w).await;
    page.reload().await;
    b.wait(
        "three panes after the reload",
        "document.querySelectorAll('.split > .pane').length === 3 && document.querySelectorAll('.pairbar .delegation.active').length === 2",
    )
    .await;
    assert_eq!(panes(&page).await["ids"], json!([d, a, w]));

    // At phone width: one pane at a time, a switch button per pane.
    b.resize(390, 844).await;
    b.wait("the phone width", "innerWidth === 390").await;
    let phone = panes(&page).await;
    assert_eq!(
        phone["switch"],
        json!(["Driver", "alpha", "beta"]),
        "{phone}"
    );
    assert_eq!(phone["shown"], json!([d]), "{phone}");
    b.click(".pane-switch .btn:nth-child(3)").await;
    b.wait(
        "beta's pane alone",
        "document.querySelector('.split').dataset.show === '2'",
    )
    .await;
    let phone = panes(&page).await;
    assert_eq!(phone["shown"], json!([w]), "{phone}");
    assert_eq!(phone["pressed"], json!(["beta"]), "{phone}");
    b.screenshot("phone-workers-beta").await;
    page.assert_accessible("phone workers").await;
    b.resize(1280, 800).await;
    b.wait("the desktop width", "innerWidth === 1280").await;

    // From the Driver (beta's own route would show beta alone once it is closed):
    // "Interrupt alpha" stops alpha's turn only.
    page.open_session(&d).await;
    page.press(".pairbar", "Interrupt alpha").await;
    page.wait_text(&a, ".turn-end.interrupted", "Turn interrupted")
        .await;
    b.wait(
        "alpha's delegation to end",
        "document.querySelector('.pair-worker[data-worker=\"alpha\"] .delegation:not(.active)')",
    )
    .await;
    let running = b
        .exec(
            "return [!!document.querySelector('.pair-worker[data-worker=\"beta\"] .delegation.active'),\
                     !!document.querySelector(`.chat[data-session='${arguments[0]}'] .status.st-running`)];",
            vec![json!(w)],
        )
        .await;
    assert_eq!(running, json!([true, true]), "beta still works");
    page.wait_text(&d, ".msg.user.internal", "PARTIAL").await;
    b.wait(
        "the Driver to be idle",
        &format!("document.querySelector('.chat[data-session=\"{d}\"] .status.st-idle')"),
    )
    .await;

    // "Close beta": its pane goes, alpha's stays (a pair again, its pane and bar as
    // with one Worker before Workers had names).
    page.press(".pairbar", "Close beta").await;
    b.wait(
        "beta's pane to go",
        "document.querySelectorAll('.split > .pane').length === 2",
    )
    .await;
    let left = panes(&page).await;
    assert_eq!(left["ids"], json!([d, a]), "{left}");
    assert_eq!(left["roles"], json!(["Driver", "Worker"]), "{left}");
    b.wait(
        "the one-Worker bar",
        "[...document.querySelectorAll('.pairbar button')].map(b => b.textContent).join() === 'Interrupt Worker,Close pair'",
    )
    .await;
    assert_eq!(workers_of(&page, &d).await, ["alpha"]);
}

/// The Worker session of Driver `d` named `name` (once the server lists it).
async fn pair_of(page: &Page, d: &str, name: &str) -> String {
    eventually(&format!("the Worker {name}"), || async {
        let (_, body) = page.server.get("/api/v1/pairs").await;
        body["pairs"].as_array().and_then(|ps| {
            ps.iter()
                .find(|p| p["driverId"] == d && p["workerName"] == name)
                .and_then(|p| p["workerId"].as_str().map(str::to_string))
        })
    })
    .await
}

/// The names of Driver `d`'s Workers, oldest first, as its `SessionInfo` lists them.
async fn workers_of(page: &Page, d: &str) -> Vec<String> {
    let (status, info) = page.server.get(&format!("/api/v1/sessions/{d}")).await;
    assert_eq!(status, 200, "{info}");
    info["workers"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter_map(|w| w["workerName"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The split's panes in order: their sessions, header roles, which are displayed,
/// whether they sit side by side; the switch's labels and the one pressed.
async fn panes(page: &Page) -> Value {
    page.browser
        .exec(
            "const panes = [...document.querySelectorAll('.split > .pane')];\
             const shown = (e) => e.getClientRects().length > 0;\
             const rects = panes.map(p => p.getBoundingClientRect());\
             const label = (b) => b.firstChild.textContent;\
             return {ids: panes.map(p => p.dataset.session),\
                     roles: panes.map(p => p.querySelector('.pane-role').textContent),\
                     shown: panes.filter(shown).map(p => p.dataset.session),\
                     sideBySide: panes.every(shown) && rects.every((r, i) => i === 0 || r.left >= rects[i - 1].right - 1),\
                     switch: [...document.querySelectorAll('.pane-switch .btn')].map(label),\
                     pressed: [...document.querySelectorAll('.pane-switch [aria-pressed=true]')].map(label)};",
            vec![],
        )
        .await
}

/// Per pane, whether its Add Worker button is there (not hidden).
async fn add_worker_buttons(page: &Page) -> Value {
    page.browser
        .exec(
            "return [...document.querySelectorAll('.split > .pane')].map(p =>\
               [...p.querySelectorAll('.head-actions button')].some(b => b.textContent === 'Add Worker' && !b.hidden));",
            vec![],
        )
        .await
}
