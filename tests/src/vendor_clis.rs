//! Where the tools the tests drive are: the pinned vendor CLIs (`.ci/run` installs them
//! with `npm install --prefix .vendor-clis` at the repository root), axe-core, and
//! Chromium with its chromedriver (apt).
//!
//! `tests/build.rs` compiles this same file to decide, when the tests are built, which
//! tools are here: a test whose tool is missing is built `#[ignore]`d, so nextest lists
//! it as skipped instead of letting it pass without running. Under CI (`CI` set) every
//! tool counts as present, so a missing one fails its tests through [`require`].

use std::path::PathBuf;

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Where a pinned tool is expected: `env_key` when set, else under `.vendor-clis`.
fn pinned_path(env_key: &str, relative: &str) -> PathBuf {
    match std::env::var_os(env_key).filter(|p| !p.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => repo_root().join(".vendor-clis/node_modules").join(relative),
    }
}

/// Where the native `codex` binary is expected (`TANDEM_TEST_CODEX_BIN` overrides).
pub fn codex_path() -> PathBuf {
    pinned_path(
        "TANDEM_TEST_CODEX_BIN",
        "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    )
}

/// Where the native `claude` binary is expected (`TANDEM_TEST_CLAUDE_BIN` overrides).
pub fn claude_path() -> PathBuf {
    pinned_path(
        "TANDEM_TEST_CLAUDE_BIN",
        "@anthropic-ai/claude-code-linux-x64/claude",
    )
}

/// Where the MCP project's `server-everything` (a test MCP server with an `echo` tool)
/// is expected (`TANDEM_TEST_MCP_EVERYTHING_JS` overrides); run as `node PATH stdio`.
pub fn mcp_everything_path() -> PathBuf {
    pinned_path(
        "TANDEM_TEST_MCP_EVERYTHING_JS",
        "@modelcontextprotocol/server-everything/dist/index.js",
    )
}

/// Where axe-core's browser bundle is expected (`TANDEM_TEST_AXE_JS` overrides).
pub fn axe_path() -> PathBuf {
    pinned_path("TANDEM_TEST_AXE_JS", "axe-core/axe.min.js")
}

/// Where Zed's Codex ACP agent is expected, the native binary
/// (`TANDEM_TEST_CODEX_ACP_BIN` overrides).
pub fn codex_acp_path() -> PathBuf {
    pinned_path(
        "TANDEM_TEST_CODEX_ACP_BIN",
        "@zed-industries/codex-acp-linux-x64/bin/codex-acp",
    )
}

/// Where Zed's Claude Code ACP agent is expected, a Node script with a `node` shebang
/// (`TANDEM_TEST_CLAUDE_ACP_BIN` overrides).
pub fn claude_acp_path() -> PathBuf {
    pinned_path(
        "TANDEM_TEST_CLAUDE_ACP_BIN",
        "@zed-industries/claude-code-acp/dist/index.js",
    )
}

/// The Python of the tests' virtualenv (`.ci/run` makes `.venv-tools` at the
/// repository root from `tests/python-requirements.txt`), with the official MCP SDK.
pub fn python_path() -> PathBuf {
    repo_root().join(".venv-tools/bin/python")
}

/// schemathesis's command in the tests' virtualenv.
pub fn schemathesis_path() -> PathBuf {
    repo_root().join(".venv-tools/bin/schemathesis")
}

/// The metadata of the pinned official ACP Python SDK (`agent-client-protocol` in
/// `tests/python-requirements.txt`) in the tests' virtualenv, under whichever Python
/// made it; a path that does not exist when it is not installed.
pub fn acp_sdk_path() -> PathBuf {
    const DIST: &str = "agent_client_protocol-0.12.1.dist-info/METADATA";
    let lib = repo_root().join(".venv-tools/lib");
    std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("site-packages").join(DIST))
        .find(|path| path.is_file())
        .unwrap_or_else(|| lib.join("python3/site-packages").join(DIST))
}

/// Zed's Codex ACP agent, if installed.
pub fn codex_acp_bin() -> Option<PathBuf> {
    Some(codex_acp_path()).filter(|p| p.is_file())
}

/// Zed's Claude Code ACP agent, if installed.
pub fn claude_acp_bin() -> Option<PathBuf> {
    Some(claude_acp_path()).filter(|p| p.is_file())
}

/// The folder of the `bwrap` Codex ships for its Linux sandbox. `codex-acp` ships
/// none and looks for `bwrap` on PATH, so its tests put this folder there.
pub fn codex_sandbox_dir() -> Option<PathBuf> {
    let dir = repo_root().join(
        ".vendor-clis/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex-resources",
    );
    dir.join("bwrap").is_file().then_some(dir)
}

/// The native `codex` binary, if installed.
pub fn codex_bin() -> Option<PathBuf> {
    Some(codex_path()).filter(|p| p.is_file())
}

/// The native `claude` binary, if installed.
pub fn claude_bin() -> Option<PathBuf> {
    Some(claude_path()).filter(|p| p.is_file())
}

/// axe-core's browser bundle, for accessibility checks, if installed.
pub fn axe_js() -> Option<PathBuf> {
    Some(axe_path()).filter(|p| p.is_file())
}

/// Finds an executable on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Chromium, if on `PATH` (Debian names it `chromium`, others `chromium-browser`).
pub fn chromium() -> Option<PathBuf> {
    which("chromium").or_else(|| which("chromium-browser"))
}

/// chromedriver, if on `PATH`.
pub fn chromedriver() -> Option<PathBuf> {
    which("chromedriver")
}

/// `found`, or a panic saying `what` is missing. Tests whose tool is missing are built
/// ignored (see the module comment), so this fails only under CI, or when someone runs
/// ignored tests on purpose.
pub fn require(found: Option<PathBuf>, what: &str) -> PathBuf {
    match found {
        Some(path) => path,
        None => panic!("{what} is not installed (see .ci/run's install steps)"),
    }
}

/// Where `nats-server` is: on `PATH`, else Debian's `/usr/sbin/nats-server`.
pub fn nats_server_path() -> PathBuf {
    which("nats-server").unwrap_or_else(|| PathBuf::from("/usr/sbin/nats-server"))
}
