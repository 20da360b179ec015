//! The web page's own checks, so `cargo nextest run --workspace` covers them:
//! - `http/web/wire.js` holds JSDoc types generated from
//!   `protocol/schemas/requests.json` (compared like the schema snapshots;
//!   `UPDATE_SNAPSHOTS=1` rewrites it);
//! - `tsc --noEmit --checkJs` (TypeScript pinned in `.ci/run`, installed in
//!   `.vendor-clis`) type-checks the page against them;
//! - `node --test` runs the unit tests in `http/web-tests/` (Markdown, diffs, the
//!   state store).
//!
//! Without node or TypeScript a check says so and skips, unless `CI` is set.

mod jsdoc;

use std::path::{Path, PathBuf};
use std::process::Command;

use tandem_tests::webdriver::{repo_root, which};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The tool, or `None` after saying why (a failure under CI).
fn tool(path: Option<PathBuf>, what: &str) -> Option<PathBuf> {
    if path.is_none() {
        let why = format!("{what} is not installed");
        if std::env::var_os("CI").is_some() {
            panic!("{why}, and CI is set: the page's checks must run");
        }
        eprintln!("skipping: {why}");
    }
    path
}

#[test]
fn wire_types_match_the_schemas() {
    let root = repo_root();
    let schema: serde_json::Value =
        serde_json::from_str(&read(&root.join("protocol/schemas/requests.json")))
            .unwrap_or_else(|e| panic!("requests.json: {e}"));
    let generated = jsdoc::generate(&schema);
    let path = root.join("http/web/wire.js");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("{e}"));
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == generated,
        "http/web/wire.js is not what protocol/schemas/requests.json gives; run this test \
         with UPDATE_SNAPSHOTS=1 and commit the file"
    );
}

#[test]
fn the_page_type_checks() {
    let root = repo_root();
    let tsc = root.join(".vendor-clis/node_modules/typescript/bin/tsc");
    let Some(node) = tool(which("node"), "node") else {
        return;
    };
    let Some(tsc) = tool(
        tsc.is_file().then_some(tsc),
        "TypeScript (npm install --prefix .vendor-clis typescript@5.9.3)",
    ) else {
        return;
    };
    let out = Command::new(node)
        .arg(tsc)
        .args(["--noEmit", "-p"])
        .arg(root.join("http/web/tsconfig.json"))
        .output()
        .unwrap_or_else(|e| panic!("run tsc: {e}"));
    assert!(
        out.status.success(),
        "tsc found errors in http/web:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_page_unit_tests_pass_under_node() {
    let root = repo_root();
    let Some(node) = tool(which("node"), "node") else {
        return;
    };
    let dir = root.join("http/web-tests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".test.js"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "unit tests missing in {}", dir.display());
    let out = Command::new(node)
        .arg("--test")
        .args(&files)
        .output()
        .unwrap_or_else(|e| panic!("run node --test: {e}"));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.contains("# fail 0"), "{report}");
}
