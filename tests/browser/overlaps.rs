//! Sibling worktrees in the page: two worktree sessions of one repository that both
//! change a file see it marked in their Changes panels ("also changed in …"), with a
//! notice whose button opens the other session, and a line in the conversation.
//! Rebase, by keyboard, moves the branch onto the base's new head (the panel says
//! so, and git agrees), says when there was nothing to move, is off while a turn
//! runs, and shows the server's MERGE_CONFLICT message naming the file. Real git
//! repositories in the server's workspace root; the scripted agent writes the files
//! (`/write`).

use std::path::PathBuf;

use serde_json::json;

use crate::checkpoints::tab_to;
use crate::workspaces::{git, repo, wait_changes, write};
use crate::Page;

const ENTER: &str = "\u{E007}";

fn chat(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"]")
}

/// A worktree session of the repository `dir` titled `title`: its id and worktree.
async fn worktree_session(page: &Page, dir: &std::path::Path, title: &str) -> (String, PathBuf) {
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": title, "cwd": dir, "workspace": "worktree"}))
        .await;
    let s = &reply["session"];
    assert_eq!(s["workspace"]["mode"], "worktree", "{s}");
    (
        s["id"].as_str().unwrap().to_string(),
        PathBuf::from(s["cwd"].as_str().unwrap()),
    )
}

/// Waits until session `id` shows `n` completed turns.
async fn wait_turns(page: &Page, id: &str, n: usize) {
    page.browser
        .wait(
            &format!("turn {n} of {id} to complete"),
            &format!(
                "document.querySelectorAll('{} .turn-end.completed').length === {n}",
                chat(id)
            ),
        )
        .await;
}

/// Opens session `id`, sends `text` and waits for its first turn to complete.
async fn first_turn(page: &Page, id: &str, text: &str) {
    page.open_session(id).await;
    page.send(id, text).await;
    wait_turns(page, id, 1).await;
}

/// The text of the first element matching `css`.
async fn text(page: &Page, css: &str) -> String {
    page.browser
        .exec(
            "return document.querySelector(arguments[0])?.textContent ?? null;",
            vec![json!(css)],
        )
        .await
        .as_str()
        .unwrap_or_else(|| panic!("no {css}"))
        .to_string()
}

/// Focuses session `id`'s Rebase by Tab from its Changes panel's Close, and presses
/// Enter.
async fn rebase_by_keyboard(page: &Page, id: &str) {
    tab_to(
        page,
        &format!("{} .changes .panel-head button", chat(id)),
        "Rebase",
    )
    .await;
    page.browser.chord(ENTER).await;
}

