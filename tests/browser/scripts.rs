//! A worktree's scripts in the page: the setup's `script` events as one line in the
//! conversation ("Setting up the worktree…" with its latest output while it runs,
//! then passed with its output folded under it, or failed with its exit code), the
//! worktree's port in the Changes panel, Run and Stop for the run script by keyboard
//! with its log (`session.run-log`) in a "Run log" that opens by keyboard, and a
//! refused Run (no run script) said in the panel. Real git repositories under the
//! server's workspace root whose checkout holds an uncommitted `.tandem/worktree.toml`
//! (the scripts are read from the checkout as it is).

use serde_json::{json, Value};

use crate::checkpoints::tab_to;
use crate::workspaces::{repo, write};
use crate::Page;

const ENTER: &str = "\u{E007}";

fn chat(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"]")
}

/// A repository `name` whose checkout has the `.tandem/worktree.toml` `toml`, and a
/// worktree session made from it, open in the page: its id and its port.
async fn worktree_session(page: &Page, name: &str, toml: &str) -> (String, u64) {
    let dir = repo(&page.server.dir.path().join(name), &[("a.txt", "a\n")]);
    write(&dir, ".tandem/worktree.toml", toml);
    let reply = page
        .ws()
        .await
        .ok(json!({"type": "session.create", "title": name, "cwd": dir, "workspace": "worktree"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    let port = reply["session"]["workspace"]["port"]
        .as_u64()
        .unwrap_or_else(|| panic!("a worktree session has a port: {reply}"));
    page.open_session(&id).await;
    (id, port)
}

/// Each `script` line of the conversation: `[script, status class, line, output or null]`.
async fn script_lines(page: &Page, id: &str) -> Value {
    page.browser
        .exec(
            "return [...document.querySelectorAll(arguments[0] + ' .line-event.script')].map(l => [\
               l.dataset.script, [...l.classList].find(c => c.startsWith('st-')),\
               (l.querySelector('summary') || l).textContent, l.querySelector('pre')?.textContent ?? null]);",
            vec![json!(chat(id))],
        )
        .await
}

/// Waits until the element `css` inside session `id`'s view says `want`.
async fn wait_says(page: &Page, id: &str, css: &str, want: &str) {
    page.browser
        .wait(
            &format!("{css} to say {want:?}"),
            &format!(
                "document.querySelector('{} {css}')?.textContent === {}",
                chat(id),
                json!(want)
            ),
        )
        .await;
}

/// Opens session `id`'s Changes panel and waits for its Run script section.
async fn open_changes(page: &Page, id: &str) {
    page.press(&chat(id), "Changes").await;
    page.browser
        .wait(
            "the Run script section",
            &format!(
                "document.querySelector('{} .changes .ws-run:not([hidden]) .run-state')?.textContent",
                chat(id)
            ),
        )
        .await;
}

/// Focuses the button or summary named `name` by Tab from the Changes panel's Close,
/// and presses Enter.
async fn press_by_keyboard(page: &Page, id: &str, name: &str) {
    tab_to(
        page,
        &format!("{} .changes .panel-head button", chat(id)),
        name,
    )
    .await;
    page.browser.chord(ENTER).await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_setup_shows_its_outcome_and_the_run_script_starts_logs_and_stops_by_keyboard() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let (id, port) = worktree_session(
        &page,
        "served",
        "setup = [\"echo preparing\"]\nrun = \"echo serving on $TANDEM_PORT; exec sleep 600\"\n",
    )
    .await;
    let c = chat(&id);

    // The setup: one line, passed, its output folded under it.
    page.wait_text(&id, ".line-event.script summary", "✓ Setup passed (exit 0)")
        .await;
    assert_eq!(
        script_lines(&page, &id).await,
        json!([[
            "setup",
            "st-passed",
            "✓ Setup passed (exit 0)",
            "preparing\n"
        ]])
    );

    // The panel: the worktree's port, and the run not started yet.
    open_changes(&page, &id).await;
    wait_says(&page, &id, ".ws-port", &format!("Port {port}")).await;
    wait_says(&page, &id, ".run-state", "Not started").await;

    // Run by keyboard; the focus stays on it.
    press_by_keyboard(&page, &id, "Run").await;
    wait_says(&page, &id, ".run-state", "Running").await;
    assert_eq!(
        b.exec("return document.activeElement.textContent;", vec![])
            .await,
        "Run"
    );
    page.wait_text(&id, ".line-event.script", "Run script started")
        .await;

    // The log opens by keyboard and shows what the run wrote, as it comes.
    press_by_keyboard(&page, &id, "Run log").await;
    b.wait(
        "the run's output in the Run log",
        &format!(
            "document.querySelector('{c} details.run-log[open] pre')?.textContent === {}",
            json!(format!("serving on {port}\n"))
        ),
    )
    .await;
    wait_says(&page, &id, ".run-log-state", "Running").await;
    assert_eq!(
        page.count(&format!("{c} .run-dropped:not([hidden])")).await,
        0,
        "nothing was dropped"
    );
    page.check_view("scripts-running").await;

    // Stop by keyboard: the panel, the log and the conversation say it stopped.
    press_by_keyboard(&page, &id, "Stop").await;
    wait_says(&page, &id, ".run-state", "Stopped").await;
    wait_says(&page, &id, ".run-log-state", "Stopped").await;
    page.wait_text(&id, ".line-event.script", "■ Run script stopped")
        .await;
    assert_eq!(
        b.exec(
            "return document.querySelector(arguments[0]).textContent;",
            vec![json!(format!("{c} .run-out"))]
        )
        .await,
        format!("serving on {port}\n"),
        "the log stays after the stop"
    );
    // The run's start and its end are one line.
    assert_eq!(
        script_lines(&page, &id).await,
        json!([
            [
                "setup",
                "st-passed",
                "✓ Setup passed (exit 0)",
                "preparing\n"
            ],
            [
                "run",
                "st-stopped",
                "■ Run script stopped",
                format!("serving on {port}\n")
            ]
        ])
    );
    let (_, log) = page
        .server
        .get(&format!("/api/v1/sessions/{id}/run/log"))
        .await;
    assert_eq!(log["running"], false, "{log}");
    assert_eq!(log["status"], "stopped", "{log}");
    page.assert_accessible("scripts stopped").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_failed_setup_shows_its_exit_code_and_a_run_without_a_script_says_why() {
    let page = Page::open(&[]).await;
    let (id, _) = worktree_session(&page, "broken", "setup = [\"echo broken; exit 4\"]\n").await;

    page.wait_text(&id, ".line-event.script summary", "✗ Setup failed (exit 4)")
        .await;
    assert_eq!(
        script_lines(&page, &id).await,
        json!([["setup", "st-failed", "✗ Setup failed (exit 4)", "broken\n"]])
    );

    // The repository declares no run script: Run is refused, and the panel says why.
    open_changes(&page, &id).await;
    press_by_keyboard(&page, &id, "Run").await;
    page.browser
        .wait(
            "the refusal",
            &format!(
                "document.querySelector('{} .run-error')?.textContent.startsWith('Not started: ') \
                 && document.querySelector('{} .run-error').textContent.includes('declares no run script')",
                chat(&id),
                chat(&id)
            ),
        )
        .await;
    wait_says(&page, &id, ".run-state", "Not started").await;
    page.check_view("scripts-failed").await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_setup_in_progress_is_one_line_that_follows_it_to_its_end() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    // Output after the first five seconds is reported while the setup runs; then it
    // waits for the test's word.
    let (id, _) = worktree_session(
        &page,
        "slow",
        "setup = [\"echo preparing\", \"sleep 5.5\", \"echo halfway\", \
         \"while [ ! -f \\\"$TANDEM_ROOT_PATH/go\\\" ]; do sleep 0.05; done\", \"echo ready\"]\n",
    )
    .await;
    let line = format!("{} .line-event.script[data-script=setup]", chat(&id));
    b.wait(
        "the setup's progress",
        &format!("document.querySelector('{line} pre')?.textContent === 'preparing\\nhalfway\\n'"),
    )
    .await;
    assert_eq!(
        script_lines(&page, &id).await,
        json!([[
            "setup",
            "st-running",
            "Setting up the worktree…",
            "preparing\nhalfway\n"
        ]])
    );

    // Its output opened by keyboard stays open, and focused, as the line follows the
    // setup to its end.
    b.exec(
        "document.querySelector(arguments[0]).focus();",
        vec![json!(format!("{line} summary"))],
    )
    .await;
    b.chord(ENTER).await;
    b.wait(
        "the output to open",
        &format!("document.querySelector('{line} details').open"),
    )
    .await;
    page.assert_accessible("setup in progress").await;
    write(&page.server.dir.path().join("slow"), "go", "");
    page.wait_text(&id, ".line-event.script summary", "✓ Setup passed (exit 0)")
        .await;
    assert_eq!(
        script_lines(&page, &id).await,
        json!([[
            "setup",
            "st-passed",
            "✓ Setup passed (exit 0)",
            "preparing\nhalfway\nready\n"
        ]])
    );
    assert_eq!(
        b.exec(
            "const d = document.querySelector(arguments[0]); return [d.open, document.activeElement === d.querySelector('summary')];",
            vec![json!(format!("{line} details"))]
        )
        .await,
        json!([true, true])
    );
}
