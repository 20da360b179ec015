//! Attachments: `POST /api/v1/uploads`, `chat.send` and REST messages with content
//! blocks, what history keeps, the errors, and when uploads are removed. The scripted
//! vendor says which images reached it; the real CLIs are in `claude.rs`, `codex.rs`
//! and `acp.rs`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tandem_tests::images::{base64, GIF, PNG};
use tandem_tests::{Server, ServerOptions};

/// The upload store's directory under a test server's data directory.
fn store_dir(server: &Server) -> PathBuf {
    server.dir.path().join("data").join("uploads")
}

/// The files in the upload store (blobs named by their SHA-256).
fn blobs(server: &Server) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store_dir(server))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn upload(server: &Server, mime: &str, name: &str, bytes: &[u8]) -> Value {
    let (status, body) = server
        .post_bytes(&format!("/api/v1/uploads?name={name}"), mime, bytes)
        .await;
    assert_eq!(status, 201, "upload {name}: {body}");
    body
}

fn user_message(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|e| e["kind"] == "user_message")
        .unwrap_or_else(|| panic!("no user_message in {events:?}"))
}

fn texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "assistant_message")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

#[actix_rt::test]
async fn blocks_reach_the_agent_and_history_keeps_them_by_upload_id() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;

    // Same bytes, same id; stored once, 0600 in a 0700 directory.
    let png = upload(&server, "image/png", "shot.png", PNG).await;
    assert_eq!(png["size"], PNG.len());
    assert_eq!(png["mimeType"], "image/png");
    let png_id = png["uploadId"].as_str().unwrap().to_string();
    assert!(png_id.starts_with("up_") && png_id.len() == 67, "{png}");
    assert_eq!(
        upload(&server, "image/png", "again.png", PNG).await["uploadId"],
        png_id.as_str()
    );
    let notes = upload(
        &server,
        "text/plain; charset=utf-8",
        "notes.txt",
        b"the notes say hi\n",
    )
    .await;
    let pdf = upload(
        &server,
        "application/pdf",
        "../../report.pdf",
        b"%PDF-1.4\n\x00\x01\x02",
    )
    .await;
    assert_eq!(blobs(&server).len(), 3, "{:?}", blobs(&server));
    let dir_mode = std::fs::metadata(store_dir(&server))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    for blob in blobs(&server) {
        let mode = std::fs::metadata(store_dir(&server).join(&blob))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{blob}");
    }

    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": [
        {"type": "text", "text": "look at these"},
        {"type": "image", "uploadId": png_id},
        {"type": "image", "mimeType": "image/gif", "data": base64(GIF)},
        {"type": "file", "uploadId": notes["uploadId"]},
        {"type": "file", "uploadId": pdf["uploadId"]},
    ]}))
    .await;
    let events = ws.events_until_turn_end(&sid).await;
    assert_eq!(events.last().unwrap()["status"], "completed", "{events:?}");
    let user = user_message(&events);
    assert_eq!(user["text"], "look at these");
    let blocks = user["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 5, "{user}");
    assert_eq!(blocks[0], json!({"type": "text", "text": "look at these"}));
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["uploadId"], png_id.as_str());
    assert_eq!(blocks[1]["mimeType"], "image/png");
    // The inline image is stored as an upload too: history holds its id, not its bytes.
    assert_eq!(blocks[2]["type"], "image");
    assert_eq!(blocks[2]["mimeType"], "image/gif");
    let gif_id = blocks[2]["uploadId"].as_str().unwrap().to_string();
    assert!(!user.to_string().contains(&base64(GIF)), "{user}");
    assert_eq!(blocks[3]["type"], "file");
    assert_eq!(blocks[3]["name"], "notes.txt");
    assert!(
        blocks[3].get("path").is_none(),
        "a text file is inlined: {user}"
    );
    assert_eq!(blocks[4]["name"], "report.pdf");
    let saved = blocks[4]["path"].as_str().unwrap().to_string();
    assert!(
        saved.starts_with("tandem-attachments/") && saved.ends_with("-report.pdf"),
        "{saved}"
    );

    // The scripted agent got the text, the inlined file, the saved file's path and
    // both images, in order.
    let said = texts(&events);
    assert!(said.contains(&"look at these".to_string()), "{said:?}");
    assert!(said.contains(&"the notes say hi".to_string()), "{said:?}");
    assert!(said.iter().any(|t| t.contains(&saved)), "{said:?}");
    assert!(
        said.contains(&format!(
            "received image {png_id} (image/png, {} bytes)",
            PNG.len()
        )),
        "{said:?}"
    );
    assert!(
        said.contains(&format!(
            "received image {gif_id} (image/gif, {} bytes)",
            GIF.len()
        )),
        "{said:?}"
    );
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    let cwd = PathBuf::from(info["cwd"].as_str().unwrap());
    assert_eq!(
        std::fs::read(cwd.join(&saved)).unwrap(),
        b"%PDF-1.4\n\x00\x01\x02"
    );

    // The page reads the bytes back: through the session, and as their owner.
    let (status, mime, bytes) = server
        .get_bytes(&format!("/api/v1/sessions/{sid}/uploads/{gif_id}"))
        .await;
    assert_eq!(
        (status, mime.as_str(), bytes.as_slice()),
        (200, "image/gif", GIF)
    );
    let (status, _, bytes) = server.get_bytes(&format!("/api/v1/uploads/{png_id}")).await;
    assert_eq!((status, bytes.as_slice()), (200, PNG));
    // Not through a session that never used it.
    let other = ws.create_session().await;
    let (status, body) = server
        .get(&format!("/api/v1/sessions/{other}/uploads/{png_id}"))
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "NO_SUCH_UPLOAD");

    // REST takes the same content; a plain string stays valid.
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{other}/messages"),
            &json!({"content": [{"type": "image", "mimeType": "image/png", "data": base64(PNG)}]}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let events = tandem_tests::eventually("the REST turn ends", async || {
        let events = server.all_events(&other).await;
        events
            .iter()
            .any(|e| e["kind"] == "turn_completed")
            .then_some(events)
    })
    .await;
    assert_eq!(
        user_message(&events)["content"][0]["uploadId"],
        png_id.as_str()
    );
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{other}/messages"),
            &json!({"content": "plain"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

#[actix_rt::test]
async fn bad_attachments_are_refused_with_their_own_codes_and_leave_nothing() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        args: vec![
            "--max-upload-bytes".into(),
            "200".into(),
            "--max-message-attachment-bytes".into(),
            "300".into(),
        ],
    });
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let png = upload(&server, "image/png", "a.png", PNG).await;
    let before = blobs(&server);

    let big = vec![b'x'; 201];
    let (status, body) = server
        .post_bytes("/api/v1/uploads", "text/plain", big)
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("ATTACHMENT_TOO_LARGE")),
        "{body}"
    );
    let (status, body) = server.post_bytes("/api/v1/uploads", "image/png", GIF).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("INVALID_ATTACHMENT")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("image/gif"),
        "{body}"
    );
    let (status, body) = server
        .post_bytes("/api/v1/uploads", "nonsense", b"abc".to_vec())
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("INVALID_ATTACHMENT")),
        "{body}"
    );
    let (status, body) = server
        .post_bytes("/api/v1/uploads", "text/plain", Vec::new())
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("INVALID_ATTACHMENT")),
        "{body}"
    );

    let refused =
        |content: Value| json!({"type": "chat.send", "sessionId": sid, "content": content});
    let png_id = png["uploadId"].as_str().unwrap();
    let unknown = format!("up_{}", "0".repeat(64));
    // 5 × 73 bytes: over the 300 a message may carry, each file under the 200 limit.
    let five_pngs: Vec<Value> = (0..5)
        .map(|_| json!({"type": "image", "uploadId": png_id}))
        .collect();
    for (content, code) in [
        (
            json!([{"type": "image", "mimeType": "image/png", "data": "not base64!"}]),
            "INVALID_ATTACHMENT",
        ),
        (
            json!([{"type": "image", "mimeType": "image/png", "data": base64(GIF)}]),
            "INVALID_ATTACHMENT",
        ),
        (
            json!([{"type": "image", "mimeType": "text/plain", "data": base64(b"hi")}]),
            "INVALID_ATTACHMENT",
        ),
        (
            json!([{"type": "image", "uploadId": png_id, "data": base64(PNG)}]),
            "INVALID_ATTACHMENT",
        ),
        (
            json!([{"type": "image", "uploadId": unknown}]),
            "NO_SUCH_UPLOAD",
        ),
        (
            json!([{"type": "file", "uploadId": "up_nope"}]),
            "NO_SUCH_UPLOAD",
        ),
        (json!(five_pngs), "ATTACHMENT_TOO_LARGE"),
        (
            json!([{"type": "image", "mimeType": "image/gif", "data": base64(&[GIF, &[0u8; 200]].concat())}]),
            "ATTACHMENT_TOO_LARGE",
        ),
        (
            json!([{"type": "video", "uploadId": png_id}]),
            "INVALID_ARGUMENT",
        ),
        (json!({"text": "an object"}), "INVALID_ARGUMENT"),
    ] {
        let answer = ws.request(refused(content.clone())).await;
        assert_eq!(answer["kind"], "protocol_error", "{content}: {answer}");
        assert_eq!(answer["code"], code, "{content}: {answer}");
    }
    // Another user does not find this user's upload.
    let bob = server.add_user("bob");
    let mut bob_ws = bob.ws().await;
    let bob_sid = bob_ws.create_session().await;
    let answer = bob_ws
        .request(json!({"type": "chat.send", "sessionId": bob_sid, "content": [{"type": "image", "uploadId": png_id}]}))
        .await;
    assert_eq!(answer["code"], "NO_SUCH_UPLOAD", "{answer}");
    let (status, _, _) = bob.get_bytes(&format!("/api/v1/uploads/{png_id}")).await;
    assert_eq!(status, 404);

    // A refused message left nothing: no event, no stored bytes, no saved file.
    assert!(server.all_events(&sid).await.is_empty());
    assert_eq!(blobs(&server), before);
    // A message refused by its session (a turn runs) takes back the inline image it
    // stored.
    ws.chat(&sid, "/hold never").await;
    let answer = ws
        .request(refused(
            json!([{"type": "image", "mimeType": "image/gif", "data": base64(GIF)}]),
        ))
        .await;
    assert_eq!(answer["code"], "RUN_IN_PROGRESS", "{answer}");
    assert_eq!(blobs(&server), before);
}

