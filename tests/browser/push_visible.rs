//! The page tells the server which sessions it shows (`client.visible`), so the
//! user's phone is not pushed about what they are looking at: a turn that ends in the
//! session on screen reaches no device; the same tab hidden, the next failure does
//! (checked by the push service stand-in, which verifies and decrypts every push).

use serde_json::{json, Value};
use tandem_tests::PushService;

use crate::{create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_session_on_screen_is_not_pushed_and_a_hidden_tab_is() {
    let service = PushService::start(&["phone"]);
    let page = Page::open(&[]).await;
    let (status, body) = page
        .server
        .post("/api/v1/push/subscriptions", &service.subscription("phone"))
        .await;
    assert_eq!(status, 201, "{body}");
    let id = create_session(&page, "on screen").await;
    let (status, body) = page
        .server
        .patch(&format!("/api/v1/sessions/{id}"), &json!({"notify": "all"}))
        .await;
    assert_eq!(status, 200, "{body}");
    page.open_session(&id).await;
    page.browser
        .wait(
            "the page to report the session on screen",
            &format!(
                "window.__tandem.sent.some(f => f.type === 'client.visible' && f.sessionIds.includes({}))",
                json!(id)
            ),
        )
        .await;

    // Shown: the turn's end is pushed to no device.
    page.send(&id, "seen here").await;
    page.wait_text(&id, ".msg.assistant", "seen here").await;
    // Hidden (another tab): the page says it shows nothing, and the failure is pushed.
    page.browser
        .exec("window.__tandem.setHidden(true); return true;", vec![])
        .await;
    page.browser
        .wait(
            "the page to report nothing on screen",
            "window.__tandem.sent.some(f => f.type === 'client.visible' && f.sessionIds.length === 0)",
        )
        .await;
    page.send(&id, "/fail while away").await;
    let push: Value = service.next().await;
    assert_eq!(push["device"], "phone");
    assert_eq!(push["payload"]["sessionId"], id.as_str(), "{push}");
    assert_eq!(
        push["payload"]["attention"], "failed",
        "the first push is the failure, not the turn seen on screen: {push}"
    );
}
