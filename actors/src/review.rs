//! `chat.review`'s message: each comment anchored in the session's unified diff (a
//! line the diff does not have is refused, naming it) and quoted with its hunk lines.
//! Pure, so it is unit-tested; the runtime reads the diff and sends the message.

use tandem_protocol::review::{ReviewComment, ReviewSide};

use crate::error::RuntimeError;

/// Lines of the hunk quoted before and after a comment's own.
const CONTEXT: usize = 2;

/// One line of a hunk, with its numbers on each side it is on.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    /// `' '`, `'-'` or `'+'`.
    mark: char,
    /// Its number in the old file (context and removed lines).
    old: Option<u32>,
    /// Its number in the new file (context and added lines).
    new: Option<u32>,
    /// The text, without the mark.
    text: String,
}

/// A file of the diff: its hunks' lines, in order.
#[derive(Debug, Default)]
struct File {
    path: String,
    /// Each hunk's lines.
    hunks: Vec<Vec<Line>>,
}

/// The files of a `git diff` text.
fn parse(diff: &str) -> Vec<File> {
    let mut files: Vec<File> = Vec::new();
    let (mut old, mut new) = (0u32, 0u32);
    let mut old_path = String::new();
    for raw in diff.lines() {
        if raw.starts_with("diff --git ") {
            files.push(File::default());
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if let Some(p) = raw.strip_prefix("--- ") {
            old_path = side_path(p, "a/").unwrap_or_default();
            file.path.clone_from(&old_path);
            continue;
        }
        if let Some(p) = raw.strip_prefix("+++ ") {
            // A deleted file keeps its old path.
            file.path = side_path(p, "b/").unwrap_or_else(|| old_path.clone());
            continue;
        }
        if let Some(header) = raw.strip_prefix("@@ ") {
            (old, new) = hunk_starts(header);
            file.hunks.push(Vec::new());
            continue;
        }
        let Some(hunk) = file.hunks.last_mut() else {
            continue;
        };
        let mut chars = raw.chars();
        let (mark, text) = (chars.next(), chars.as_str().to_string());
        let line = match mark {
            Some(' ') => {
                (old, new) = (old + 1, new + 1);
                Line {
                    mark: ' ',
                    old: Some(old - 1),
                    new: Some(new - 1),
                    text,
                }
            }
            Some('-') => {
                old += 1;
                Line {
                    mark: '-',
                    old: Some(old - 1),
                    new: None,
                    text,
                }
            }
            Some('+') => {
                new += 1;
                Line {
                    mark: '+',
                    old: None,
                    new: Some(new - 1),
                    text,
                }
            }
            // `\ No newline at end of file`, or the end of the hunk.
            _ => continue,
        };
        hunk.push(line);
    }
    files
}

/// `a/path` or `b/path` (git may quote a path with unusual characters); `None` for
/// `/dev/null`.
fn side_path(field: &str, prefix: &str) -> Option<String> {
    let field = field.trim_end();
    let unquoted = field
        .strip_prefix('"')
        .and_then(|f| f.strip_suffix('"'))
        .unwrap_or(field);
    unquoted.strip_prefix(prefix).map(str::to_string)
}

/// The first old and new line numbers of a hunk header (`-a,b +c,d @@ …`).
fn hunk_starts(header: &str) -> (u32, u32) {
    let mut fields = header.split_whitespace();
    let start = |f: Option<&str>, sign: char| {
        f.and_then(|f| f.strip_prefix(sign))
            .and_then(|f| f.split(',').next())
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    };
    let old = start(fields.next(), '-');
    let new = start(fields.next(), '+');
    (old, new)
}

/// The lines `comment` is on, with their context, or why it is not in the diff.
fn anchor(files: &[File], comment: &ReviewComment) -> Result<Vec<Line>, String> {
    let end = comment.end_line.unwrap_or(comment.line);
    let side = match comment.side {
        ReviewSide::New => "new",
        ReviewSide::Old => "old",
    };
    let at = format!(
        "`{:.200}` line {}{} ({side})",
        comment.path,
        comment.line,
        if end == comment.line {
            String::new()
        } else {
            format!("–{end}")
        }
    );
    if end < comment.line {
        return Err(format!("{at}: `endLine` is before `line`"));
    }
    let Some(file) = files.iter().find(|f| f.path == comment.path) else {
        return Err(format!("{at}: the diff has no changes to that file"));
    };
    let number = |l: &Line| match comment.side {
        ReviewSide::New => l.new,
        ReviewSide::Old => l.old,
    };
    for hunk in &file.hunks {
        let first = hunk.iter().position(|l| number(l) == Some(comment.line));
        let last = hunk.iter().position(|l| number(l) == Some(end));
        if let (Some(first), Some(last)) = (first, last) {
            let from = first.saturating_sub(CONTEXT);
            let to = (last + CONTEXT + 1).min(hunk.len());
            return Ok(hunk[from..to].to_vec());
        }
    }
    Err(format!("{at}: the diff does not show that line"))
}

/// A code fence longer than any run of backticks in `lines`.
fn fence(lines: &[Line]) -> String {
    let longest = lines
        .iter()
        .flat_map(|l| l.text.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// `comments` split into those on lines `diff` shows and, for each of the rest, why
/// not; the diff is read once (a reviewer's answer may hold 50 comments on a 4 MiB
/// diff).
pub fn split_anchored(
    diff: &str,
    comments: Vec<ReviewComment>,
) -> (Vec<ReviewComment>, Vec<String>) {
    let files = parse(diff);
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for comment in comments {
        match anchor(&files, &comment) {
            Ok(_) => kept.push(comment),
            Err(why) => dropped.push(why),
        }
    }
    (kept, dropped)
}

/// The message a review sends: the summary, then each comment with the lines it is
/// on; refused with `INVALID_ANCHOR`, naming every comment whose lines `diff` (the
/// session's whole diff, as `session.diff` gives it) does not have.
pub fn message(
    diff: &str,
    comments: &[ReviewComment],
    summary: Option<&str>,
    heading: &str,
) -> Result<String, RuntimeError> {
    let files = parse(diff);
    let mut quoted = Vec::new();
    let mut missing = Vec::new();
    for comment in comments {
        match anchor(&files, comment) {
            Ok(lines) => quoted.push((comment, lines)),
            Err(why) => missing.push(why),
        }
    }
    if !missing.is_empty() {
        return Err(RuntimeError::InvalidAnchor(missing.join("; ")));
    }
    let count = comments.len();
    let mut out = format!(
        "{heading}: {count} comment{}. Address each one.\n",
        if count == 1 { "" } else { "s" }
    );
    if let Some(summary) = summary.map(str::trim).filter(|s| !s.is_empty()) {
        out.push_str(&format!("\n{summary}\n"));
    }
    for (n, (comment, lines)) in quoted.iter().enumerate() {
        let end = comment.end_line.unwrap_or(comment.line);
        let range = if end == comment.line {
            format!("line {}", comment.line)
        } else {
            format!("lines {}–{end}", comment.line)
        };
        let side = match comment.side {
            ReviewSide::New => "",
            ReviewSide::Old => " of the old version",
        };
        let fence = fence(lines);
        out.push_str(&format!(
            "\n{}. `{}` {range}{side}:\n{fence}diff\n",
            n + 1,
            comment.path
        ));
        for line in lines {
            out.push_str(&format!("{}{}\n", line.mark, line.text));
        }
        out.push_str(&format!("{fence}\n"));
        for body_line in comment.body.trim().lines() {
            out.push_str(&format!("> {body_line}\n"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/a.rs b/src/a.rs
index 1111111..2222222 100644
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,6 +1,7 @@
 fn main() {
-    old();
+    new();
+    more();
     a();
     b();
     c();
@@ -20,3 +21,3 @@ fn tail() {
 x();
-y();
+z();
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-one
-two
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello ``` fence
\\ No newline at end of file
";

    fn comment(path: &str, line: u32, end: Option<u32>, side: ReviewSide) -> ReviewComment {
        ReviewComment {
            path: path.into(),
            line,
            end_line: end,
            side,
            body: "why?\nsecond line".into(),
        }
    }

    #[test]
    fn lines_are_numbered_on_each_side() {
        let files = parse(DIFF);
        assert_eq!(
            files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["src/a.rs", "gone.txt", "new.txt"]
        );
        let first = &files[0].hunks[0];
        assert_eq!(first[1].old, Some(2));
        assert_eq!(first[2].new, Some(2));
        assert_eq!(first[3].new, Some(3));
        assert_eq!(first[4].old, Some(3));
        assert_eq!(first[4].new, Some(4));
        assert_eq!(files[0].hunks[1][2].new, Some(22));
        assert_eq!(
            files[2].hunks[0].len(),
            1,
            "the no-newline marker is no line"
        );
    }

    #[test]
    fn comments_are_quoted_with_their_lines_and_context() {
        let text = message(
            DIFF,
            &[
                comment("src/a.rs", 2, Some(3), ReviewSide::New),
                comment("gone.txt", 1, None, ReviewSide::Old),
                comment("new.txt", 1, None, ReviewSide::New),
            ],
            Some("Nice overall."),
            "Review of your changes",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            text.starts_with("Review of your changes: 3 comments."),
            "{text}"
        );
        assert!(text.contains("\nNice overall.\n"), "{text}");
        assert!(
            text.contains(
                "1. `src/a.rs` lines 2–3:\n```diff\n fn main() {\n-    old();\n+    new();\n+    more();\n     a();\n     b();\n```\n> why?\n> second line\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("2. `gone.txt` line 1 of the old version:"),
            "{text}"
        );
        assert!(
            text.contains("````diff\n+hello ``` fence\n````"),
            "a longer fence: {text}"
        );
    }

    #[test]
    fn a_line_the_diff_lacks_is_refused_naming_each() {
        let refused = message(
            DIFF,
            &[
                comment("src/a.rs", 2, None, ReviewSide::New),
                comment("src/a.rs", 15, None, ReviewSide::New),
                comment("src/a.rs", 2, None, ReviewSide::Old),
                comment("nope.rs", 1, None, ReviewSide::New),
                comment("gone.txt", 1, None, ReviewSide::New),
                comment("src/a.rs", 3, Some(2), ReviewSide::New),
            ],
            None,
            "Review of your changes",
        );
        let Err(RuntimeError::InvalidAnchor(why)) = refused else {
            panic!("{refused:?}");
        };
        assert!(why.contains("`src/a.rs` line 15 (new)"), "{why}");
        assert!(!why.contains("`src/a.rs` line 2 (new)"), "{why}");
        assert!(
            !why.contains("line 2 (old)"),
            "old line 2 is the removed one: {why}"
        );
        assert!(
            why.contains("`nope.rs` line 1 (new): the diff has no changes"),
            "{why}"
        );
        assert!(why.contains("`gone.txt` line 1 (new)"), "{why}");
        assert!(why.contains("`endLine` is before `line`"), "{why}");
    }
}
