//! The agent's slash commands in the composer: typing `/` lists what the session's
//! agent offers (here the fake ACP agent's two), a prefix narrows the list, Tab or a
//! click puts the command in the message box.

use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::{Browser, Server, ServerOptions, TempDir};

use crate::Page;

/// The command names the session's menu shows (none while it is hidden).
async fn shown(page: &Page, id: &str) -> Value {
    page.browser
        .exec(
            "const m = document.querySelector(arguments[0]); \
             return m.hidden ? [] : [...m.querySelectorAll('code')].map((c) => c.textContent);",
            vec![json!(format!("#commands-{id}"))],
        )
        .await
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn typing_a_slash_offers_the_agents_commands() {
    let dir = Arc::new(TempDir::new("browser-commands"));
    let config = dir.path().join("tandem.toml");
    let text = format!(
        "[vendors.fake]\nprotocol = \"acp\"\nbin = {}\n",
        json!(env!("CARGO_BIN_EXE_fake-acp"))
    );
    std::fs::write(&config, text).unwrap();
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            args: vec!["--config".into(), config.display().to_string()],
        },
    );
    let mut ws = server.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "vendor": "fake", "title": "commands"}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    let browser = Browser::start_with(1280, 800, &[]).await;
    let page = Page { server, browser };
    page.login().await;
    page.open_session(&id).await;
    let input = format!(".chat[data-session=\"{id}\"] textarea.input");

    // Before the agent ever ran, it offers nothing.
    page.browser.type_into(&input, "/").await;
    assert_eq!(shown(&page, &id).await, json!([]));
    page.browser
        .exec(
            "const t = document.querySelector(arguments[0]); t.value = ''; \
             t.dispatchEvent(new Event('input'));",
            vec![json!(input)],
        )
        .await;

    // Its first turn starts the agent, which lists its commands: the page hears the
    // `commands` event live.
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": "say hi"}))
        .await;
    page.wait_text(&id, ".line-event", "slash commands").await;
    page.browser.type_into(&input, "/").await;
    assert_eq!(shown(&page, &id).await, json!(["/review", "/init"]));
    let hint = page
        .browser
        .exec(
            "return document.querySelector(arguments[0]).textContent;",
            vec![json!(format!("#commands-{id} li"))],
        )
        .await;
    assert!(
        hint.as_str()
            .unwrap()
            .contains("Review the changes (what to look at)"),
        "{hint}"
    );
    page.browser.type_into(&input, "r").await;
    assert_eq!(shown(&page, &id).await, json!(["/review"]));
    // Tab takes it.
    page.browser.type_into(&input, "\u{E004}").await;
    let value = page
        .browser
        .exec(
            "return document.querySelector(arguments[0]).value;",
            vec![json!(input)],
        )
        .await;
    assert_eq!(value, "/review ");
    assert_eq!(shown(&page, &id).await, json!([]));

    // A reload reads them back from the server.
    page.reload().await;
    page.open_session(&id).await;
    page.browser.type_into(&input, "/i").await;
    let got = page
        .browser
        .wait(
            "the commands after a reload",
            &format!("(() => {{ const m = document.querySelector('#commands-{id}'); return m && !m.hidden && m.textContent; }})()"),
        )
        .await;
    assert!(got.as_str().unwrap().contains("/init"), "{got}");
}
