//! Secrets at rest: a private data directory, tokens stored as digests, users listed
//! and revoked, tokens rotated, the admin token shown once, old databases migrated.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tandem_tests::server::server_binary;
use tandem_tests::{eventually, Server, ServerOptions, TempDir};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Every file's bytes under `dir`, concatenated (the database and its WAL). A server
/// that closed its database cleanly (one in the test process, dropped) has
/// checkpointed the WAL into the database and removed it.
fn db_bytes(dir: &Path) -> Vec<u8> {
    let mut out = std::fs::read(dir.join("tandem.db")).unwrap();
    match std::fs::read(dir.join("tandem.db-wal")) {
        Ok(wal) => out.extend(wal),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("tandem.db-wal: {e}"),
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Polls `GET /api/v1/sessions` with `token` until it answers `want` (a revoked or
/// rotated token stops working within a second on a running server).
async fn wait_status(server: &Server, token: &str, want: u16) {
    let api = server.as_user(token);
    eventually(&format!("the token to answer {want}"), async || {
        (api.get("/api/v1/sessions").await.0 == want).then_some(())
    })
    .await;
}

#[actix_rt::test]
async fn data_dir_is_private_and_tokens_are_digests() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let data = server.dir.path().join("data");
    let token = server.token.clone().unwrap();
    // Something written, so the WAL exists.
    server.ws().await.create_session().await;
    assert_eq!(mode(&data), 0o700);
    for name in ["tandem.db", "tandem.db-wal", "tandem.db-shm", "admin-token"] {
        assert_eq!(mode(&data.join(name)), 0o600, "{name}");
    }
    let bob = server.add_user("bob");
    let bob_token = bob.token.clone().unwrap();
    assert_eq!(bob.get("/api/v1/sessions").await.0, 200);
    let bytes = db_bytes(&data);
    assert!(!bytes.is_empty());
    assert!(!contains(&bytes, &token), "admin token in the database");
    assert!(!contains(&bytes, &bob_token), "user token in the database");
    assert!(
        contains(&bytes, "bob"),
        "the search looks at the right bytes"
    );
    // `user list` names users and shows no token.
    let list = server.cli(&["user", "list", "--data-dir"]);
    assert!(list.contains("admin") && list.contains("bob"), "{list}");
    assert!(!list.contains("tdm_"), "{list}");
}

#[actix_rt::test]
async fn revoke_and_rotate_take_effect_on_a_running_server() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let bob = server.add_user("bob");
    let bob_token = bob.token.clone().unwrap();
    wait_status(&server, &bob_token, 200).await;
    assert_eq!(
        server.cli(&["user", "revoke", "bob", "--data-dir"]),
        "revoked bob"
    );
    wait_status(&server, &bob_token, 401).await;
    assert!(!server.cli(&["user", "list", "--data-dir"]).contains("bob"));

    let old = server.token.clone().unwrap();
    let new = server.cli(&["token", "rotate", "--data-dir"]);
    assert!(new.starts_with("tdm_") && new != old);
    wait_status(&server, &old, 401).await;
    wait_status(&server, &new, 200).await;
    assert_eq!(server.cli(&["token", "show", "--data-dir"]), new);
    // Revoking someone who does not exist is an error.
    let out = Command::new(server_binary())
        .args(["user", "revoke", "nobody", "--data-dir"])
        .arg(server.dir.path().join("data"))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nobody"));
}

/// A server child killed on drop; collects stdout lines up to the start line.
struct Started {
    child: Child,
    lines: Vec<String>,
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_raw(data: &Path, root: &Path) -> Started {
    let mut child = Command::new(server_binary())
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data)
        .arg("--workspace-root")
        .arg(root)
        .env("TANDEM_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = child.stdout.take();
    let mut started = Started {
        child,
        lines: Vec::new(),
    };
    let Some(stdout) = stdout else {
        panic!("no stdout")
    };
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let done = line.starts_with("tandem listening on");
        started.lines.push(line);
        if done {
            break;
        }
    }
    started
}

#[test]
fn the_admin_token_is_printed_once_then_on_request() {
    let dir = TempDir::new("once");
    let data = dir.path().join("data");
    let first = start_raw(&data, dir.path());
    let shown: Vec<&String> = first
        .lines
        .iter()
        .filter(|l| l.contains("?token="))
        .collect();
    assert_eq!(shown.len(), 1, "{:?}", first.lines);
    let token = shown[0].split("?token=").nth(1).unwrap().to_string();
    drop(first);
    let second = start_raw(&data, dir.path());
    let all = second.lines.join("\n");
    assert!(!all.contains(&token), "token printed again: {all}");
    assert!(all.contains("tandem token show"), "{all}");
    drop(second);
    let out = Command::new(server_binary())
        .args(["token", "show", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), token);
}

#[actix_rt::test]
async fn plain_text_tokens_of_an_old_database_are_migrated() {
    let dir = std::sync::Arc::new(TempDir::new("migrate"));
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
    let admin = "tdm_0123456789abcdef0123456789abcdef0123456789abcdef";
    let bob = "tdm_fedcba9876543210fedcba9876543210fedcba9876543210";
    {
        let conn =
            rusqlite::Connection::open(data.join("tandem.db")).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(&format!(
            "CREATE TABLE users (id TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE, \
             admin INTEGER NOT NULL, created_at INTEGER NOT NULL);
             INSERT INTO users VALUES ('admin', '{admin}', 1, 1), ('bob', '{bob}', 0, 2);"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::set_permissions(
        data.join("tandem.db"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let server = Server::start_in(
        dir.clone(),
        ServerOptions {
            token_auth: true,
            ..ServerOptions::default()
        },
    );
    // The person's admin token still works and can still be printed; bob's works.
    assert_eq!(server.token.as_deref(), Some(admin));
    assert_eq!(server.get("/api/v1/sessions").await.0, 200);
    assert_eq!(server.as_user(bob).get("/api/v1/sessions").await.0, 200);
    assert_eq!(mode(&data.join("tandem.db")), 0o600);
    let conn = rusqlite::Connection::open(data.join("tandem.db")).unwrap_or_else(|e| panic!("{e}"));
    let stored: Vec<String> = conn
        .prepare("SELECT token_hash FROM users")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.len(), 2);
    for s in stored {
        assert!(
            s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit()),
            "{s}"
        );
    }
    drop(conn);
    drop(server);
    assert!(!contains(&db_bytes(&data), bob));
}

#[actix_rt::test]
async fn a_revoked_token_stops_an_open_socket() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let bob = server.add_user("bob");
    let mut ws = bob.ws().await;
    assert_eq!(
        ws.request(serde_json::json!({"type": "ping"})).await["pong"],
        true
    );
    server.cli(&["user", "revoke", "bob", "--data-dir"]);
    // Within about a second its next request is refused and the socket closed.
    let mut refused = None;
    for _ in 0..100 {
        ws.send(&serde_json::json!({"type": "ping", "requestId": "p"}))
            .await;
        match ws.next_frame(Duration::from_secs(10)).await {
            Some(v) if v["kind"] == "reply" => {
                actix_rt::time::sleep(Duration::from_millis(50)).await;
            }
            other => {
                refused = Some(other);
                break;
            }
        }
    }
    let refused = refused.unwrap_or_else(|| panic!("still answered after revocation"));
    assert_eq!(
        refused.as_ref().map(|v| v["code"].clone()),
        Some(serde_json::json!("UNAUTHORIZED")),
        "{refused:?}"
    );
    assert!(
        ws.next_frame(Duration::from_secs(10)).await.is_none(),
        "not closed"
    );
}
