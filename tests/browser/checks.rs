//! A repository's checks in the page: "Run checks" in the Changes panel (by
//! keyboard) lists each check with its status in words, exit code, duration and its
//! output folded away; the conversation shows a line per `check` event; a reload
//! shows the session's `lastChecks`. Where the repository requires passing checks,
//! Merge… is refused with the server's CHECKS_FAILED message and "Merge anyway"
//! (by keyboard) merges. A Driver's line for a worktree Worker's delegation sums up
//! the checks run on its branch (`checks_on_delegation`). Real git repositories with a committed
//! `.tandem/worktree.toml`; the scripted agent writes files with `/write`.

use std::path::Path;

use serde_json::{json, Value};

use crate::checkpoints::tab_to;
use crate::workspaces::{git, read, repo, write};
use crate::Page;

const ENTER: &str = "\u{E007}";

fn chat(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"]")
}

/// A repository at `dir` holding `a.txt` and the `.tandem/worktree.toml` `toml`.
fn project(dir: &Path, toml: &str) {
    repo(dir, &[("a.txt", "a\n")]);
    write(dir, ".tandem/worktree.toml", toml);
    git(dir, &["add", ".tandem"]);
    git(dir, &["commit", "-q", "-m", "checks"]);
}

/// Creates a session titled `title` with `extra` fields over WebSocket; its id.
async fn session(page: &Page, title: &str, extra: Value) -> String {
    let mut create = json!({"type": "session.create", "title": title});
    for (k, v) in extra.as_object().unwrap() {
        create[k] = v.clone();
    }
    let reply = page.ws().await.ok(create).await;
    reply["session"]["id"].as_str().unwrap().to_string()
}

/// Opens session `id` with its Changes panel.
async fn open_changes(page: &Page, id: &str) {
    page.open_session(id).await;
    page.press(&chat(id), "Changes").await;
    page.browser
        .wait(
            "the Changes panel",
            &format!(
                "document.querySelector('{} .changes .ws-actions')",
                chat(id)
            ),
        )
        .await;
}

/// Focuses "Run checks" by Tab from the Changes panel's Close, and presses Enter.
async fn run_checks_by_keyboard(page: &Page, id: &str) {
    tab_to(
        page,
        &format!("{} .changes .panel-head button", chat(id)),
        "Run checks",
    )
    .await;
    page.browser.chord(ENTER).await;
}

/// Waits until the panel's Checks status says `want`.
async fn wait_checks_say(page: &Page, id: &str, want: &str) {
    page.browser
        .wait(
            &format!("the Checks section to say {want:?}"),
            &format!(
                "document.querySelector('{} .ws-checks-status')?.textContent === {}",
                chat(id),
                json!(want)
            ),
        )
        .await;
}

