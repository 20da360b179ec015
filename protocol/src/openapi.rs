//! The OpenAPI 3.1 description of the REST API (`GET /api/v1/openapi.json`),
//! generated from the routes the request table's rows declare (`crate::operations`,
//! each operation naming its request in `x-tandem-request`), the few that are not
//! requests, and the JSON Schemas `schemars` derives from the
//! very types the handlers read and write, so it cannot drift from them silently:
//! `protocol/schemas/openapi.json` is its snapshot, and a test calls every route it
//! lists and checks the answers against it.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use crate::error::ErrorBody;
use crate::rest::{Health, UploadInfo};

/// A string the server can use: no NUL (the path and query of a request are refused
/// with 400 when they hold one, or bytes that are not UTF-8).
pub(crate) const TEXT: &str = r#"{"type": "string", "pattern": "^[^\\u0000]*$"}"#;

/// [`TEXT`], not empty.
pub(crate) const NAME: &str = r#"{"type": "string", "pattern": "^[^\\u0000]+$"}"#;

/// [`TEXT`], and not only blank (the server trims a file's `path` to see whether it
/// names one): one character outside [`crate::content::BLANK`], spelled out here
/// because this is JSON text (a test checks that the two agree).
pub(crate) const FILE: &str = r#"{"type": "string", "pattern": "^[^\\u0000]*[^\\u0000\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000]*$"}"#;

/// The `path` of the files routes: what the server does with one it cannot use.
pub(crate) const FILE_PATH: &str = "a file's path relative to the working directory, each name at most 255 bytes (a longer one is 400 `INVALID_ARGUMENT`); an absolute path, `..` above the top, `.git` or the server's own data is 403 `PATH_OUTSIDE_WORKSPACE`; nothing there, or not a regular file, is 404 `NO_SUCH_FILE`";

/// The `path` of a file to save.
pub(crate) const SAVE_PATH: &str = "a file's path relative to the working directory, each name at most 255 bytes (a longer one is 400 `INVALID_ARGUMENT`); an absolute path, `..` above the top, `.git`, the server's own data or a path through a symbolic link is 403 `PATH_OUTSIDE_WORKSPACE`; a directory on the way that does not exist is 404 `NO_SUCH_FILE`; a directory (or anything but a regular file) at the path is 409 `CONFLICT`";

/// The `path` of a directory listing.
pub(crate) const DIR_PATH: &str = "a directory relative to the working directory (leading and trailing `/` ignored; absent or empty: the top), each name at most 255 bytes (a longer one is 400 `INVALID_ARGUMENT`); `..` above the top, `.git` or the server's own data is 403 `PATH_OUTSIDE_WORKSPACE`; nothing there, or not a directory, is 404 `NO_SUCH_FILE`";

/// A schema maker: registers the type's definitions and returns a `$ref` to it.
pub(crate) type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

pub(crate) fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// This document itself.
fn any_object(_: &mut SchemaGenerator) -> Schema {
    Schema::try_from(json!({"type": "object"})).unwrap_or_default()
}

/// How a body travels.
pub enum Media {
    /// JSON of this schema.
    Json(SchemaFn),
    /// A file's raw bytes, with the file's own media type as `Content-Type`.
    Bytes,
}

/// One route of the REST API.
pub struct Route {
    /// `get`, `post`, `patch`, `delete`.
    pub method: &'static str,
    /// Under `/api/v1`, with `{name}` path parameters.
    pub path: &'static str,
    /// What it does.
    pub summary: &'static str,
    /// The body it takes, if any.
    pub body: Option<Media>,
    /// The status of a successful answer.
    pub status: u16,
    /// What a successful answer holds.
    pub answer: Media,
    /// Query parameters: name, description, JSON Schema (as JSON text) and whether
    /// it is required.
    pub query: &'static [(&'static str, &'static str, &'static str, bool)],
    /// Header parameters the route reads, as `query`.
    pub headers: &'static [(&'static str, &'static str, &'static str, bool)],
    /// Answered without a token.
    pub public: bool,
    /// The request of the table (`crate::operations`) the route runs, if any.
    pub request: Option<&'static str>,
}

