//! `copy` of a worktree's settings: files and directories the base checkout has and
//! git does not carry (`.env`), copied into a new worktree before its setup. Neither
//! side follows a link: every component is opened relative to the one before with
//! no-follow semantics (the base checkout is a tree agents may write), and a link met
//! inside a copied directory is skipped.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{FileType, Mode, OFlags};

/// Copies each of `paths` (relative, checked by the settings' parser) from `from` to
/// `to`. A path `from` lacks is skipped; what could not be copied is returned, one
/// line each, and the rest is still copied.
pub fn copy_all(from: &Path, to: &Path, paths: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for path in paths {
        match copy_one(from, to, path) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::NOENT => {}
            Err(e) => problems.push(format!("copy {path}: {e}")),
        }
    }
    problems
}

type Result<T> = std::result::Result<T, rustix::io::Errno>;

fn copy_one(from: &Path, to: &Path, path: &str) -> Result<()> {
    let names: Vec<&std::ffi::OsStr> = Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let Some((last, dirs)) = names.split_last() else {
        return Ok(());
    };
    let mut src = open_dir(from)?;
    let mut dst = open_dir(to)?;
    for name in dirs {
        src = rustix::fs::openat(&src, *name, dir_flags(), Mode::empty())?;
        dst = make_dir(&dst, name)?;
    }
    copy_entry(&src, &dst, last, 0)
}

/// Directories copied below the one named, at most.
const MAX_DEPTH: usize = 32;

fn copy_entry(src: &OwnedFd, dst: &OwnedFd, name: &std::ffi::OsStr, depth: usize) -> Result<()> {
    let stat = rustix::fs::statat(src, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => copy_file(src, dst, name, stat.st_mode),
        FileType::Directory if depth < MAX_DEPTH => {
            let from = rustix::fs::openat(src, name, dir_flags(), Mode::empty())?;
            let to = make_dir(dst, name)?;
            let dir = rustix::fs::Dir::read_from(&from)?;
            let mut children = Vec::new();
            for entry in dir {
                let entry = entry?;
                let child = std::ffi::OsStr::from_bytes(entry.file_name().to_bytes());
                if child != "." && child != ".." {
                    children.push(child.to_os_string());
                }
            }
            for child in children {
                copy_entry(&from, &to, &child, depth + 1)?;
            }
            Ok(())
        }
        // Links, devices, sockets, and directories too deep: not copied.
        _ => Ok(()),
    }
}

fn copy_file(src: &OwnedFd, dst: &OwnedFd, name: &std::ffi::OsStr, mode: u32) -> Result<()> {
    let input = rustix::fs::openat(
        src,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let output = rustix::fs::openat(
        dst,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode & 0o777),
    )?;
    let mut input = std::fs::File::from(input);
    let mut output = std::fs::File::from(output);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = input.read(&mut buf).map_err(errno)?;
        if n == 0 {
            return Ok(());
        }
        output.write_all(&buf[..n]).map_err(errno)?;
    }
}

fn errno(e: std::io::Error) -> rustix::io::Errno {
    rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::IO)
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn open_dir(path: &Path) -> Result<OwnedFd> {
    rustix::fs::open(path, dir_flags(), Mode::empty())
}

/// The directory `name` in `parent`, made if missing; never a link.
fn make_dir(parent: &impl AsFd, name: &std::ffi::OsStr) -> Result<OwnedFd> {
    match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o755)) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::EXIST => {}
        Err(e) => return Err(e),
    }
    rustix::fs::openat(parent, name, dir_flags(), Mode::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_are_copied_and_links_are_not_followed() {
        let root = std::env::temp_dir().join(format!("tandem-copy-{}", std::process::id()));
        let (from, to) = (root.join("from"), root.join("to"));
        let _ = std::fs::remove_dir_all(&root);
        for dir in [from.join("conf/deep"), to.clone()] {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(from.join(".env"), "KEY=1\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(from.join("conf/deep/a"), "a").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("secret"), "s").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(root.join("secret"), from.join("conf/link"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(root.join("secret"), from.join("top-link"))
            .unwrap_or_else(|e| panic!("{e}"));
        let problems = copy_all(
            &from,
            &to,
            &[
                ".env".into(),
                "conf".into(),
                "missing".into(),
                "top-link".into(),
            ],
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            std::fs::read_to_string(to.join(".env")).ok().as_deref(),
            Some("KEY=1\n")
        );
        assert_eq!(
            std::fs::read_to_string(to.join("conf/deep/a"))
                .ok()
                .as_deref(),
            Some("a")
        );
        assert!(to.join("conf/link").symlink_metadata().is_err());
        assert!(to.join("top-link").symlink_metadata().is_err());
        // A link where a directory on the way should be is refused, not followed.
        std::os::unix::fs::symlink(root.join("secret"), to.join("sub"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(from.join("sub")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(from.join("sub/x"), "x").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(copy_all(&from, &to, &["sub/x".into()]).len(), 1);
        assert_eq!(
            std::fs::read_to_string(root.join("secret")).ok().as_deref(),
            Some("s")
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
