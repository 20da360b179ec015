//! The browser page: `http/web/` embedded into the binary at compile time and served
//! at `/` and `/assets/NAME`. No build step and no runtime download: what the binary
//! was built with is what the browser gets.
//!
//! The page is installable: `/manifest.webmanifest` describes it, and a service worker
//! at `/sw.js` keeps its shell (the page and its assets) so that it opens, saying the
//! server is unreachable, while the server is down. The worker's script starts with the
//! build's hash of every embedded file, so a new binary replaces the kept shell.
//!
//! How the page works. It speaks only the public protocol and never turns server text
//! into HTML: every node is made with `createElement` and text nodes, Markdown
//! included, so an agent's `<script>` is shown as characters; the Content-Security-
//! Policy served here (scripts and styles from this origin only, nothing inline) is a
//! second wall.
//!
//! - A conversation holds a window over its history, not all of it: it subscribes
//!   400 events back, pages older ones in through REST as the reader scrolls up, and
//!   keeps at most 1,200 rendered items. Streamed `text_delta`s are appended to one
//!   text node once per animation frame, and the `assistant_message` that follows
//!   replaces them with rendered Markdown.
//! - Each view remembers the highest `seq` it holds and drops anything at or below it;
//!   after a reconnect (backoff 0.2–3 s) or a `lagged` notice it subscribes again from
//!   that `seq`, so an event is never missed nor shown twice.
//! - The session list is read whole on every (re)connect (`sessions.watch`, then
//!   `sessions.list` pages); an upsert that arrives while paging wins over a page's
//!   older copy.
//! - The page's state is one store (`store.js`): views subscribe to a topic and
//!   re-render only what a change names; the layout is a tagged object chosen from the
//!   route (`#/s/ID`, or `#/s/A/with/B` for two sessions side by side). The queue lives
//!   on the server: the page re-reads it when the session's record changes.
//! - A request with no answer within 15 s fails with `TIMEOUT`.
//! - It is type-checked: `wire.js` holds JSDoc types generated from the request, REST
//!   and event schemas, and `tsc --noEmit --checkJs` runs over the page in the tests,
//!   beside node unit tests (`http/web-tests/`).
//! - No JavaScript library is vendored but xterm.js (loaded only when a Terminal panel
//!   opens): the page needs a Markdown subset, a line diff and DOM helpers, each small,
//!   which is less to audit than any library.
//!
//! `hooks.js` (what the browser tests read) is embedded and loaded only with the
//! `test-hooks` feature; a plain release build has neither the file nor its tag.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

/// Scripts and styles come only from this origin; nothing inline, no `eval`, no
/// frames, and the socket may reach only this server. The agent's text is rendered
/// with DOM APIs, and this policy is the second wall if that ever slips.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; object-src 'none'; \
base-uri 'none'; frame-ancestors 'none'; form-action 'self'; worker-src 'self'; \
manifest-src 'self'";

