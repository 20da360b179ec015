//! The installable page: the manifest and its icons, the service worker that keeps the
//! page's shell, Chromium's own installability verdict (DevTools protocol), and the
//! page opened with its server down: served by the worker, it says the server is
//! unreachable and retries until the server is back.

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions};

use crate::{check_view, Page};

/// Reads the manifest the page links, checks each icon is a PNG of its stated size
/// (decoded by the browser), and reads the headers of `/sw.js`.
const READ_MANIFEST: &str = r#"
const done = arguments[arguments.length - 1];
(async () => {
  const link = document.querySelector('link[rel=manifest]');
  const resp = await fetch(link.getAttribute('href'));
  const manifest = await resp.json();
  const icons = [];
  for (const icon of manifest.icons) {
    const r = await fetch(icon.src);
    const bytes = new Uint8Array(await r.arrayBuffer());
    const img = new Image();
    img.src = icon.src;
    await img.decode();
    icons.push({
      src: icon.src, sizes: icon.sizes, purpose: icon.purpose || 'any', type: icon.type,
      contentType: r.headers.get('content-type'),
      png: [...bytes.slice(0, 8)].join(',') === '137,80,78,71,13,10,26,10',
      decoded: `${img.naturalWidth}x${img.naturalHeight}`,
    });
  }
  const sw = await fetch('/sw.js');
  const swText = await sw.text();
  return {
    href: link.getAttribute('href'),
    contentType: resp.headers.get('content-type'),
    themeMeta: document.querySelector('meta[name=theme-color]')?.content,
    manifest, icons,
    sw: {
      status: sw.status,
      contentType: sw.headers.get('content-type'),
      cacheControl: sw.headers.get('cache-control'),
      shell: swText.startsWith('self.TANDEM_SHELL = '),
    },
  };
})().then(done, (e) => done({ error: String(e) }));
"#;

/// What the page's service worker is doing and what it keeps.
const WORKER_STATE: &str = r#"
const done = arguments[arguments.length - 1];
(async () => {
  const reg = await navigator.serviceWorker.getRegistration('/');
  const names = await caches.keys();
  const kept = [];
  for (const n of names) {
    const c = await caches.open(n);
    for (const r of await c.keys()) kept.push(new URL(r.url).pathname);
  }
  const nav = performance.getEntriesByType('navigation')[0];
  return {
    controlled: !!navigator.serviceWorker.controller,
    state: navigator.serviceWorker.controller ? navigator.serviceWorker.controller.state : null,
    scriptURL: navigator.serviceWorker.controller ? new URL(navigator.serviceWorker.controller.scriptURL).pathname : null,
    scope: reg ? new URL(reg.scope).pathname : null,
    caches: names,
    kept,
    // The page itself came through the worker.
    viaWorker: nav ? nav.workerStart > 0 : false,
  };
})().then(done, (e) => done({ error: String(e) }));
"#;

