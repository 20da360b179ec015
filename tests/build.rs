//! Decides, when the tests are built, which of the tools they drive are installed, and
//! sets a `cfg` flag for each one that is: `has_codex`, `has_claude`, `has_codex_acp`,
//! `has_claude_acp`, `has_mcp_everything`, `has_browser` (Chromium, chromedriver and axe-core), `has_pytools`
//! (schemathesis and the official MCP and ACP SDKs in `.venv-tools`), and
//! `has_landlock` when the kernel enforces Landlock (agent confinement). Tests use
//! `#[cfg_attr(not(has_codex), ignore = "...")]`, so without the tool nextest lists
//! them as skipped, never as passed. Under CI (`CI` set) every flag is set: CI
//! installs every tool, and a missing one must fail its tests, not skip them.

#[allow(dead_code)]
#[path = "src/vendor_clis.rs"]
mod vendor_clis;

use std::path::{Path, PathBuf};

fn main() {
    println!(
        "cargo::rustc-check-cfg=cfg(has_codex, has_claude, has_browser, has_codex_acp, has_claude_acp, has_nats, has_landlock, has_pytools, has_mcp_everything)"
    );
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/vendor_clis.rs");
    for key in [
        "CI",
        "PATH",
        "TANDEM_TEST_CODEX_BIN",
        "TANDEM_TEST_CLAUDE_BIN",
        "TANDEM_TEST_AXE_JS",
        "TANDEM_TEST_CODEX_ACP_BIN",
        "TANDEM_TEST_CLAUDE_ACP_BIN",
        "TANDEM_TEST_MCP_EVERYTHING_JS",
    ] {
        println!("cargo::rerun-if-env-changed={key}");
    }
    let ci = std::env::var_os("CI").is_some();
    let chromium = vendor_clis::chromium().unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let chromedriver =
        vendor_clis::chromedriver().unwrap_or_else(|| PathBuf::from("/usr/bin/chromedriver"));
    flag(
        ci,
        "has_codex",
        "the pinned codex CLI",
        &[vendor_clis::codex_path()],
    );
    flag(
        ci,
        "has_claude",
        "the pinned claude CLI",
        &[vendor_clis::claude_path()],
    );
    flag(
        ci,
        "has_codex_acp",
        "the pinned codex-acp agent (with the pinned codex's bwrap)",
        &[
            vendor_clis::codex_acp_path(),
            vendor_clis::codex_path()
                .with_file_name("")
                .join("../codex-resources/bwrap"),
        ],
    );
    flag(
        ci,
        "has_claude_acp",
        "the pinned claude-code-acp agent",
        &[vendor_clis::claude_acp_path()],
    );
    flag(
        ci,
        "has_mcp_everything",
        "the MCP test server (server-everything)",
        &[vendor_clis::mcp_everything_path()],
    );
    flag(
        ci,
        "has_nats",
        "nats-server",
        &[vendor_clis::nats_server_path()],
    );
    flag(
        ci,
        "has_browser",
        "chromium, chromedriver or axe-core",
        &[chromium, chromedriver, vendor_clis::axe_path()],
    );
    flag(
        ci,
        "has_pytools",
        "the Python contract clients (schemathesis, the MCP and ACP SDKs) in .venv-tools",
        &[
            vendor_clis::schemathesis_path(),
            vendor_clis::python_path(),
            vendor_clis::acp_sdk_path(),
        ],
    );
    if ci || landlock() {
        println!("cargo::rustc-cfg=has_landlock");
    } else {
        println!(
            "cargo::warning=the kernel does not enforce Landlock: the agent confinement tests are built ignored (skipped)"
        );
    }
}

/// Whether the kernel enforces Landlock: it creates a ruleset (which restricts
/// nothing until a process applies it to itself), as it must for `tandem confine`.
#[cfg(target_os = "linux")]
fn landlock() -> bool {
    use landlock::{Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, ABI};
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|r| r.create())
        .is_ok()
}

/// Landlock is Linux's.
#[cfg(not(target_os = "linux"))]
fn landlock() -> bool {
    false
}

/// Sets `cfg` when every one of `paths` is a file (or under CI), and asks cargo to run
/// this script again when one of them changes, so installing a tool later un-skips its
/// tests (a path that does not exist makes cargo rerun the script on every build).
fn flag(ci: bool, cfg: &str, what: &str, paths: &[PathBuf]) {
    for path in paths {
        println!("cargo::rerun-if-changed={}", path.display());
    }
    if ci || paths.iter().all(|p| Path::is_file(p)) {
        println!("cargo::rustc-cfg={cfg}");
    } else {
        println!("cargo::warning={what} is not installed: its tests are built ignored (skipped)");
    }
}
