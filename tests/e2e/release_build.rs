//! A plain `cargo build` at the workspace root builds the server without the tests'
//! features: the workspace's `default-members` leave the tests crate out, so its
//! `failpoints` and `test-hooks` are not unified into the server's binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use tandem_tests::server::server_binary;
use tandem_tests::{Server, ServerOptions, TempDir};

/// The workspace root (this crate's parent).
fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| here.into())
}

/// `cargo build --locked` at the root, as a user builds the server; returns the
/// `tandem` it made. The debug profile resolves features exactly as `--release` does
/// and shares this run's compiled dependencies, so only the three server crates are
/// compiled again (without the tests' features).
fn plain_build() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", "--locked", "--message-format=json"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo build failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The executables it made, from cargo's own report.
    let mut built = Vec::new();
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact" {
            let package = msg["package_id"].as_str().unwrap_or_default().to_string();
            let features = msg["features"].clone();
            built.push((
                package,
                features,
                msg["executable"].as_str().map(PathBuf::from),
            ));
        }
    }
    assert!(
        built
            .iter()
            .all(|(package, ..)| !package.contains("/tests#") && !package.contains("tandem-tests")),
        "the tests crate was built: {built:?}"
    );
    for (package, features, _) in &built {
        if package.contains("tandem-http") || package.contains("tandem-actors") {
            assert_eq!(features, &json!([]), "{package} built with {features}");
        }
    }
    built
        .into_iter()
        .find_map(|(_, _, exe)| exe.filter(|e| e.file_name().is_some_and(|n| n == "tandem")))
        .unwrap_or_else(|| panic!("no tandem executable in cargo's report:\n{stdout}"))
}

#[actix_rt::test]
async fn a_plain_build_at_the_root_has_no_failpoints_or_test_hooks() {
    // What the tests run has them, so the check below can fail.
    let tested = Server::start();
    let (status, _) = tested.post("/debug/failpoints", &json!({})).await;
    assert_ne!(status, 404, "the tests' server has the failpoint route");
    let (status, _) = tested.get("/debug/holds").await;
    assert_eq!(status, 200, "the tests' server has the hold control");
    let (_, page) = tested.get_text("/").await;
    assert!(page.contains("hooks.js"), "{page}");
    drop(tested);

    let binary = plain_build();
    assert_ne!(binary, server_binary());
    let plain = Server::start_program(
        &binary,
        Arc::new(TempDir::new("plain-build")),
        ServerOptions::default(),
        &[],
    );
    let (status, body) = plain.post("/debug/failpoints", &json!({})).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = plain.get("/debug/holds").await;
    assert_eq!(status, 404, "{body}");
    let (status, page) = plain.get_text("/").await;
    assert_eq!(status, 200);
    assert!(!page.contains("hooks.js"), "{page}");
    let (status, _) = plain.get_text("/assets/hooks.js").await;
    assert_eq!(status, 404);
}
