//! What a session asks of its owner, as the server keeps it (`attention`): the list
//! marks it in words ("Needs you", "Failed", a dot that says "New"), the tab title
//! counts what waits for the person (needs_input and failed), and the page reports
//! what it shows (`client.seen`) for the sessions the user owns, never for those it
//! only reads.

use serde_json::{json, Value};
use tandem_tests::eventually;
use tandem_tests::server::Api;

use crate::{create_session, Page};

/// The session's row link in the list.
fn row(id: &str) -> String {
    format!("document.querySelector('.session-list a[data-id=\"{id}\"]')")
}

/// Waits until the row of `id` shows the mark of `attention` (`none`: no mark), and
/// returns the row's text (what its accessible name is made of).
async fn mark_is(page: &Page, id: &str, attention: &str) -> String {
    let row = row(id);
    let expr = if attention == "none" {
        format!("{row} && !{row}.querySelector('[data-attention]') && {row}.textContent")
    } else {
        format!(
            "{row}?.querySelector('[data-attention]')?.dataset.attention === '{attention}' && {row}.textContent"
        )
    };
    let text = page
        .browser
        .wait(&format!("the row of {id} marked {attention}"), &expr)
        .await;
    text.as_str().unwrap().to_string()
}

/// Waits for the tab title.
async fn title_is(page: &Page, want: &str) {
    page.browser
        .wait(
            &format!("the title {want:?}"),
            &format!("document.title === {}", json!(want)),
        )
        .await;
}

/// The session's attention as REST lists it, asked as `api`'s user.
async fn attention(api: &Api, id: &str) -> Value {
    let (status, body) = api.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{body}");
    body["attention"].clone()
}

/// Waits until REST says `id`'s attention is `want`.
async fn server_says(api: &Api, id: &str, want: &str) {
    eventually(&format!("{id}: attention {want} over REST"), async || {
        (attention(api, id).await == want).then_some(())
    })
    .await;
}