macro_rules! route {
    ($m:literal $p:literal, $s:literal, $body:expr, $status:literal, $ans:expr) => {
        route!($m $p, $s, $body, $status, $ans, &[], false)
    };
    ($m:literal $p:literal, $s:literal, $body:expr, $status:literal, $ans:expr, $q:expr, $public:literal) => {
        Route {
            method: $m,
            path: $p,
            summary: $s,
            body: Option::<SchemaFn>::map($body, Media::Json),
            status: $status,
            answer: Media::Json($ans),
            query: $q,
            headers: &[],
            public: $public,
            request: None,
        }
    };
}
pub(crate) use route;

/// Every REST route: the few that are not requests of the table (health, this
/// document, the bytes of uploads), then those the table's rows declare.
pub fn routes() -> Vec<Route> {
    let mut routes = vec![
        route!("get" "/health", "Liveness and version.", None, 200, of::<Health>, &[], true),
        route!("get" "/openapi.json", "This description.", None, 200, any_object, &[], true),
        // The phone has no token yet: the one-time code is its proof.
        route!("post" "/devices/pair", "Exchange a one-time pairing code for a device token of the code's user (no token needed; a code works once, for 5 minutes).", Some(of::<crate::devices::PairDeviceBody>), 201, of::<crate::devices::PairDeviceResult>, &[], true),
        Route {
            method: "post",
            path: "/uploads",
            summary: "Store one file for later messages: its raw bytes as the body, its media type as `Content-Type` (the one POST that is not JSON).",
            body: Some(Media::Bytes),
            status: 201,
            answer: Media::Json(of::<UploadInfo>),
            query: &[("name", "the file's name (path components are dropped)", TEXT, false)],
            headers: &[],
            public: false,
            request: None,
        },
        Route {
            method: "get",
            path: "/uploads/{uploadId}",
            summary: "The bytes of the caller's own upload, with its `Content-Type` (images inline, anything else as a download).",
            body: None,
            status: 200,
            answer: Media::Bytes,
            query: &[],
            headers: &[],
            public: false,
            request: None,
        },
        Route {
            method: "get",
            path: "/sessions/{id}/uploads/{uploadId}",
            summary: "The bytes of an upload used in the session, for whoever may read the session.",
            body: None,
            status: 200,
            answer: Media::Bytes,
            query: &[],
            headers: &[],
            public: false,
            request: None,
        },
    ];
    // Every other route is a request's, declared on its row of the request table.
    routes.extend(
        crate::operations::ClientRequest::rest_routes()
            .into_iter()
            .map(|(name, route)| Route {
                request: Some(name),
                ..route
            }),
    );
    routes
}

/// A body's `content`: JSON of its schema, or bytes of any media type (OpenAPI 3.1
/// describes raw bytes by their media type, with no schema).
fn content(media: &Media, generator: &mut SchemaGenerator) -> Value {
    match media {
        Media::Json(schema) => json!({"application/json": {"schema": schema(generator)}}),
        Media::Bytes => json!({"*/*": {}}),
    }
}

/// A JSON Schema written as JSON text in the route table.
fn parse(schema: &str) -> Value {
    serde_json::from_str(schema).unwrap_or_else(|_| json!({}))
}

/// The error statuses `r` answers with, each with an `{error: {code, message}}` body:
/// those every route of its kind has, and those of its own rules.
fn error_statuses(r: &Route) -> Vec<u16> {
    let mut statuses = vec![403, 500];
    if !r.public {
        statuses.push(401);
    }
    let has_input = r.body.is_some() || !r.query.is_empty() || r.path.contains('{');
    if has_input {
        statuses.push(400);
    }
    if r.path.contains('{') {
        // An unknown id; in a cluster, a session on a node that is gone.
        statuses.extend([404, 503]);
    }
    if r.body.is_some() {
        // A body too large, one that stops arriving, or not declared JSON.
        statuses.extend([408, 413, 415]);
    }
    statuses.extend(own_statuses(r.method, r.path));
    statuses.sort_unstable();
    statuses.dedup();
    statuses
}