/// Waits until session `id`'s Changes panel says `want` about the last rebase.
async fn wait_rebase_says(page: &Page, id: &str, want: &str) {
    page.browser
        .wait(
            &format!("the panel to say {want:?}"),
            &format!(
                "document.querySelector('{} .ws-rebase')?.textContent.includes({})",
                chat(id),
                json!(want)
            ),
        )
        .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_file_both_siblings_changed_is_marked_and_the_notice_opens_the_other() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let dir = repo(
        &page.server.dir.path().join("proj"),
        &[("a.txt", "start\n"), ("README.md", "# proj\n")],
    );
    let (left, _) = worktree_session(&page, &dir, "Left side").await;
    let (right, _) = worktree_session(&page, &dir, "Right side").await;
    first_turn(&page, &left, "/write a.txt from the left").await;
    first_turn(
        &page,
        &right,
        "/write a.txt from the right\n/write only-right.txt r",
    )
    .await;
    page.wait_text(
        &right,
        ".line-event.overlap",
        "Also changed in Left side: a.txt",
    )
    .await;

    // The left session heard it too (its replay, as it opens): the line, then in
    // the Changes panel the notice and a.txt's badge, which is in its button's name.
    page.open_session(&left).await;
    page.wait_text(
        &left,
        ".line-event.overlap",
        "Also changed in Right side: a.txt",
    )
    .await;
    page.press(&chat(&left), "Changes").await;
    wait_changes(&page, &left, &["a.txt +1 −1"]).await;
    assert_eq!(
        text(&page, &format!("{} .ws-overlap-notice span", chat(&left))).await,
        "1 file is also changed in Right side"
    );
    let file = format!("{} .ws-file[data-path='a.txt']", chat(&left));
    assert_eq!(
        text(&page, &format!("{file} .ws-overlap")).await,
        ", also changed in Right side,"
    );
    let name = b
        .exec(
            "return document.querySelector(arguments[0]).textContent;",
            vec![json!(file)],
        )
        .await;
    assert!(
        name.as_str()
            .unwrap()
            .contains("a.txt, also changed in Right side,"),
        "{name}"
    );
    page.check_view("overlap-changes").await;

    // By keyboard: the notice's button, first after Close, opens the right session
    // with its Changes panel, where a.txt is marked as changed in the left one.
    tab_to(
        &page,
        &format!("{} .changes .panel-head button", chat(&left)),
        "Open Right side",
    )
    .await;
    b.chord(ENTER).await;
    b.wait(
        "the right session with its Changes panel open",
        &format!(
            "location.hash === '#/s/{right}' && document.querySelector('{} .ws-toggle')?.getAttribute('aria-expanded') === 'true'",
            chat(&right)
        ),
    )
    .await;
    wait_changes(&page, &right, &["a.txt +1 −1", "only-right.txt +1 −0"]).await;
    page.wait_text(&right, ".ws-file .ws-overlap", "also changed in Left side")
        .await;
    assert_eq!(
        page.count(&format!(
            "{} .ws-file .ws-overlap:not([hidden])",
            chat(&right)
        ))
        .await,
        1,
        "only a.txt is marked"
    );
    page.wait_text(
        &right,
        ".ws-overlap-notice",
        "1 file is also changed in Left side",
    )
    .await;
    page.assert_accessible("the other session's changes").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn rebase_by_keyboard_moves_onto_the_base_and_shows_a_conflict() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let dir = repo(
        &page.server.dir.path().join("proj"),
        &[("a.txt", "start\n")],
    );
    let (id, tree) = worktree_session(&page, &dir, "Rebasing").await;
    first_turn(&page, &id, "/write b.txt mine").await;

    // main moves on; Rebase puts the session's work on its new head.
    write(&dir, "c.txt", "theirs\n");
    git(&dir, &["add", "c.txt"]);
    git(&dir, &["commit", "-q", "-m", "theirs"]);
    let main = git(&dir, &["rev-parse", "main"]);
    page.press(&chat(&id), "Changes").await;
    wait_changes(&page, &id, &["b.txt +1 −0"]).await;
    rebase_by_keyboard(&page, &id).await;
    wait_rebase_says(&page, &id, &format!("Rebased onto main ({})", &main[..7])).await;
    assert_eq!(git(&tree, &["rev-parse", "HEAD^"]), main);
    page.wait_text(
        &id,
        ".line-event.rebased",
        &format!("onto main ({})", &main[..7]),
    )
    .await;
    // The focus stayed on Rebase: Enter again, and there is nothing to move.
    b.chord(ENTER).await;
    wait_rebase_says(&page, &id, "Already on main’s head").await;

    // Off while a turn runs (as Merge… is), on again after it.
    let rebase_off = |off: bool| {
        format!(
            "[...document.querySelectorAll('{} .ws-actions button')].find(b => b.textContent === 'Rebase')?.disabled === {off}",
            chat(&id)
        )
    };
    page.send(&id, "/write a.txt from the session\n/hold rebase-turn")
        .await;
    page.server.wait_held("rebase-turn").await;
    b.wait("Rebase to be off during the turn", &rebase_off(true))
        .await;
    page.server.release("rebase-turn").await;
    wait_turns(&page, &id, 2).await;
    b.wait("Rebase to be on after the turn", &rebase_off(false))
        .await;

    // main changes a.txt too: refused, the message naming it, the branch as it was.
    write(&dir, "a.txt", "from main\n");
    git(&dir, &["commit", "-q", "-am", "main's a"]);
    let tip = git(&tree, &["rev-parse", "HEAD"]);
    rebase_by_keyboard(&page, &id).await;
    wait_rebase_says(&page, &id, "Not rebased:").await;
    let said = text(&page, &format!("{} .ws-rebase", chat(&id))).await;
    assert!(said.contains("a.txt"), "{said}");
    assert_eq!(git(&tree, &["rev-parse", "HEAD"]), tip);
    page.check_view("rebase-conflict").await;
}
