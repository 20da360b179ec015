//! A person's first run: errors name what failed and leave nothing behind, `--bind
//! localhost` works, logs carry no colour codes when not on a terminal, and the
//! declared `rust-version` is one the locked dependencies build with.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use tandem_tests::server::server_binary;
use tandem_tests::{Server, ServerOptions, TempDir};

/// Runs `tandem ARGS` to completion; (success, stderr).
fn run(args: &[&str], configure: impl FnOnce(&mut Command)) -> (bool, String) {
    let mut cmd = Command::new(server_binary());
    cmd.args(args)
        .env("TANDEM_LOG", "warn")
        .stdin(Stdio::null());
    configure(&mut cmd);
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_port_in_use_is_named_and_creates_no_database() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = taken
        .local_addr()
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = TempDir::new("port");
    let data = dir.path().join("data");
    let data_arg = data.to_string_lossy().into_owned();
    let port_arg = port.to_string();
    let (ok, err) = run(
        &["serve", "--port", &port_arg, "--data-dir", &data_arg],
        |_| {},
    );
    assert!(!ok);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains("--port 0"), "{err}");
    assert!(!data.exists(), "a database was created before the bind");
}

#[test]
fn data_dir_errors_name_the_path() {
    let dir = TempDir::new("ddir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap_or_else(|e| panic!("{e}"));
    let data = file.join("data");
    let data_arg = data.to_string_lossy().into_owned();
    let (ok, err) = run(&["serve", "--port", "0", "--data-dir", &data_arg], |_| {});
    assert!(!ok);
    assert!(err.contains(&data_arg), "{err}");
    // The same for a CLI command.
    let (ok, err) = run(&["user", "list", "--data-dir", &data_arg], |_| {});
    assert!(!ok);
    assert!(err.contains(&data_arg), "{err}");
}

#[test]
fn without_home_there_is_no_default_data_dir() {
    let dir = TempDir::new("home");
    let (ok, err) = run(&["serve", "--port", "0"], |cmd| {
        cmd.env_remove("HOME").current_dir(dir.path());
    });
    assert!(!ok);
    assert!(err.contains("HOME") && err.contains("--data-dir"), "{err}");
    assert!(!dir.path().join(".tandem").exists());
    let (ok, err) = run(&["token", "show"], |cmd| {
        cmd.env_remove("HOME").current_dir(dir.path());
    });
    assert!(!ok && err.contains("HOME"), "{err}");
}

#[actix_rt::test]
async fn bind_localhost_works() {
    let server = Server::start_with(ServerOptions {
        args: vec!["--bind".into(), "localhost".into()],
        ..ServerOptions::default()
    });
    assert!(
        server.base.starts_with("http://127.0.0.1:"),
        "{}",
        server.base
    );
    let (status, _) = server.get("/api/v1/health").await;
    assert_eq!(status, 200);
}

#[test]
fn logs_have_no_colour_codes_off_a_terminal() {
    let dir = TempDir::new("logs");
    let mut child = Command::new(server_binary())
        .args(["serve", "--port", "0", "--auth", "none", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--workspace-root")
        .arg(dir.path())
        .env("TANDEM_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // Read the log up to the line the server writes once it serves, then stop it.
    let mut logs = String::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            logs.push_str(&line);
            logs.push('\n');
            if line.contains("serving") {
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(logs.contains("serving"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "colour codes in {logs:?}");
}

/// The workspace's `rust-version` must be at least every locked dependency's (clippy's
/// `incompatible_msrv` lint checks our own use of std against it).
#[test]
fn rust_version_covers_the_locked_dependencies() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap();
    let host = String::from_utf8_lossy(
        &Command::new("rustc")
            .arg("-vV")
            .output()
            .unwrap_or_else(|e| panic!("rustc: {e}"))
            .stdout,
    )
    .lines()
    .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
    .unwrap();
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--filter-platform",
        ])
        .arg(&host)
        .current_dir(&root)
        .output()
        .unwrap_or_else(|e| panic!("cargo metadata: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    // "1.89" and "1.89.0" are the same version.
    let parse = |v: &str| -> Vec<u64> {
        let mut parts: Vec<u64> = v.split('.').filter_map(|p| p.parse().ok()).collect();
        parts.resize(3, 0);
        parts
    };
    // Only packages in the resolved graph for this host.
    let used: std::collections::HashSet<&str> = meta["resolve"]["nodes"]
        .as_array()
        .map(|n| n.iter().filter_map(|n| n["id"].as_str()).collect())
        .unwrap();
    let mut ours = None;
    let mut newest: (Vec<u64>, String) = (Vec::new(), String::new());
    for p in meta["packages"].as_array().cloned().unwrap() {
        let (Some(id), Some(v)) = (p["id"].as_str(), p["rust_version"].as_str()) else {
            continue;
        };
        if !used.contains(id) {
            continue;
        }
        if p["name"] == "tandem-http" {
            ours = Some(parse(v));
        } else if parse(v) > newest.0 {
            newest = (parse(v), format!("{} {}", p["name"], p["version"]));
        }
    }
    let ours = ours.unwrap_or_else(|| panic!("no rust-version on tandem-http"));
    assert!(
        ours >= newest.0,
        "rust-version {ours:?} is older than {} needs ({:?})",
        newest.1,
        newest.0
    );
}
