//! Claude Code transcripts written by a test, and a config whose `claude` vendor
//! (never run: its binary is `/bin/true`) keeps them in a HOME of its own: what
//! `external.list` reads when the test is about the listing, not the CLI. (The real
//! CLIs' transcripts are made in `e2e/claude.rs` and `e2e/codex.rs`.)

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// One transcript line: a person's `text` in session `id`, working in `cwd`.
pub fn prompt_line(id: &str, cwd: &Path, text: &str) -> String {
    let v = json!({"type": "user", "sessionId": id, "cwd": cwd, "timestamp": "2026-01-01T00:00:00Z",
                   "message": {"role": "user", "content": [{"type": "text", "text": text}]}});
    format!("{v}\n")
}

/// One transcript line: the agent's answer `text` in session `id`, working in `cwd`.
pub fn answer_line(id: &str, cwd: &Path, text: &str) -> String {
    let v = json!({"type": "assistant", "sessionId": id, "cwd": cwd, "timestamp": "2026-01-01T00:00:01Z",
                   "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}});
    format!("{v}\n")
}

/// Writes each `(session id, text)` transcript under `dir/claude-home` and
/// `dir/tandem.toml` declaring that home's `claude` vendor, followed by `more`
/// config text; answers the config's path and the transcripts' folder.
pub fn claude_home(dir: &Path, transcripts: &[(&str, String)], more: &str) -> (PathBuf, PathBuf) {
    let home = dir.join("claude-home");
    let project = home.join(".claude/projects/p");
    std::fs::create_dir_all(&project)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", project.display()));
    for (id, text) in transcripts {
        let path = project.join(format!("{id}.jsonl"));
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
    let config = dir.join("tandem.toml");
    let text = format!(
        "[vendors.claude]\nbin = \"/bin/true\"\nenv = {{ HOME = {} }}\n{more}",
        json!(home.display().to_string())
    );
    std::fs::write(&config, text)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", config.display()));
    (config, project)
}

/// Asserts that `listed` (an `external.list` entry) is `vendor`'s session
/// `vendor_session_id`, continued by tandem session `session_id`.
pub fn assert_listed(listed: &Value, vendor: &str, vendor_session_id: &str, session_id: &str) {
    assert_eq!(
        (
            listed["vendor"].as_str(),
            listed["vendorSessionId"].as_str(),
            listed["sessionId"].as_str()
        ),
        (Some(vendor), Some(vendor_session_id), Some(session_id)),
        "{listed}"
    );
}
