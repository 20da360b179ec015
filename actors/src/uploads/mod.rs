//! Uploaded files (`POST /api/v1/uploads`) and message attachments.
//!
//! Bytes live in `<data dir>/uploads/<sha256>` (0600, in a 0700 directory), one file
//! per distinct content: uploading the same bytes twice stores them once and answers
//! the same id (`up_<sha256>`). Who may use an upload is a row per owner in the
//! `uploads` table; another user's id is not found. A session that used an upload
//! has a row in `upload_uses`.
//!
//! Removal: archiving a session drops its uses; an upload no live use holds any more
//! goes (row, and the bytes once no owner has them). An upload never used by a session
//! goes once it is older than [`UploadLimits::unused_ttl`] (checked at start and at
//! every upload). The rows are written on the read pool's connections, outside the
//! event writer: they belong to no session's history.

pub mod resolve;
pub mod sniff;
pub mod transfer;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, OptionalExtension};
use sha2::{Digest, Sha256};

use crate::error::RuntimeError;
use crate::ids::UploadId;
use crate::store::Store;

/// What an upload or a message's attachments may weigh.
#[derive(Debug, Clone, Copy)]
pub struct UploadLimits {
    /// Largest file `POST /api/v1/uploads` takes (and largest inline image).
    pub max_file_bytes: u64,
    /// Largest sum of attachment bytes in one message.
    pub max_message_bytes: u64,
    /// Most blocks in one message.
    pub max_blocks: usize,
    /// An upload no session used is removed once this old.
    pub unused_ttl: Duration,
}

impl Default for UploadLimits {
    fn default() -> Self {
        UploadLimits {
            max_file_bytes: 10 << 20,
            max_message_bytes: 20 << 20,
            max_blocks: tandem_protocol::content::MAX_BLOCKS,
            unused_ttl: Duration::from_secs(24 * 3600),
        }
    }
}

/// One upload as its owner sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    /// `up_` + [`Upload::sha256`].
    pub id: UploadId,
    /// Hex SHA-256 of the bytes: the blob's file name.
    pub sha256: String,
    /// Media type (essence, lower case).
    pub mime_type: String,
    /// File name given at upload, cleaned.
    pub name: Option<String>,
    /// Bytes.
    pub size: u64,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS uploads (
    owner_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    name TEXT,
    size INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, sha256)
);
CREATE TABLE IF NOT EXISTS upload_uses (
    owner_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    session_id TEXT NOT NULL,
    PRIMARY KEY (owner_id, sha256, session_id)
);
CREATE INDEX IF NOT EXISTS upload_uses_session ON upload_uses (session_id);
";

/// The upload store; cheap to clone. Every method blocks (file and SQLite I/O): call
/// them from a blocking task.
#[derive(Clone)]
pub struct Uploads {
    dir: PathBuf,
    store: Store,
    /// The limits in force.
    pub limits: UploadLimits,
}

impl std::fmt::Debug for Uploads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uploads").field("dir", &self.dir).finish()
    }
}

/// The id of the bytes with this digest.
pub fn upload_id(sha256: &str) -> UploadId {
    UploadId::new(format!("up_{sha256}"))
}

