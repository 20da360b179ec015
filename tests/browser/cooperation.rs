//! The page's controls for what a session does on its own: "On limit" (what a turn
//! stopped by the vendor's usage limit does next), "Loop…" / "Stop loop", and who
//! answers a new Worker's permission requests ("Add a Worker").

use serde_json::{json, Value};
use tandem_tests::eventually;

use crate::{create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn limits_loops_and_worker_approvals_are_set_from_the_page() {
    let page = Page::open(&[]).await;
    let id = create_session(&page, "controls").await;
    page.open_session(&id).await;
    let scope = format!(".chat[data-session=\"{id}\"]");
    let info = || async {
        let (status, body) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body
    };

    // On limit: wait and retry.
    page.set_value(&format!("{scope} select[name=onLimit]"), "wait")
        .await;
    eventually("onLimit to be wait", || async {
        (info().await["onLimit"] == "wait").then_some(())
    })
    .await;

    // A loop started from its dialog, cooling down after its first failed check,
    // then stopped.
    page.press(&scope, "Loop…").await;
    let d = page.dialog("loop").await;
    page.set_value(&format!("{d} textarea[name=goal]"), "make done.txt")
        .await;
    page.set_value(&format!("{d} input[name=command]"), "test -f done.txt")
        .await;
    page.set_value(&format!("{d} input[name=maxIterations]"), "3")
        .await;
    page.set_value(&format!("{d} input[name=cooldownSeconds]"), "3600")
        .await;
    crate::assert_accessible(&page.browser, "loop dialog").await;
    page.press(&d, "Start loop").await;
    page.wait_text(
        &id,
        ".line-event",
        "Loop started: up to 3 iterations toward “make done.txt”",
    )
    .await;
    eventually("the loop to cool down", || async {
        (info().await["loop"]["phase"] == "cooldown").then_some(())
    })
    .await;
    page.press(&scope, "Stop loop").await;
    page.wait_text(&id, ".line-event", "Loop ended after 1 iteration")
        .await;
    eventually("the loop to be gone", || async {
        info().await["loop"].is_null().then_some(())
    })
    .await;

    // A Worker whose permission requests its Driver answers.
    page.press(&scope, "Add Worker").await;
    let d = page.dialog("add-worker").await;
    page.set_value(&format!("{d} select[name=workerApprovals]"), "driver")
        .await;
    page.press(&d, "Add Worker").await;
    let pair: Value = eventually("the pair", || async {
        let (_, body) = page.server.get("/api/v1/pairs").await;
        body["pairs"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["driverId"] == json!(id)).cloned())
    })
    .await;
    assert_eq!(pair["workerApprovals"], "driver", "{pair}");
    crate::assert_accessible(&page.browser, "controls").await;
}
