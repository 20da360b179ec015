//! Web Push in the page's service worker (sw.js): a message delivered through the
//! DevTools protocol, as a push service would deliver it, shows a notification with
//! the session's title, what waits, its tag and (for a permission) the "Allow once"
//! and "Deny" actions; a newer message of the same session replaces the older one.
//! A click on an action reaches a page of the origin, which answers the permission
//! with the same request its card sends; a page opened for an answer finds it only in
//! the worker's own storage, never in its address.

use serde_json::{json, Value};
use tandem_tests::Browser;

use crate::{create_session, Page};

/// The notifications the page's worker registration shows now.
const NOTIFICATIONS: &str = r#"
const done = arguments[arguments.length - 1];
navigator.serviceWorker.ready
  .then((r) => r.getNotifications())
  .then((ns) => done(ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data,
    renotify: n.renotify, actions: n.actions.map((a) => ({ action: a.action, title: a.title })) }))),
    (e) => done({ error: String(e) }));
"#;

/// The payload the server sends for a permission that waits.
fn needs_input(id: &str, request_id: &str) -> Value {
    json!({
        "sessionId": id,
        "title": "Clean the build",
        "body": "Permission: Bash(rm -rf build)",
        "attention": "needs_input",
        "url": format!("/#/s/{id}"),
        "requestId": request_id,
        "tag": format!("tandem-{id}"),
    })
}

async fn notifications(b: &Browser) -> Value {
    b.exec_async(NOTIFICATIONS, vec![]).await
}

/// Delivers `data` as a push message to the worker registration `registration`.
async fn push(b: &Browser, base: &str, registration: &str, data: &str) {
    b.cdp(
        "ServiceWorker.deliverPushMessage",
        json!({"origin": base, "registrationId": registration, "data": data}),
    )
    .await;
}

/// Delivers `data` to `registration` until the notifications satisfy `pred`: a
/// DevTools delivery is now and then lost under load (it has no retry), and every
/// message here is shown under a tag, so delivering it again changes nothing else.
async fn deliver(
    b: &Browser,
    (base, registration): (&str, &str),
    data: &str,
    what: &str,
    pred: &str,
) -> Value {
    for _ in 0..4 {
        push(b, base, registration, data).await;
        if let Some(ns) = notifications_within(b, pred, 30).await {
            return ns;
        }
    }
    wait_notifications(b, what, pred).await
}

/// The notifications once they satisfy `pred`, polled `tries` times 100 ms apart.
async fn notifications_within(b: &Browser, pred: &str, tries: usize) -> Option<Value> {
    for _ in 0..tries {
        let ns = notifications(b).await;
        let ok = b
            .exec(
                &format!("const ns = arguments[0]; return !!({pred});"),
                vec![ns.clone()],
            )
            .await;
        if ok == true {
            return Some(ns);
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    None
}

/// Waits until the notifications satisfy `pred` (a JS expression over `ns`).
async fn wait_notifications(b: &Browser, what: &str, pred: &str) -> Value {
    match notifications_within(b, pred, 100).await {
        Some(ns) => ns,
        None => panic!("timed out waiting for {what}: {}", notifications(b).await),
    }
}

/// The id of the page's service worker registration, which the DevTools protocol
/// tells only in events that this client cannot read: a fresh profile's first
/// registration is 0 and the next ones follow. Each candidate gets a probe message
/// naming it (delivering to an id that is no registration does nothing); the probe
/// that shows tells the id, and is closed.
async fn registration_id(b: &Browser, base: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        for candidate in 0..4 {
            let probe = json!({"title": "probe", "body": candidate.to_string(), "tag": "probe"});
            push(b, base, &candidate.to_string(), &probe.to_string()).await;
            // Pacing of this wait-for-state loop (probes go again until one shows or
            // the deadline passes), not a window: a late probe is found next round.
            actix_rt::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        let found = b
            .exec_async(
                "const done = arguments[0];\
                 navigator.serviceWorker.ready.then(r => r.getNotifications({tag: 'probe'}))\
                   .then(ns => { ns.forEach(n => n.close()); done(ns.length ? ns[0].body : null); }, e => done(null));",
                vec![],
            )
            .await;
        if let Some(id) = found.as_str() {
            wait_notifications(b, "the probe to close", "ns.length === 0").await;
            return id.to_string();
        }
    }
    let why = b
        .exec_async(
            "const done = arguments[0]; navigator.serviceWorker.ready.then(r => done({permission: Notification.permission, active: r.active && r.active.state}));",
            vec![],
        )
        .await;
    panic!("no push reached the page's service worker: {why}");
}

/// Runs `expr` in the page's service worker (DevTools protocol: the worker's target,
/// attached through the page's session). Its value is not read; its effects are.
async fn in_worker(b: &Browser, expr: &str) {
    let targets = b.cdp("Target.getTargets", json!({})).await;
    let worker = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["type"] == "service_worker"
                && t["url"].as_str().is_some_and(|u| u.ends_with("/sw.js"))
        })
        .unwrap_or_else(|| panic!("no service worker target: {targets}"))["targetId"]
        .clone();
    let attached = b
        .cdp(
            "Target.attachToTarget",
            json!({"targetId": worker, "flatten": false}),
        )
        .await;
    let message = json!({"id": 1, "method": "Runtime.evaluate", "params": {"expression": expr}});
    b.cdp(
        "Target.sendMessageToTarget",
        json!({"sessionId": attached["sessionId"], "message": message.to_string()}),
    )
    .await;
}

