//! Edit and resend in the page: the Edit action on the user messages of ended turns,
//! reached by keyboard, and the superseded branch collapsed with its turn count,
//! expandable, also after a reload (from the session's `superseded` list).

use serde_json::json;

use crate::{create_session, Page};

/// How many elements of session `id` match `sel` and are shown (not `hidden`, not in a
/// hidden ancestor).
async fn shown(page: &Page, id: &str, sel: &str) -> u64 {
    page.browser
        .exec(
            "return [...document.querySelectorAll(arguments[0])].filter(e => e.offsetParent !== null).length;",
            vec![json!(format!(".chat[data-session=\"{id}\"] {sel}"))],
        )
        .await
        .as_u64()
        .unwrap()
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn edit_a_message_by_keyboard_and_expand_the_superseded_branch() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "Edit me").await;
    page.open_session(&id).await;
    page.send(&id, "one").await;
    page.wait_text(&id, ".turn-end", "Turn completed").await;
    page.send(&id, "two").await;
    b.wait(
        "both turns to end with an Edit action each",
        &format!(
            "[...document.querySelectorAll('.chat[data-session=\"{id}\"] .msg.user .edit')].filter(e => !e.hidden).length === 2"
        ),
    )
    .await;

    // Tab from the conversation log to the first Edit action, open it with Enter.
    b.exec(
        "document.querySelector(arguments[0]).focus();",
        vec![json!(format!(".chat[data-session=\"{id}\"] .log"))],
    )
    .await;
    let mut reached = false;
    for _ in 0..20 {
        b.chord("\u{E004}").await;
        let label = b
            .exec(
                "return document.activeElement?.getAttribute('aria-label');",
                vec![],
            )
            .await;
        if label == "Edit this message" {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never reached an Edit action");
    b.chord("\u{E007}").await;
    let value = b
        .wait(
            "the editor with the message's text, focused",
            "document.activeElement?.classList.contains('edit-input') && document.activeElement.value",
        )
        .await;
    assert_eq!(value, "one");
    b.exec("document.activeElement.value = 'uno';", vec![])
        .await;
    b.keys_text("\u{E007}").await;

    // The branch of both turns is collapsed into one line with its count.
    page.wait_text(&id, ".line-event.rewound", "2 turns").await;
    page.wait_text(&id, ".msg.assistant", "uno").await;
    b.wait(
        "the superseded messages to be hidden",
        &format!(
            "[...document.querySelectorAll('.chat[data-session=\"{id}\"] .msg.user')].filter(e => !e.hidden).length === 1"
        ),
    )
    .await;
    assert_eq!(shown(&page, &id, ".msg.superseded").await, 0);
    page.assert_accessible("edited conversation").await;

    // Expand: the earlier branch shows, dimmed, without Edit actions.
    b.click(&format!(".chat[data-session=\"{id}\"] .branch-toggle"))
        .await;
    assert_eq!(shown(&page, &id, ".msg.user.superseded").await, 2);
    assert_eq!(shown(&page, &id, ".msg.user.superseded .edit").await, 0);
    let expanded = b
        .exec(
            "return document.querySelector(arguments[0]).getAttribute('aria-expanded');",
            vec![json!(format!(
                ".chat[data-session=\"{id}\"] .branch-toggle"
            ))],
        )
        .await;
    assert_eq!(expanded, "true");
    b.screenshot("rewind-expanded").await;

    // After a reload the branch is collapsed again.
    page.login().await;
    page.open_session(&id).await;
    page.wait_text(&id, ".line-event.rewound", "2 turns").await;
    page.wait_text(&id, ".msg.assistant", "uno").await;
    assert_eq!(shown(&page, &id, ".msg.superseded").await, 0);
    assert_eq!(shown(&page, &id, ".msg.user").await, 1);
}
