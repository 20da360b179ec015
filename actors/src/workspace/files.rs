//! Reading and writing the files of a session's working directory for the files API.
//!
//! A client names a relative path; the server must never be led by it out of the
//! working directory, into a git directory (whose `config` and hooks make git run
//! commands) or into the server's own data (its tokens). So:
//! - a path that is absolute, has `..`, a NUL byte or a `.git` component (in any
//!   case) is refused before anything is opened;
//! - a read resolves the real location of every component and refuses one outside the
//!   working directory or inside a [`Jail`]'s private directories (the repository's
//!   git directory, a worktree's gitdir and the common dir, the data directory, the
//!   config file), however it was reached; the file is then opened one component at a
//!   time from the working directory without following links, so a link swapped in
//!   after the check makes the open fail instead of leading elsewhere;
//! - a write follows no link at all: every directory on the way and the file itself
//!   are opened relative to the directory before it with no-follow semantics, and the
//!   new content is written to a temporary file in that directory and renamed over
//!   the old one.
//!
//! Errors name the path the client gave, never a server path.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};
use tandem_protocol::workspace::{
    DirEntry, DirListing, EntryKind, FileContent, FileSaved, MAX_FILE_BYTES,
};

use super::WorkspaceError;

/// Longest name of one path component most filesystems take.
const MAX_NAME_BYTES: usize = 255;

/// Refuses a path that is absolute, has a `..` or `.git` component (`.git` in any
/// case: case-insensitive filesystems), a NUL byte or a name longer than a filesystem
/// takes.
pub fn check_relative(path: &str) -> Result<(), WorkspaceError> {
    if path.contains('\0') {
        return Err(WorkspaceError::InvalidArgument(format!(
            "path {:?} contains a NUL byte",
            path.replace('\0', "\\0")
        )));
    }
    for c in Path::new(path).components() {
        match c {
            Component::Normal(name) if is_git_name(name) => {
                return Err(WorkspaceError::PathPrivate(path.to_string()))
            }
            Component::Normal(name) if name.len() > MAX_NAME_BYTES => {
                return Err(WorkspaceError::InvalidArgument(format!(
                    "path {path}: a name of {} bytes; at most {MAX_NAME_BYTES} are taken",
                    name.len()
                )))
            }
            Component::Normal(_) | Component::CurDir => {}
            _ => return Err(WorkspaceError::PathOutside(path.to_string())),
        }
    }
    Ok(())
}

