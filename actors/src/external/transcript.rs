//! One transcript file read incrementally: what was read of it is kept with the size
//! and modification time it had, and a later look reads only the lines appended since
//! (a file that shrank or was replaced is read again from its start). A line that is
//! not JSON is skipped and counted; a line still being written (no newline yet) waits
//! for the next look.

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

/// What a vendor's lines say of its session, folded line by line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// The CLI's session id.
    pub session_id: Option<String>,
    /// Where the CLI worked.
    pub cwd: Option<String>,
    /// A title the CLI gave it.
    pub title: Option<String>,
    /// The first prompt a person wrote.
    pub first_prompt: Option<String>,
    /// Prompts, answers and tool calls.
    pub messages: u64,
    /// The newest line's time, epoch ms.
    pub last_at: Option<u64>,
    /// Lines that could not be read.
    pub skipped: u64,
}

/// How a vendor's transcript lines are folded into a [`Summary`].
pub type Fold = fn(&mut Summary, &Value);

/// A transcript as far as it was read.
#[derive(Debug, Clone, Default)]
pub struct Tracked {
    /// Its size when last read.
    pub size: u64,
    /// Its modification time when last read.
    pub modified: Option<SystemTime>,
    /// Bytes read so far: everything up to the last complete line.
    pub offset: u64,
    /// What those lines said.
    pub summary: Summary,
}

impl Tracked {
    /// Brings it up to date with the file at `path` (size `size`, modified `modified`),
    /// reading only what was appended; answers the bytes read.
    pub fn refresh(
        &mut self,
        path: &Path,
        size: u64,
        modified: Option<SystemTime>,
        fold: Fold,
    ) -> std::io::Result<u64> {
        if size == self.size && modified == self.modified {
            return Ok(0);
        }
        if size < self.offset {
            // Shorter than what was read: another file now. Start again.
            *self = Tracked::default();
        }
        let mut file = open_no_follow(path)?;
        file.seek(SeekFrom::Start(self.offset))?;
        // Line by line: a large transcript is never held whole.
        let mut reader = std::io::BufReader::new(file.take(size.saturating_sub(self.offset)));
        let mut line = Vec::new();
        let mut read = 0u64;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            read += n as u64;
            // The end, or a line still being written: it waits for the next look.
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            self.offset += n as u64;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Value>(&line) {
                Ok(v) if v.is_object() => {
                    fold(&mut self.summary, &v);
                    if let Some(at) = v
                        .get("timestamp")
                        .and_then(Value::as_str)
                        .and_then(|t| crate::schedule::parse_rfc3339(t).ok())
                    {
                        self.summary.last_at = Some(self.summary.last_at.map_or(at, |l| l.max(at)));
                    }
                }
                _ => self.summary.skipped += 1,
            }
        }
        self.size = size;
        self.modified = modified;
        Ok(read)
    }
}

/// Opens `path` for reading, refusing a symbolic link.
pub fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// The text of a message's content: a string, or its `text` blocks (`type` `text`,
/// `input_text` or `output_text`) joined.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| {
                matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("text" | "input_text" | "output_text")
                )
            })
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Sets `slot` to `value` if it is empty.
pub fn first(slot: &mut Option<String>, value: Option<&str>) {
    if slot.is_none() {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            *slot = Some(v.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(s: &mut Summary, v: &Value) {
        s.messages += 1;
        first(&mut s.session_id, v["id"].as_str());
    }

    #[test]
    fn appended_lines_are_read_alone_and_a_bad_line_is_skipped() {
        let dir = std::env::temp_dir().join(format!("tandem-transcript-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        std::fs::write(&path, "{\"id\":\"a\"}\nnot json\n{\"id\":\"b\"}\n{\"id\":").unwrap();
        let look = |t: &mut Tracked| {
            let m = std::fs::metadata(&path).unwrap();
            t.refresh(&path, m.len(), m.modified().ok(), count).unwrap()
        };
        let mut t = Tracked::default();
        let first_read = look(&mut t);
        assert_eq!((t.summary.messages, t.summary.skipped), (2, 1));
        assert_eq!(t.summary.session_id.as_deref(), Some("a"));
        assert_eq!(first_read, std::fs::metadata(&path).unwrap().len());
        // Unchanged: nothing read.
        assert_eq!(look(&mut t), 0);
        // The half line is finished and one more appended: only the new bytes are read.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"\"c\"}\n{\"id\":\"d\"}\n").unwrap();
        drop(f);
        let again = look(&mut t);
        assert_eq!(
            again,
            "{\"id\":".len() as u64 + "\"c\"}\n{\"id\":\"d\"}\n".len() as u64
        );
        assert_eq!((t.summary.messages, t.summary.skipped), (4, 1));
        // Replaced by a shorter file: read from the start.
        std::fs::write(&path, "{\"id\":\"z\"}\n").unwrap();
        look(&mut t);
        assert_eq!(t.summary.session_id.as_deref(), Some("z"));
        assert_eq!(t.summary.messages, 1);
        // A link is not followed.
        let link = dir.join("link.jsonl");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(open_no_follow(&link).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