#[actix_rt::test]
async fn uploads_go_with_their_session_and_unused_ones_expire() {
    let server = Server::start_with(ServerOptions {
        args: vec!["--upload-unused-secs".into(), "0".into()],
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    let png = upload(&server, "image/png", "a.png", PNG).await;
    let png_id = png["uploadId"].as_str().unwrap().to_string();
    ws.ok(json!({"type": "chat.send", "sessionId": sid, "content": [{"type": "image", "uploadId": png_id}]}))
        .await;
    ws.events_until_turn_end(&sid).await;

    // Never used: removed at the next upload once older than the limit (0 s here).
    let unused = upload(&server, "text/plain", "u.txt", b"unused").await;
    // An age is the subject: a few milliseconds make the upload older than the 0 s
    // limit (the server has no clock the test could move instead).
    std::thread::sleep(std::time::Duration::from_millis(5));
    upload(&server, "text/plain", "v.txt", b"trigger").await;
    let (status, _, _) = server
        .get_bytes(&format!(
            "/api/v1/uploads/{}",
            unused["uploadId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, 404);
    // Used by a live session: kept.
    let (status, _, _) = server.get_bytes(&format!("/api/v1/uploads/{png_id}")).await;
    assert_eq!(status, 200);

    let (status, body) = server.delete(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = server.get_bytes(&format!("/api/v1/uploads/{png_id}")).await;
    assert_eq!(status, 404);
    let sha = png_id.trim_start_matches("up_");
    assert!(!Path::new(&store_dir(&server)).join(sha).exists());
}

#[actix_rt::test]
async fn a_queued_message_keeps_its_attachments_across_a_restart() {
    let dir = std::sync::Arc::new(tandem_tests::TempDir::new("attach-queue"));
    let server = Server::start_in(dir.clone(), ServerOptions::default());
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let png = upload(&server, "image/png", "a.png", PNG).await;
    let png_id = png["uploadId"].as_str().unwrap().to_string();
    ws.chat(&sid, "/hold never").await;
    let queued = ws
        .ok(
            json!({"type": "chat.send", "sessionId": sid, "queue": true, "content": [
                {"type": "text", "text": "later"},
                {"type": "image", "uploadId": png_id},
            ]}),
        )
        .await;
    assert_eq!(queued["queued"], true, "{queued}");
    drop(ws);
    server.terminate();

    // After a restart the cut-off turn is closed and the queued message runs with its
    // image.
    let server = Server::start_in(dir, ServerOptions::default());
    let mut ws = server.ws().await;
    ws.subscribe(&sid, 0).await;
    let frames = ws
        .recv_until(|v| {
            v["kind"] == "assistant_message"
                && v["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("received image"))
        })
        .await;
    let user = frames
        .iter()
        .rfind(|e| e["kind"] == "user_message")
        .unwrap();
    assert_eq!(user["text"], "later", "{user}");
    assert_eq!(user["content"][1]["uploadId"], png_id.as_str(), "{user}");
    assert_eq!(
        frames.last().unwrap()["text"],
        format!("received image {png_id} (image/png, {} bytes)", PNG.len())
    );
}
