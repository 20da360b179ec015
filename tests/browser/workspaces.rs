//! Workspaces in the page: a session in its own worktree created from the dialog,
//! its Changes panel (files, diffs, live from `git_state`, Merge… and Discard), the
//! Files panel (tree, editor, saves with the ETag, the conflict when the file
//! changed under it, a binary file), and a Worker in its own worktree whose
//! delegation card shows its changes and whose refused merge lists the conflicts.
//! Real git repositories in the server's temporary workspace root; the scripted
//! agent writes no files, so the test writes them into the working directory and
//! then runs a turn, after which the server publishes `git_state`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::Page;

fn chat(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"]")
}

/// Runs `git ARGS` in `dir`, fails the test on an error, returns stdout trimmed.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository at `dir` on branch `main` with one commit holding `files`.
pub(crate) fn repo(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Page Test"]);
    git(dir, &["config", "user.email", "page@test.invalid"]);
    for (path, text) in files {
        write(dir, path, text);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "start"]);
    dir.to_path_buf()
}

pub(crate) fn write(dir: &Path, path: &str, text: &str) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

pub(crate) fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap()
}

/// The session's record over REST.
async fn info(page: &Page, id: &str) -> Value {
    let (status, info) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{info}");
    info
}

/// The accessible names (`aria-label`, else the label, else the text) of the visible
/// controls matching `css`.
async fn names(page: &Page, css: &str) -> Value {
    page.browser
        .exec(
            "return [...document.querySelectorAll(arguments[0])].filter(e => e.offsetParent !== null)\
               .map(e => (e.getAttribute('aria-label') || (e.labels && e.labels[0] ? e.labels[0].textContent : e.textContent)).trim());",
            vec![json!(css)],
        )
        .await
}

