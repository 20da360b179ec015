//! Results go to stdout as JSON lines; everything else goes to stderr.

use std::io::Write;

use serde_json::Value;

/// Prints one result object as one line.
pub fn line(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// A progress note on stderr.
pub fn note(text: &str) {
    eprintln!("bench: {text}");
}