/// `.git`, in any case.
fn is_git_name(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

/// A session's working directory and the directories inside or beside it that the
/// files API never serves.
#[derive(Debug, Clone)]
pub struct Jail {
    /// The working directory, canonical.
    root: PathBuf,
    /// Canonical directories and files whose contents are never served: the git
    /// directories of the repository the working directory belongs to, and the
    /// server's private paths (data directory, config file).
    private: Vec<PathBuf>,
}

impl Jail {
    /// The jail of the working directory `root`; `private` are the server's own paths
    /// (data directory, config file), kept out wherever they lie.
    pub fn new(root: &Path, private: &[PathBuf]) -> Result<Jail, WorkspaceError> {
        let root = root
            .canonicalize()
            .map_err(|_| WorkspaceError::NoSuchFile("the session's working directory".into()))?;
        let mut hidden: Vec<PathBuf> = private
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        hidden.extend(git_dirs(&root));
        Ok(Jail {
            root,
            private: hidden,
        })
    }

    /// Refuses a real (canonical) location outside the working directory, inside a
    /// private directory or under a `.git` component.
    fn admit(&self, real: &Path, given: &str) -> Result<(), WorkspaceError> {
        let Ok(rel) = real.strip_prefix(&self.root) else {
            return Err(WorkspaceError::PathOutside(given.to_string()));
        };
        // A private directory that holds the working directory itself is the data
        // directory of a worktree session (`<data-dir>/worktrees/<id>`): everything
        // admitted lies inside the working directory, so it restricts nothing more.
        if self
            .private
            .iter()
            .any(|p| real.starts_with(p) && !self.root.starts_with(p))
            || rel.components().any(|c| is_git_name(c.as_os_str()))
        {
            return Err(WorkspaceError::PathPrivate(given.to_string()));
        }
        Ok(())
    }

    /// The real location of `given` (every link resolved), admitted; relative to the
    /// root.
    fn real(&self, given: &str) -> Result<PathBuf, WorkspaceError> {
        check_relative(given)?;
        let joined = self.root.join(given);
        let real = match joined.canonicalize() {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A dangling link may lead anywhere once its target is made.
                if joined.symlink_metadata().is_ok() {
                    return Err(WorkspaceError::PathOutside(given.to_string()));
                }
                return Err(WorkspaceError::NoSuchFile(given.to_string()));
            }
            Err(e) => return Err(os_error(given, e)),
        };
        self.admit(&real, given)?;
        Ok(real
            .strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .unwrap_or_default())
    }

    /// Opens the directory `rel` (a path with no link, `.` or `..`) one component at a
    /// time from the root, following no link.
    fn open_dir(&self, rel: &Path, given: &str) -> Result<OwnedFd, WorkspaceError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut dir = rustix::fs::open(&self.root, flags, Mode::empty())
            .map_err(|e| os_error(given, e.into()))?;
        for c in rel.components() {
            let Component::Normal(name) = c else {
                continue;
            };
            dir = rustix::fs::openat(&dir, name, flags, Mode::empty())
                .map_err(|e| refused_open(&dir, name, given, e))?;
        }
        Ok(dir)
    }

    /// The directory a write of `given` goes into, opened without following any link
    /// on the way, and the file's name in it.
    fn open_parent_for_write(
        &self,
        given: &str,
    ) -> Result<(OwnedFd, std::ffi::OsString), WorkspaceError> {
        check_relative(given)?;
        let parts: Vec<&std::ffi::OsStr> = Path::new(given)
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let Some((name, dirs)) = parts.split_last() else {
            // Well formed: it names the working directory, which is no file.
            return Err(WorkspaceError::Conflict(format!(
                "path {given:?} names the working directory, not a file"
            )));
        };
        let rel: PathBuf = dirs.iter().collect();
        // No link is followed below, so the lexical location is the real one.
        self.admit(&self.root.join(&rel).join(name), given)?;
        let parent = self.open_dir(&rel, given)?;
        Ok((parent, name.to_os_string()))
    }
}

/// The git directories the working directory at `root` uses: the nearest `.git` at
/// or above it (a directory, or a worktree's `.git` file naming its gitdir) and the
/// common directory a worktree's gitdir names.
fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in root.ancestors() {
        let dotgit = dir.join(".git");
        let Ok(meta) = dotgit.symlink_metadata() else {
            continue;
        };
        if meta.is_file() {
            let Ok(text) = std::fs::read_to_string(&dotgit) else {
                break;
            };
            let Some(target) = text.trim().strip_prefix("gitdir:") else {
                break;
            };
            let gitdir = dir.join(target.trim());
            if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
                found.extend(gitdir.join(common.trim()).canonicalize().ok());
            }
            found.extend(gitdir.canonicalize().ok());
        } else {
            found.extend(dotgit.canonicalize().ok());
        }
        break;
    }
    found
}

/// Why `name` in `dir` could not be opened: a link there is
/// [`WorkspaceError::ThroughLink`] (a no-follow open of a link fails with `ELOOP`,
/// or `ENOTDIR` when a directory was asked for), anything else what the OS said.
fn refused_open(dir: &OwnedFd, name: &std::ffi::OsStr, given: &str, e: Errno) -> WorkspaceError {
    let is_link = (e == Errno::LOOP || e == Errno::NOTDIR)
        && rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
    if is_link {
        WorkspaceError::ThroughLink(given.to_string())
    } else {
        os_error(given, e.into())
    }
}

/// What the OS refused, as the client's error: it names `given`, never a server path.
fn os_error(given: &str, e: std::io::Error) -> WorkspaceError {
    let errno = e.raw_os_error().map(Errno::from_raw_os_error);
    let invalid = |why: &str| WorkspaceError::InvalidArgument(format!("path {given}: {why}"));
    match errno {
        Some(Errno::NOENT) => WorkspaceError::NoSuchFile(given.to_string()),
        Some(Errno::LOOP) => invalid("too many levels of symbolic links"),
        // A file where the path needs a directory: there is no such path.
        Some(Errno::NOTDIR) => WorkspaceError::NoSuchFile(given.to_string()),
        Some(Errno::NAMETOOLONG) => invalid("a name is too long"),
        Some(Errno::ISDIR) => WorkspaceError::Conflict(format!("path {given} is a directory")),
        Some(Errno::INVAL) => invalid("refused by the filesystem"),
        Some(Errno::ACCESS) | Some(Errno::PERM) => {
            WorkspaceError::AccessDenied(format!("path {given}: permission denied"))
        }
        _ if e.kind() == std::io::ErrorKind::InvalidInput => invalid("refused by the filesystem"),
        _ => WorkspaceError::Io {
            path: given.to_string(),
            source: e,
        },
    }
}