/// Asks in session `id` for Bash with `command`; returns the permission's request id
/// once the agent waits for it.
async fn ask(page: &Page, id: &str, command: &str) -> String {
    let mut watcher = page.ws().await;
    watcher.subscribe(id, 0).await;
    let mut ws = page.ws().await;
    let content = format!(
        "/ask Bash {}\ndone after {command}",
        json!({"command": command})
    );
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": content}))
        .await;
    let frames = watcher
        .recv_until(|v| {
            v["kind"] == "permission_request"
                && v["sessionId"] == id
                && v["input"]["command"] == command
        })
        .await;
    frames.last().unwrap()["requestId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The answers to permissions the page sent.
async fn answers(b: &Browser) -> Value {
    b.exec(
        "return window.__tandem.sent.filter(f => f.type === 'chat.permission-response');",
        vec![],
    )
    .await
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_push_shows_a_notification_and_its_action_answers_the_permission() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let base = page.server.base.clone();
    b.set_permission("notifications", "granted").await;
    b.wait(
        "the service worker to activate",
        "navigator.serviceWorker.controller || null",
    )
    .await;
    // Push delivery goes through the DevTools protocol's ServiceWorker domain.
    b.cdp("ServiceWorker.enable", json!({})).await;
    let id = create_session(&page, "Clean the build").await;
    let request_id = ask(&page, &id, "rm -rf build").await;

    // DevTools attached to the worker keeps it running (as it does for a person
    // debugging it): without that, a message delivered while Chromium stops or
    // starts the idle worker was now and then lost under load (the DevTools
    // delivery has no retry), and the test was flaky.
    in_worker(b, "self.registration.scope").await;
    let registration = registration_id(b, &base).await;
    let first = needs_input(&id, &request_id).to_string();
    let to = (base.as_str(), registration.as_str());
    deliver(b, to, &first, "the first notification", "ns.length === 1").await;
    let ns = notifications(b).await;
    assert_eq!(ns.as_array().unwrap().len(), 1, "{ns}");
    let n = &ns[0];
    assert_eq!(n["title"], "Clean the build", "{n}");
    assert_eq!(n["body"], "Permission: Bash(rm -rf build)", "{n}");
    assert_eq!(n["tag"], format!("tandem-{id}"), "{n}");
    assert_eq!(n["renotify"], true, "{n}");
    assert_eq!(
        n["actions"],
        json!([{"action": "allow", "title": "Allow once"}, {"action": "deny", "title": "Deny"}]),
        "{n}"
    );
    assert_eq!(
        n["data"],
        json!({"url": format!("/#/s/{id}"), "sessionId": id, "requestId": request_id}),
        "{n}"
    );

    // A newer message of the same session (the same tag) replaces it: one remains,
    // the newer one, without actions (nothing to answer).
    let done = json!({
        "sessionId": id, "title": "Clean the build", "body": "Turn ended",
        "attention": "done_unseen", "url": format!("/#/s/{id}"), "tag": format!("tandem-{id}"),
    });
    let ns = deliver(
        b,
        to,
        &done.to_string(),
        "the newer notification",
        "ns.length === 1 && ns[0].body === 'Turn ended'",
    )
    .await;
    assert_eq!(ns[0]["actions"], json!([]), "{ns}");
    assert_eq!(ns[0]["renotify"], false, "{ns}");
    assert_eq!(ns[0]["data"]["requestId"], Value::Null, "{ns}");
    // A message that is not the expected JSON still shows a notice (of its own tag),
    // and a link to another origin is not followed.
    let ns = deliver(b, to, "not json", "the generic notice", "ns.length === 2").await;
    let generic = ns
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["tag"] == "tandem")
        .unwrap_or_else(|| panic!("{ns}"));
    assert_eq!(generic["title"], "tandem");
    assert_eq!(generic["data"]["url"], "/");
    let elsewhere = json!({"sessionId": "other", "title": "x", "url": "https://evil.example/#/s/other", "tag": "tandem-other"});
    let ns = deliver(
        b,
        to,
        &elsewhere.to_string(),
        "the other session's notice",
        "ns.length === 3",
    )
    .await;
    let other = ns
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["tag"] == "tandem-other")
        .unwrap_or_else(|| panic!("{ns}"));
    assert_eq!(other["data"]["url"], "/#/s/other", "{other}");

    // "Allow once", clicked while the page shows the session list: the worker's
    // notificationclick handler (its event made in the worker, as Chromium makes no
    // click through the DevTools protocol) closes the notification and hands the
    // answer to the page, which opens the session and answers through the card.
    deliver(
        b,
        to,
        &first,
        "the permission's notice again",
        &format!("ns.some(n => n.tag === 'tandem-{id}' && n.actions.length === 2)"),
    )
    .await;
    assert_eq!(answers(b).await, json!([]));
    in_worker(
        b,
        &format!(
            "self.registration.getNotifications({{tag: 'tandem-{id}'}}).then(ns => self.dispatchEvent(\
               new NotificationEvent('notificationclick', {{notification: ns[0], action: 'allow'}})))"
        ),
    )
    .await;
    page.wait_text(&id, ".msg.assistant", "allowed Bash").await;
    page.wait_text(&id, ".card.permission.done .card-state", "allowed")
        .await;
    let sent = answers(b).await;
    assert_eq!(
        sent,
        json!([{"type": "chat.permission-response", "sessionId": id, "requestId": request_id, "allow": true}]),
        "allow once: no remember, no mode"
    );
    let hash = b.exec("return location.hash;", vec![]).await;
    assert_eq!(hash, format!("#/s/{id}"));
    wait_notifications(
        b,
        "the clicked notice to close",
        &format!("!ns.some(n => n.tag === 'tandem-{id}')"),
    )
    .await;
}

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn a_page_opened_for_an_answer_sends_it_and_a_forged_address_answers_nothing() {
    let page = Page::open(&[]).await;
    let b = &page.browser;
    let base = page.server.base.clone();
    b.wait(
        "the service worker to activate",
        "navigator.serviceWorker.controller || null",
    )
    .await;
    let id = create_session(&page, "Deploy").await;

    // An address that names an answer, as a link made elsewhere could: nothing is
    // sent, the prompt waits.
    let forged = ask(&page, &id, "make deploy").await;
    b.goto(&format!(
        "{base}/?notice=made-up&answer=allow&requestId={forged}&sessionId={id}#/s/{id}"
    ))
    .await;
    page.wait_text(&id, ".card.permission:not(.done) pre", "make deploy")
        .await;
    b.wait(
        "the notice key to leave the address",
        "!location.search.includes('notice')",
    )
    .await;
    assert_eq!(answers(b).await, json!([]));
    page.wait_text(&id, ".card.permission:not(.done) .card-state", "waiting")
        .await;
    b.click(&format!(
        ".chat[data-session=\"{id}\"] .card.permission:not(.done) .deny"
    ))
    .await;
    page.wait_text(&id, ".msg.assistant", "denied Bash").await;
    // Not a pause to see that nothing comes: once the turn took the click's answer,
    // the page had sent that one alone (a forged answer would be here too, or would
    // have answered the card first).
    assert_eq!(
        answers(b).await,
        json!([{"type": "chat.permission-response", "sessionId": id, "requestId": forged, "allow": false}])
    );

    // "Deny" clicked with no page open: the worker keeps the answer under a one-time
    // key and opens the deep link with it; the page sends the answer, then drops the
    // key from its address and from the worker's cache.
    let request_id = ask(&page, &id, "rm -rf /tmp/x").await;
    b.goto(&format!("{base}/")).await;
    b.wait(
        "the page to connect",
        "document.querySelector('.conn.live')",
    )
    .await;
    let stored = b
        .exec_async(
            "const [sessionId, requestId, done] = arguments;\
             caches.open('tandem-notices').then(c => c.put('/notice/k1', new Response(JSON.stringify({sessionId, requestId, answer: 'deny', at: Date.now()}))))\
               .then(() => done(true), e => done(String(e)));",
            vec![json!(id), json!(request_id)],
        )
        .await;
    assert_eq!(stored, true);
    b.goto(&format!("{base}/?notice=k1#/s/{id}")).await;
    page.wait_text(&id, ".card.permission.done .card-state", "denied")
        .await;
    page.wait_text(&id, ".msg.assistant", "denied Bash").await;
    let sent = answers(b).await;
    assert_eq!(
        sent,
        json!([{"type": "chat.permission-response", "sessionId": id, "requestId": request_id, "allow": false}])
    );
    let left = b
        .exec_async(
            "const done = arguments[0];\
             caches.open('tandem-notices').then(c => c.match('/notice/k1')).then(r => done({kept: !!r, search: location.search}));",
            vec![],
        )
        .await;
    assert_eq!(left, json!({"kept": false, "search": ""}));
}
