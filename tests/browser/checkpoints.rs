//! Going back and branching in the page: the checkpoint at the end of each turn with
//! its "Restore files" (reached by keyboard, confirmed in a dialog), the restored
//! line with its Undo, "Also restore files" on an edit, and "Fork" on a user message
//! opening the new session, which says where it came from. Real git repositories in
//! the server's workspace root; the scripted agent writes the files (`/write`), and
//! the test reads them from disk.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::workspaces::{read, repo};
use crate::{create_session, Page};

fn chat(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"]")
}

/// A session working in a new repository `name` whose `a.txt` says "start".
async fn session_in_repo(page: &Page, name: &str) -> (String, PathBuf) {
    let dir = repo(&page.server.dir.path().join(name), &[("a.txt", "start\n")]);
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": name, "cwd": dir.to_str().unwrap()}))
        .await;
    (reply["session"]["id"].as_str().unwrap().to_string(), dir)
}

/// Runs two turns in session `id` that write `a.txt` ("first", then "second") and
/// waits for their checkpoints, with Restore usable (the session idle).
async fn two_writing_turns(page: &Page, id: &str, dir: &Path) {
    page.open_session(id).await;
    page.send(id, "/write a.txt first").await;
    page.wait_text(id, ".line-event.checkpoint", "Checkpoint · 1 file")
        .await;
    page.send(id, "/write a.txt second").await;
    page.browser
        .wait(
            "two checkpoints whose Restore is enabled",
            &format!(
                "[...document.querySelectorAll('{} .line-event.checkpoint button')].filter(b => !b.disabled).length === 2",
                chat(id)
            ),
        )
        .await;
    assert_eq!(read(dir, "a.txt"), "second\n");
}

/// Focuses `start`, then presses Tab until the focused element's accessible name is
/// `name`; fails if it never is.
pub(crate) async fn tab_to(page: &Page, start: &str, name: &str) {
    let b = &page.browser;
    b.exec(
        "document.querySelector(arguments[0]).focus();",
        vec![json!(start)],
    )
    .await;
    for _ in 0..40 {
        b.chord("\u{E004}").await;
        let focused = b
            .exec(
                "const e = document.activeElement; return (e?.getAttribute('aria-label') || e?.textContent || '').trim();",
                vec![],
            )
            .await;
        if focused == name {
            return;
        }
    }
    panic!("Tab never reached {name:?}");
}

/// Presses Enter on the focused element.
async fn enter(page: &Page) {
    page.browser.chord("\u{E007}").await;
}

