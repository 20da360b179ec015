//! The browser page: `http/web/` embedded into the binary at compile time and served
//! at `/` and `/assets/NAME`. No build step and no runtime download: what the binary
//! was built with is what the browser gets.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

/// Scripts and styles come only from this origin; nothing inline, no `eval`, no
/// frames, and the socket may reach only this server. The agent's text is rendered
/// with DOM APIs, and this policy is the second wall if that ever slips.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; object-src 'none'; \
base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// One embedded file: its name under `/assets/`, content type and bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $ctype:expr) => {
        Asset {
            name: $name,
            content_type: $ctype,
            body: include_bytes!(concat!("../web/", $name)),
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
    asset!("wire.js", JS),
    #[cfg(feature = "test-hooks")]
    asset!("hooks.js", JS),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
];

static INDEX: &[u8] = include_bytes!("../web/index.html");

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

/// Mounts `/` and `/assets/{name}`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(index))
        .route("/assets/{name}", web::get().to(asset));
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
    }
}
