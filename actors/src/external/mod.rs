//! The CLI sessions already on the machine: Claude Code's and Codex's transcripts,
//! where this server's configured CLIs keep them (their `CLAUDE_CONFIG_DIR` /
//! `CODEX_HOME`, else their `HOME`'s `.claude` / `.codex`), each read incrementally
//! ([`transcript`]) and summed up per vendor ([`vendors`]). Listing is `external.list`
//! (`crate::runtime`), which shows a caller only the sessions whose working directory
//! lies under their roots.

pub mod transcript;
pub mod vendors;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use transcript::{Fold, Summary, Tracked};

use crate::adapter::process::{VendorProtocol, VendorsConfig};

/// The largest transcript a session is imported from, bytes.
pub const MAX_IMPORT_BYTES: u64 = 256 << 20;
/// How deep Codex's dated session folders go (`YYYY/MM/DD`).
const CODEX_DEPTH: usize = 4;

/// Where one configured vendor's CLI keeps its transcripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The configured vendor's id.
    pub vendor: String,
    /// Its transcripts' folder.
    pub dir: PathBuf,
    /// Claude Code's layout (`projects/<project>/*.jsonl`), else Codex's.
    pub claude: bool,
}

/// The configured Claude Code and Codex vendors' transcript folders.
pub fn sources(vendors: &VendorsConfig) -> Vec<Source> {
    vendors
        .vendors
        .iter()
        .filter_map(|v| {
            let env = v.process.environment();
            let home = |var: &str, dot: &str| {
                env.get(var)
                    .map(PathBuf::from)
                    .or_else(|| env.get("HOME").map(|h| Path::new(h).join(dot)))
            };
            let (dir, claude) = match v.protocol {
                VendorProtocol::Claude => {
                    (home("CLAUDE_CONFIG_DIR", ".claude")?.join("projects"), true)
                }
                VendorProtocol::Codex => (home("CODEX_HOME", ".codex")?.join("sessions"), false),
                VendorProtocol::Acp { .. } => return None,
            };
            Some(Source {
                vendor: v.id.as_str().to_string(),
                dir,
                claude,
            })
        })
        .collect()
}

/// One transcript found.
#[derive(Debug, Clone)]
pub struct Found {
    /// The vendor whose CLI wrote it.
    pub vendor: String,
    /// The file.
    pub path: PathBuf,
    /// What it says.
    pub summary: Summary,
    /// Its size, bytes.
    pub size: u64,
    /// Its modification time, epoch ms.
    pub modified_ms: u64,
    /// Claude Code's, else Codex's.
    pub claude: bool,
}

/// Every transcript read so far, by path.
#[derive(Debug, Default)]
pub struct ExternalSessions {
    tracked: Mutex<HashMap<PathBuf, Tracked>>,
}

impl ExternalSessions {
    /// Looks at every transcript of `sources` (blocking: call off the actors'
    /// threads), reading what was appended since the last look.
    pub fn scan(&self, sources: &[Source]) -> Vec<Found> {
        let mut found = Vec::new();
        let mut seen = HashSet::new();
        for source in sources {
            let fold: Fold = if source.claude {
                vendors::claude
            } else {
                vendors::codex
            };
            for path in transcripts(source) {
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                let modified = meta.modified().ok();
                let mut tracked = self
                    .tracked
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&path)
                    .unwrap_or_default();
                if let Err(e) = tracked.refresh(&path, meta.len(), modified, fold) {
                    tracing::debug!(path = %path.display(), error = %e, "a transcript could not be read");
                    continue;
                }
                found.push(Found {
                    vendor: source.vendor.clone(),
                    path: path.clone(),
                    summary: tracked.summary.clone(),
                    size: meta.len(),
                    modified_ms: modified.map_or(0, epoch_ms),
                    claude: source.claude,
                });
                seen.insert(path.clone());
                self.tracked
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(path, tracked);
            }
        }
        // Transcripts that went are forgotten.
        self.tracked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|p, _| seen.contains(p) || !sources.iter().any(|s| p.starts_with(&s.dir)));
        found
    }
}

/// The whole conversation of the transcript at `path` (Claude Code's, else Codex's),
/// and how many lines could not be read.
pub fn conversation(path: &Path, claude: bool) -> std::io::Result<(Vec<vendors::Item>, u64)> {
    use std::io::BufRead;
    let items_of = if claude {
        vendors::claude_items
    } else {
        vendors::codex_items
    };
    let mut items = Vec::new();
    let mut skipped = 0;
    for line in std::io::BufReader::new(transcript::open_no_follow(path)?).split(b'\n') {
        let line = line?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(&line) {
            Ok(v) if v.is_object() => items.extend(items_of(&v)),
            _ => skipped += 1,
        }
    }
    Ok((items, skipped))
}

/// The transcript files of `source`: regular files only, no link followed.
fn transcripts(source: &Source) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let depth = if source.claude { 2 } else { CODEX_DEPTH };
    walk(&source.dir, depth, &mut |path| {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let ours = name.ends_with(".jsonl") && (source.claude || name.starts_with("rollout-"));
        if ours {
            out.push(path.to_path_buf());
        }
    });
    out
}

/// Calls `file` for each regular file at most `depth` folders below `dir`.
fn walk(dir: &Path, depth: usize, file: &mut impl FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: BTreeMap<PathBuf, std::fs::FileType> = entries
        .flatten()
        .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
        .collect();
    for (path, kind) in std::mem::take(&mut entries) {
        if kind.is_file() {
            file(&path);
        } else if kind.is_dir() && depth > 1 {
            walk(&path, depth - 1, file);
        }
    }
}

fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
