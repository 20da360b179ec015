//! The file edits in a vendor's tool-call input as ACP `diff` content
//! (`{type: "diff", path, oldText, newText}`), so an editor shows a Claude Code or
//! Codex edit as it shows an ACP agent's own. Pure.
//!
//! - Claude Code's `Edit` (`old_string` → `new_string`), `MultiEdit` (one diff per
//!   edit) and `Write` (a whole new text);
//! - Codex's `apply_patch` changes (`{path, kind, diff}`): an added file's text, a
//!   deleted one's, or a unified diff, whose hunks give the old text (context and
//!   removed lines) and the new (context and added lines);
//! - the scripted vendor's `write` (`{path, text}`, relative to the session's
//!   directory).
//!
//! ACP's `oldText` is absent for a new file; its paths are absolute, so a relative one
//! is joined to the session's directory and one that stays relative is left out.

use std::path::Path;

use serde_json::{json, Value};

/// The `diff` content blocks for the tool call `name` with `input`; empty when it
/// edits no file (or names none by an absolute path).
pub fn diffs(name: &str, input: &Value, cwd: Option<&Path>) -> Vec<Value> {
    let str_of = |v: &Value| v.as_str().map(str::to_string);
    let path = ["file_path", "path", "filePath"]
        .iter()
        .find_map(|k| input[*k].as_str());
    let mut out = Vec::new();
    match name {
        "Edit" | "str_replace" => {
            if let (Some(path), Some(old)) = (path, str_of(&input["old_string"])) {
                let new = str_of(&input["new_string"]).unwrap_or_default();
                out.push(diff(path, Some(old), new, cwd));
            }
        }
        "MultiEdit" => {
            for edit in input["edits"].as_array().into_iter().flatten() {
                if let (Some(path), Some(old)) = (path, str_of(&edit["old_string"])) {
                    let new = str_of(&edit["new_string"]).unwrap_or_default();
                    out.push(diff(path, Some(old), new, cwd));
                }
            }
        }
        "Write" => {
            if let (Some(path), Some(text)) = (path, str_of(&input["content"])) {
                out.push(diff(path, None, text, cwd));
            }
        }
        "write" => {
            if let (Some(path), Some(text)) = (path, str_of(&input["text"])) {
                out.push(diff(path, None, format!("{text}\n"), cwd));
            }
        }
        _ => {
            for change in input["changes"].as_array().into_iter().flatten() {
                if let Some(d) = codex_change(change, cwd) {
                    out.push(d);
                }
            }
        }
    }
    out.into_iter().flatten().collect()
}

/// One diff block, `None` for a path that is not absolute once joined.
fn diff(path: &str, old: Option<String>, new: String, cwd: Option<&Path>) -> Option<Value> {
    let path = absolute(path, cwd)?;
    let mut block = json!({"type": "diff", "path": path, "newText": new});
    if let Some(old) = old {
        block["oldText"] = json!(old);
    }
    Some(block)
}

fn absolute(path: &str, cwd: Option<&Path>) -> Option<String> {
    if path.starts_with('/') {
        return Some(path.to_string());
    }
    let joined = cwd?.join(path);
    joined.is_absolute().then(|| joined.display().to_string())
}

/// A Codex file change (`kind` a word or `{type, move_path?}`).
fn codex_change(change: &Value, cwd: Option<&Path>) -> Option<Option<Value>> {
    let path = change["path"].as_str()?;
    let kind = change["kind"]
        .as_str()
        .or_else(|| change["kind"]["type"].as_str())
        .unwrap_or("update");
    let text = change["diff"]
        .as_str()
        .or_else(|| change["content"].as_str())
        .unwrap_or_default();
    let unified = text.lines().any(|l| l.starts_with("@@"));
    Some(match (kind, unified) {
        ("add", false) => diff(path, None, text.to_string(), cwd),
        ("delete", false) => diff(path, Some(text.to_string()), String::new(), cwd),
        _ => {
            let (old, new) = sides(text);
            let target = change["kind"]["move_path"].as_str().unwrap_or(path);
            diff(target, Some(old), new, cwd)
        }
    })
}