/// Sends `content` to session `id` as the admin.
async fn send(page: &Page, id: &str, content: &str) {
    let mut ws = page.ws().await;
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": content}))
        .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_list_and_the_title_show_what_the_server_says_and_opening_clears_it() {
    let page = Page::open(&[]).await;
    let api: &Api = &page.server;
    let here = create_session(&page, "open here").await;
    let ended = create_session(&page, "ended elsewhere").await;
    let failed = create_session(&page, "failed elsewhere").await;
    let asks = create_session(&page, "asks elsewhere").await;
    page.open_session(&here).await;
    title_is(&page, "tandem").await;

    // A turn that ends in the session on screen: the page reports it seen at once.
    send(&page, &here, "hello here").await;
    eventually("the open session's turn ended and seen", async || {
        let (_, s) = api.get(&format!("/api/v1/sessions/{here}")).await;
        (s["turnCount"] == 1 && s["status"] == "idle" && s["attention"] == "none").then_some(())
    })
    .await;
    mark_is(&page, &here, "none").await;
    // Reported as the events came, coalesced: never a smaller seq, none past the last
    // event, fewer reports than events.
    let reports = page
        .browser
        .exec(
            "return window.__tandem.sent.filter(f => f.type === 'client.seen' && f.sessionId === arguments[0]).map(f => f.seq);",
            vec![json!(here)],
        )
        .await;
    let reports: Vec<u64> = serde_json::from_value(reports).unwrap();
    let last = last_seq(api, &here).await;
    assert!(
        !reports.is_empty() && reports.windows(2).all(|w| w[0] <= w[1]),
        "{reports:?}"
    );
    assert!(
        u64::try_from(reports.len()).unwrap() < last && *reports.last().unwrap() <= last,
        "{reports:?} for {last} events"
    );

    // A turn that ends in a session not open: "New", and no count in the title.
    send(&page, &ended, "hello").await;
    let text = mark_is(&page, &ended, "done_unseen").await;
    assert!(text.contains("New"), "the dot says New: {text:?}");
    let dot_hidden = page
        .browser
        .exec(
            &format!(
                "return {}.querySelector('.new-dot').getAttribute('aria-hidden');",
                row(&ended)
            ),
            vec![],
        )
        .await;
    assert_eq!(dot_hidden, "true", "the dot itself is decoration");
    assert_eq!(attention(api, &ended).await, "done_unseen");
    title_is(&page, "tandem").await;

    // A failed turn in a session not open: "Failed", counted.
    send(&page, &failed, "/fail boom").await;
    let text = mark_is(&page, &failed, "failed").await;
    assert!(text.contains("Failed"), "{text:?}");
    title_is(&page, "(1) tandem").await;

    // An approval waiting: "Needs you", counted too.
    send(&page, &asks, "/ask Bash {\"command\":\"ls\"}").await;
    let text = mark_is(&page, &asks, "needs_input").await;
    assert!(text.contains("Needs you"), "{text:?}");
    title_is(&page, "(2) tandem").await;
    // The marks read as words, apart from the title, in the row link's name.
    let name = page
        .browser
        .exec(
            &format!(
                "const a = {}; return a.textContent.replace(/\\s+/g, ' ');",
                row(&asks)
            ),
            vec![],
        )
        .await;
    assert!(
        name.as_str()
            .unwrap()
            .starts_with("asks elsewhere, Needs you,"),
        "{name}"
    );
    // Axe and the phone width over the list with every mark (on a phone the list
    // shows when no session is open).
    page.browser.exec("location.hash = '#/';", vec![]).await;
    page.browser
        .wait(
            "no session open",
            "document.querySelector('.empty-main h2')",
        )
        .await;
    page.check_view("attention-marks").await;

    // Opening the ended session clears its mark, on the server too.
    page.open_session(&ended).await;
    mark_is(&page, &ended, "none").await;
    server_says(api, &ended, "none").await;
    title_is(&page, "(2) tandem").await;

    // Opening the failed one clears it and its count.
    page.open_session(&failed).await;
    mark_is(&page, &failed, "none").await;
    server_says(api, &failed, "none").await;
    title_is(&page, "(1) tandem").await;

    // Seeing a waiting approval does not answer it: it still needs the person.
    page.open_session(&asks).await;
    page.wait_text(&asks, ".card.permission", "Bash").await;
    assert_eq!(attention(api, &asks).await, "needs_input");
    title_is(&page, "(1) tandem").await;
    // Stopped while on screen: the turn's end is seen at once.
    let mut ws = page.ws().await;
    ws.ok(json!({"type": "chat.abort", "sessionId": asks}))
        .await;
    server_says(api, &asks, "none").await;
    mark_is(&page, &asks, "none").await;
    title_is(&page, "tandem").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_hidden_tab_reports_nothing_until_shown_and_a_session_only_read_never() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let api: &Api = &page.server;
    let mine = create_session(&page, "mine").await;
    page.open_session(&mine).await;

    // While the tab is hidden a turn ends on screen: nobody saw it.
    b.exec("window.__tandem.setHidden(true);", vec![]).await;
    send(&page, &mine, "while away").await;
    let text = mark_is(&page, &mine, "done_unseen").await;
    assert!(text.contains("New"), "{text:?}");
    assert_eq!(attention(api, &mine).await, "done_unseen");
    // Shown again: reported at once.
    b.exec("window.__tandem.setHidden(false);", vec![]).await;
    server_says(api, &mine, "none").await;
    mark_is(&page, &mine, "none").await;

    // Bob's shared session, whose turn ended: the admin's page shows its mark (what
    // the server says), and reads it beside one of its own, but reports only its own.
    let bob = page.server.add_user("bob");
    let (status, info) = bob
        .post(
            "/api/v1/sessions",
            &json!({"title": "bob's", "visibility": "shared"}),
        )
        .await;
    assert_eq!(status, 201, "{info}");
    let theirs = info["id"].as_str().unwrap().to_string();
    let (status, body) = bob
        .post(
            &format!("/api/v1/sessions/{theirs}/messages"),
            &json!({"content": "hello from bob"}),
        )
        .await;
    assert!(status < 300, "{body}");
    server_says(&bob, &theirs, "done_unseen").await;
    // What Bob's session asks is asked of Bob: the admin's list marks nothing.
    mark_is(&page, &theirs, "none").await;
    // A turn of its own ends while neither is open.
    b.exec("location.hash = '#/';", vec![]).await;
    b.wait(
        "no session open",
        "document.querySelector('.empty-main h2')",
    )
    .await;
    send(&page, &mine, "again").await;
    mark_is(&page, &mine, "done_unseen").await;
    b.exec(
        "location.hash = '#/s/' + arguments[0] + '/with/' + arguments[1];",
        vec![json!(theirs), json!(mine)],
    )
    .await;
    page.wait_text(&theirs, ".msg.user", "hello from bob").await;
    b.wait(
        "the page reporting its own session",
        &format!(
            "window.__tandem.sent.some(f => f.type === 'client.seen' && f.sessionId === '{mine}' && f.seq >= {})",
            last_seq(api, &mine).await
        ),
    )
    .await;
    server_says(api, &mine, "none").await;
    let reported = b
        .exec(
            "return window.__tandem.sent.filter(f => f.type === 'client.seen' && f.sessionId === arguments[0]).length;",
            vec![json!(theirs)],
        )
        .await;
    assert_eq!(reported, 0, "a session only read is never reported");
    assert_eq!(attention(&bob, &theirs).await, "done_unseen");
    mark_is(&page, &theirs, "none").await;
}

/// The session's last event (what a page that shows all of it reports).
async fn last_seq(api: &Api, id: &str) -> u64 {
    let (_, s) = api.get(&format!("/api/v1/sessions/{id}")).await;
    s["lastSeq"].as_u64().unwrap()
}
