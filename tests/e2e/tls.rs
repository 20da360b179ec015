//! TLS: `--tls-cert FILE --tls-key FILE` serves HTTPS and WSS, `--tls self-signed`
//! makes a certificate once (files 0600) and prints the fingerprint of the one it
//! presents, bad certificate files are clear start-up errors, and plain HTTP on a
//! non-loopback address needs `--insecure-http`. The server is spoken to by clients no
//! one here wrote: curl (OpenSSL) for HTTPS, Python's `ssl` for the presented
//! certificate, awc with rustls for WSS.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use tandem_tests::server::server_binary;
use tandem_tests::vendor_clis::python_path;
use tandem_tests::{Server, ServerOptions, TempDir, WsClient};

/// `der` as PEM (the test's own writer: curl and the server read it).
fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = text
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A test CA and a server certificate it signed for `localhost` and 127.0.0.1.
struct TestPki {
    /// The CA's certificate (for clients to trust).
    ca: PathBuf,
    ca_der: Vec<u8>,
    /// The server's certificate and key.
    cert: PathBuf,
    key: PathBuf,
    /// A key of another certificate.
    other_key: PathBuf,
}

fn test_pki(dir: &Path) -> TestPki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "tandem test CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "tandem test server");
    let cert = params.signed_by(&key, &issuer).unwrap();
    let other = rcgen::KeyPair::generate().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    };
    TestPki {
        ca: write("ca.pem", pem("CERTIFICATE", ca_cert.der())),
        ca_der: ca_cert.der().to_vec(),
        cert: write("server.pem", pem("CERTIFICATE", cert.der())),
        key: write("server.key", pem("PRIVATE KEY", &key.serialize_der())),
        other_key: write("other.key", pem("PRIVATE KEY", &other.serialize_der())),
    }
}