/// One embedded file: its name under `/assets/`, content type and bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $ctype:expr) => {
        asset!($name, $name, $ctype)
    };
    ($name:literal, $path:literal, $ctype:expr) => {
        Asset {
            name: $name,
            content_type: $ctype,
            body: include_bytes!(concat!("../web/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the page loads. `index.html` is served at `/`.
static ASSETS: &[Asset] = &[
    asset!("app.js", JS),
    asset!("conn.js", JS),
    asset!("chat.js", JS),
    asset!("md.js", JS),
    asset!("rewind.js", JS),
    asset!("checkpoints.js", JS),
    asset!("dom.js", JS),
    asset!("store.js", JS),
    asset!("diff.js", JS),
    asset!("changes.js", JS),
    asset!("overlaps.js", JS),
    asset!("checks.js", JS),
    asset!("scripts.js", JS),
    asset!("review.js", JS),
    asset!("files.js", JS),
    asset!("dialogs.js", JS),
    asset!("attach.js", JS),
    asset!("notify.js", JS),
    asset!("offline.js", JS),
    asset!("push.js", JS),
    asset!("pair.js", JS),
    asset!("wire.js", JS),
    asset!("terminal.js", JS),
    asset!("machine.js", JS),
    asset!("mcp.js", JS),
    asset!("controls.js", JS),
    // xterm.js for the terminal panel, pinned, with its licence (web/vendor/README.md).
    asset!("xterm.mjs", "vendor/xterm.mjs", JS),
    asset!("addon-fit.mjs", "vendor/addon-fit.mjs", JS),
    asset!("xterm.css", "vendor/xterm.css", "text/css; charset=utf-8"),
    asset!(
        "xterm-LICENSE.txt",
        "vendor/xterm-LICENSE.txt",
        "text/plain; charset=utf-8"
    ),
    #[cfg(feature = "test-hooks")]
    asset!("hooks.js", JS),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
    asset!("icon-192.png", "image/png"),
    asset!("icon-512.png", "image/png"),
    asset!("icon-maskable-512.png", "image/png"),
];

static INDEX: &[u8] = include_bytes!("../web/index.html");
static MANIFEST: &[u8] = include_bytes!("../web/manifest.webmanifest");
static SERVICE_WORKER: &[u8] = include_bytes!("../web/sw.js");

/// The page. With the `test-hooks` feature (tests only) it loads `hooks.js` first, so
/// the hooks see the page from its start; a release build has neither the file nor
/// the tag.
fn index_body() -> &'static [u8] {
    #[cfg(feature = "test-hooks")]
    {
        static WITH_HOOKS: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        WITH_HOOKS.get_or_init(|| {
            String::from_utf8_lossy(INDEX)
                .replace(
                    "<script type=\"module\" src=\"/assets/app.js\"></script>",
                    "<script type=\"module\" src=\"/assets/hooks.js\"></script>\n\
                     <script type=\"module\" src=\"/assets/app.js\"></script>",
                )
                .into_bytes()
        })
    }
    #[cfg(not(feature = "test-hooks"))]
    INDEX
}

/// What the service worker keeps: the page, every asset and the manifest. Nothing
/// else (no `/api`, `/ws`, `/mcp`, `/metrics`).
fn shell_paths() -> Vec<String> {
    let mut paths = vec!["/".to_string(), "/manifest.webmanifest".to_string()];
    paths.extend(ASSETS.iter().map(|a| format!("/assets/{}", a.name)));
    paths
}

/// This build's page: a hash (FNV-1a, 64 bits) of every file served to the browser,
/// computed once. It names the service worker's cache.
fn build_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes.iter().chain(&[0xff]) {
                hash ^= u64::from(*b);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(index_body());
        eat(MANIFEST);
        eat(SERVICE_WORKER);
        for a in ASSETS {
            eat(a.name.as_bytes());
            eat(a.body);
        }
        format!("{hash:016x}")
    })
}

/// `/sw.js`: the worker's script behind one line naming the build and the shell.
fn service_worker_body() -> &'static [u8] {
    static BODY: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BODY.get_or_init(|| {
        let shell = serde_json::json!({"build": build_id(), "paths": shell_paths()});
        let mut body = format!("self.TANDEM_SHELL = {shell};\n").into_bytes();
        body.extend_from_slice(SERVICE_WORKER);
        body
    })
}

/// Mounts `/`, `/assets/{name}`, `/manifest.webmanifest` and `/sw.js`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(index))
        .route("/assets/{name}", web::get().to(asset))
        .route("/manifest.webmanifest", web::get().to(manifest))
        // At the root, so the worker's scope is the whole page.
        .route("/sw.js", web::get().to(service_worker));
}

fn page(content_type: &'static str, body: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        // The first load carries the token in the query string; never leak it.
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        // Small files; always revalidate so a new binary is picked up at once.
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}

async fn index() -> HttpResponse {
    page("text/html; charset=utf-8", index_body())
}

async fn manifest() -> HttpResponse {
    page("application/manifest+json", MANIFEST)
}

async fn service_worker() -> HttpResponse {
    page(JS, service_worker_body())
}

async fn asset(name: web::Path<String>) -> HttpResponse {
    match find(&name) {
        Some(a) => page(a.content_type, a.body),
        None => HttpResponse::NotFound()
            .content_type("text/plain; charset=utf-8")
            .body("no such asset"),
    }
}

fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_script_is_javascript_and_unknown_names_are_absent() {
        for a in super::ASSETS {
            if a.name.ends_with(".js") {
                assert_eq!(a.content_type, super::JS);
            }
            assert!(!a.body.is_empty(), "{} is empty", a.name);
        }
        assert!(super::find("../Cargo.toml").is_none());
        assert!(super::find("app.js").is_some());
    }

    #[test]
    fn test_hooks_ship_only_with_their_feature() {
        let html = String::from_utf8_lossy(super::index_body());
        assert_eq!(
            super::find("hooks.js").is_some(),
            cfg!(feature = "test-hooks")
        );
        assert_eq!(html.contains("hooks.js"), cfg!(feature = "test-hooks"));
        for a in super::ASSETS.iter().filter(|a| a.name != "hooks.js") {
            let text = String::from_utf8_lossy(a.body);
            assert!(!text.contains("__tandem"), "{} holds a test hook", a.name);
        }
    }

    #[test]
    fn the_policy_allows_nothing_inline() {
        let csp = super::CONTENT_SECURITY_POLICY;
        assert!(csp.contains("script-src 'self';"));
        assert!(csp.contains("style-src 'self';"));
        assert!(!csp.contains("unsafe"));
        let html = String::from_utf8_lossy(super::INDEX);
        assert!(!html.contains("<script>") && !html.contains(" style="));
        // The service worker and the manifest come from this origin.
        assert!(csp.contains("worker-src 'self'"));
        assert!(csp.contains("manifest-src 'self'"));
    }

    #[test]
    fn the_service_worker_keeps_the_shell_and_nothing_else() {
        let body = String::from_utf8_lossy(super::service_worker_body());
        let (first, rest) = body.split_once('\n').unwrap();
        assert_eq!(rest.as_bytes(), super::SERVICE_WORKER);
        let shell = first
            .strip_prefix("self.TANDEM_SHELL = ")
            .and_then(|s| s.strip_suffix(';'))
            .unwrap();
        let shell: serde_json::Value = serde_json::from_str(shell).unwrap();
        let build = super::build_id();
        assert_eq!(shell["build"], build);
        assert_eq!(build.len(), 16);
        assert!(build.bytes().all(|b| b.is_ascii_hexdigit()));
        let paths: Vec<&str> = shell["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        assert!(paths.contains(&"/") && paths.contains(&"/manifest.webmanifest"));
        for a in super::ASSETS {
            assert!(paths.contains(&format!("/assets/{}", a.name).as_str()));
        }
        for p in &paths {
            assert!(
                *p == "/" || *p == "/manifest.webmanifest" || p.starts_with("/assets/"),
                "the worker would keep {p}"
            );
        }
        assert!(!paths.contains(&"/sw.js"));
    }

    #[test]
    fn the_manifest_names_the_page_and_its_icons() {
        let m: serde_json::Value = serde_json::from_slice(super::MANIFEST).unwrap();
        assert_eq!(m["name"], "tandem");
        assert_eq!(m["start_url"], "/");
        assert_eq!(m["scope"], "/");
        assert_eq!(m["display"], "standalone");
        let icons = m["icons"].as_array().unwrap();
        let mut sizes = Vec::new();
        for icon in icons {
            let src = icon["src"].as_str().unwrap();
            let a = super::find(src.strip_prefix("/assets/").unwrap()).unwrap();
            assert_eq!(a.content_type, "image/png");
            assert_eq!(icon["type"], "image/png");
            // The PNG's own size (IHDR) is the one the manifest states.
            assert_eq!(&a.body[..8], b"\x89PNG\r\n\x1a\n");
            let w = u32::from_be_bytes(a.body[16..20].try_into().unwrap());
            let h = u32::from_be_bytes(a.body[20..24].try_into().unwrap());
            assert_eq!(icon["sizes"], format!("{w}x{h}"), "{src}");
            sizes.push(w);
        }
        assert!(sizes.contains(&192) && sizes.contains(&512));
        assert!(icons.iter().any(|i| i["purpose"] == "maskable"));
        let html = String::from_utf8_lossy(super::INDEX);
        assert!(html.contains("<link rel=\"manifest\" href=\"/manifest.webmanifest\">"));
        assert!(html.contains("<meta name=\"theme-color\""));
    }
}
