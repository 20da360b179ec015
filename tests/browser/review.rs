//! Inline review in the page: comments written on lines of the Changes panel's diff,
//! by keyboard (a line's number is a button: Enter starts a comment, Shift+Enter on
//! another line extends it), sent with a summary as `chat.review`; the stored
//! history has the `review` event after the user message that quotes the lines, and
//! the conversation shows the review's card. A review whose line the diff no longer
//! shows is refused with `INVALID_ANCHOR`: the page shows why and keeps the comment.
//! A worktree Worker's Changes panel sends its review "to its Driver" (by keyboard),
//! and the Driver's conversation gets it. "Ask another agent to review" sends
//! `session.review-by` by keyboard: the panel says it started and links the
//! reviewer's session; the review comes back as a card "Review by scripted" with its
//! comments (the scripted reviewer says its prompt back, so the instructions hold
//! its answer), or as a failed card with the reason when the answer holds none; a
//! tree without changes is refused. Real git repositories in the server's workspace
//! root; the scripted agent writes the files (`/write`).

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::checkpoints::tab_to;
use crate::workspaces::{repo, wait_changes, write};
use crate::Page;

const ENTER: &str = "\u{E007}";
const TAB: &str = "\u{E004}";
const SHIFT_ENTER: &str = "\u{E008}\u{E007}";
const CTRL_ENTER: &str = "\u{E009}\u{E007}";

fn chat(id: &str) -> String {
    format!(".chat[data-session=\"{id}\"]")
}

/// A session in a new repository `name` whose `a.txt` holds three lines, after a
/// turn in which the agent replaced them with one ("ONE"), with its Changes panel
/// open and `a.txt`'s diff opened by keyboard.
async fn reviewable_session(page: &Page, name: &str) -> (String, PathBuf) {
    let dir = repo(
        &page.server.dir.path().join(name),
        &[("a.txt", "one\ntwo\nthree\n")],
    );
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": name, "cwd": dir.to_str().unwrap()}))
        .await;
    let id = reply["session"]["id"].as_str().unwrap().to_string();
    page.open_session(&id).await;
    page.send(&id, "/write a.txt ONE").await;
    page.wait_text(&id, ".turn-end", "Turn completed").await;
    page.press(&chat(&id), "Changes").await;
    wait_changes(page, &id, &["a.txt +1 −3"]).await;
    let file = format!("{} .ws-file[data-path='a.txt']", chat(&id));
    page.browser
        .exec(
            "document.querySelector(arguments[0]).focus();",
            vec![json!(file)],
        )
        .await;
    page.browser.chord(ENTER).await;
    page.browser
        .wait(
            "a.txt's diff with a comment button per line",
            &format!(
                "document.querySelectorAll('{} .ws-diff button.ln').length === 4",
                chat(&id)
            ),
        )
        .await;
    (id, dir)
}

/// The focused element's accessible name (its `aria-label`, its label, or its text).
async fn focused(page: &Page) -> Value {
    page.browser
        .exec(
            "const e = document.activeElement; return (e.getAttribute('aria-label') || (e.labels && e.labels[0] ? e.labels[0].textContent : e.textContent)).trim();",
            vec![],
        )
        .await
}

/// Tabs from `a.txt`'s file button to the comment button named `line`, presses Enter
/// and waits for the form's text box to have the focus.
async fn start_comment(page: &Page, id: &str, line: &str) {
    tab_to(
        page,
        &format!("{} .ws-file[data-path='a.txt']", chat(id)),
        line,
    )
    .await;
    page.browser.chord(ENTER).await;
    page.browser
        .wait(
            "the comment form's text box to have the focus",
            "document.activeElement?.classList.contains('review-text')",
        )
        .await;
}

