//! "MCP servers": the dialog from the sessions sidebar lists the config's servers and
//! the user's own, adds one (its secret never shown again), probes it (a small stdio
//! server in the user's workspace root, where a user's own server runs; the e2e tests
//! probe the real server-everything), shows a refusal in the form, and removes it; the
//! new-session dialog's choice reaches `session.create`.

use std::sync::Arc;

use serde_json::json;
use tandem_tests::TempDir;

use crate::Page;

/// The text of the listed server `name`, once it shows.
async fn listed(page: &Page, name: &str) -> String {
    page.browser
        .wait(
            &format!("the server {name} listed"),
            &format!(
                "(() => {{ const i = document.querySelector('dialog.mcp li[data-server={}]'); return i && i.textContent; }})()",
                json!(name)
            ),
        )
        .await
        .as_str()
        .unwrap()
        .to_string()
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn mcp_servers_are_added_probed_chosen_and_removed_from_the_page() {
    let dir = Arc::new(TempDir::new("browser-mcp"));
    let root = dir.path().to_path_buf();
    let config = dir.path().join("tandem.toml");
    std::fs::write(&config, "[mcp_servers.shared]\ncommand = \"/bin/false\"\n").unwrap();
    let config = config.display().to_string();
    let page = Page::open_in(dir, &["--config", &config]).await;

    page.press("#sessions-nav", "MCP servers").await;
    let dialog = page.dialog("mcp").await;
    let shared = listed(&page, "shared").await;
    assert!(
        shared.contains("config") && shared.contains("/bin/false"),
        "{shared}"
    );

    // A refusal shows in the form, which keeps what was typed.
    page.set_value(&format!("{dialog} input[name=name]"), "bad name")
        .await;
    page.set_value(&format!("{dialog} input[name=command]"), "node")
        .await;
    page.press(&dialog, "Add").await;
    let refused = page
        .browser
        .wait(
            "the refusal",
            "(() => { const e = document.querySelector('dialog.mcp form .error-text'); return e && e.textContent; })()",
        )
        .await;
    assert!(refused.as_str().unwrap().contains("1 to 40"), "{refused}");

    // Added with a secret, which the list names but never shows. A user's server runs
    // as their agents would, in their workspace root: there it is.
    let tools = root.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let js = tools.join("ping.mjs");
    std::fs::write(&js, tandem_tests::mcp_ping::PING_SERVER).unwrap();
    page.set_value(&format!("{dialog} input[name=name]"), "everything")
        .await;
    page.set_value(
        &format!("{dialog} textarea[name=args]"),
        &js.display().to_string(),
    )
    .await;
    page.set_value(
        &format!("{dialog} textarea[name=env]"),
        "API_TOKEN=s3cret-value",
    )
    .await;
    page.press(&dialog, "Add").await;
    let mine = listed(&page, "everything").await;
    assert!(
        mine.contains("yours") && mine.contains("API_TOKEN") && !mine.contains("s3cret-value"),
        "{mine}"
    );
    page.press(&dialog, "Probe everything").await;
    let probed = page
        .browser
        .wait(
            "the probe's answer",
            "(() => { const p = document.querySelector('dialog.mcp li[data-server=\"everything\"] .mcp-probe'); return p && /Reachable|Not reachable/.test(p.textContent) && p.textContent; })()",
        )
        .await;
    let probed = probed.as_str().unwrap();
    assert!(
        probed.starts_with("Reachable") && probed.contains("ping"),
        "{probed}"
    );
    page.check_view("mcp-servers").await;
    page.press(&dialog, "Close").await;

    // The new-session dialog offers both, ticked; untick the config's.
    page.press("header.top", "New session").await;
    page.browser
        .wait(
            "the MCP choice",
            "document.querySelectorAll('fieldset.mcp-choice:not([hidden]) input[type=checkbox]:checked').length === 2",
        )
        .await;
    page.browser
        .exec(
            "document.querySelector('fieldset.mcp-choice input[value=\"shared\"]').click();",
            vec![],
        )
        .await;
    page.set_value("dialog.create input[name=title]", "with everything")
        .await;
    page.press("dialog.create", "Create").await;
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
    let (_, info) = page.server.get(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(info["mcpServers"], json!(["everything"]), "{info}");

    // Removed: gone from the list; the config's has no Remove.
    page.press("#sessions-nav", "MCP servers").await;
    let dialog = page.dialog("mcp").await;
    listed(&page, "everything").await;
    page.press(&dialog, "Remove everything").await;
    page.browser
        .wait(
            "the server removed",
            "!document.querySelector('dialog.mcp li[data-server=\"everything\"]') && !!document.querySelector('dialog.mcp li[data-server=\"shared\"]')",
        )
        .await;
    assert_eq!(
        page.count("dialog.mcp li[data-server=\"shared\"] button.danger")
            .await,
        0
    );
}
