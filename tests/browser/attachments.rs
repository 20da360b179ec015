//! Attachments in the page: the composer attaches by the "Attach" button (its file
//! input), by pasting and by dropping files; pending attachments can be removed before
//! sending; the history shows the images as thumbnails loaded from the server.

use serde_json::json;
use tandem_tests::images::{base64, GIF, PNG};

use crate::{create_session, Page};

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn attach_by_button_paste_and_drop_then_see_thumbnails() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let id = create_session(&page, "attach").await;
    page.open_session(&id).await;
    let chat = format!(".chat[data-session=\"{id}\"]");

    // The button is named "Attach"; its file input takes a file as a chooser would.
    let name = b
        .exec(
            "const btn = document.querySelector(arguments[0] + ' button.attach'); return btn && btn.textContent;",
            vec![json!(chat)],
        )
        .await;
    assert_eq!(name, json!("Attach"));
    let file = page.server.dir.path().join("red.png");
    std::fs::write(&file, PNG).unwrap();
    b.type_into(
        &format!("{chat} input[type=file]"),
        &file.display().to_string(),
    )
    .await;

    // Paste an image; drop a text file and a second one that is then removed.
    b.exec(
        "const [chat, gif] = arguments;\
         const bytes = Uint8Array.from(atob(gif), c => c.charCodeAt(0));\
         const paste = new DataTransfer();\
         paste.items.add(new File([bytes], 'pasted.gif', {type: 'image/gif'}));\
         document.querySelector(chat + ' textarea').dispatchEvent(new ClipboardEvent('paste', {clipboardData: paste, bubbles: true, cancelable: true}));\
         const drop = new DataTransfer();\
         drop.items.add(new File(['dropped notes'], 'notes.txt', {type: 'text/plain'}));\
         drop.items.add(new File(['not wanted'], 'extra.txt', {type: 'text/plain'}));\
         document.querySelector(chat + ' form.composer').dispatchEvent(new DragEvent('drop', {dataTransfer: drop, bubbles: true, cancelable: true}));",
        vec![json!(chat), json!(base64(GIF))],
    )
    .await;
    let pending = format!("{chat} .attachments li");
    b.wait(
        "four uploaded attachments",
        &format!(
            "(() => {{ const li = [...document.querySelectorAll({})]; return li.length === 4 && li.every(l => !/uploading|failed/.test(l.textContent)); }})()",
            json!(pending)
        ),
    )
    .await;
    let bad = b.axe_serious().await;
    assert!(bad.is_empty(), "composer with attachments: {bad:?}");
    b.click(&format!(
        "{chat} .attachments button[aria-label=\"Remove extra.txt\"]"
    ))
    .await;
    let names = b
        .exec(
            "return [...document.querySelectorAll(arguments[0])].map(l => l.textContent);",
            vec![json!(pending)],
        )
        .await;
    assert_eq!(names.as_array().unwrap().len(), 3, "{names}");
    assert!(!names.to_string().contains("extra.txt"), "{names}");
    b.screenshot("attachments-composer").await;

    page.send(&id, "look at these").await;
    page.wait_text(&id, ".turn-end", "Turn completed").await;
    // The composer is empty again; the message shows two loaded thumbnails and the
    // file's name; the agent got both images and the inlined text.
    assert_eq!(page.count(&pending).await, 0);
    let thumbs = format!("{chat} .msg.user .attached img.thumb");
    b.wait(
        "two loaded thumbnails",
        &format!(
            "(() => {{ const i = [...document.querySelectorAll({})]; return i.length === 2 && i.every(x => x.complete && x.naturalWidth > 0); }})()",
            json!(thumbs)
        ),
    )
    .await;
    page.wait_text(&id, ".msg.user .attached", "notes.txt")
        .await;
    page.wait_text(&id, ".msg.assistant", "dropped notes").await;
    page.wait_text(&id, ".msg.assistant", "(image/png, 73 bytes)")
        .await;
    page.wait_text(&id, ".msg.assistant", "(image/gif, 43 bytes)")
        .await;
    let sent: Vec<_> = page
        .server
        .all_events(&id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "user_message")
        .collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let kinds: Vec<_> = sent[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["text", "image", "image", "file"], "{}", sent[0]);
    let bad = b.axe_serious().await;
    assert!(bad.is_empty(), "history with thumbnails: {bad:?}");
    b.screenshot("attachments-history").await;
}