/// The texts of the elements matching `css`.
async fn texts(page: &Page, css: &str) -> Value {
    page.browser
        .exec(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent);",
            vec![json!(css)],
        )
        .await
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn comments_on_diff_lines_are_sent_as_a_review_and_shown_as_its_card() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let (id, _) = reviewable_session(&page, "review").await;
    let c = chat(&id);

    // The first comment, on the added line: Enter opens the form under it.
    start_comment(&page, &id, "Comment on added line 1 of a.txt").await;
    assert_eq!(focused(&page).await, "Comment on a.txt:1");
    b.keys_text("Why upper case?").await;
    page.check_view("review-form").await;
    b.chord(TAB).await;
    assert_eq!(focused(&page).await, "Add comment");
    b.chord(ENTER).await;
    b.wait(
        "the comment under its line, and the focus back on the line",
        &format!(
            "document.querySelector('{c} .dl-notes .review-note')?.textContent.includes('Why upper case?') \
             && document.activeElement?.getAttribute('aria-label') === 'Comment on added line 1 of a.txt'"
        ),
    )
    .await;

    // The second, on removed lines 2 to 3: Enter on line 2, then Shift+Enter on line
    // 3 (Tab walks past the form's buttons to it) extends it; Ctrl+Enter adds it.
    start_comment(&page, &id, "Comment on removed line 2 of a.txt").await;
    tab_to(
        &page,
        &format!("{c} .review-text"),
        "Comment on removed line 3 of a.txt",
    )
    .await;
    b.chord(SHIFT_ENTER).await;
    b.wait(
        "the form to cover old lines 2 to 3",
        "document.activeElement?.labels?.[0]?.textContent === 'Comment on a.txt:2–3 (old)'",
    )
    .await;
    assert_eq!(
        page.count(&format!("{c} .dl.picked")).await,
        2,
        "both lines are marked"
    );
    b.keys_text("Keep these two lines").await;
    b.chord(CTRL_ENTER).await;
    b.wait(
        "two pending comments",
        &format!(
            "document.querySelectorAll('{c} .review-pending li').length === 2 && !document.querySelector('{c} .review-form')"
        ),
    )
    .await;
    assert_eq!(
        texts(&page, &format!("{c} .review-bar h4")).await,
        json!(["Pending review · 2 comments"])
    );
    assert_eq!(
        texts(&page, &format!("{c} .dl-notes .review-at")).await,
        json!(["a.txt:2–3 (old)", "a.txt:1"]),
        "each comment under its last line"
    );
    page.check_view("review-pending").await;

    // A summary, then "Send review (2)" by keyboard.
    b.exec(
        "document.querySelector(arguments[0]).focus();",
        vec![json!(format!("{c} .review-bar textarea"))],
    )
    .await;
    assert_eq!(focused(&page).await, "Review summary (optional)");
    b.keys_text("Please fix both.").await;
    b.chord(TAB).await;
    assert_eq!(focused(&page).await, "Send review (2)");
    b.chord(ENTER).await;
    page.wait_text(
        &id,
        ".review-status",
        "Review sent: 2 comments went to the agent.",
    )
    .await;
    assert_eq!(page.count(&format!("{c} .review-note")).await, 0);
    assert_eq!(page.count(&format!("{c} .review-pending li")).await, 0);

    // The conversation: the user message is the review's card, the text the agent
    // got folded under it.
    let card = format!("{c} .msg.user.review");
    page.wait_text(&id, ".msg.user.review .review-title", "Review · 2 comments")
        .await;
    assert_eq!(
        texts(&page, &format!("{card} .review-summary")).await,
        json!(["Please fix both."])
    );
    assert_eq!(
        texts(&page, &format!("{card} .review-comments li")).await,
        json!([
            "a.txt:1Why upper case?",
            "a.txt:2–3 (old)Keep these two lines"
        ])
    );
    assert_eq!(
        texts(&page, &format!("{card} details.review-message summary")).await,
        json!(["Message sent to the agent"])
    );
    b.wait(
        "the review's turn to end",
        &format!("document.querySelectorAll('{c} .turn-end.completed').length === 2"),
    )
    .await;
    b.exec(
        "document.querySelector(arguments[0]).scrollIntoView();",
        vec![json!(card)],
    )
    .await;
    page.check_view("review-sent").await;

    // The stored history: the review right after its user message, which quotes the
    // commented lines and the comments.
    let events = page.server.all_events(&id).await;
    let at = events
        .iter()
        .position(|e| e["kind"] == "review")
        .unwrap_or_else(|| panic!("no review event in {events:?}"));
    let review = &events[at];
    assert_eq!(
        review["comments"],
        json!([
            {"path": "a.txt", "line": 1, "side": "new", "body": "Why upper case?"},
            {"path": "a.txt", "line": 2, "endLine": 3, "side": "old", "body": "Keep these two lines"},
        ])
    );
    assert_eq!(review["summary"], "Please fix both.");
    let message = &events[at - 1];
    assert_eq!(message["kind"], "user_message", "{message}");
    assert_eq!(message["turnId"], review["turnId"]);
    let text = message["text"].as_str().unwrap();
    for quoted in [
        "Please fix both.",
        "`a.txt` line 1:",
        "+ONE",
        "> Why upper case?",
        "`a.txt` lines 2–3 of the old version:",
        "-two\n-three",
        "> Keep these two lines",
    ] {
        assert!(text.contains(quoted), "{quoted:?} is not in {text}");
    }

    // After a reload the message and its review come in one replay: still a card.
    b.exec("window.beforeReload = true;", vec![]).await;
    page.login().await;
    assert_eq!(b.exec("return !!window.beforeReload;", vec![]).await, false);
    page.open_session(&id).await;
    page.wait_text(&id, ".msg.user.review .review-title", "Review · 2 comments")
        .await;
    assert_eq!(
        page.count(&format!("{c} .msg.user.review details.review-message"))
            .await,
        1
    );
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_review_on_a_line_the_diff_no_longer_shows_is_refused_and_kept() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let (id, dir) = reviewable_session(&page, "stale").await;
    let c = chat(&id);

    start_comment(&page, &id, "Comment on added line 1 of a.txt").await;
    b.keys_text("Upper case?").await;
    b.chord(CTRL_ENTER).await;
    b.wait(
        "the pending comment",
        &format!("document.querySelectorAll('{c} .review-pending li').length === 1"),
    )
    .await;

    // The file goes back to what it was behind the panel's back: the diff has no
    // change to it any more, and the server says which comment lost its line.
    write(&dir, "a.txt", "one\ntwo\nthree\n");
    page.press(&c, "Send review (1)").await;
    page.wait_text(
        &id,
        ".review-error",
        "`a.txt` line 1 (new): the diff has no changes to that file",
    )
    .await;
    let error = b.text(&format!("{c} .review-error")).await;
    assert!(
        error
            .as_str()
            .unwrap()
            .starts_with("Not sent: the diff changed"),
        "{error}"
    );
    assert_eq!(
        texts(&page, &format!("{c} .review-pending .review-at")).await,
        json!(["a.txt:1"]),
        "the comment is kept"
    );
    assert_eq!(
        texts(&page, &format!("{c} .dl-notes .review-body")).await,
        json!(["Upper case?"])
    );
    page.assert_accessible("review refused").await;
    let events = page.server.all_events(&id).await;
    assert!(
        !events.iter().any(|e| e["kind"] == "review"),
        "nothing was sent: {events:?}"
    );
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_review_of_a_workers_changes_is_sent_to_its_driver_by_keyboard() {
    let page = Page::open(&["--worker-workspace", "worktree"]).await;
    let b = &page.browser;
    let dir = repo(&page.server.dir.path().join("lead"), &[("a.txt", "a\n")]);
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": "Lead", "cwd": dir.to_str().unwrap()}))
        .await;
    let d = reply["session"]["id"].as_str().unwrap().to_string();
    page.open_session(&d).await;
    page.send(
        &d,
        r#"/tool send_to_partner {"message": "/write w.txt by the worker"}"#,
    )
    .await;
    page.wait_text(&d, ".delegation-changes", "changed 1 file")
        .await;
    b.wait(
        "the Driver's turn to end",
        &format!("document.querySelector('{} .turn-end.completed')", chat(&d)),
    )
    .await;
    let w = b
        .exec(
            "return document.querySelector('.pane.worker')?.dataset.session;",
            vec![],
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    let (c, cw) = (chat(&d), chat(&w));

    // The Driver's line opens the Worker's Changes panel; w.txt's diff opens there.
    page.press(&c, "Review the Worker’s changes").await;
    wait_changes(&page, &w, &["w.txt +1 −0"]).await;
    b.exec(
        "document.querySelector(arguments[0]).focus();",
        vec![json!(format!("{cw} .ws-file[data-path='w.txt']"))],
    )
    .await;
    b.chord(ENTER).await;
    b.wait(
        "w.txt's diff with its line's comment button",
        &format!("document.querySelectorAll('{cw} .ws-diff button.ln').length === 1"),
    )
    .await;
    tab_to(
        &page,
        &format!("{cw} .ws-file[data-path='w.txt']"),
        "Comment on added line 1 of w.txt",
    )
    .await;
    b.chord(ENTER).await;
    b.wait(
        "the comment form's text box to have the focus",
        "document.activeElement?.classList.contains('review-text')",
    )
    .await;
    b.keys_text("Name it better.").await;
    b.chord(CTRL_ENTER).await;
    b.wait(
        "the pending comment",
        &format!("document.querySelectorAll('{cw} .review-pending li').length === 1"),
    )
    .await;

    // Beside "Send review (1)", by keyboard: "Send to its Driver".
    tab_to(
        &page,
        &format!("{cw} .review-bar textarea"),
        "Send review (1)",
    )
    .await;
    b.chord(TAB).await;
    assert_eq!(focused(&page).await, "Send to its Driver");
    b.chord(ENTER).await;
    page.wait_text(
        &w,
        ".review-status",
        "Review sent: 1 comment went to its Driver.",
    )
    .await;
    assert_eq!(page.count(&format!("{cw} .review-pending li")).await, 0);

    // The Driver's conversation shows the review as its card; the Worker's has none.
    page.wait_text(&d, ".msg.user.review .review-title", "Review · 1 comment")
        .await;
    assert_eq!(
        texts(&page, &format!("{c} .msg.user.review .review-comments li")).await,
        json!(["w.txt:1Name it better."])
    );
    assert_eq!(page.count(&format!("{cw} .msg.user.review")).await, 0);
    b.wait(
        "the review's turn in the Driver to end",
        &format!("document.querySelectorAll('{c} .turn-end.completed').length === 2"),
    )
    .await;
    page.check_view("review-to-driver").await;

    // The stored histories: the Driver's turn names the Worker; the Worker has no review.
    let events = page.server.all_events(&d).await;
    let at = events
        .iter()
        .position(|e| e["kind"] == "review")
        .unwrap_or_else(|| panic!("no review event in {events:?}"));
    assert_eq!(
        events[at]["comments"],
        json!([{"path": "w.txt", "line": 1, "side": "new", "body": "Name it better."}])
    );
    let text = events[at - 1]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Review of your Worker's changes (session {w} on branch "
        )),
        "{text}"
    );
    assert!(
        !page
            .server
            .all_events(&w)
            .await
            .iter()
            .any(|e| e["kind"] == "review"),
        "the Worker got no review"
    );
}