/// In the open restore dialog, Tab from Cancel (which has the focus, so a stray Enter
/// changes nothing) to `submit` and press Enter.
async fn confirm_by_keyboard(page: &Page, submit: &str) {
    let dialog = page.dialog("restore").await;
    let focused = page
        .browser
        .exec("return document.activeElement.textContent;", vec![])
        .await;
    assert_eq!(focused, "Cancel", "the dialog opens on Cancel");
    page.assert_accessible("restore confirmation").await;
    page.browser.chord("\u{E004}").await;
    let focused = page
        .browser
        .exec("return document.activeElement.textContent;", vec![])
        .await;
    assert_eq!(focused, submit);
    enter(page).await;
    page.browser
        .wait(
            "the dialog to close",
            &format!("!document.querySelector({})", json!(dialog)),
        )
        .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn restore_a_checkpoint_by_keyboard_then_undo_it() {
    let page = Page::open(&[]).await;
    let (id, dir) = session_in_repo(&page, "restore").await;
    two_writing_turns(&page, &id, &dir).await;

    tab_to(
        &page,
        &format!("{} .log", chat(&id)),
        "Restore files to the end of turn 1",
    )
    .await;
    enter(&page).await;
    confirm_by_keyboard(&page, "Restore files").await;
    page.wait_text(
        &id,
        ".line-event.restored",
        "Files restored to turn 1 (“/write a.txt first”) · 1 file",
    )
    .await;
    assert_eq!(read(&dir, "a.txt"), "first\n");
    // The checkpoint the restore made has no line of its own: the Undo stands for it.
    assert_eq!(
        page.count(&format!("{} .line-event.checkpoint", chat(&id)))
            .await,
        2
    );
    page.check_view("checkpoint-restored").await;

    page.browser
        .click(&format!("{} .line-event.restored button", chat(&id)))
        .await;
    confirm_by_keyboard(&page, "Undo restore").await;
    page.wait_text(&id, ".line-event.restored", "Restore undone · 1 file")
        .await;
    assert_eq!(read(&dir, "a.txt"), "second\n");
    page.assert_accessible("restore undone").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn edit_and_resend_with_the_files_restored() {
    let page = Page::open(&[]).await;
    let (id, dir) = session_in_repo(&page, "edit").await;
    two_writing_turns(&page, &id, &dir).await;

    // The second message's Edit: its turn started with the first turn's checkpoint.
    let edits = format!("{} .msg.user .edit", chat(&id));
    page.browser
        .exec(
            "document.querySelectorAll(arguments[0])[1].dataset.mark = 'second';",
            vec![json!(edits)],
        )
        .await;
    page.browser.click("button[data-mark=second]").await;
    let form = format!("{} .edit-form", chat(&id));
    page.browser
        .wait(
            "\"Also restore files\" checked, as a checkpoint precedes the turn",
            &format!("document.querySelector('{form} input[name=restoreFiles]')?.checked"),
        )
        .await;
    page.assert_accessible("edit with restore").await;
    page.browser
        .exec(
            "const t = document.querySelector(arguments[0]); t.value = '/write b.txt edited'; t.focus();",
            vec![json!(format!("{form} textarea"))],
        )
        .await;
    enter(&page).await;

    page.wait_text(&id, ".line-event.restored", "Files restored to turn 1")
        .await;
    page.wait_text(&id, ".line-event.rewound", "1 turn").await;
    tandem_tests::poll::eventually("b.txt written by the edited turn", async || {
        dir.join("b.txt").exists().then_some(())
    })
    .await;
    assert_eq!(read(&dir, "a.txt"), "first\n");
    assert_eq!(read(&dir, "b.txt"), "edited\n");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn fork_at_a_message_opens_the_fork_which_names_its_source() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let source = create_session(&page, "Source").await;
    page.open_session(&source).await;
    page.send(&source, "one").await;
    page.wait_text(&source, ".turn-end", "Turn completed").await;
    page.send(&source, "two").await;
    b.wait(
        "both messages to offer Fork",
        &format!(
            "[...document.querySelectorAll('{} .msg.user .fork')].filter(e => !e.hidden).length === 2",
            chat(&source)
        ),
    )
    .await;

    let anchor: u64 = b
        .exec(
            "return document.querySelector(arguments[0]).dataset.seq;",
            vec![json!(format!("{} .msg.user", chat(&source)))],
        )
        .await
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // Fork at the first message, by keyboard; the dialog asks only for a title.
    tab_to(
        &page,
        &format!("{} .log", chat(&source)),
        "Fork from this message",
    )
    .await;
    enter(&page).await;
    let dialog = page.dialog("fork").await;
    page.check_view("fork-dialog").await;
    b.keys_text("Branch B\u{E007}").await;
    let fork = b
        .wait(
            "the fork to open, or the refusal",
            &format!(
                "(() => {{ const e = document.querySelector('{dialog} .error-text'); if (e && e.textContent) return 'refused: ' + e.textContent;\
                   const m = /^#\\/s\\/(.+)$/.exec(location.hash); return m && m[1] !== {} && document.querySelector(`.chat[data-session='${{m[1]}}']`) ? m[1] : null; }})()",
                json!(source)
            ),
        )
        .await;
    let fork = fork.as_str().unwrap().to_string();
    assert!(!fork.starts_with("refused: "), "session.fork: {fork}");

    let (status, info) = page.server.get(&format!("/api/v1/sessions/{fork}")).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["title"], "Branch B");
    assert_eq!(
        info["forkedFrom"],
        json!({"sessionId": source, "anchorSeq": anchor}),
        "{info}"
    );
    page.wait_text(&fork, ".forked-from", "Forked from Source")
        .await;
    page.wait_text(
        &fork,
        ".line-event.forked",
        "Forked from “Source” after 1 turn",
    )
    .await;
    let focused: Value = b
        .exec(
            "return document.activeElement.closest('.chat')?.dataset.session;",
            vec![],
        )
        .await;
    assert_eq!(focused, json!(fork), "the fork's composer has the focus");
    page.check_view("forked-session").await;

    // The header's "Forked from" opens the source.
    tab_to(
        &page,
        &format!("{} .chat-head .back", chat(&fork)),
        "↳ Forked from Source",
    )
    .await;
    enter(&page).await;
    b.wait(
        "the source to open",
        &format!("location.hash === '#/s/' + {}", json!(source)),
    )
    .await;
}
