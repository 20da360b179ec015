//! "On this machine": the CLI sessions found on the server's machine, listed in a
//! dialog from the sessions sidebar; Continue makes a session whose history shows the
//! transcript, and the list then offers to open it. (The transcript here is written
//! by the test; the e2e tests import ones the real CLIs wrote.)

use std::sync::Arc;

use tandem_tests::transcripts::{answer_line, claude_home, prompt_line};
use tandem_tests::TempDir;

use crate::Page;

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_cli_session_on_the_machine_is_continued_from_the_page() {
    let dir = Arc::new(TempDir::new("browser-machine"));
    let text = prompt_line("cli-7", dir.path(), "explain the build")
        + &answer_line("cli-7", dir.path(), "It uses cargo.");
    let (config, _) = claude_home(dir.path(), &[("cli-7", text)], "");
    let config = config.display().to_string();
    let page = Page::open_in(dir, &["--config", &config]).await;

    page.press("#sessions-nav", "On this machine").await;
    let item = page
        .browser
        .wait(
            "the session found",
            "(() => { const i = document.querySelector('dialog.machine .machine-item'); return i && i.textContent; })()",
        )
        .await;
    let item = item.as_str().unwrap().to_string();
    assert!(
        item.contains("explain the build") && item.contains("Claude Code · 2 messages"),
        "{item}"
    );
    crate::assert_accessible(&page.browser, "on this machine").await;

    page.press("dialog.machine", "Continue explain the build")
        .await;
    let id = page
        .browser
        .wait(
            "the new session's view",
            "(() => { const c = document.querySelector('.chat[data-session]'); return c && c.dataset.session; })()",
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    page.wait_text(
        &id,
        ".line-event",
        "Continued from Claude Code session cli-7: 2 messages",
    )
    .await;
    page.wait_text(&id, ".items", "It uses cargo.").await;

    // Listed again, it opens that session instead.
    page.press("#sessions-nav", "On this machine").await;
    page.press("dialog.machine", "Open explain the build").await;
    page.browser
        .wait(
            "the dialog to close",
            "!document.querySelector('dialog.machine')",
        )
        .await;
}
