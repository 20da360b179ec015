//! Where the pinned vendor CLIs are for the tests: `.ci/run` installs them with
//! `npm install --prefix .vendor-clis` at the repository root.

use std::path::PathBuf;

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn pinned(env_key: &str, relative: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env_key).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = repo_root().join(".vendor-clis/node_modules").join(relative);
    path.is_file().then_some(path)
}

/// The native `codex` binary (`TANDEM_TEST_CODEX_BIN` overrides).
pub fn codex_bin() -> Option<PathBuf> {
    pinned(
        "TANDEM_TEST_CODEX_BIN",
        "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    )
}

/// The native `claude` binary (`TANDEM_TEST_CLAUDE_BIN` overrides).
pub fn claude_bin() -> Option<PathBuf> {
    pinned(
        "TANDEM_TEST_CLAUDE_BIN",
        "@anthropic-ai/claude-code-linux-x64/claude",
    )
}

/// Zed's Codex ACP agent, the native binary (`TANDEM_TEST_CODEX_ACP_BIN` overrides).
pub fn codex_acp_bin() -> Option<PathBuf> {
    pinned(
        "TANDEM_TEST_CODEX_ACP_BIN",
        "@zed-industries/codex-acp-linux-x64/bin/codex-acp",
    )
}

/// Zed's Claude Code ACP agent, a Node script with a `node` shebang
/// (`TANDEM_TEST_CLAUDE_ACP_BIN` overrides).
pub fn claude_acp_bin() -> Option<PathBuf> {
    pinned(
        "TANDEM_TEST_CLAUDE_ACP_BIN",
        "@zed-industries/claude-code-acp/dist/index.js",
    )
}

/// The folder of the `bwrap` Codex ships for its Linux sandbox. `codex-acp` ships
/// none and looks for `bwrap` on PATH, so its tests put this folder there.
pub fn codex_sandbox_dir() -> Option<PathBuf> {
    let dir = repo_root().join(
        ".vendor-clis/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex-resources",
    );
    dir.join("bwrap").is_file().then_some(dir)
}

/// axe-core's browser bundle, for accessibility checks.
pub fn axe_js() -> Option<PathBuf> {
    pinned("TANDEM_TEST_AXE_JS", "axe-core/axe.min.js")
}

/// `found`, or — when it is absent — prints why the test is skipped and returns
/// `None`. Under CI (`CI` set) an absent tool is a failure, never a skip: CI installs
/// every one.
pub fn require(found: Option<PathBuf>, what: &str) -> Option<PathBuf> {
    if found.is_some() {
        return found;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{what} is not installed, but CI must have it (see .ci/run)");
    }
    eprintln!("skipped: {what} is not installed (run .ci/run's install steps)");
    None
}