/// `curl` GET of `url` trusting `ca` (with a bearer token): (exit ok, HTTP status,
/// body, stderr).
fn curl(url: &str, ca: Option<&Path>, token: Option<&str>) -> (bool, String, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["--silent", "--show-error", "--max-time", "20"]);
    if let Some(ca) = ca {
        cmd.arg("--cacert").arg(ca);
    }
    if let Some(t) = token {
        cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd
        .args(["--write-out", "\n%{http_code}", url])
        .output()
        .unwrap_or_else(|e| panic!("curl (Debian's, see .ci/run): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (body, status) = stdout.rsplit_once('\n').unwrap_or(("", &stdout));
    (
        out.status.success() && status == "200",
        body.to_string(),
        format!("status {status}; {stderr}"),
    )
}

/// The port of a `https://127.0.0.1:PORT` base.
fn port_of(base: &str) -> u16 {
    base.rsplit(':').next().unwrap().parse().unwrap()
}

/// SHA-256 of the certificate the server at 127.0.0.1:`port` presents, as
/// `AB:CD:...`, read by Python's `ssl` (OpenSSL) without trusting it.
fn presented_fingerprint(port: u16) -> String {
    let script = r#"
import hashlib, socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20) as raw:
    with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
        der = tls.getpeercert(binary_form=True)
print(":".join("%02X" % b for b in hashlib.sha256(der).digest()))
"#;
    let out = Command::new(python_path())
        .args(["-c", script, &port.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("python: {e}"));
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The fingerprint a server printed at start (`TLS certificate PATH SHA-256
/// fingerprint FP`), and the certificate's path.
fn printed_fingerprint(server: &Server) -> (PathBuf, String) {
    let line = server
        .start_lines
        .iter()
        .find(|l| l.starts_with("TLS certificate "))
        .unwrap_or_else(|| panic!("no fingerprint line in {:?}", server.start_lines));
    let rest = line.trim_start_matches("TLS certificate ");
    let (path, fp) = rest
        .split_once(" SHA-256 fingerprint ")
        .unwrap_or_else(|| panic!("{line}"));
    (PathBuf::from(path), fp.trim().to_string())
}

/// A WebSocket over TLS trusting only `ca_der`, through awc and rustls.
async fn wss(url: &str, ca_der: &[u8]) -> WsClient {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(ca_der.to_vec()))
        .unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    // HTTP/1.1 here, not through awc's `max_http_version`: that replaces the connector's
    // TLS configuration with its default one (none without a root-store feature).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let (_, framed) = awc::Client::builder()
        .connector(awc::Connector::new().rustls_0_23(Arc::new(config)))
        .finish()
        .ws(url)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("wss {url}: {e}"));
    WsClient::from_framed(framed)
}

/// Runs `tandem serve ARGS` expecting it to refuse to start: its stderr.
fn refused(args: &[&str], data: &Path) -> String {
    let out = Command::new(server_binary())
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data)
        .args(args)
        .env("TANDEM_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "started with {args:?}: {err}");
    err
}

#[actix_rt::test]
async fn https_and_wss_with_a_given_certificate() {
    let dir = TempDir::new("tls-files");
    let pki = test_pki(dir.path());
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        args: vec![
            "--tls-cert".into(),
            pki.cert.display().to_string(),
            "--tls-key".into(),
            pki.key.display().to_string(),
        ],
    });
    assert!(
        server.base.starts_with("https://127.0.0.1:"),
        "{}",
        server.base
    );
    // The first start's token line is an https URL too.
    assert!(
        server
            .start_lines
            .iter()
            .any(|l| l.starts_with("open https://127.0.0.1:") && l.contains("/?token=")),
        "{:?}",
        server.start_lines
    );
    let token = server.token.clone().unwrap();
    // curl trusts the test CA only, and checks the name (127.0.0.1 is in the SANs).
    let health = format!("{}/api/v1/health", server.base);
    let (ok, body, err) = curl(&health, Some(&pki.ca), None);
    assert!(ok, "{err}");
    assert!(body.contains("\"ok\""), "{body}");
    let (ok, _, err) = curl(
        &health.replace("127.0.0.1", "localhost"),
        Some(&pki.ca),
        None,
    );
    assert!(ok, "localhost: {err}");
    // Without the CA, the certificate is not trusted.
    let (ok, _, err) = curl(&health, None, None);
    assert!(!ok && err.contains("certificate"), "{err}");
    // Plain HTTP on the TLS port gets no answer.
    let plain = health.replacen("https://", "http://", 1);
    let (ok, _, err) = curl(&plain, None, None);
    assert!(!ok, "plain HTTP was served: {err}");

    // WSS: a session made over the WebSocket is listed over HTTPS.
    let url = format!(
        "{}/ws?token={token}",
        server.base.replacen("https://", "wss://", 1)
    );
    let mut ws = wss(&url, &pki.ca_der).await;
    let id = ws.create_session().await;
    let (ok, list, err) = curl(
        &format!("{}/api/v1/sessions", server.base),
        Some(&pki.ca),
        Some(&token),
    );
    assert!(ok, "{err}");
    assert!(list.contains(&id), "{id} not in {list}");
    // The agents this server starts reach their tools at a loopback listener in plain
    // HTTP (they would not trust the certificate), which serves `/mcp` and nothing else.
    let mcp = ws
        .ok(serde_json::json!({"type": "session.mcp-token", "sessionId": id}))
        .await;
    let url = mcp["url"].as_str().unwrap_or_else(|| panic!("{mcp}"));
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert_ne!(port_of(url.trim_end_matches("/mcp")), port_of(&server.base));
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "20", "-X", "POST"])
        .args(["-H", "Content-Type: application/json"])
        .args([
            "-H",
            &format!("Authorization: Bearer {}", mcp["token"].as_str().unwrap()),
        ])
        .args(["--data", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, url])
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("\"result\""), "{answer}");
    let (ok, _, err) = curl(&url.replace("/mcp", "/api/v1/health"), None, None);
    assert!(!ok && err.contains("404"), "{err}");
    // The fingerprint printed is that of the certificate presented.
    let (path, printed) = printed_fingerprint(&server);
    assert_eq!(path, pki.cert);
    assert_eq!(printed, presented_fingerprint(port_of(&server.base)));
}