/// The old and new sides of a unified diff's hunks: context lines on both, `-` lines
/// on the old, `+` lines on the new; file headers left out.
fn sides(unified: &str) -> (String, String) {
    let (mut old, mut new) = (String::new(), String::new());
    for line in unified.lines() {
        if line.starts_with("--- ") || line.starts_with("+++ ") || line.starts_with("@@") {
            continue;
        }
        if line.starts_with('\\') {
            // "\ No newline at end of file"
            continue;
        }
        let (mark, rest) = line.split_at(line.len().min(1));
        match mark {
            "-" => push_line(&mut old, rest),
            "+" => push_line(&mut new, rest),
            _ => {
                push_line(&mut old, rest);
                push_line(&mut new, rest);
            }
        }
    }
    (old, new)
}

fn push_line(text: &mut String, line: &str) {
    text.push_str(line);
    text.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_edits_and_writes_are_diffs() {
        let edit = json!({"file_path": "/w/a.rs", "old_string": "x", "new_string": "y"});
        assert_eq!(
            diffs("Edit", &edit, None),
            [json!({"type": "diff", "path": "/w/a.rs", "oldText": "x", "newText": "y"})]
        );
        let multi = json!({"file_path": "/w/a.rs", "edits": [
            {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": ""}]});
        let d = diffs("MultiEdit", &multi, None);
        assert_eq!(d.len(), 2);
        assert_eq!(d[1]["oldText"], "c");
        assert_eq!(d[1]["newText"], "");
        let write = json!({"file_path": "/w/new.txt", "content": "hello\n"});
        let d = diffs("Write", &write, None);
        assert_eq!(
            d,
            [json!({"type": "diff", "path": "/w/new.txt", "newText": "hello\n"})]
        );
        // No oldText: a new file.
        assert!(d[0].get("oldText").is_none());
        // Not an edit, or no absolute path: nothing.
        assert!(diffs("Bash", &json!({"command": "ls"}), None).is_empty());
        let relative = json!({"file_path": "a.rs", "old_string": "x", "new_string": "y"});
        assert!(diffs("Edit", &relative, None).is_empty());
    }

    #[test]
    fn codex_changes_are_diffs_with_their_hunks_sides() {
        let input = json!({"changes": [
            {"path": "/w/new.txt", "kind": {"type": "add"}, "diff": "one\ntwo\n"},
            {"path": "/w/gone.txt", "kind": "delete", "diff": "bye\n"},
            {"path": "/w/a.txt", "kind": {"type": "update", "move_path": null},
             "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n keep\n-old\n+new\n tail\n\\ No newline at end of file\n"},
        ]});
        let d = diffs("apply_patch", &input, None);
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!(
            d[0],
            json!({"type": "diff", "path": "/w/new.txt", "newText": "one\ntwo\n"})
        );
        assert_eq!(
            d[1],
            json!({"type": "diff", "path": "/w/gone.txt", "oldText": "bye\n", "newText": ""})
        );
        assert_eq!(d[2]["oldText"], "keep\nold\ntail\n");
        assert_eq!(d[2]["newText"], "keep\nnew\ntail\n");
        // A move: the new path.
        let moved = json!({"changes": [{"path": "/w/a.txt",
            "kind": {"type": "update", "move_path": "/w/b.txt"}, "diff": "@@ -1 +1 @@\n-a\n+b\n"}]});
        assert_eq!(diffs("apply_patch", &moved, None)[0]["path"], "/w/b.txt");
    }

    #[test]
    fn a_relative_path_is_joined_to_the_sessions_directory() {
        let input = json!({"path": "notes/a.txt", "text": "hi"});
        let d = diffs("write", &input, Some(Path::new("/w/project")));
        assert_eq!(
            d,
            [json!({"type": "diff", "path": "/w/project/notes/a.txt", "newText": "hi\n"})]
        );
        assert!(diffs("write", &input, None).is_empty());
    }
}
