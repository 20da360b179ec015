//! A line diff of two texts as the lines of a unified diff: what an adapter writes
//! as a file change's `diff` when its vendor reports an edit as old and new text
//! (Claude Code's `Edit`, ACP's `diff` content) rather than as a patch.

/// Above this many lines on a side, no lines are matched: all removed, all added (the
/// matching table is lines × lines).
const MATCH_LIMIT: usize = 2000;

/// The lines of `old` → `new`, each prefixed `' '` (kept), `'-'` or `'+'`, removals
/// before additions where both are at one place, joined by `\n` with a final `\n`
/// (empty when both are empty). The longest common subsequence of lines is kept; an
/// empty `old` is a new file.
pub fn line_diff(old: &str, new: &str) -> String {
    let (x, y) = (lines(old), lines(new));
    let mut out = String::new();
    let mut push = |op: char, line: &str| {
        out.push(op);
        out.push_str(line);
        out.push('\n');
    };
    if x.len() > MATCH_LIMIT || y.len() > MATCH_LIMIT {
        x.iter().for_each(|l| push('-', l));
        y.iter().for_each(|l| push('+', l));
        return out;
    }
    // common[i][j]: length of the common subsequence of x[i..] and y[j..].
    let width = y.len() + 1;
    let mut common = vec![0u32; (x.len() + 1) * width];
    for i in (0..x.len()).rev() {
        for j in (0..y.len()).rev() {
            common[i * width + j] = if x[i] == y[j] {
                common[(i + 1) * width + j + 1] + 1
            } else {
                common[(i + 1) * width + j].max(common[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < x.len() || j < y.len() {
        if i < x.len() && j < y.len() && x[i] == y[j] {
            push(' ', x[i]);
            i += 1;
            j += 1;
        } else if i < x.len()
            && (j == y.len() || common[(i + 1) * width + j] >= common[i * width + j + 1])
        {
            push('-', x[i]);
            i += 1;
        } else {
            push('+', y[j]);
            j += 1;
        }
    }
    out
}

/// The lines of a text (`\r\n` and `\r` taken as `\n`; a final newline ends the last
/// line rather than starting an empty one).
fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::line_diff;

    #[test]
    fn kept_lines_stay_and_changes_go_removed_then_added() {
        assert_eq!(line_diff("one\ntwo\n", "one\n2\n"), " one\n-two\n+2\n");
        assert_eq!(line_diff("", "fresh\nfile\n"), "+fresh\n+file\n");
        assert_eq!(line_diff("bye\n", ""), "-bye\n");
        assert_eq!(line_diff("", ""), "");
        assert_eq!(
            line_diff("a\nb\nc\nd", "a\nc\nd\ne"),
            " a\n-b\n c\n d\n+e\n"
        );
        assert_eq!(line_diff("x\r\ny", "x\ny"), " x\n y\n");
    }

    #[test]
    fn huge_sides_are_not_matched() {
        let old = "l\n".repeat(2001);
        let diff = line_diff(&old, "l\n");
        assert_eq!(diff.lines().filter(|l| l.starts_with('-')).count(), 2001);
        assert_eq!(diff.lines().filter(|l| l.starts_with('+')).count(), 1);
    }
}
