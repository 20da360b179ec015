//! The Terminal panel: a session's shell drawn by xterm.js on the terminal's socket.
//! Typed commands run, the panel's size reaches the shell (`tput cols`), the page's
//! policy stays unbroken (xterm.js's styles arrive as constructed style sheets), and
//! after a reload the scrollback is there.

use serde_json::{json, Value};

use crate::{create_session, Page};

/// The text of the shown terminal's rows in session `id`'s panel.
async fn rows(page: &Page, id: &str) -> String {
    page.browser
        .exec(
            "const s = document.querySelector(arguments[0]); \
             return s ? [...s.querySelectorAll('.xterm-rows > div')].map((d) => d.textContent).join('\\n') : '';",
            vec![json!(format!("#terminal-{id} .term-screen:not([hidden])"))],
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Waits until a row of the shown terminal is exactly `line` (trailing blanks aside).
async fn wait_line(page: &Page, id: &str, line: &str) {
    page.browser
        .wait(
            &format!("the terminal line {line:?}"),
            &format!(
                "[...document.querySelectorAll({})].some((d) => d.textContent.trimEnd() === {})",
                json!(format!(
                    "#terminal-{id} .term-screen:not([hidden]) .xterm-rows > div"
                )),
                json!(line)
            ),
        )
        .await;
}

/// Types `text` into the shown terminal and presses Enter.
async fn type_line(page: &Page, id: &str, text: &str) {
    page.browser
        .type_into(
            &format!("#terminal-{id} .term-screen:not([hidden]) .xterm-helper-textarea"),
            &format!("{text}\u{E007}"),
        )
        .await;
}

/// The number the shell printed after `MARK=` the last time.
async fn printed(page: &Page, id: &str, mark: &str) -> u64 {
    let text = rows(page, id).await;
    let at = text.rfind(&format!("{mark}=")).unwrap() + mark.len() + 1;
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// Asks the shell for its width, marked `mark`, until it answers.
async fn columns(page: &Page, id: &str, mark: &str) -> u64 {
    type_line(page, id, &format!("echo {mark}=$(tput cols)")).await;
    for _ in 0..100 {
        if regex_like(&rows(page, id).await, mark) {
            return printed(page, id, mark).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no {mark}= line in:\n{}", rows(page, id).await);
}

/// Asks the shell for its width (marks `MARK0`, `MARK1`, …) until `done` holds of the
/// answer, at most 50 times; answers the last.
async fn columns_until(page: &Page, id: &str, mark: &str, done: impl Fn(u64) -> bool) -> u64 {
    let mut cols = 0;
    for n in 0..50 {
        cols = columns(page, id, &format!("{mark}{n}")).await;
        if done(cols) {
            break;
        }
    }
    cols
}

/// The session's terminals, as REST lists them.
async fn terminals(page: &Page, id: &str) -> Vec<Value> {
    let (status, body) = page
        .server
        .get(&format!("/api/v1/sessions/{id}/terminals"))
        .await;
    assert_eq!(status, 200, "{body}");
    body["terminals"].as_array().cloned().unwrap()
}

/// True when `text` holds `MARK=` followed by a digit.
fn regex_like(text: &str, mark: &str) -> bool {
    text.match_indices(&format!("{mark}="))
        .any(|(i, _)| text[i + mark.len() + 1..].starts_with(|c: char| c.is_ascii_digit()))
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_terminal_runs_fits_its_panel_and_keeps_its_scrollback() {
    let page = Page::open(&[]).await;
    let id = create_session(&page, "terminal").await;
    page.open_session(&id).await;
    let scope = format!(".chat[data-session=\"{id}\"]");
    page.press(&scope, "Terminal").await;
    page.browser
        .wait(
            "the shell's prompt",
            &format!(
                "(() => {{ const s = document.querySelector('#terminal-{id} .term-screen:not([hidden]) .xterm-rows'); return s && s.textContent.trim().length > 0; }})()"
            ),
        )
        .await;

    type_line(&page, &id, "echo $((6*7))").await;
    wait_line(&page, &id, "42").await;
    // xterm.js's own row styles apply (as constructed sheets), and nothing broke the
    // page's policy.
    let display = page
        .browser
        .exec(
            "return getComputedStyle(document.querySelector(arguments[0])).display;",
            vec![json!(format!("#terminal-{id} .xterm-rows > div span"))],
        )
        .await;
    assert_eq!(display, "inline-block");
    let listed = terminals(&page, &id).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["clients"], 1, "{listed:?}");

    // The panel's width is the shell's: another window width (where the panel covers
    // the conversation), other columns; and back.
    let wide = columns(&page, &id, "WIDE").await;
    page.browser.resize(900, 800).await;
    let after = columns_until(&page, &id, "AFTER", |c| c != wide).await;
    assert_ne!(
        after, wide,
        "the shell kept {wide} columns in a 900 px window"
    );
    page.browser.resize(1280, 800).await;
    let back = columns_until(&page, &id, "BACK", |c| c == wide).await;
    assert_eq!(back, wide, "the shell did not get its {wide} columns back");

    crate::check_view(&page.browser, "terminal").await;

    // After a reload the panel finds the terminal and shows what it printed.
    page.reload().await;
    page.open_session(&id).await;
    page.press(&scope, "Terminal").await;
    wait_line(&page, &id, "42").await;
    let listed = terminals(&page, &id).await;
    assert_eq!(listed.len(), 1, "no second terminal: {listed:?}");

    // Closing its tab ends it.
    page.press(&format!("#terminal-{id}"), "Close Shell 1")
        .await;
    page.browser
        .wait(
            "the tab to go",
            &format!("!document.querySelector('#terminal-{id} .term-tab')"),
        )
        .await;
    let listed = terminals(&page, &id).await;
    assert_eq!(listed, Vec::<Value>::new());
}
