//! "On this machine": the CLI sessions found on the server's machine, listed in a
//! dialog from the sessions sidebar; Continue makes a session whose history shows the
//! transcript, and the list then offers to open it. (The transcript here is written
//! by the test; the e2e tests import ones the real CLIs wrote.)

use std::sync::Arc;

use serde_json::json;
use tandem_tests::{Browser, Server, ServerOptions, TempDir};

use crate::Page;

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_cli_session_on_the_machine_is_continued_from_the_page() {
    let dir = Arc::new(TempDir::new("browser-machine"));
    let home = dir.path().join("claude-home");
    let project = home.join(".claude/projects/p");
    std::fs::create_dir_all(&project).unwrap();
    let lines = [
        json!({"type": "user", "sessionId": "cli-7", "cwd": dir.path(), "timestamp": "2026-01-01T00:00:00Z",
               "message": {"role": "user", "content": [{"type": "text", "text": "explain the build"}]}}),
        json!({"type": "assistant", "sessionId": "cli-7", "cwd": dir.path(), "timestamp": "2026-01-01T00:00:01Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "It uses cargo."}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(project.join("cli-7.jsonl"), text).unwrap();
    let config = dir.path().join("tandem.toml");
    std::fs::write(
        &config,
        format!(
            "[vendors.claude]\nbin = \"/bin/true\"\nenv = {{ HOME = {} }}\n",
            json!(home.display().to_string())
        ),
    )
    .unwrap();
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            args: vec!["--config".into(), config.display().to_string()],
        },
    );
    let browser = Browser::start_with(1280, 800, &[]).await;
    let page = Page { server, browser };
    page.login().await;

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