/// The error statuses of route `method` `path`'s own rules, beyond those of its kind.
fn own_statuses(method: &str, path: &str) -> &'static [u16] {
    // 422: a request the document allows, refused for a fact of this server the
    // document cannot know (its vendors, users, nodes, disk, clock, a history's
    // turns, the bytes of a file); the code and message say which.
    match (method, path) {
        ("post", "/sessions") => &[404, 409, 422, 429, 503],
        ("patch", "/sessions/{id}") => &[409, 422],
        ("delete", "/sessions/{id}") => &[409],
        ("post", "/sessions/{id}/messages") => &[409, 422, 429],
        ("post", "/sessions/{id}/edit-send") => &[409, 422],
        // 409: a turn runs, or no diff to review; 422: a line the diff lacks.
        ("post", "/sessions/{id}/review") => &[409, 422],
        // As a creation: 409 no diff, 422 an unknown vendor, 429 the owner's limit.
        ("post", "/sessions/{id}/review-by") => &[409, 422, 429, 503],
        ("post", "/sessions/{id}/interrupt") => &[409],
        ("post", "/sessions/{id}/schedules") => &[422, 429],
        // 409: a turn runs or a loop already does; 422: a check that is not exactly
        // one of a command and a judge, a judge's vendor this server lacks.
        ("post", "/sessions/{id}/loop") => &[409, 422],
        // 409: no loop runs.
        ("delete", "/sessions/{id}/loop") => &[409],
        ("delete", "/sessions/{id}/schedules/{scheduleId}") => &[409],
        ("post", "/sessions/{id}/handoff") => &[409, 422, 429],
        // As a creation, and 422 for an anchor or a checkpoint the history lacks.
        ("post", "/sessions/{id}/fork") => &[409, 422, 429, 503],
        ("get", "/sessions/{id}/changes")
        | ("get", "/sessions/{id}/changes/diff")
        | ("post", "/sessions/{id}/merge")
        | ("post", "/sessions/{id}/discard")
        | ("post", "/sessions/{id}/rebase") => &[409],
        // 409: a turn runs; 422: the repository's .tandem/worktree.toml is unusable.
        ("post", "/sessions/{id}/check") => &[409, 422],
        // 409: a discarded worktree; 422: no run script, or an unusable settings file.
        ("post", "/sessions/{id}/run") => &[409, 422],
        // 409: a turn runs, no worktree, the remote refused; 422: no such remote.
        ("post", "/sessions/{id}/push") => &[409, 422],
        // 409: a turn runs, or no repository; 422: a turn without a checkpoint.
        ("post", "/sessions/{id}/restore") => &[409, 422],
        // 409: a worktree session whose worktree was discarded has no files.
        ("get", "/sessions/{id}/files") => &[409],
        ("get", "/sessions/{id}/files/content") => &[409, 413, 415],
        ("put", "/sessions/{id}/files/content") => &[409, 412],
        // 409: a worktree session whose worktree was discarded; 429: the owner's
        // --max-terminals.
        ("post", "/sessions/{id}/terminals") => &[409, 429],
        // 404: no such transcript under the caller's roots; 422: a vendor this server
        // lacks, a transcript over 256 MiB; 429: the owner's session limit.
        ("post", "/external-sessions/import") => &[404, 422, 429],
        ("post", "/pairs") => &[404, 409, 422, 429, 503],
        ("post", "/uploads") => &[422, 429],
        // 422: keys that are not a P-256 point, an endpoint that is not a URL; 429:
        // the user's 20 devices.
        ("post", "/push/subscriptions") => &[422, 429],
        // 401: a pairing code unknown, used or expired; 429: the user's 20 devices.
        ("post", "/devices/pair") => &[401, 429],
        // 409: a name taken (the config's, one of the caller's, `tandem`); 429: the
        // caller's 32.
        ("post", "/mcp-servers") => &[409, 429],
        // 409: one the config declares.
        ("delete", "/mcp-servers/{name}") => &[409],
        _ => &[],
    }
}