#[actix_rt::test]
#[cfg_attr(
    not(has_browser),
    ignore = "chromium, chromedriver or axe-core is not installed"
)]
async fn the_page_installs_and_opens_offline_saying_it_retries() {
    let page = Page::open_process().await;
    let b = &page.browser;

    // The manifest: linked, served as a manifest, with the fields an install needs.
    let m = b.exec_async(READ_MANIFEST, vec![]).await;
    assert!(m["error"].is_null(), "{m}");
    assert_eq!(m["href"], "/manifest.webmanifest", "{m}");
    assert_eq!(m["contentType"], "application/manifest+json", "{m}");
    let manifest = &m["manifest"];
    assert_eq!(manifest["name"], "tandem", "{manifest}");
    assert!(manifest["short_name"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert_eq!(manifest["start_url"], "/");
    assert_eq!(manifest["scope"], "/");
    assert_eq!(manifest["display"], "standalone");
    for key in ["theme_color", "background_color"] {
        assert!(
            manifest[key].as_str().is_some_and(|c| c.starts_with('#')),
            "{key}: {manifest}"
        );
    }
    assert_eq!(m["themeMeta"], manifest["theme_color"], "{m}");
    // Icons of 192 and 512 px, one of them maskable, each a PNG of its stated size.
    let icons = m["icons"].as_array().unwrap();
    for icon in icons {
        assert_eq!(icon["contentType"], "image/png", "{icon}");
        assert_eq!(icon["type"], "image/png", "{icon}");
        assert_eq!(icon["png"], true, "{icon}");
        assert_eq!(icon["decoded"], icon["sizes"], "{icon}");
    }
    let sizes: Vec<&str> = icons.iter().filter_map(|i| i["sizes"].as_str()).collect();
    assert!(
        sizes.contains(&"192x192") && sizes.contains(&"512x512"),
        "{sizes:?}"
    );
    assert!(
        icons.iter().any(|i| i["purpose"] == "maskable"),
        "no maskable icon: {m}"
    );
    // The worker's script: JavaScript, always revalidated, naming this build's shell.
    assert_eq!(m["sw"]["status"], 200, "{m}");
    assert!(
        m["sw"]["contentType"]
            .as_str()
            .is_some_and(|t| t.starts_with("text/javascript")),
        "{m}"
    );
    assert_eq!(m["sw"]["cacheControl"], "no-cache", "{m}");
    assert_eq!(m["sw"]["shell"], true, "{m}");

    // The worker activates; after a reload it controls the page and serves it.
    b.wait(
        "the service worker to activate",
        "navigator.serviceWorker.controller || null",
    )
    .await;
    b.goto(&format!("{}/", page.server.base)).await;
    b.wait(
        "the page to connect",
        "document.querySelector('.conn.live')",
    )
    .await;
    let w = b.exec_async(WORKER_STATE, vec![]).await;
    assert!(w["error"].is_null(), "{w}");
    assert_eq!(w["controlled"], true, "{w}");
    assert_eq!(w["state"], "activated", "{w}");
    assert_eq!(w["scriptURL"], "/sw.js", "{w}");
    assert_eq!(w["scope"], "/", "{w}");
    assert_eq!(w["viaWorker"], true, "{w}");
    // One shell cache, holding the page and its files and nothing of the API.
    let caches: Vec<&str> = w["caches"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(caches.len(), 1, "{w}");
    assert!(caches[0].starts_with("tandem-shell-"), "{w}");
    let kept: Vec<&str> = w["kept"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for p in [
        "/",
        "/assets/app.js",
        "/assets/style.css",
        "/manifest.webmanifest",
    ] {
        assert!(kept.contains(&p), "{p} is not kept: {w}");
    }
    for p in &kept {
        assert!(
            *p == "/" || *p == "/manifest.webmanifest" || p.starts_with("/assets/"),
            "the worker kept {p}: {w}"
        );
    }

    // Chromium's own verdict: nothing stops an install.
    let errors = b.cdp("Page.getInstallabilityErrors", json!({})).await;
    assert_eq!(
        errors["installabilityErrors"],
        json!([]),
        "installability errors: {errors}"
    );
    let app_manifest = b.cdp("Page.getAppManifest", json!({})).await;
    assert_eq!(
        app_manifest["errors"],
        json!([]),
        "manifest errors: {app_manifest}"
    );
    assert!(
        app_manifest["url"]
            .as_str()
            .is_some_and(|u| u.ends_with("/manifest.webmanifest")),
        "{app_manifest}"
    );

    // The same question about a document with no manifest gets errors: the check
    // above is live.
    let base = page.server.base.clone();
    b.goto(&format!("{base}/api/v1/vendors")).await;
    let none = b.cdp("Page.getInstallabilityErrors", json!({})).await;
    assert!(
        none["installabilityErrors"]
            .as_array()
            .is_some_and(|e| !e.is_empty()),
        "{none}"
    );

    // The server goes away; the page is opened again.
    let port = base.rsplit(':').next().unwrap().to_string();
    let Page { server, browser } = page;
    let dir = server.kill();
    browser.goto(&format!("{base}/")).await;
    let b = &browser;
    b.wait(
        "the offline page",
        "document.querySelector('main.offline [role=status]')",
    )
    .await;
    let shown = b
        .exec(
            "const main = document.querySelector('main.offline');\
             return {status: main.querySelector('[role=status]').textContent, text: main.textContent,\
                     title: document.title, controlled: !!navigator.serviceWorker.controller,\
                     retry: [...main.querySelectorAll('button')].map(b => b.textContent)};",
            vec![],
        )
        .await;
    assert_eq!(
        shown["status"], "The server is unreachable. Retrying…",
        "{shown}"
    );
    assert_eq!(shown["controlled"], true, "{shown}");
    assert_eq!(shown["title"], "tandem · offline", "{shown}");
    assert_eq!(shown["retry"], json!(["Retry now"]), "{shown}");
    assert!(
        shown["text"].as_str().unwrap().contains("Next try in"),
        "{shown}"
    );
    // The page came from the worker; the API did not (it is never kept).
    let api = b
        .exec_async(
            "const done = arguments[arguments.length - 1];\
             fetch('/api/v1/vendors').then(r => done('answered ' + r.status), e => done('failed'));",
            vec![],
        )
        .await;
    assert_eq!(api, "failed");
    // It keeps trying: the count of tries goes up by itself.
    b.wait(
        "a second try",
        "document.querySelector('main.offline').textContent.includes('Tried 2 times')",
    )
    .await;
    check_view(b, "offline").await;

    // The server is back: "Retry now" connects the page at once.
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            args: vec!["--port".into(), port],
        },
    );
    let page = Page { server, browser };
    // (A timed try may have got there first: then there is no button left to press.)
    page.browser
        .exec(
            "document.querySelector('main.offline button')?.click();",
            vec![],
        )
        .await;
    page.browser
        .wait(
            "the page to connect again",
            "document.querySelector('.conn.live')",
        )
        .await;
    assert_eq!(
        page.browser
            .exec("return document.title;", vec![])
            .await
            .as_str()
            .map(|t| t.ends_with("tandem")),
        Some(true)
    );
}