/// The digest an id names, if it is well formed.
pub(crate) fn digest_of(id: &str) -> Option<&str> {
    id.strip_prefix("up_").filter(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A file name reduced to its last path component and harmless characters.
pub fn clean_name(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_string();
    (!cleaned.is_empty()).then_some(cleaned)
}

impl Uploads {
    /// Opens the store under `data_dir/uploads`, creating its tables and directory,
    /// and removes what the unused rule says is due.
    pub fn open(
        data_dir: &Path,
        store: Store,
        limits: UploadLimits,
    ) -> Result<Uploads, RuntimeError> {
        let dir = data_dir.join("uploads");
        crate::store::private_dir(&dir)?;
        store.with_reader(|conn| conn.execute_batch(SCHEMA))?;
        let uploads = Uploads { dir, store, limits };
        // Temporary files a crash left behind.
        if let Ok(entries) = std::fs::read_dir(&uploads.dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(".tmp-") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        uploads.sweep()?;
        Ok(uploads)
    }

    /// Where the bytes with this digest are.
    pub fn blob(&self, sha256: &str) -> PathBuf {
        self.dir.join(sha256)
    }

    /// Stores `bytes` for `owner` as `mime_type` (already checked by
    /// [`sniff::check_declared`]). Answers the upload and whether this owner did not
    /// have it before (so a failed message can take back what it added).
    pub fn put(
        &self,
        owner: &str,
        bytes: &[u8],
        mime_type: &str,
        name: Option<&str>,
    ) -> Result<(Upload, bool), RuntimeError> {
        if bytes.is_empty() {
            return Err(RuntimeError::InvalidAttachment("the file is empty".into()));
        }
        let size = bytes.len() as u64;
        if size > self.limits.max_file_bytes {
            return Err(RuntimeError::AttachmentTooLarge(format!(
                "the file has {size} bytes; at most {} are taken",
                self.limits.max_file_bytes
            )));
        }
        // Older unused uploads go first (never the one being stored).
        if let Err(e) = self.sweep() {
            tracing::warn!(error = %e, "removing unused uploads failed");
        }
        let sha256 = hex(&Sha256::digest(bytes));
        let blob = self.blob(&sha256);
        let wrote_blob = if blob.exists() {
            false
        } else {
            self.write_blob(&blob, bytes)?;
            true
        };
        let name = name.and_then(clean_name);
        let inserted = self.store.with_reader(|conn| {
            let before: Option<i64> = conn
                .query_row(
                    "SELECT 1 FROM uploads WHERE owner_id = ?1 AND sha256 = ?2",
                    params![owner, sha256],
                    |r| r.get(0),
                )
                .optional()?;
            conn.execute(
                "INSERT INTO uploads (owner_id, sha256, mime_type, name, size, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT(owner_id, sha256) DO UPDATE SET mime_type = excluded.mime_type, \
                 name = COALESCE(excluded.name, uploads.name)",
                params![
                    owner,
                    sha256,
                    mime_type,
                    name,
                    size as i64,
                    crate::clock::now_ms() as i64
                ],
            )?;
            Ok(before.is_none())
        });
        let inserted = match inserted {
            Ok(v) => v,
            Err(e) => {
                // Nothing half-stored: bytes no row names go with the failed request.
                if wrote_blob {
                    let _ = std::fs::remove_file(&blob);
                }
                return Err(e);
            }
        };
        Ok((
            Upload {
                id: upload_id(&sha256),
                sha256,
                mime_type: mime_type.to_string(),
                name,
                size,
            },
            inserted,
        ))
    }

    /// Writes a blob through a 0600 temporary file renamed into place, so a reader
    /// never sees half of it.
    fn write_blob(&self, blob: &Path, bytes: &[u8]) -> Result<(), RuntimeError> {
        use std::os::unix::fs::OpenOptionsExt;
        let tmp = self.dir.join(crate::clock::random_id(".tmp-", 8));
        let result = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, blob)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(RuntimeError::Io(e));
        }
        Ok(())
    }

    /// `owner`'s upload `id`; any other id is [`RuntimeError::NoSuchUpload`].
    pub fn get(&self, owner: &str, id: &str) -> Result<Upload, RuntimeError> {
        let missing = || RuntimeError::NoSuchUpload(id.to_string());
        let sha = digest_of(id).ok_or_else(missing)?;
        self.store
            .with_reader(|conn| {
                conn.query_row(
                    "SELECT mime_type, name, size FROM uploads WHERE owner_id = ?1 AND sha256 = ?2",
                    params![owner, sha],
                    |r| {
                        Ok(Upload {
                            id: id.into(),
                            sha256: sha.to_string(),
                            mime_type: r.get(0)?,
                            name: r.get(1)?,
                            size: r.get::<_, i64>(2)? as u64,
                        })
                    },
                )
                .optional()
            })?
            .ok_or_else(missing)
    }

    /// Upload `id` as used in `session_id` (whoever sent it), for those who may read
    /// that session.
    pub fn get_in_session(&self, session_id: &str, id: &str) -> Result<Upload, RuntimeError> {
        let missing = || RuntimeError::NoSuchUpload(id.to_string());
        let sha = digest_of(id).ok_or_else(missing)?;
        self.store
            .with_reader(|conn| {
                conn.query_row(
                    "SELECT u.mime_type, u.name, u.size FROM upload_uses s \
                     JOIN uploads u ON u.owner_id = s.owner_id AND u.sha256 = s.sha256 \
                     WHERE s.session_id = ?1 AND s.sha256 = ?2 LIMIT 1",
                    params![session_id, sha],
                    |r| {
                        Ok(Upload {
                            id: id.into(),
                            sha256: sha.to_string(),
                            mime_type: r.get(0)?,
                            name: r.get(1)?,
                            size: r.get::<_, i64>(2)? as u64,
                        })
                    },
                )
                .optional()
            })?
            .ok_or_else(missing)
    }

    /// Records that `session_id` used these uploads of `owner`; answers the ones that
    /// were not recorded before (what [`Uploads::unuse`] takes back on failure).
    pub fn record_uses(
        &self,
        owner: &str,
        shas: &[String],
        session_id: &str,
    ) -> Result<Vec<String>, RuntimeError> {
        self.store.with_reader(|conn| {
            let mut added = Vec::new();
            for sha in shas {
                let n = conn.execute(
                    "INSERT OR IGNORE INTO upload_uses (owner_id, sha256, session_id) VALUES (?1, ?2, ?3)",
                    params![owner, sha, session_id],
                )?;
                if n > 0 {
                    added.push(sha.clone());
                }
            }
            Ok(added)
        })
    }

    /// Takes back what a refused message added: its new uses, and uploads it created
    /// that nothing else uses now.
    pub fn undo(&self, owner: &str, session_id: &str, new_uses: &[String], new_uploads: &[String]) {
        let result = self.store.with_reader(|conn| {
            for sha in new_uses {
                conn.execute(
                    "DELETE FROM upload_uses WHERE owner_id = ?1 AND sha256 = ?2 AND session_id = ?3",
                    params![owner, sha, session_id],
                )?;
            }
            for sha in new_uploads {
                conn.execute(
                    "DELETE FROM uploads WHERE owner_id = ?1 AND sha256 = ?2 AND NOT EXISTS \
                     (SELECT 1 FROM upload_uses s WHERE s.owner_id = ?1 AND s.sha256 = ?2)",
                    params![owner, sha],
                )?;
            }
            Ok(())
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, "taking back a refused message's uploads failed");
        }
        self.remove_orphans(new_uploads);
    }

    /// The session is archived: its uses go, and so does every upload no other
    /// session uses.
    pub fn remove_session(&self, session_id: &str) -> Result<(), RuntimeError> {
        let shas = self.store.with_reader(|conn| {
            let shas: Vec<(String, String)> = conn
                .prepare("SELECT owner_id, sha256 FROM upload_uses WHERE session_id = ?1")?
                .query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            conn.execute(
                "DELETE FROM upload_uses WHERE session_id = ?1",
                [session_id],
            )?;
            for (owner, sha) in &shas {
                conn.execute(
                    "DELETE FROM uploads WHERE owner_id = ?1 AND sha256 = ?2 AND NOT EXISTS \
                     (SELECT 1 FROM upload_uses s WHERE s.owner_id = ?1 AND s.sha256 = ?2)",
                    params![owner, sha],
                )?;
            }
            Ok(shas.into_iter().map(|(_, sha)| sha).collect::<Vec<_>>())
        })?;
        self.remove_orphans(&shas);
        Ok(())
    }

    /// Removes uploads older than the unused limit that no session used, and the
    /// bytes no row names.
    pub fn sweep(&self) -> Result<(), RuntimeError> {
        let cutoff =
            crate::clock::now_ms().saturating_sub(self.limits.unused_ttl.as_millis() as u64);
        let shas = self.store.with_reader(|conn| {
            let shas: Vec<String> = conn
                .prepare(
                    "SELECT u.sha256 FROM uploads u WHERE u.created_at < ?1 AND NOT EXISTS \
                     (SELECT 1 FROM upload_uses s WHERE s.owner_id = u.owner_id AND s.sha256 = u.sha256)",
                )?
                .query_map([cutoff as i64], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            conn.execute(
                "DELETE FROM uploads WHERE created_at < ?1 AND NOT EXISTS \
                 (SELECT 1 FROM upload_uses s WHERE s.owner_id = uploads.owner_id AND s.sha256 = uploads.sha256)",
                [cutoff as i64],
            )?;
            Ok(shas)
        })?;
        self.remove_orphans(&shas);
        Ok(())
    }

    /// Deletes the bytes of each digest that no owner has any more.
    fn remove_orphans(&self, shas: &[String]) {
        for sha in shas {
            let named = self.store.with_reader(|conn| {
                conn.query_row(
                    "SELECT 1 FROM uploads WHERE sha256 = ?1 LIMIT 1",
                    [sha],
                    |_| Ok(()),
                )
                .optional()
            });
            if let Ok(None) = named {
                if let Err(e) = std::fs::remove_file(self.blob(sha)) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(error = %e, "removing an upload's bytes failed");
                    }
                }
            }
        }
    }
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(limits: UploadLimits) -> (crate::testkit::Scratch, Uploads) {
        let dir = crate::testkit::Scratch::new("uploads");
        let store = Store::open(dir.path()).unwrap();
        let uploads = Uploads::open(dir.path(), store, limits).unwrap();
        (dir, uploads)
    }

    #[test]
    fn same_bytes_same_id_owned_per_user_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, up) = open(UploadLimits::default());
        let (a, new_a) = up
            .put("alice", b"hello", "text/plain", Some("../x/notes.txt"))
            .unwrap();
        let (a2, new_a2) = up.put("alice", b"hello", "text/plain", None).unwrap();
        assert!(new_a && !new_a2);
        assert_eq!(a.id, a2.id);
        assert_eq!(a.name.as_deref(), Some("notes.txt"));
        let mode = std::fs::metadata(up.blob(&a.sha256))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(matches!(
            up.get("bob", &a.id),
            Err(RuntimeError::NoSuchUpload(_))
        ));
        assert_eq!(up.get("alice", &a.id).unwrap().size, 5);
        assert!(matches!(
            up.get("alice", "up_nothex"),
            Err(RuntimeError::NoSuchUpload(_))
        ));
    }

    #[test]
    fn archived_sessions_and_unused_uploads_are_removed() {
        let (_dir, up) = open(UploadLimits {
            unused_ttl: Duration::ZERO,
            ..UploadLimits::default()
        });
        let (a, _) = up.put("alice", b"used", "text/plain", None).unwrap();
        up.record_uses("alice", std::slice::from_ref(&a.sha256), "s1")
            .unwrap();
        // An unused upload older than the limit (zero here) goes at the next sweep.
        let (b, _) = up.put("alice", b"unused", "text/plain", None).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        up.sweep().unwrap();
        assert!(up.get("alice", &b.id).is_err());
        assert!(!up.blob(&b.sha256).exists());
        assert!(up.get("alice", &a.id).is_ok());
        assert!(up.get_in_session("s1", &a.id).is_ok());
        up.remove_session("s1").unwrap();
        assert!(up.get("alice", &a.id).is_err());
        assert!(!up.blob(&a.sha256).exists());
    }

    #[test]
    fn too_large_and_empty_files_are_refused_and_leave_nothing() {
        let (_dir, up) = open(UploadLimits {
            max_file_bytes: 4,
            ..UploadLimits::default()
        });
        assert!(matches!(
            up.put("alice", b"12345", "text/plain", None),
            Err(RuntimeError::AttachmentTooLarge(_))
        ));
        assert!(matches!(
            up.put("alice", b"", "text/plain", None),
            Err(RuntimeError::InvalidAttachment(_))
        ));
        let left: Vec<_> = std::fs::read_dir(&up.dir).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
