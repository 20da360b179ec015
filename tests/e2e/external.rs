//! The CLI sessions on the machine and their refusals, with transcripts written here
//! (the real CLIs' transcripts are listed, imported and continued in `claude.rs` and
//! `codex.rs`): a user sees only those under their own roots and cannot import
//! another's; a transcript over 256 MiB is listed but not imported; an unknown one is
//! 404.

use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::transcripts::{claude_home, prompt_line};
use tandem_tests::{Server, ServerOptions, TempDir};

#[actix_rt::test]
async fn transcripts_are_their_roots_users_and_a_huge_one_is_not_imported() {
    let dir = Arc::new(TempDir::new("external"));
    let carols = dir.path().join("carol");
    std::fs::create_dir_all(&carols).unwrap();
    let (config, project) = claude_home(
        dir.path(),
        &[
            ("mine", prompt_line("mine", dir.path(), "the admin's")),
            ("hers", prompt_line("hers", &carols, "carol's")),
        ],
        &format!(
            "\n[users.carol]\nworkspace_roots = [{}]\n",
            json!(carols.display().to_string())
        ),
    );
    // Over 256 MiB: a first line, then a long run of zeros (sparse) ended by a newline.
    let mut huge = std::fs::File::create(project.join("huge.jsonl")).unwrap();
    huge.write_all(prompt_line("huge", dir.path(), "a long one").as_bytes())
        .unwrap();
    huge.seek(SeekFrom::Start((256 << 20) + 10)).unwrap();
    huge.write_all(b"\n").unwrap();
    drop(huge);
    let server = Server::start_in(
        dir,
        ServerOptions {
            token_auth: true,
            args: vec!["--config".into(), config.display().to_string()],
        },
    );
    let carol = server.add_user("carol");
    let ids = |body: &Value| -> Vec<String> {
        body["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["vendorSessionId"].as_str().unwrap().to_string())
            .collect()
    };

    // The admin's roots hold all three; carol's only hers.
    let (status, all) = server.get("/api/v1/external-sessions").await;
    assert_eq!(status, 200, "{all}");
    let mut listed = ids(&all);
    listed.sort();
    assert_eq!(listed, ["hers", "huge", "mine"]);
    let huge = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["vendorSessionId"] == "huge")
        .unwrap();
    assert!(huge["sizeBytes"].as_u64().unwrap() > 256 << 20, "{huge}");
    assert_eq!(huge["skippedLines"], 1, "the run of zeros: {huge}");
    let (_, hers) = carol.get("/api/v1/external-sessions").await;
    assert_eq!(ids(&hers), ["hers"]);

    // Carol cannot import the admin's; the admin cannot import the huge one.
    let (status, body) = carol
        .post(
            "/api/v1/external-sessions/import",
            &json!({"vendor": "claude", "vendorSessionId": "mine"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
    let (status, body) = server
        .post(
            "/api/v1/external-sessions/import",
            &json!({"vendor": "claude", "vendorSessionId": "huge"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("FILE_TOO_LARGE")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("256 MiB"),
        "{body}"
    );
    let (status, body) = server
        .post(
            "/api/v1/external-sessions/import",
            &json!({"vendor": "codex", "vendorSessionId": "mine"}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = server
        .post(
            "/api/v1/external-sessions/import",
            &json!({"vendor": "claude"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("INVALID_ARGUMENT")),
        "{body}"
    );

    // Carol's own imports fine, into her session.
    let (status, made) = carol
        .post(
            "/api/v1/external-sessions/import",
            &json!({"vendor": "claude", "vendorSessionId": "hers"}),
        )
        .await;
    assert_eq!(
        (status, made["ownerId"].as_str()),
        (201, Some("carol")),
        "{made}"
    );
}
