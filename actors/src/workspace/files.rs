//! Reading and writing the files of a session's working directory. Every path is
//! relative and resolved inside the directory: `..`, absolute paths and symlinks that
//! lead out are refused, and `.git` is neither listed nor served.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};
use tandem_protocol::workspace::{
    DirEntry, DirListing, EntryKind, FileContent, FileSaved, MAX_FILE_BYTES,
};

use super::WorkspaceError;

/// Refuses a path that is absolute or has `..` (or a `.git`) component.
pub fn check_relative(path: &str) -> Result<(), WorkspaceError> {
    let p = Path::new(path);
    for c in p.components() {
        match c {
            Component::Normal(name) if name == ".git" => {
                return Err(WorkspaceError::PathOutside(path.to_string()))
            }
            Component::Normal(_) | Component::CurDir => {}
            _ => return Err(WorkspaceError::PathOutside(path.to_string())),
        }
    }
    Ok(())
}

/// `path` under `root`, with every symlink on the way resolved and checked to stay
/// inside. `must_exist: false` allows the last component not to exist yet (a new
/// file), but its directory must.
fn resolve(root: &Path, path: &str, must_exist: bool) -> Result<PathBuf, WorkspaceError> {
    check_relative(path)?;
    let root = root.canonicalize().map_err(|source| WorkspaceError::Io {
        path: root.display().to_string(),
        source,
    })?;
    let joined = root.join(path);
    match joined.canonicalize() {
        Ok(real) if real.starts_with(&root) => Ok(real),
        Ok(_) => Err(WorkspaceError::PathOutside(path.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink could still lead out once its target is made.
            if joined.symlink_metadata().is_ok() {
                return Err(WorkspaceError::PathOutside(path.to_string()));
            }
            if must_exist {
                return Err(WorkspaceError::NoSuchFile(path.to_string()));
            }
            let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
                return Err(WorkspaceError::NoSuchFile(path.to_string()));
            };
            let parent = parent.canonicalize().map_err(|_| {
                WorkspaceError::NoSuchFile(path.to_string())
            })?;
            if !parent.starts_with(&root) {
                return Err(WorkspaceError::PathOutside(path.to_string()));
            }
            Ok(parent.join(name))
        }
        Err(source) => Err(WorkspaceError::Io {
            path: path.to_string(),
            source,
        }),
    }
}

fn mtime_ms(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// One directory of the working directory at `root`.
pub fn list(root: &Path, path: &str) -> Result<DirListing, WorkspaceError> {
    let path = path.trim_matches('/');
    let dir = resolve(root, if path.is_empty() { "." } else { path }, true)?;
    let io = |source| WorkspaceError::Io {
        path: path.to_string(),
        source,
    };
    if !dir.is_dir() {
        return Err(WorkspaceError::InvalidArgument(format!(
            "{path} is not a directory"
        )));
    }
    let mut entries = Vec::new();
    for item in std::fs::read_dir(&dir).map_err(io)? {
        let item = item.map_err(io)?;
        let name = item.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let Ok(meta) = item.path().symlink_metadata() else {
            continue;
        };
        let ft = meta.file_type();
        let kind = if ft.is_symlink() {
            EntryKind::Symlink
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        entries.push(DirEntry {
            name,
            kind,
            size: meta.len(),
            mtime: mtime_ms(&meta),
        });
    }
    entries.sort_by(|a, b| {
        (a.kind != EntryKind::Dir)
            .cmp(&(b.kind != EntryKind::Dir))
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(DirListing {
        path: path.to_string(),
        entries,
    })
}

/// The strong entity tag of some content: a quoted SHA-256 prefix.
pub fn etag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// A text file of at most [`MAX_FILE_BYTES`].
pub fn read(root: &Path, path: &str) -> Result<FileContent, WorkspaceError> {
    let file = resolve(root, path, true)?;
    let io = |source| WorkspaceError::Io {
        path: path.to_string(),
        source,
    };
    let meta = std::fs::metadata(&file).map_err(io)?;
    if !meta.is_file() {
        return Err(WorkspaceError::InvalidArgument(format!(
            "{path} is not a regular file"
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(WorkspaceError::FileTooLarge {
            path: path.to_string(),
            size: meta.len(),
            max: MAX_FILE_BYTES,
        });
    }
    let bytes = std::fs::read(&file).map_err(io)?;
    let tag = etag(&bytes);
    if bytes.contains(&0) {
        return Err(WorkspaceError::BinaryFile(path.to_string()));
    }
    let content = String::from_utf8(bytes).map_err(|_| WorkspaceError::BinaryFile(path.to_string()))?;
    Ok(FileContent {
        path: path.to_string(),
        size: meta.len(),
        mtime: mtime_ms(&meta),
        etag: tag,
        content,
    })
}

/// Saves `content` to `path` when `if_match` names the file's current content (or,
/// without one, when the file does not exist yet). The file is replaced atomically
/// (a temporary file renamed over it), keeping its permissions.
pub fn write(
    root: &Path,
    path: &str,
    content: &str,
    if_match: Option<&str>,
) -> Result<FileSaved, WorkspaceError> {
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(WorkspaceError::FileTooLarge {
            path: path.to_string(),
            size: content.len() as u64,
            max: MAX_FILE_BYTES,
        });
    }
    let file = resolve(root, path, false)?;
    let io = |source| WorkspaceError::Io {
        path: path.to_string(),
        source,
    };
    let current = match std::fs::read(&file) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    match (&current, if_match) {
        (Some(bytes), Some(tag)) if tag.trim() == etag(bytes) || tag.trim() == "*" => {}
        (Some(_), Some(_)) => {
            return Err(WorkspaceError::PreconditionFailed(format!(
                "{path} changed since it was read; read it again"
            )))
        }
        (Some(_), None) => {
            return Err(WorkspaceError::PreconditionFailed(format!(
                "{path} exists; send If-Match with its ETag to replace it"
            )))
        }
        (None, Some(tag)) if tag.trim() != "*" => {
            return Err(WorkspaceError::PreconditionFailed(format!(
                "{path} was removed since it was read"
            )))
        }
        (None, _) => {}
    }
    let tmp = file.with_file_name(format!(
        ".{}.tandem-save",
        file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
    ));
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(content.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    if let Ok(meta) = std::fs::metadata(&file) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, &file).map_err(io)?;
    Ok(FileSaved {
        path: path.to_string(),
        size: content.len() as u64,
        etag: etag(content.as_bytes()),
    })
}