// The stat fields' integer types differ by platform (signed on some).
#[allow(clippy::useless_conversion)]
fn mtime_ms(stat: &rustix::fs::Stat) -> u64 {
    let secs = u64::try_from(stat.st_mtime).unwrap_or(0);
    let nanos = u64::try_from(stat.st_mtime_nsec).unwrap_or(0);
    secs.saturating_mul(1000).saturating_add(nanos / 1_000_000)
}

fn kind_of(ft: FileType) -> EntryKind {
    match ft {
        FileType::Symlink => EntryKind::Symlink,
        FileType::Directory => EntryKind::Dir,
        FileType::RegularFile => EntryKind::File,
        _ => EntryKind::Other,
    }
}

/// One directory of the working directory.
pub fn list(jail: &Jail, path: &str) -> Result<DirListing, WorkspaceError> {
    let path = path.trim_matches('/');
    let given = if path.is_empty() { "." } else { path };
    let rel = jail.real(given)?;
    let real = jail.root.join(&rel);
    if !real.is_dir() {
        return Err(WorkspaceError::NotA {
            path: path.to_string(),
            wanted: "a directory",
        });
    }
    let dir = jail.open_dir(&rel, given)?;
    let mut entries = Vec::new();
    let items = rustix::fs::Dir::read_from(&dir).map_err(|e| os_error(given, e.into()))?;
    for item in items {
        let item = item.map_err(|e| os_error(given, e.into()))?;
        let name_c = item.file_name();
        let bytes = name_c.to_bytes();
        if bytes == b"." || bytes == b".." || bytes.eq_ignore_ascii_case(b".git") {
            continue;
        }
        let name = String::from_utf8_lossy(bytes).into_owned();
        // The data directory (or another private path) lying here is not shown.
        if jail.private.iter().any(|p| {
            p.as_os_str().as_encoded_bytes() == real.join(&name).as_os_str().as_encoded_bytes()
        }) {
            continue;
        }
        let Ok(stat) = rustix::fs::statat(&dir, name_c, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        entries.push(DirEntry {
            name,
            kind: kind_of(FileType::from_raw_mode(stat.st_mode)),
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime: mtime_ms(&stat),
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

/// Opens `name` in `dir` for reading without following a link; `None` when nothing
/// is there. A FIFO is opened non-blocking so it cannot hold the thread.
fn open_existing(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    given: &str,
) -> Result<Option<(std::fs::File, rustix::fs::Stat)>, WorkspaceError> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(refused_open(dir, name, given, e)),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| os_error(given, e.into()))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(Some((std::fs::File::from(fd), stat))),
        _ => Err(WorkspaceError::NotA {
            path: given.to_string(),
            wanted: "a regular file",
        }),
    }
}

/// Reads at most `MAX_FILE_BYTES` (more is [`WorkspaceError::FileTooLarge`]).
fn read_capped(file: std::fs::File, size: u64, given: &str) -> Result<Vec<u8>, WorkspaceError> {
    if size > MAX_FILE_BYTES {
        return Err(WorkspaceError::FileTooLarge {
            path: given.to_string(),
            size,
            max: MAX_FILE_BYTES,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| os_error(given, e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(WorkspaceError::FileTooLarge {
            path: given.to_string(),
            size: bytes.len() as u64,
            max: MAX_FILE_BYTES,
        });
    }
    Ok(bytes)
}

/// A text file of at most [`MAX_FILE_BYTES`].
pub fn read(jail: &Jail, path: &str) -> Result<FileContent, WorkspaceError> {
    let rel = jail.real(path)?;
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        // The working directory itself.
        return Err(WorkspaceError::NotA {
            path: path.to_string(),
            wanted: "a regular file",
        });
    };
    let dir = jail.open_dir(parent, path)?;
    let Some((file, stat)) = open_existing(&dir, name, path)? else {
        return Err(WorkspaceError::NoSuchFile(path.to_string()));
    };
    let bytes = read_capped(file, u64::try_from(stat.st_size).unwrap_or(0), path)?;
    let tag = etag(&bytes);
    if bytes.contains(&0) {
        return Err(WorkspaceError::BinaryFile(path.to_string()));
    }
    let size = bytes.len() as u64;
    let content =
        String::from_utf8(bytes).map_err(|_| WorkspaceError::BinaryFile(path.to_string()))?;
    Ok(FileContent {
        path: path.to_string(),
        size,
        mtime: mtime_ms(&stat),
        etag: tag,
        content,
    })
}

/// Saves `content` to `path` when `if_match` names the file's current content (or,
/// without one, when the file does not exist yet). The file is replaced atomically
/// (a temporary file in the same directory renamed over it), keeping its
/// permissions. No link is followed: a path through one is refused.
pub fn write(
    jail: &Jail,
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
    let (dir, name) = jail.open_parent_for_write(path)?;
    // A directory (or anything but a file) in the way: the path is taken.
    let existing = open_existing(&dir, &name, path).map_err(|e| match e {
        WorkspaceError::NotA { path, .. } => WorkspaceError::Conflict(format!(
            "{path} is not a regular file; only files are saved"
        )),
        other => other,
    })?;
    let current = match existing {
        Some((file, stat)) => Some((
            read_capped(file, u64::try_from(stat.st_size).unwrap_or(0), path)?,
            stat.st_mode,
        )),
        None => None,
    };
    check_precondition(
        path,
        current.as_ref().map(|(bytes, _)| bytes.as_slice()),
        if_match,
    )?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(&name);
    tmp_name.push(".tandem-save");
    let mode = current
        .as_ref()
        .map_or(Mode::from_raw_mode(0o644), |(_, m)| {
            Mode::from_raw_mode(*m & 0o7777)
        });
    // A temporary file left by an earlier failed save is replaced, never followed.
    let _ = rustix::fs::unlinkat(&dir, &tmp_name, AtFlags::empty());
    let fd = rustix::fs::openat(
        &dir,
        &tmp_name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
    .map_err(|e| os_error(path, e.into()))?;
    let saved = (|| -> Result<(), WorkspaceError> {
        // The umask may have narrowed `mode`; the file keeps the old one.
        rustix::fs::fchmod(&fd, mode).map_err(|e| os_error(path, e.into()))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(content.as_bytes())
            .map_err(|e| os_error(path, e))?;
        file.sync_all().map_err(|e| os_error(path, e))?;
        rustix::fs::renameat(dir.as_fd(), &tmp_name, dir.as_fd(), &name)
            .map_err(|e| os_error(path, e.into()))
    })();
    if let Err(e) = saved {
        let _ = rustix::fs::unlinkat(&dir, &tmp_name, AtFlags::empty());
        return Err(e);
    }
    Ok(FileSaved {
        path: path.to_string(),
        size: content.len() as u64,
        etag: etag(content.as_bytes()),
    })
}

/// Refuses a save unless `if_match` names the file's current content `current` (or
/// is `*`), or there is no file and no `if_match` (or `*`): `PRECONDITION_FAILED`
/// says which.
fn check_precondition(
    path: &str,
    current: Option<&[u8]>,
    if_match: Option<&str>,
) -> Result<(), WorkspaceError> {
    let refused = |why: &str| Err(WorkspaceError::PreconditionFailed(format!("{path} {why}")));
    match (current, if_match) {
        (Some(bytes), Some(tag)) if tag.trim() == etag(bytes) || tag.trim() == "*" => Ok(()),
        (Some(_), Some(_)) => refused("changed since it was read; read it again"),
        (Some(_), None) => refused("exists; send If-Match with its ETag to replace it"),
        (None, Some(tag)) if tag.trim() != "*" => refused("was removed since it was read"),
        (None, _) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Scratch;
    use std::os::unix::fs::symlink;

    /// A working directory `work` with `sub/f.txt`, and `outside/f.txt` beside it.
    fn setup() -> (Scratch, PathBuf, PathBuf) {
        let dir = Scratch::new("files");
        let work = dir.path().join("work");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(work.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(work.join("sub/f.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("f.txt"), "outside\n").unwrap();
        (dir, work, outside)
    }

    /// Swaps `work/sub` for a link to `outside`.
    fn swap_in_link(work: &Path, outside: &Path) {
        std::fs::rename(work.join("sub"), work.join("sub.old")).unwrap();
        symlink(outside, work.join("sub")).unwrap();
    }

    #[test]
    fn a_link_swapped_in_after_the_check_fails_the_read() {
        let (_d, work, outside) = setup();
        let jail = Jail::new(&work, &[]).unwrap();
        let rel = jail.real("sub/f.txt").unwrap();
        swap_in_link(&work, &outside);
        let opened = jail.open_dir(rel.parent().unwrap(), "sub/f.txt");
        assert!(
            matches!(opened, Err(WorkspaceError::ThroughLink(_))),
            "{opened:?}"
        );
        // Checked now, the path is outside.
        assert!(matches!(
            read(&jail, "sub/f.txt"),
            Err(WorkspaceError::PathOutside(_))
        ));
    }

    #[test]
    fn a_write_follows_no_link_and_writes_nothing_outside() {
        let (_d, work, outside) = setup();
        let jail = Jail::new(&work, &[]).unwrap();
        swap_in_link(&work, &outside);
        let written = write(&jail, "sub/f.txt", "pwned\n", Some("*"));
        assert!(
            matches!(written, Err(WorkspaceError::ThroughLink(_))),
            "{written:?}"
        );
        let written = write(&jail, "sub/new.txt", "pwned\n", None);
        assert!(matches!(written, Err(WorkspaceError::ThroughLink(_))));
        assert_eq!(
            std::fs::read_to_string(outside.join("f.txt")).unwrap(),
            "outside\n"
        );
        assert!(!outside.join("new.txt").exists());
        // A link at the file itself is not replaced either.
        symlink(outside.join("f.txt"), work.join("l.txt")).unwrap();
        assert!(matches!(
            write(&jail, "l.txt", "pwned\n", Some("*")),
            Err(WorkspaceError::ThroughLink(_))
        ));
        assert!(work.join("l.txt").symlink_metadata().unwrap().is_symlink());
        // A plain write works and keeps the file's mode.
        std::fs::set_permissions(
            work.join("sub.old/f.txt"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        let saved = write(&jail, "sub.old/f.txt", "edited\n", Some("*")).unwrap();
        assert_eq!(saved.size, 7);
        let meta = std::fs::metadata(work.join("sub.old/f.txt")).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o600
        );
    }

    #[test]
    fn git_directories_named_by_a_dot_git_file_are_private() {
        let (_d, work, _) = setup();
        // `git init --separate-git-dir` or a worktree: `.git` is a file naming the
        // gitdir, whose `commondir` names the common directory. Here both lie inside
        // the working directory under other names, so only their real location says
        // what they are.
        let common = work.join("store");
        let gitdir = common.join("worktrees/w");
        std::fs::create_dir_all(&gitdir).unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        std::fs::write(gitdir.join("HEAD"), "ref: refs/heads/w\n").unwrap();
        std::fs::write(common.join("config"), "[core]\n").unwrap();
        std::fs::write(work.join(".git"), "gitdir: store/worktrees/w\n").unwrap();
        symlink("store", work.join("s")).unwrap();
        let jail = Jail::new(&work, &[]).unwrap();
        for path in [
            "store/config",
            "s/config",
            "store/worktrees/w/HEAD",
            ".git",
            ".GIT",
        ] {
            assert!(
                matches!(read(&jail, path), Err(WorkspaceError::PathPrivate(_))),
                "{path}: {:?}",
                read(&jail, path)
            );
        }
        assert!(matches!(
            write(
                &jail,
                "store/config",
                "[core]\n\tfsmonitor = x\n",
                Some("*")
            ),
            Err(WorkspaceError::PathPrivate(_))
        ));
        assert!(matches!(
            list(&jail, "s"),
            Err(WorkspaceError::PathPrivate(_))
        ));
        assert_eq!(read(&jail, "sub/f.txt").unwrap().content, "inside\n");
    }
}
