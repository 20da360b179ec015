//! "Open on a phone": the page shows a one-time link as a QR code; a browser with no
//! token that opens the link is signed in with a device token of its own (never the
//! user's), the link leaves the address bar, and a second use is refused with the
//! reason; the device is listed in the dialog and removed from there.

use serde_json::{json, Value};
use tandem_tests::Browser;

use crate::Page;

/// Opens the dialog and answers the link it shows.
async fn open_dialog(page: &Page) -> String {
    page.browser.click("button.pair-btn").await;
    let url = page
        .browser
        .wait(
            "the pairing link",
            "document.querySelector('dialog.pair svg.qr path')?.getAttribute('d') && document.querySelector('dialog.pair .pair-url')?.value",
        )
        .await;
    url.as_str().unwrap().to_string()
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_phone_opens_the_link_and_signs_in_with_its_own_token() {
    let page = Page::open(&[]).await;
    let link = open_dialog(&page).await;
    let (base, code) = link.split_once("/#/pair/").unwrap();
    assert_eq!(base, page.server.base);
    assert_eq!(code.len(), 32);
    let admin = page.server.token.clone().unwrap();
    assert!(!link.contains(&admin));
    // The server listens on loopback in tests: the dialog says a phone cannot reach it.
    page.browser
        .wait(
            "the loopback warning",
            "document.querySelector('dialog.pair .warn')",
        )
        .await;
    page.assert_accessible("the pairing dialog").await;

    // Another browser, with no token: the link signs it in.
    let phone = Browser::start(390, 844).await;
    phone.goto(&link).await;
    phone
        .wait(
            "the phone's page to connect",
            "document.querySelector('.conn.live')",
        )
        .await;
    let state = phone
        .exec(
            "return {token: localStorage.getItem('tandem.token'), hash: location.hash};",
            vec![],
        )
        .await;
    let token = state["token"].as_str().unwrap();
    assert!(token.starts_with("tdm_") && token != admin, "{state}");
    assert!(!state["hash"].as_str().unwrap().contains(code), "{state}");
    let (status, me) = page.server.as_user(token).get("/api/v1/devices").await;
    assert_eq!(status, 200, "{me}");

    // The same link again (a third browser): refused, with the reason.
    let late = Browser::start(390, 844).await;
    late.goto(&link).await;
    let said = late
        .wait(
            "the login screen with the reason",
            "document.querySelector('#login-why')?.textContent",
        )
        .await;
    assert!(said.as_str().unwrap().contains("already used"), "{said}");

    // The desktop's dialog lists the phone, and removes it.
    page.browser
        .exec(
            "document.querySelector('dialog.pair').close(); return true;",
            vec![],
        )
        .await;
    open_dialog(&page).await;
    let listed: Value = page
        .browser
        .wait(
            "the phone in the list",
            "document.querySelectorAll('dialog.pair li.device').length === 1 && document.querySelector('dialog.pair li.device').dataset.id",
        )
        .await;
    page.browser.click("dialog.pair li.device button").await;
    page.browser
        .wait(
            "the list without the phone",
            "document.querySelectorAll('dialog.pair li.device').length === 0",
        )
        .await;
    let (_, devices) = page.server.get("/api/v1/devices").await;
    assert_eq!(devices["devices"], json!([]), "{listed}");
}