/// In session `id`'s open Changes panel, "Ask another agent to review": the vendor
/// `scripted` chosen, `lines` typed into the instructions (Enter between them), then
/// "Ask for a review" by keyboard; waits for the status saying it started and returns
/// the reviewer's session id (from its link).
async fn ask_scripted_review(page: &Page, id: &str, lines: &[&str]) -> String {
    let b = &page.browser;
    let c = chat(id);
    let select = format!("{c} .review-by select");
    page.set_value(&select, "scripted").await;
    b.exec(
        "document.querySelector(arguments[0]).focus();",
        vec![json!(select)],
    )
    .await;
    assert_eq!(focused(page).await, "Reviewer");
    b.chord(TAB).await;
    assert_eq!(focused(page).await, "Instructions (optional)");
    b.keys_text(&lines.join(ENTER)).await;
    assert_eq!(
        b.exec("return document.activeElement.value;", vec![]).await,
        json!(lines.join("\n")),
        "Enter makes a new line in the instructions"
    );
    b.chord(TAB).await;
    assert_eq!(focused(page).await, "Ask for a review");
    b.chord(ENTER).await;
    page.wait_text(id, ".review-by-status", "Review by scripted started.")
        .await;
    let href = b
        .exec(
            "return document.querySelector(arguments[0])?.getAttribute('href');",
            vec![json!(format!("{c} .review-by-status a"))],
        )
        .await;
    let href = href
        .as_str()
        .unwrap_or_else(|| panic!("no link in the status: {href}"));
    assert_eq!(
        texts(page, &format!("{c} .review-by-status a")).await,
        json!(["Open the review session"])
    );
    let rid = href.strip_prefix("#/s/").unwrap().to_string();
    assert_ne!(rid, id);
    rid
}