/// What an error status means here (the codes are in docs/PROTOCOL.md).
fn error_description(status: u16) -> &'static str {
    match status {
        400 => "bad input, against a rule this document states: a value out of range, of the wrong type, missing or unknown (`INVALID_ARGUMENT`), a body that is not a JSON object (`INVALID_JSON`), a path or query with a NUL byte or bytes that are not UTF-8",
        401 => "no valid token (`UNAUTHORIZED`), before anything else of the request is looked at",
        403 => "not the caller's to do (`ACCESS_DENIED`, `TOOL_NOT_AVAILABLE`), a path outside the working directory (`PATH_OUTSIDE_WORKSPACE`), or a request from another web origin or host (`ORIGIN_NOT_ALLOWED`, `HOST_NOT_ALLOWED`)",
        404 => "an id in the path (or the Driver named by `POST /pairs`) names nothing the caller may see, or the file asked for is not there (`SESSION_NOT_FOUND`, `NO_SUCH_*`, `NOT_FOUND`, `NO_SUCH_FILE`)",
        408 => "the body stopped arriving (`REQUEST_TIMEOUT`)",
        409 => "well formed, but the target's state does not allow it now (`CONFLICT`, `RUN_IN_PROGRESS`, `NO_ACTIVE_RUN`, `NOT_A_GIT_REPOSITORY`, ...)",
        412 => "`If-Match` does not name the file's current content, or is missing for a file that exists (`PRECONDITION_FAILED`)",
        413 => "the body, an attachment or the file is too large (`FRAME_TOO_LARGE`, `ATTACHMENT_TOO_LARGE`, `FILE_TOO_LARGE`)",
        415 => "the body is not declared `application/json` (`UNSUPPORTED_MEDIA_TYPE`), or the file is not UTF-8 text (`BINARY_FILE`)",
        422 => "allowed by this document, but not something this server can do, for a fact of its configuration, disk, clock or history that no schema can state: a vendor it does not have (`VENDOR_NOT_INSTALLED`), an upload the caller never made (`NO_SUCH_UPLOAD`), bytes that are not what they are declared to be or an image to a vendor that takes none (`INVALID_ATTACHMENT`, `ATTACHMENT_NOT_SUPPORTED`), an anchor that is not a user message of an ended turn (`INVALID_ANCHOR`), a turn without a checkpoint (`NO_SUCH_CHECKPOINT`), a vendor that cannot rewind (`REWIND_NOT_SUPPORTED`), a working directory outside the caller's roots, a node or user it does not have, a base ref with no commit, a time before 1970 or more than 365 days ahead (`INVALID_ARGUMENT`)",
        429 => "a count limit is reached (`LIMIT_EXCEEDED`)",
        503 => "cluster only: the session's node is unavailable (`NODE_UNAVAILABLE`)",
        _ => "the server failed (`INTERNAL`)",
    }
}

/// The path, query and header parameters of route `r`.
fn parameters(r: &Route) -> Vec<Value> {
    let mut parameters: Vec<Value> = r
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": parse(NAME)}))
        .collect();
    parameters.extend(r.query.iter().map(|(name, what, schema, required)| {
        json!({"name": name, "in": "query", "required": required, "description": what,
               "schema": parse(schema)})
    }));
    parameters.extend(r.headers.iter().map(|(name, what, schema, required)| {
        json!({"name": name, "in": "header", "required": required, "description": what,
               "schema": parse(schema)})
    }));
    parameters
}

