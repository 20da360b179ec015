//! The model lists vendor CLIs last reported (Codex's `model/list`, an ACP agent's
//! session models, with an ACP agent's effort levels), kept in `vendor-models.json` in the data directory. A restarted
//! server serves them at once, before the background vendor check has asked the CLI
//! again (which takes seconds, or never answers when the CLI is broken), and the check
//! replaces them when it gets an answer.
//!
//! The file is a cache: one that is missing, unreadable or malformed is treated as
//! empty (and logged), and a write that fails costs only the next start's head start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::VendorId;

/// The file's name in the data directory.
pub const FILE_NAME: &str = "vendor-models.json";

/// One vendor's models as its CLI last reported them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedModels {
    /// The models, the default first.
    pub models: Vec<String>,
    /// The one the CLI marked as its default, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Effort levels the agent offered (an ACP agent's `thought_level` option); absent
    /// in files written before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effort_levels: Vec<String>,
}

/// The cache file of one data directory. Probes finish concurrently; the lock keeps
/// their read-modify-write of the file from interleaving.
#[derive(Debug)]
pub struct ModelCache {
    path: PathBuf,
    lock: Mutex<()>,
}

impl ModelCache {
    /// The cache in `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        ModelCache {
            path: data_dir.join(FILE_NAME),
            lock: Mutex::new(()),
        }
    }

    /// Every vendor's cached models, by vendor id (empty when there is no usable file).
    pub fn load(&self) -> BTreeMap<String, CachedModels> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.read()
    }

    fn read(&self) -> BTreeMap<String, CachedModels> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot read the model cache");
                return BTreeMap::new();
            }
        };
        serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::warn!(path = %self.path.display(), error = %e, "malformed model cache ignored");
            BTreeMap::new()
        })
    }

    /// Records what `id`'s CLI reported now. Written to a temporary file and renamed
    /// over the old one, so a crash leaves the old list or the new one, never half.
    pub fn store(&self, id: &VendorId, models: CachedModels) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.read();
        if all.get(id.as_str()) == Some(&models) {
            return;
        }
        all.insert(id.to_string(), models);
        let written = serde_json::to_vec_pretty(&all)
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                let tmp = self.path.with_extension("json.tmp");
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, &self.path)
            });
        if let Err(e) = written {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the model cache");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tandem-model-cache-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_stored_list_is_loaded_by_the_next_cache_and_replaced_by_a_newer_one() {
        let dir = scratch("roundtrip");
        let codex = VendorId::CODEX;
        let first = CachedModels {
            models: vec!["gpt-a".into(), "gpt-b".into()],
            default_model: Some("gpt-a".into()),
            effort_levels: Vec::new(),
        };
        ModelCache::new(&dir).store(&codex, first.clone());
        let other = VendorId::from("agent");
        let agent = CachedModels {
            models: vec!["m".into()],
            default_model: None,
            effort_levels: vec!["low".into(), "high".into()],
        };
        ModelCache::new(&dir).store(&other, agent.clone());
        let loaded = ModelCache::new(&dir).load();
        assert_eq!(loaded.get("codex"), Some(&first));
        assert_eq!(loaded.get("agent"), Some(&agent));
        let newer = CachedModels {
            models: vec!["gpt-c".into()],
            default_model: Some("gpt-c".into()),
            effort_levels: Vec::new(),
        };
        ModelCache::new(&dir).store(&codex, newer.clone());
        assert_eq!(ModelCache::new(&dir).load().get("codex"), Some(&newer));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_or_malformed_file_is_an_empty_cache_and_is_rewritten() {
        let dir = scratch("malformed");
        assert!(ModelCache::new(&dir).load().is_empty());
        std::fs::write(dir.join(FILE_NAME), "{not json").unwrap();
        let cache = ModelCache::new(&dir);
        assert!(cache.load().is_empty());
        let models = CachedModels {
            models: vec!["x".into()],
            default_model: None,
            effort_levels: Vec::new(),
        };
        cache.store(&VendorId::CODEX, models.clone());
        assert_eq!(cache.load().get("codex"), Some(&models));
        // A file of the release before effort levels were kept still loads.
        std::fs::write(dir.join(FILE_NAME), r#"{"agent": {"models": ["m"]}}"#).unwrap();
        let old = cache.load();
        assert_eq!(old.get("agent").map(|c| c.effort_levels.len()), Some(0));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