/// The first stored `review` event of `id` that an agent wrote, once there is one.
async fn agent_review(page: &Page, id: &str) -> Value {
    tandem_tests::eventually("the reviewer's review", async || {
        page.server
            .all_events(id)
            .await
            .into_iter()
            .find(|e| e["kind"] == "review" && e["reviewer"].is_object())
    })
    .await
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn another_agent_reviews_the_changes_and_its_comments_come_back_as_a_card() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let (id, _) = reviewable_session(&page, "by-agent").await;
    let c = chat(&id);

    // The scripted reviewer says each line of its prompt back: the instructions'
    // fenced block is its answer.
    let answer = json!({"summary": "Looks risky.",
        "comments": [{"path": "a.txt", "line": 1, "body": "Why this?"}]});
    let rid = ask_scripted_review(&page, &id, &["```json", &answer.to_string(), "```"]).await;
    assert_eq!(
        b.exec(
            "return document.querySelector(arguments[0]).value;",
            vec![json!(format!("{c} .review-by textarea"))]
        )
        .await,
        "",
        "the instructions went with the request"
    );
    page.check_view("review-by-started").await;

    // The reviewer: a read-only scripted session that got the diff.
    let (status, info) = page.server.get(&format!("/api/v1/sessions/{rid}")).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["vendor"], "scripted");
    assert_eq!(info["permissionMode"], "plan");

    // Its review comes back: a turn whose message is the card "Review by scripted".
    let card = format!("{c} .msg.user.review");
    page.wait_text(
        &id,
        ".msg.user.review .review-title",
        "Review by scripted · 1 comment",
    )
    .await;
    assert_eq!(
        texts(&page, &format!("{card} .review-comments li")).await,
        json!(["a.txt:1Why this?"])
    );
    assert_eq!(
        texts(&page, &format!("{card} .review-summary")).await,
        json!(["Looks risky."])
    );
    let who = page
        .browser
        .exec(
            "return document.querySelector(arguments[0]).firstChild.textContent;",
            vec![json!(format!("{card} > .who"))],
        )
        .await;
    assert_eq!(
        who, "Reviewer · scripted",
        "the agent wrote it, not the person"
    );
    assert_eq!(page.count(&format!("{card} .review-failed")).await, 0);
    let link = b
        .exec(
            "const a = document.querySelector(arguments[0]); return [a.getAttribute('href'), a.closest('p').textContent];",
            vec![json!(format!("{card} .review-reviewer a"))],
        )
        .await;
    assert_eq!(link[0], format!("#/s/{rid}"), "{link}");
    assert!(
        link[1]
            .as_str()
            .unwrap()
            .starts_with("Written by a scripted agent in the session "),
        "{link}"
    );
    b.wait(
        "the review's turn to end",
        &format!("document.querySelectorAll('{c} .turn-end.completed').length === 2"),
    )
    .await;
    b.exec(
        "document.querySelector(arguments[0]).scrollIntoView();",
        vec![json!(card)],
    )
    .await;
    page.check_view("review-by-card").await;

    let review = agent_review(&page, &id).await;
    assert_eq!(review["reviewer"]["sessionId"], rid.as_str());
    assert_eq!(review["reviewer"]["vendor"], "scripted");
    assert_eq!(review["comments"][0]["body"], "Why this?");
    assert!(review.get("failed").is_none(), "{review}");

    // The card's link opens the reviewer's session, by keyboard.
    b.exec(
        "document.querySelector(arguments[0]).focus();",
        vec![json!(format!("{card} .review-reviewer a"))],
    )
    .await;
    b.chord(ENTER).await;
    b.wait(
        "the reviewer's session",
        &format!("document.querySelector('{} .log')", chat(&rid)),
    )
    .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_review_by_an_agent_without_an_answer_shows_failed_and_a_clean_tree_is_refused() {
    let page = Page::open(&[]).await;
    let b = &page.browser;

    // Nothing changed: the server refuses, and the panel says why.
    let clean = repo(&page.server.dir.path().join("clean"), &[("a.txt", "a\n")]);
    let mut ws = page.ws().await;
    let reply = ws
        .ok(json!({"type": "session.create", "title": "clean", "cwd": clean.to_str().unwrap()}))
        .await;
    let quiet = reply["session"]["id"].as_str().unwrap().to_string();
    page.open_session(&quiet).await;
    page.press(&chat(&quiet), "Changes").await;
    page.wait_text(&quiet, ".ws-status", "No changes.").await;
    page.press(&chat(&quiet), "Ask for a review").await;
    page.wait_text(&quiet, ".review-by-error", "has no changes to review")
        .await;
    let error = b.text(&format!("{} .review-by-error", chat(&quiet))).await;
    assert!(
        error.as_str().unwrap().starts_with("Not started: "),
        "{error}"
    );
    assert_eq!(
        page.count(&format!("{} .review-by-status a", chat(&quiet)))
            .await,
        0
    );
    page.assert_accessible("review by refused").await;

    // A change, and a reviewer whose answer holds no review: the card says it failed
    // and why, with no comments.
    let (id, _) = reviewable_session(&page, "no-answer").await;
    let c = chat(&id);
    ask_scripted_review(&page, &id, &["Looks fine to me."]).await;
    let card = format!("{c} .msg.user.review");
    page.wait_text(
        &id,
        ".msg.user.review .review-title",
        "Review by scripted failed",
    )
    .await;
    assert_eq!(
        texts(&page, &format!("{card} .review-failed")).await,
        json!(["✕ Failed: its answer holds no JSON object with `comments`"])
    );
    assert_eq!(
        b.exec(
            "return document.querySelector(arguments[0]).getAttribute('aria-hidden');",
            vec![json!(format!("{card} .review-failed .review-mark"))]
        )
        .await,
        "true",
        "the mark is beside the words, not instead of them"
    );
    assert_eq!(page.count(&format!("{card} .review-comments")).await, 0);
    assert_eq!(
        page.count(&format!("{card} details.review-message")).await,
        0,
        "no turn"
    );
    b.exec(
        "document.querySelector(arguments[0]).scrollIntoView();",
        vec![json!(card)],
    )
    .await;
    page.check_view("review-by-failed").await;

    let review = agent_review(&page, &id).await;
    assert_eq!(review["comments"], json!([]));
    assert!(review.get("turnId").is_none(), "{review}");
    assert!(
        review["failed"]
            .as_str()
            .unwrap()
            .contains("no JSON object"),
        "{review}"
    );
}
