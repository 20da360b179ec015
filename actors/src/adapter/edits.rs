//! File edits as each vendor reports them, turned into [`FileChange`]s: the one shape
//! history and every client read (a `tool_call`'s `changes`).
//!
//! - Claude Code: the `Edit` (and `str_replace`), `MultiEdit` and `Write` tools'
//!   inputs, old and new text, diffed here;
//! - Codex: a file-change item's `changes`, `{path, kind: {type, move_path}, diff}`,
//!   with the unified diff Codex made (a new or deleted file's whole text instead);
//! - ACP agents: a tool call's `{type: "diff", path, oldText, newText}` content,
//!   diffed here.

use serde_json::Value;
use tandem_protocol::{FileChange, FileChangeKind};

use super::core::line_diff;

/// Claude Code's edit tools; empty for any other tool.
pub fn claude(name: &str, input: &Value) -> Vec<FileChange> {
    let path = ["file_path", "path", "filePath"]
        .into_iter()
        .find_map(|k| input[k].as_str())
        .unwrap_or_default()
        .to_string();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let change = |kind, diff| {
        vec![FileChange {
            path: path.clone(),
            kind,
            move_path: None,
            diff,
        }]
    };
    match name {
        "Edit" | "str_replace" if input["old_string"].is_string() => change(
            FileChangeKind::Modify,
            line_diff(&text(&input["old_string"]), &text(&input["new_string"])),
        ),
        "MultiEdit" => {
            let Some(edits) = input["edits"].as_array() else {
                return Vec::new();
            };
            let mut diff = String::new();
            for (i, e) in edits.iter().enumerate() {
                diff.push_str(&format!("@@ edit {} of {} @@\n", i + 1, edits.len()));
                diff.push_str(&line_diff(&text(&e["old_string"]), &text(&e["new_string"])));
            }
            change(FileChangeKind::Modify, diff)
        }
        "Write" if input["content"].is_string() => {
            change(FileChangeKind::Add, line_diff("", &text(&input["content"])))
        }
        _ => Vec::new(),
    }
}

/// A Codex file-change item's `changes`.
pub fn codex(changes: &[Value]) -> Vec<FileChange> {
    changes
        .iter()
        .filter(|c| c.is_object())
        .map(|c| {
            let kind_name = c["kind"]["type"].as_str().or_else(|| c["kind"].as_str());
            let move_path = c["kind"]["move_path"]
                .as_str()
                .or_else(|| c["kind"]["movePath"].as_str())
                .map(str::to_string);
            let kind = match kind_name {
                Some("add") => FileChangeKind::Add,
                Some("delete") => FileChangeKind::Delete,
                _ if move_path.is_some() => FileChangeKind::Rename,
                _ => FileChangeKind::Modify,
            };
            let text = c["diff"].as_str().or_else(|| c["content"].as_str());
            FileChange {
                path: c["path"].as_str().unwrap_or_default().to_string(),
                kind,
                move_path,
                diff: codex_diff(kind, text.unwrap_or_default()),
            }
        })
        .collect()
}

/// Codex's diff text as diff lines: a unified diff without its `---`/`+++` header;
/// a new or deleted file's text (no hunks) as all added or all removed lines.
fn codex_diff(kind: FileChangeKind, text: &str) -> String {
    let unified = text.lines().any(|l| l.starts_with("@@"));
    match kind {
        FileChangeKind::Add if !unified => line_diff("", text),
        FileChangeKind::Delete if !unified => line_diff(text, ""),
        _ => text
            .lines()
            .filter(|l| !l.starts_with("--- ") && !l.starts_with("+++ "))
            .map(|l| format!("{l}\n"))
            .collect(),
    }
}

/// An ACP tool call's content (the list, or one item): its diffs.
pub fn acp(content: &Value) -> Vec<FileChange> {
    let items = match content {
        Value::Array(items) => items.as_slice(),
        other => std::slice::from_ref(other),
    };
    items
        .iter()
        .filter(|c| c["type"] == "diff" && c["newText"].is_string())
        .map(|c| {
            let old = c["oldText"].as_str();
            FileChange {
                path: c["path"].as_str().unwrap_or_default().to_string(),
                kind: match old {
                    None => FileChangeKind::Add,
                    Some(_) => FileChangeKind::Modify,
                },
                move_path: None,
                diff: line_diff(
                    old.unwrap_or_default(),
                    c["newText"].as_str().unwrap_or_default(),
                ),
            }
        })
        .collect()
}

/// A tool call shown in any vendor's shape (the scripted agent's `/show`, a
/// transcript imported from the machine, a history stored before tool calls carried
/// their changes): Claude Code's tools by name, else Codex's `changes`, else ACP's
/// diff content.
pub fn any(name: &str, input: &Value) -> Vec<FileChange> {
    let claude = claude(name, input);
    if !claude.is_empty() {
        return claude;
    }
    if let Some(changes) = input["changes"].as_array() {
        return codex(changes);
    }
    match &input["content"] {
        Value::Null => acp(input),
        content => acp(content),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_vendors_edit_is_a_file_change() {
        let edit = any(
            "Edit",
            &json!({"file_path": "a.txt", "old_string": "one\ntwo\n", "new_string": "one\n2\n"}),
        );
        assert_eq!(edit[0].path, "a.txt");
        assert_eq!(
            (edit[0].kind, edit[0].diff.as_str()),
            (FileChangeKind::Modify, " one\n-two\n+2\n")
        );
        let write = any("Write", &json!({"file_path": "n.txt", "content": "x\n"}));
        assert_eq!(
            (write[0].kind, write[0].diff.as_str()),
            (FileChangeKind::Add, "+x\n")
        );
        let multi = any(
            "MultiEdit",
            &json!({"file_path": "b", "edits": [{"old_string": "x", "new_string": "y"}]}),
        );
        assert_eq!(multi[0].diff, "@@ edit 1 of 1 @@\n-x\n+y\n");
        let patch = any(
            "apply_patch",
            &json!({"changes": [
                {"path": "c", "kind": {"type": "update", "move_path": null},
                 "diff": "--- a/c\n+++ b/c\n@@ -1,2 +1,2 @@\n-old\n+new\n keep\n"},
                {"path": "gone", "kind": {"type": "delete"}, "diff": "bye\n"},
                {"path": "d", "kind": {"type": "update", "move_path": "e"}, "diff": ""}
            ]}),
        );
        assert_eq!(patch[0].diff, "@@ -1,2 +1,2 @@\n-old\n+new\n keep\n");
        assert_eq!(
            (patch[1].kind, patch[1].diff.as_str()),
            (FileChangeKind::Delete, "-bye\n")
        );
        assert_eq!(
            (patch[2].kind, patch[2].move_path.as_deref()),
            (FileChangeKind::Rename, Some("e"))
        );
        let acp = any(
            "edit",
            &json!({"title": "Edit d", "content": [
                {"type": "diff", "path": "d", "oldText": "a\nb\n", "newText": "a\nc\n"},
                {"type": "content", "content": {"type": "text", "text": "x"}}
            ]}),
        );
        assert_eq!(acp.len(), 1);
        assert_eq!(acp[0].diff, " a\n-b\n+c\n");
        assert!(any("shell", &json!({"command": "ls"})).is_empty());
    }
}
