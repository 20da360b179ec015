//! The session list reads every page (at start and after a reconnect) and stays live;
//! a session is renamed and archived from its conversation.

use std::time::Duration;

use serde_json::{json, Value};

use crate::{create_session, Page};

/// A REST call as the admin with a JSON body (PATCH and DELETE are not in the shared
/// test client); returns the status and the JSON answer.
async fn rest(page: &Page, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish();
    let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client
        .request(method, format!("{}/api/v1{path}", page.server.base))
        .insert_header(("Content-Type", "application/json"));
    if let Some(token) = &page.server.token {
        req = req.insert_header(("Authorization", format!("Bearer {token}")));
    }
    let sent = match body {
        Some(b) => req.send_body(b.to_string()).await,
        None => req.send().await,
    };
    let mut resp = sent.unwrap_or_else(|e| panic!("{path}: {e}"));
    let bytes = resp.body().await.unwrap();
    (
        resp.status().as_u16(),
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Titles of the listed sessions, in list order.
async fn listed(page: &Page) -> Vec<String> {
    let v = page
        .browser
        .exec(
            "return [...document.querySelectorAll('a.session .name')].map(e => e.textContent);",
            vec![],
        )
        .await;
    serde_json::from_value(v).unwrap()
}

async fn wait_listed(page: &Page, n: usize) {
    page.browser
        .wait(
            &format!("{n} listed sessions"),
            &format!("document.querySelectorAll('a.session').length === {n}"),
        )
        .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn every_page_of_sessions_is_listed_and_stays_live() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let mut ids = Vec::new();
    for i in 0..250 {
        let (status, info) = page
            .server
            .post(
                "/api/v1/sessions",
                &json!({"title": format!("Listed {i:03}")}),
            )
            .await;
        assert_eq!(status, 201, "{info}");
        ids.push(info["id"].as_str().unwrap().to_string());
    }
    // A fresh page load: the list comes in pages of 100.
    page.login().await;
    wait_listed(&page, 250).await;
    let mut titles = listed(&page).await;
    titles.sort();
    titles.dedup();
    assert_eq!(titles.len(), 250, "every session once");
    let pages = b
        .exec(
            "return window.__tandem.sent.filter(f => f.type === 'sessions.list').map(f => f.limit);",
            vec![],
        )
        .await;
    assert_eq!(pages, json!([100, 100]), "two more pages after the watch");

    // The filter finds a session that only the last page held.
    let mut cursor = String::new();
    let mut last_page = Value::Null;
    for _ in 0..3 {
        let path = if cursor.is_empty() {
            "/api/v1/sessions?limit=100".to_string()
        } else {
            format!("/api/v1/sessions?limit=100&cursor={cursor}")
        };
        let (status, body) = page.server.get(&path).await;
        assert_eq!(status, 200, "{body}");
        // The last page has no cursor.
        cursor = body["nextCursor"].as_str().unwrap_or("").to_string();
        last_page = body;
    }
    assert!(cursor.is_empty(), "three pages in all");
    let wanted = last_page["sessions"][49]["title"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(wanted.starts_with("Listed "), "{last_page}");
    b.exec("document.activeElement?.blur();", vec![]).await;
    b.keys_text(&format!("/{wanted}")).await;
    b.wait(
        "the filtered list",
        &format!(
            "document.querySelectorAll('a.session').length === 1 && document.querySelector('a.session .name').textContent === {}",
            json!(wanted)
        ),
    )
    .await;
    b.exec(
        "const f = document.querySelector('.filter'); f.value = ''; f.dispatchEvent(new Event('input'));",
        vec![],
    )
    .await;
    wait_listed(&page, 250).await;

    // Live: a new session and a rename elsewhere show up without a reload.
    create_session(&page, "Made elsewhere").await;
    wait_listed(&page, 251).await;
    let mut ws = page.ws().await;
    ws.ok(json!({"type": "session.configure", "sessionId": ids[10], "title": "Renamed elsewhere"}))
        .await;
    b.wait(
        "the renamed session",
        "[...document.querySelectorAll('a.session .name')].some(e => e.textContent === 'Renamed elsewhere')",
    )
    .await;

    // While the page is offline, one session is archived and one renamed; after the
    // reconnect the page reads every page again and agrees with the server.
    b.exec("window.__tandem.app.conn.stop();", vec![]).await;
    b.wait(
        "the page to go offline",
        "document.querySelector('.conn.down')",
    )
    .await;
    let (status, body) = rest(&page, "DELETE", &format!("/sessions/{}", ids[1]), None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = rest(
        &page,
        "PATCH",
        &format!("/sessions/{}", ids[2]),
        Some(json!({"title": "Renamed offline"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let lists_before = b
        .exec(
            "return window.__tandem.sent.filter(f => f.type === 'sessions.list').length;",
            vec![],
        )
        .await;
    b.exec(
        "const c = window.__tandem.app.conn; c.stopped = false; c.connect();",
        vec![],
    )
    .await;
    b.wait(
        "the list after the reconnect",
        "document.querySelector('.conn.live') && document.querySelectorAll('a.session').length === 250\
         && [...document.querySelectorAll('a.session .name')].some(e => e.textContent === 'Renamed offline')",
    )
    .await;
    let titles = listed(&page).await;
    assert!(!titles.iter().any(|t| t == "Listed 001"), "archived");
    assert!(titles.iter().any(|t| t == "Listed 000"), "last page kept");
    assert!(titles.iter().any(|t| t == "Made elsewhere"));
    let lists_after = b
        .exec(
            "return window.__tandem.sent.filter(f => f.type === 'sessions.list').length;",
            vec![],
        )
        .await;
    assert_eq!(
        lists_after.as_u64().unwrap_or(0),
        lists_before.as_u64().unwrap_or(0) + 2,
        "the reconnect paged through the list again"
    );
    // The server agrees: 250 visible sessions in all.
    let mut total = 0;
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/sessions?limit=1000&cursor={c}"),
            None => "/api/v1/sessions?limit=1000".to_string(),
        };
        let (status, page_body) = page.server.get(&path).await;
        assert_eq!(status, 200, "{page_body}");
        total += page_body["sessions"].as_array().map_or(0, Vec::len);
        match page_body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(total, 250);

    // Archived elsewhere while open here: the page leaves it and the list drops it.
    page.open_session(&ids[3]).await;
    let (status, body) = rest(&page, "DELETE", &format!("/sessions/{}", ids[3]), None).await;
    assert_eq!(status, 200, "{body}");
    b.wait(
        "the page to leave the session archived elsewhere",
        "location.hash === '#/' && !document.querySelector('.chat') && document.querySelectorAll('a.session').length === 249",
    )
    .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn rename_and_archive_from_the_conversation() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "Old title").await;
    let busy = create_session(&page, "Busy one").await;
    page.open_session(&id).await;

    // Rename: the field starts with the title selected; Esc cancels.
    b.click(".chat .rename").await;
    b.wait(
        "the title field",
        "document.activeElement?.classList.contains('rename-input') && document.activeElement.value === 'Old title'",
    )
    .await;
    page.assert_accessible("rename").await;
    b.keys_text("Never saved\u{E00C}").await;
    b.wait(
        "the rename to be cancelled",
        "document.querySelector('.rename-form').hidden && document.activeElement?.classList.contains('rename')",
    )
    .await;
    assert_eq!(
        b.exec(
            "return document.querySelector('.chat-title').textContent;",
            vec![]
        )
        .await,
        "Old title"
    );
    // Enter saves (PATCH with a JSON body).
    b.chord("\u{E007}").await;
    b.keys_text("New <b>title</b>\u{E007}").await;
    b.wait(
        "the new title in the header and the list",
        "document.querySelector('.chat-title').textContent === 'New <b>title</b>'\
         && [...document.querySelectorAll('a.session .name')].some(e => e.textContent === 'New <b>title</b>')",
    )
    .await;
    let (_, info) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["title"], "New <b>title</b>");
    // An empty title is refused in the page.
    b.click(".chat .rename").await;
    b.keys_text("\u{E003}\u{E007}").await;
    page.wait_text(&id, ".rename-form .error-text", "cannot be empty")
        .await;
    b.keys_text("\u{E00C}").await;

    // Archive asks first; Cancel keeps the session.
    b.click(".chat .archive").await;
    b.wait(
        "the confirmation with focus on Cancel",
        "document.querySelector('dialog.confirm[open]') && document.activeElement?.textContent === 'Cancel'",
    )
    .await;
    let text = b
        .exec(
            "return document.querySelector('#archive-desc').textContent;",
            vec![],
        )
        .await;
    assert!(
        text.as_str()
            .is_some_and(|t| t.contains("New <b>title</b>")),
        "{text}"
    );
    b.screenshot("archive-confirm").await;
    page.assert_accessible("archive confirmation").await;
    b.chord("\u{E007}").await;
    b.wait(
        "the dialog to close",
        "!document.querySelector('dialog.confirm[open]')",
    )
    .await;
    let (status, _) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "Cancel archived nothing");

    // Archive for real.
    b.click(".chat .archive").await;
    b.click("dialog.confirm button[type=submit]").await;
    b.wait(
        "the page to leave the archived session",
        "location.hash === '#/' && !document.querySelector('dialog.confirm[open]') && document.querySelectorAll('a.session').length === 1",
    )
    .await;
    let (status, body) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 404, "{body}");

    // A running session is not archived; the dialog says why.
    page.open_session(&busy).await;
    page.send(&busy, "/hold never").await;
    b.wait(
        "running status",
        "document.querySelector('.chat .status.st-running')",
    )
    .await;
    b.click(".chat .archive").await;
    b.click("dialog.confirm button[type=submit]").await;
    b.wait(
        "the refusal",
        "document.querySelector('dialog.confirm[open] .error-text')?.textContent.startsWith('Not archived')",
    )
    .await;
    b.click("dialog.confirm .btn:not(.danger)").await;
    let (status, _) = page.server.get(&format!("/api/v1/sessions/{busy}")).await;
    assert_eq!(status, 200);
}