/// Each row of the panel's Checks list: `[name, status badge, exit code and
/// duration without the time, output or null]`.
async fn check_rows(page: &Page, id: &str) -> Value {
    page.browser
        .exec(
            "return [...document.querySelectorAll(arguments[0] + ' .ws-checks li.check')].map(r => [\
               r.querySelector('.check-name').textContent,\
               r.querySelector('.check-badge').textContent,\
               r.querySelector('.check-meta').textContent.replace(/[0-9.]+ s$/, 'T'),\
               r.querySelector('details pre')?.textContent ?? null]);",
            vec![json!(chat(id))],
        )
        .await
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn run_checks_lists_each_outcome_in_the_panel_and_the_conversation() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let dir = page.server.dir.path().join("proj");
    project(
        &dir,
        "[[checks]]\nname = \"tests\"\ncommand = \"test -f a.txt && echo ok\"\n\
         [[checks]]\nname = \"lint\"\ncommand = \"echo no >&2; exit 3\"\n",
    );
    // A session working in the checkout itself: checks are not only for worktrees.
    let id = session(&page, "Checked", json!({"cwd": dir})).await;
    open_changes(&page, &id).await;
    run_checks_by_keyboard(&page, &id).await;
    wait_checks_say(&page, &id, "1 of 2 checks passed").await;
    let rows = json!([
        ["tests", "✓ passed", "exit 0 · T", "ok\n"],
        ["lint", "✗ failed", "exit 3 · T", "no\n"]
    ]);
    assert_eq!(check_rows(&page, &id).await, rows);
    // The focus stayed on the button through the run.
    assert_eq!(
        b.exec("return document.activeElement.textContent;", vec![])
            .await,
        "Run checks"
    );

    // The conversation: a line per check, the failing one's output under it.
    page.wait_text(&id, ".line-event.check", "✓ tests passed · ")
        .await;
    page.wait_text(&id, ".line-event.check", "✗ lint failed (exit 3) · ")
        .await;
    assert_eq!(
        b.exec(
            "return [...document.querySelectorAll(arguments[0] + ' .line-event.check pre')].map(p => p.textContent);",
            vec![json!(chat(&id))]
        )
        .await,
        json!(["ok\n", "no\n"])
    );
    // The failing check's output opens by keyboard.
    tab_to(
        &page,
        &format!("{} .changes .panel-head button", chat(&id)),
        "Output of lint",
    )
    .await;
    b.chord(ENTER).await;
    b.wait(
        "lint's output to open",
        &format!(
            "[...document.querySelectorAll('{} .ws-checks details')].map(d => d.open).join() === 'false,true'",
            chat(&id)
        ),
    )
    .await;
    page.check_view("checks").await;

    // A new page shows the session's last results when the panel opens.
    page.login().await;
    open_changes(&page, &id).await;
    wait_checks_say(&page, &id, "1 of 2 checks passed").await;
    assert_eq!(check_rows(&page, &id).await, rows);
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_merge_refused_for_failed_checks_goes_through_with_merge_anyway() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let dir = page.server.dir.path().join("gated");
    project(
        &dir,
        "merge_requires_checks = true\n\
         [[checks]]\nname = \"has-b\"\ncommand = \"test -f b.txt\"\n",
    );
    let id = session(&page, "Gated", json!({"cwd": dir, "workspace": "worktree"})).await;
    page.open_session(&id).await;
    page.send(&id, "/write c.txt c").await;
    b.wait(
        "the turn to complete",
        &format!(
            "document.querySelector('{} .turn-end.completed')",
            chat(&id)
        ),
    )
    .await;
    open_changes(&page, &id).await;
    run_checks_by_keyboard(&page, &id).await;
    wait_checks_say(&page, &id, "0 of 1 check passed").await;

    // Merge… is refused: the server's message, and a way past it.
    page.press(&chat(&id), "Merge…").await;
    let dialog = page.dialog("merge").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    b.wait(
        "the CHECKS_FAILED message",
        &format!(
            "document.querySelector('{dialog} .error-text')?.textContent.includes('these did not pass: has-b')"
        ),
    )
    .await;
    assert!(!dir.join("c.txt").exists(), "nothing was merged");
    page.check_view("merge-checks-failed").await;

    // "Merge anyway" by keyboard: one Tab from the message field.
    tab_to(
        &page,
        &format!("{dialog} input[name=message]"),
        "Merge anyway",
    )
    .await;
    b.chord(ENTER).await;
    b.wait(
        "the dialog to close",
        "!document.querySelector('dialog.merge[open]')",
    )
    .await;
    page.wait_text(&id, ".line-event.merged", "Merged ").await;
    assert_eq!(read(&dir, "c.txt").trim(), "c");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_drivers_delegation_line_sums_up_the_checks_on_the_workers_branch() {
    let page = Page::open(&["--worker-workspace", "worktree"]).await;
    let dir = page.server.dir.path().join("lib");
    project(
        &dir,
        "checks_on_delegation = true\n\
         [[checks]]\nname = \"has-w\"\ncommand = \"test -f w.txt\"\n\
         [[checks]]\nname = \"lint\"\ncommand = \"exit 4\"\n",
    );
    let d = session(&page, "Lead", json!({"cwd": dir})).await;
    page.open_session(&d).await;
    page.send(
        &d,
        r#"/tool send_to_partner {"message": "/write w.txt by the worker"}"#,
    )
    .await;
    page.wait_text(
        &d,
        ".delegation-changes .delegation-checks",
        "checks: has-w passed, lint failed (exit 4)",
    )
    .await;
    page.check_view("delegation-checks").await;
}