/// Waits until the changed files listed in session `id`'s Changes panel are `want`
/// (each `path +added −removed`).
pub(crate) async fn wait_changes(page: &Page, id: &str, want: &[&str]) {
    let want = want.join("|");
    page.browser
        .wait(
            &format!("the Changes panel to list {want}"),
            &format!(
                "[...document.querySelectorAll('{} .ws-files .ws-file')].map(b => \
                   b.querySelector('.ws-path').textContent + ' ' + [...b.querySelectorAll('.diff-add, .diff-del')].map(e => e.textContent).join(' ')).join('|') === {}",
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
async fn a_worktree_session_shows_its_changes_live_then_merges_and_discards() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let base = repo(
        &page.server.dir.path().join("app"),
        &[
            ("README.md", "# app\n"),
            ("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n"),
        ],
    );

    // "New session" with "Own worktree".
    page.press(".top", "New session").await;
    let dialog = page.dialog("create").await;
    assert_eq!(
        names(&page, &format!("{dialog} input[type=checkbox]")).await,
        json!(["Own worktree"])
    );
    page.set_value(&format!("{dialog} input[name=title]"), "Worktree work")
        .await;
    page.set_value(&format!("{dialog} input[name=cwd]"), base.to_str().unwrap())
        .await;
    b.click(&format!("{dialog} input[name=workspace]")).await;
    page.check_view("create-worktree-dialog").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    let id = b
        .wait(
            "the new session's view",
            "(() => { const m = /^#\\/s\\/(.+)$/.exec(location.hash); return m && document.querySelector(`.chat[data-session='${m[1]}']`) ? m[1] : null; })()",
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    let s = info(&page, &id).await;
    assert_eq!(s["workspace"]["mode"], "worktree", "{s}");
    assert_eq!(s["workspace"]["base"], "main", "{s}");
    let branch = s["workspace"]["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("tandem/"), "{s}");
    let tree = PathBuf::from(s["cwd"].as_str().unwrap());
    assert_ne!(tree, base, "the session works in its own worktree");
    assert_eq!(read(&tree, "README.md"), "# app\n");

    // What the agent would have done, then a turn: `git_state` comes after it.
    write(&tree, "README.md", "# app\n\nA second line.\n");
    write(&tree, "notes.txt", "one\ntwo\n");
    page.send(&id, "first turn").await;
    b.wait(
        "the header's summary",
        &format!(
            "document.querySelector('{} .ws-summary')?.textContent === {}",
            chat(&id),
            json!(format!("{branch} · 2 files · +4 −0"))
        ),
    )
    .await;

    // The Changes panel: the files, each opening its diff.
    page.press(&chat(&id), "Changes").await;
    wait_changes(&page, &id, &["README.md +2 −0", "notes.txt +2 −0"]).await;
    assert_eq!(
        names(&page, &format!("{} .ws-actions button", chat(&id))).await,
        json!(["Run checks", "Rebase", "Merge…", "Discard"])
    );
    b.click(&format!("{} .ws-file[data-path='README.md']", chat(&id)))
        .await;
    page.wait_text(&id, ".ws-diff .diff .dl.add", "+A second line.")
        .await;
    assert_eq!(
        b.exec(
            "return document.querySelector(arguments[0]).getAttribute('aria-expanded');",
            vec![json!(format!(
                "{} .ws-file[data-path='README.md']",
                chat(&id)
            ))]
        )
        .await,
        "true"
    );
    // The slot holds the drawn diff and nothing else (no stray text).
    let slot = b
        .exec(
            "return [...document.querySelector(arguments[0]).childNodes].map(n => n.nodeType === 1 ? n.className : '#text ' + n.textContent);",
            vec![json!(format!(
                "{} .ws-file[data-path='README.md'] + .ws-diff",
                chat(&id)
            ))],
        )
        .await;
    assert_eq!(slot, json!(["diffs"]));
    page.check_view("changes").await;

    // Live: the next turn's `git_state` updates the open panel and its open diff,
    // with no read of the changes after the first.
    write(&tree, "src/lib.rs", "pub fn one() -> u32 {\n    2\n}\n");
    page.send(&id, "second turn").await;
    wait_changes(
        &page,
        &id,
        &["README.md +2 −0", "notes.txt +2 −0", "src/lib.rs +1 −1"],
    )
    .await;
    page.wait_text(&id, ".ws-diff .diff .dl.add", "+A second line.")
        .await;
    let reads = b
        .exec(
            "return performance.getEntriesByType('resource').filter(e => new URL(e.name).pathname.endsWith('/changes')).length;",
            vec![],
        )
        .await;
    assert_eq!(reads, 1, "the panel read the changes once, when it opened");

    // Merge… (squash, with a message): the base branch gets one commit.
    page.press(&chat(&id), "Merge…").await;
    let dialog = page.dialog("merge").await;
    page.set_value(&format!("{dialog} select[name=strategy]"), "squash")
        .await;
    page.set_value(
        &format!("{dialog} input[name=message]"),
        "Squashed from the page",
    )
    .await;
    page.check_view("merge-dialog").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    b.wait(
        "the dialog to close",
        "!document.querySelector('dialog.merge[open]')",
    )
    .await;
    page.wait_text(
        &id,
        ".line-event.merged",
        &format!("Merged {branch} into main"),
    )
    .await;
    assert_eq!(
        git(&base, &["log", "-1", "--format=%s"]),
        "Squashed from the page"
    );
    assert_eq!(read(&base, "README.md"), "# app\n\nA second line.\n");
    assert_eq!(read(&base, "notes.txt"), "one\ntwo\n");
    assert_eq!(git(&base, &["status", "--porcelain"]), "");

    // Discard asks first (Cancel has the focus), then removes worktree and branch.
    page.press(&chat(&id), "Discard").await;
    let dialog = page.dialog("discard").await;
    b.wait(
        "Cancel to have the focus",
        "document.activeElement?.textContent === 'Cancel'",
    )
    .await;
    page.assert_accessible("discard dialog").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    page.wait_text(&id, ".line-event.discarded", &branch).await;
    b.wait(
        "Merge… and Discard to go",
        &format!(
            "document.querySelector('{} .ws-actions').hidden && document.querySelector('{} .ws-summary').textContent.includes('discarded')",
            chat(&id),
            chat(&id)
        ),
    )
    .await;
    assert!(!tree.exists(), "the worktree is gone");
    // It was merged first, so its branch is kept.
    assert_eq!(git(&base, &["branch", "--list", "tandem/*"]), branch);
    assert_eq!(info(&page, &id).await["workspace"]["state"], "discarded");
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_files_panel_edits_with_the_etag_and_shows_a_conflict() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let dir = repo(
        &page.server.dir.path().join("site"),
        &[
            ("index.html", "<h1>Hello</h1>\n"),
            ("css/site.css", "body { margin: 0; }\n"),
        ],
    );
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": "Site", "cwd": dir.to_str().unwrap()}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    page.open_session(&id).await;
    let c = chat(&id);

    // The tree: directories first; a directory opens in place. By keyboard: the
    // panel's first control has the focus, Tab walks into the tree.
    page.press(&c, "Files").await;
    b.wait(
        "the tree",
        &format!(
            "[...document.querySelectorAll('{c} .ws-tree > li > .ws-entry')].map(e => e.dataset.path).join(',') === 'css,index.html'"
        ),
    )
    .await;
    b.keys_text("\u{E004}").await;
    b.chord("\u{E007}").await;
    b.wait(
        "css/ open with its file",
        &format!("document.querySelector('{c} .ws-entry[data-path=\"css/site.css\"]') && document.activeElement?.dataset.path === 'css'"),
    )
    .await;

    // Open, edit, save: the file on disk has the new text.
    b.click(&format!("{c} .ws-entry[data-path='index.html']"))
        .await;
    let text = format!("{c} textarea.ws-text");
    b.wait(
        "the file in the editor",
        &format!("document.querySelector('{text}')?.value === '<h1>Hello</h1>\\n'"),
    )
    .await;
    assert_eq!(names(&page, &text).await, json!(["Contents of index.html"]));
    b.type_into(&text, "<p>Edited in the page</p>\n").await;
    page.press(&c, "Save").await;
    page.wait_text(&id, ".ws-file-status", "Saved").await;
    assert_eq!(
        read(&dir, "index.html"),
        "<h1>Hello</h1>\n<p>Edited in the page</p>\n"
    );

    // Changed on disk under the editor: the save is refused (412), nothing is lost
    // on either side, and the panel says so.
    write(&dir, "index.html", "<h1>Changed on disk</h1>\n");
    b.type_into(&text, "<p>Mine</p>\n").await;
    page.press(&c, "Save").await;
    page.wait_text(&id, ".ws-conflict", "Conflict").await;
    assert_eq!(read(&dir, "index.html"), "<h1>Changed on disk</h1>\n");
    page.check_view("files-conflict").await;
    // "Save mine over it" saves knowingly.
    page.press(&c, "Save mine over it").await;
    page.wait_text(&id, ".ws-file-status", "Saved").await;
    assert_eq!(
        read(&dir, "index.html"),
        "<h1>Hello</h1>\n<p>Edited in the page</p>\n<p>Mine</p>\n"
    );
    // Again, and this time "Load the new version" takes what is on disk.
    write(&dir, "index.html", "<h1>Theirs</h1>\n");
    b.type_into(&text, "<p>Dropped</p>\n").await;
    page.press(&c, "Save").await;
    page.wait_text(&id, ".ws-conflict", "Conflict").await;
    page.press(&c, "Load the new version").await;
    b.wait(
        "the version on disk in the editor",
        &format!("document.querySelector('{text}').value === '<h1>Theirs</h1>\\n' && document.querySelector('{c} .ws-conflict').hidden"),
    )
    .await;
    assert_eq!(read(&dir, "index.html"), "<h1>Theirs</h1>\n");

    // A binary file appears after the next turn's `git_state` (no polling) and is
    // not shown.
    std::fs::write(dir.join("logo.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    page.send(&id, "tick").await;
    b.click(&format!("{c} .ws-entry[data-path='logo.bin']"))
        .await;
    page.wait_text(&id, ".ws-file-status", "binary file").await;
    page.check_view("files").await;
}

/// A Driver working in a new repository (shared), and a Worker added from the page
/// with "Own worktree": `(driver, worker, base checkout, worker's worktree, branch)`.
async fn driver_and_worktree_worker(page: &Page) -> (String, String, PathBuf, PathBuf, String) {
    let b = &page.browser;
    let base = repo(
        &page.server.dir.path().join("lib"),
        &[("README.md", "# lib\nfirst\n")],
    );
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": "Lead", "cwd": base.to_str().unwrap()}))
        .await;
    let d = reply["session"]["id"].as_str().unwrap().to_string();
    page.open_session(&d).await;
    page.press(&chat(&d), "Add Worker").await;
    let dialog = page.dialog("add-worker").await;
    assert_eq!(
        names(page, &format!("{dialog} input[type=checkbox]")).await,
        json!(["Own worktree"])
    );
    b.click(&format!("{dialog} input[name=workerWorkspace]"))
        .await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    let w = b
        .wait(
            "the Worker pane",
            "document.querySelector('.split .pane.worker')?.dataset.session",
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    let wi = info(page, &w).await;
    assert_eq!(wi["workspace"]["mode"], "worktree", "{wi}");
    let branch = wi["workspace"]["branch"].as_str().unwrap().to_string();
    let tree = PathBuf::from(wi["cwd"].as_str().unwrap());
    assert_ne!(tree, base);
    (d, w, base, tree, branch)
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_worker_in_its_own_worktree_and_a_refused_merge_that_lists_the_conflicts() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let (_, w, base, tree, _) = driver_and_worktree_worker(&page).await;
    // The Worker's change, read when its Changes panel opens.
    write(&tree, "README.md", "# lib\nfirst, by the worker\n");
    page.press(&chat(&w), "Changes").await;
    wait_changes(&page, &w, &["README.md +1 −1"]).await;

    // The base moves on with a conflicting commit: the merge is refused, the dialog
    // lists the file, and both checkouts are as they were.
    write(&base, "README.md", "# lib\nfirst, on main\n");
    git(&base, &["commit", "-q", "-am", "main moves on"]);
    let head = git(&base, &["rev-parse", "HEAD"]);
    page.press(&chat(&w), "Merge…").await;
    let dialog = page.dialog("merge").await;
    b.click(&format!("{dialog} button[type=submit]")).await;
    b.wait(
        "the conflicting file in the dialog",
        &format!(
            "[...document.querySelectorAll('{dialog} .error-paths li')].map(e => e.textContent).join(',') === 'README.md'"
        ),
    )
    .await;
    page.check_view("merge-conflict").await;
    assert_eq!(git(&base, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&base, &["status", "--porcelain"]), "");
    assert_eq!(read(&base, "README.md"), "# lib\nfirst, on main\n");
    assert_eq!(read(&tree, "README.md"), "# lib\nfirst, by the worker\n");
    b.click(&format!("{dialog} button[type=button]")).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_drivers_delegation_line_shows_the_worktree_workers_changes() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let (d, w, _, tree, branch) = driver_and_worktree_worker(&page).await;
    // A delegation: the Worker asks before "writing"; the test writes while it waits.
    page.send(
        &d,
        r#"/tool send_to_partner {"message": "/ask Write {\"file_path\": \"README.md\"}\nworker done"}"#,
    )
    .await;
    b.wait(
        "the Worker's permission card",
        &format!("document.querySelector('{} .card.permission')", chat(&w)),
    )
    .await;
    write(&tree, "README.md", "# lib\nfirst, by the worker\n");
    page.press(&format!("{} .card.permission", chat(&w)), "Allow once")
        .await;
    // The Driver's line: the Worker's branch and diff summary, and a way to review.
    page.wait_text(
        &d,
        ".delegation-changes",
        &format!("changed 1 file · +1 −1 on {branch}"),
    )
    .await;
    page.press(&chat(&d), "Review the Worker’s changes").await;
    wait_changes(&page, &w, &["README.md +1 −1"]).await;
    b.wait(
        "the Worker's Changes button to say it is open",
        &format!(
            "document.querySelector('{} .ws-toggle').getAttribute('aria-expanded') === 'true'",
            chat(&w)
        ),
    )
    .await;
    page.check_view("worker-changes").await;
}
