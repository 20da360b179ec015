//! Pairing a phone: a signed-in user's one-time code (`POST /devices/pair-code`, or
//! `tandem pair`, which prints its link as a QR code) is exchanged without a token
//! for a device token of that user; a used, expired or unknown code is refused with
//! what went wrong; devices are listed and revoked by their user only, and a revoked
//! device's token stops working. `tandem pair` reaches a `--tls self-signed` server
//! by trusting the data directory's certificate, and curl exchanges the code.

use std::process::{Command, Stdio};

use serde_json::{json, Value};
use tandem_tests::server::{server_binary, Api};
use tandem_tests::{eventually, Server, ServerOptions, TempDir};

/// A pairing code for `api`'s user.
async fn pair_code(api: &Api) -> Value {
    let (status, body) = api.post("/api/v1/devices/pair-code", &json!({})).await;
    assert_eq!(status, 201, "{body}");
    body
}

/// The exchange, as a phone's page makes it: no token.
async fn exchange(server: &Server, code: &str, label: &str) -> (u16, Value) {
    let anonymous = Api {
        base: server.base.clone(),
        token: None,
    };
    anonymous
        .post(
            "/api/v1/devices/pair",
            &json!({"code": code, "label": label}),
        )
        .await
}

#[actix_rt::test]
async fn a_code_pairs_one_phone_once_and_its_device_can_be_revoked() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        ..ServerOptions::default()
    });
    let bob = server.add_user("bob");
    let made = pair_code(&bob).await;
    let code = made["code"].as_str().unwrap();
    assert_eq!(code.len(), 32);
    let url = made["url"].as_str().unwrap();
    assert!(url.ends_with(&format!("/#/pair/{code}")), "{url}");
    // Neither bob's token nor the admin's is in the link.
    for token in [
        bob.token.as_deref().unwrap(),
        server.token.as_deref().unwrap(),
    ] {
        assert!(!url.contains(token), "{url}");
    }
    // The server listens on loopback: the link says so.
    assert_eq!(made["reachable"], false);
    let size = made["qr"]["size"].as_u64().unwrap();
    assert_eq!(
        made["qr"]["modules"].as_str().unwrap().len() as u64,
        size * size
    );
    let now = tandem_actors::clock::now_ms();
    let expires = made["expiresAt"].as_u64().unwrap();
    assert!(
        expires > now + 290_000 && expires <= now + 300_000,
        "{expires} at {now}"
    );

    let (status, paired) = exchange(&server, code, "Bob's phone").await;
    assert_eq!(status, 201, "{paired}");
    assert_eq!(paired["userId"], "bob");
    assert_eq!(paired["device"]["label"], "Bob's phone");
    let phone = server.as_user(paired["token"].as_str().unwrap());
    assert_ne!(phone.token, bob.token);
    // The phone acts as bob, not as an admin.
    let mut ws = phone.ws().await;
    let me = ws.ok(json!({"type": "user.get"})).await;
    assert_eq!(
        (me["userId"].clone(), me["admin"].clone()),
        (json!("bob"), json!(false))
    );
    drop(ws);

    // Used once only; unknown and malformed codes are refused too.
    let (status, again) = exchange(&server, code, "thief").await;
    assert_eq!(status, 401, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{again}"
    );
    let (status, unknown) = exchange(&server, &"0".repeat(32), "x").await;
    assert_eq!(status, 401, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown"),
        "{unknown}"
    );
    let (status, bad) = exchange(&server, "not-a-code", "x").await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["code"], "INVALID_ARGUMENT");

    // An expired code (its time moved back in the database) is refused as such.
    let late = pair_code(&bob).await;
    let db = rusqlite::Connection::open(server.dir.path().join("data/tandem.db")).unwrap();
    db.execute(
        "UPDATE pairing_codes SET expires_at = 1 WHERE used_at IS NULL",
        [],
    )
    .unwrap();
    let (status, expired) = exchange(&server, late["code"].as_str().unwrap(), "x").await;
    assert_eq!(status, 401, "{expired}");
    assert!(
        expired["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{expired}"
    );

    // Listed for bob (and from the phone itself), not for the admin; only bob revokes.
    let (_, list) = bob.get("/api/v1/devices").await;
    let devices = list["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1, "{list}");
    let id = devices[0]["id"].as_str().unwrap();
    assert!(devices[0].get("token").is_none());
    let (_, admins) = server.get("/api/v1/devices").await;
    assert_eq!(admins["devices"], json!([]));
    let (status, _) = server.delete(&format!("/api/v1/devices/{id}")).await;
    assert_eq!(status, 404);
    let (status, revoked) = bob.delete(&format!("/api/v1/devices/{id}")).await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked, json!({"deviceId": id, "revoked": true}));
    eventually("the revoked phone's token to be refused", async || {
        let (status, _) = phone.get("/api/v1/sessions").await;
        (status == 401).then_some(())
    })
    .await;
    // bob's own token is untouched.
    assert_eq!(bob.get("/api/v1/sessions").await.0, 200);

    // A revoked user's phones go with the user.
    let carol = server.add_user("carol");
    let code = pair_code(&carol).await["code"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, paired) = exchange(&server, &code, "Carol's phone").await;
    let carols_phone = server.as_user(paired["token"].as_str().unwrap());
    assert_eq!(carols_phone.get("/api/v1/sessions").await.0, 200);
    server.cli(&["user", "revoke", "carol", "--data-dir"]);
    eventually("carol's phone to be refused", async || {
        (carols_phone.get("/api/v1/sessions").await.0 == 401).then_some(())
    })
    .await;
}

#[actix_rt::test]
async fn tandem_pair_prints_a_qr_code_over_tls_and_curl_exchanges_it() {
    let dir = std::sync::Arc::new(TempDir::new("pair-tls"));
    let server = Server::start_in(
        dir.clone(),
        ServerOptions {
            token_auth: true,
            args: vec!["--tls".into(), "self-signed".into()],
        },
    );
    assert!(server.base.starts_with("https://"), "{}", server.base);
    let data = dir.path().join("data");
    let out = Command::new(server_binary())
        .args(["pair", "--data-dir"])
        .arg(&data)
        .env("TANDEM_URL", &server.base)
        .env_remove("TANDEM_TOKEN")
        .env_remove("TANDEM_CA")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Black on white half blocks.
    assert!(
        stdout.contains("\x1b[47;30m") && stdout.contains('▀'),
        "{stdout}"
    );
    let url = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Scan with the phone's camera, or open: "))
        .unwrap_or_else(|| panic!("no link in {stdout}"));
    assert!(
        url.starts_with(&format!("{}/#/pair/", server.base)),
        "{url}"
    );
    assert!(stdout.contains("works once, for 5 minutes"), "{stdout}");
    assert!(stdout.contains("loopback only"), "{stdout}");
    let code = url.rsplit('/').next().unwrap();

    // curl, trusting only the server's own certificate, exchanges the code.
    let cert = data.join("tls-self-signed.crt");
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "--cacert"])
        .arg(&cert)
        .args(["-H", "Content-Type: application/json", "-d"])
        .arg(json!({"code": code, "label": "curl"}).to_string())
        .arg(format!("{}/api/v1/devices/pair", server.base))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let paired: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(paired["userId"], "admin");
    assert!(paired["token"].as_str().unwrap().starts_with("tdm_"));

    // The terminal client speaks https too, as the paired device.
    let out = Command::new(server_binary())
        .args(["ls", "--data-dir"])
        .arg(&data)
        .env("TANDEM_URL", &server.base)
        .env("TANDEM_TOKEN", paired["token"].as_str().unwrap())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("ID\tSTATUS"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