#[actix_rt::test]
async fn self_signed_is_made_once_private_and_its_fingerprint_printed() {
    let server = Server::start_process(ServerOptions {
        args: vec!["--tls".into(), "self-signed".into()],
        ..ServerOptions::default()
    });
    assert!(server.base.starts_with("https://"), "{}", server.base);
    let (cert, printed) = printed_fingerprint(&server);
    let data = server.dir.path().join("data");
    assert!(cert.starts_with(&data), "{}", cert.display());
    assert_eq!(printed.len(), 32 * 3 - 1, "{printed}");
    assert_eq!(printed, presented_fingerprint(port_of(&server.base)));
    // Both files are the owner's only; the key is never printed.
    let key = data.join("tls-self-signed.key");
    for file in [&cert, &key] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is {mode:o}", file.display());
    }
    assert!(!server.start_lines.iter().any(|l| l.contains("PRIVATE")));
    // A client that trusts the certificate file gets through, by address and by name.
    let health = format!("{}/api/v1/health", server.base);
    let (ok, _, err) = curl(&health, Some(&cert), None);
    assert!(ok, "{err}");
    let (ok, _, err) = curl(&health.replace("127.0.0.1", "localhost"), Some(&cert), None);
    assert!(ok, "{err}");

    // Restarted on the same data: the same certificate, not a new one.
    let dir = server.kill();
    let again = Server::start_process_in(
        dir,
        ServerOptions {
            args: vec!["--tls".into(), "self-signed".into()],
            ..ServerOptions::default()
        },
    );
    let (_, printed_again) = printed_fingerprint(&again);
    assert_eq!(printed_again, printed);
    assert_eq!(printed_again, presented_fingerprint(port_of(&again.base)));
    // Made again only when missing.
    let dir = again.kill();
    std::fs::remove_file(&cert).unwrap();
    let renewed = Server::start_in(
        dir,
        ServerOptions {
            args: vec!["--tls".into(), "self-signed".into()],
            ..ServerOptions::default()
        },
    );
    let (_, printed_new) = printed_fingerprint(&renewed);
    assert_ne!(printed_new, printed);
    assert_eq!(printed_new, presented_fingerprint(port_of(&renewed.base)));
    let mode = std::fs::metadata(&cert).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn bad_certificate_files_are_clear_errors() {
    let dir = TempDir::new("tls-bad");
    let pki = test_pki(dir.path());
    let data = dir.path().join("data");
    let missing = dir.path().join("missing.pem");
    let not_pem = dir.path().join("not-pem.txt");
    std::fs::write(&not_pem, "hello, not a certificate\n").unwrap();
    let s = |p: &Path| p.display().to_string();
    // A line of the keys' base64: no message may quote it.
    let key_lines: Vec<String> = [&pki.key, &pki.other_key]
        .iter()
        .map(|k| {
            std::fs::read_to_string(k)
                .unwrap()
                .lines()
                .nth(1)
                .unwrap()
                .to_string()
        })
        .collect();
    for (cert, key, says, names) in [
        (&missing, &pki.key, "No such file", &missing),
        (&pki.cert, &missing, "No such file", &missing),
        (&not_pem, &pki.key, "no PEM certificate", &not_pem),
        (&pki.cert, &not_pem, "no PEM private key", &not_pem),
        // The CA's certificate is PEM but not a key.
        (&pki.cert, &pki.ca, "no PEM private key", &pki.ca),
        (&pki.cert, &pki.other_key, "does not match", &pki.other_key),
    ] {
        let err = refused(&["--tls-cert", &s(cert), "--tls-key", &s(key)], &data);
        assert!(err.contains(says), "{cert:?} {key:?}: {err}");
        assert!(err.contains(&s(names)), "{cert:?} {key:?}: {err}");
        for line in &key_lines {
            assert!(!err.contains(line.as_str()), "key material in {err}");
        }
    }
    // A refused start leaves no database behind.
    assert!(!data.join("tandem.db").exists());
    // Half a pair, or both kinds, is a usage error.
    let err = refused(&["--tls-cert", &s(&pki.cert)], &data);
    assert!(err.contains("--tls-key"), "{err}");
    let err = refused(
        &[
            "--tls",
            "self-signed",
            "--tls-cert",
            &s(&pki.cert),
            "--tls-key",
            &s(&pki.key),
        ],
        &data,
    );
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn plain_http_off_loopback_needs_insecure_http() {
    let dir = TempDir::new("tls-insecure");
    let data = dir.path().join("data");
    let err = refused(&["--bind", "0.0.0.0", "--auth", "token"], &data);
    assert!(
        err.contains("0.0.0.0") && err.contains("--insecure-http") && err.contains("unencrypted"),
        "{err}"
    );
    assert!(!data.exists(), "a refused start made {}", data.display());

    // With --insecure-http it starts, and its log says why that is unsafe.
    let mut child = Command::new(server_binary())
        .args([
            "serve",
            "--port",
            "0",
            "--bind",
            "0.0.0.0",
            "--insecure-http",
        ])
        .args(["--auth", "token", "--data-dir"])
        .arg(&data)
        .arg("--workspace-root")
        .arg(dir.path())
        .env("TANDEM_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let base = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("tandem listening on ").map(str::to_string));
    // It serves (reached over loopback: a wildcard bind includes it).
    let served = base.as_deref().map(|b| {
        curl(
            &format!("http://127.0.0.1:{}/api/v1/health", port_of(b)),
            None,
            None,
        )
    });
    let _ = child.kill();
    let _ = child.wait();
    let mut logs = String::new();
    for line in BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        logs.push_str(&line);
        logs.push('\n');
    }
    let base = base.unwrap_or_else(|| panic!("no start line; log: {logs}"));
    assert!(base.starts_with("http://0.0.0.0:"), "{base}");
    let (ok, _, err) = served.unwrap();
    assert!(ok, "{err}");
    assert!(
        logs.contains("--insecure-http") && logs.contains("unencrypted"),
        "{logs}"
    );
}