/// Route `r`'s responses: its success, and each error status with the `error` body.
fn responses(r: &Route, error: &Schema, generator: &mut SchemaGenerator) -> Map<String, Value> {
    let mut responses = Map::new();
    responses.insert(
        r.status.to_string(),
        json!({"description": "success", "content": content(&r.answer, generator)}),
    );
    for status in error_statuses(r) {
        responses.insert(
            status.to_string(),
            json!({
                "description": error_description(status),
                "content": {"application/json": {"schema": error}}
            }),
        );
    }
    responses
}

/// The OpenAPI 3.1 document.
pub fn document() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.definitions_path = "/components/schemas".into();
        })
        .into_generator();
    let error = generator.subschema_for::<ErrorBody>();
    let mut paths: Map<String, Value> = Map::new();
    for r in routes() {
        let parameters = parameters(&r);
        let responses = responses(&r, &error, &mut generator);
        let mut op = json!({
            "summary": r.summary,
            "operationId": format!("{}{}", r.method, r.path.replace(['/', '{', '}', '.', '-'], "_")),
            "responses": responses
        });
        if !parameters.is_empty() {
            op["parameters"] = Value::Array(parameters);
        }
        if let Some(body) = &r.body {
            // Required even where the server reads a body of no byte as `{}` (the POSTs
            // that take no fields, `POST /sessions`): such a request must still say
            // `Content-Type: application/json`, and a document that let the body out
            // would let its media type out too (OpenAPI does not describe that header).
            op["requestBody"] = json!({
                "required": true,
                "content": content(body, &mut generator)
            });
        }
        if r.public {
            op["security"] = json!([]);
        }
        if let Some(request) = r.request {
            // The request of the table the route runs (also a WebSocket `type`).
            op["x-tandem-request"] = json!(request);
        }
        let entry = paths
            .entry(format!("/api/v1{}", r.path))
            .or_insert_with(|| json!({}));
        entry[r.method] = op;
    }
    let schemas = generator.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "tandem",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "REST API of a tandem server; the WebSocket protocol is in docs/PROTOCOL.md."
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        },
        "security": [{"bearer": []}]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `protocol/schemas/openapi.json` holds [`document`]; any change to a route or a
    /// body shows as a diff of it. `UPDATE_SNAPSHOTS=1` rewrites it.
    #[test]
    fn openapi_matches_the_snapshot() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/openapi.json");
        let generated = serde_json::to_string_pretty(&document()).unwrap_or_default() + "\n";
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("{e}"));
        }
        let stored = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            stored == generated,
            "the OpenAPI description changed; if that is meant, run with UPDATE_SNAPSHOTS=1 \
             and commit protocol/schemas/openapi.json"
        );
    }

    /// The file `path`'s class of blank characters is the one every other not-blank
    /// text uses.
    #[test]
    fn a_file_path_is_not_blank_as_the_server_trims() {
        let pattern = parse(FILE)["pattern"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let class = format!("[^\\u0000{}]", crate::content::BLANK);
        assert!(pattern.contains(&class), "{pattern} lacks {class}");
    }

    #[test]
    fn every_ref_resolves_and_every_route_has_its_answer() {
        let doc = document();
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = part.split('"').next().unwrap_or_default();
            assert!(schemas.contains_key(name), "dangling $ref {name}");
        }
        assert!(!text.contains("#/$defs"), "a ref outside components");
        for r in routes() {
            for (name, _, schema, _) in r.query {
                assert!(
                    serde_json::from_str::<Value>(schema).is_ok(),
                    "{} {}: the schema of `{name}` is not JSON",
                    r.method,
                    r.path
                );
            }
            let op = &doc["paths"][format!("/api/v1{}", r.path)][r.method];
            assert!(
                op["responses"][r.status.to_string()].is_object(),
                "{} {}",
                r.method,
                r.path
            );
        }
    }
}
