//! A session's `--mcp-config` as a file rather than a command-line argument: it holds
//! the session's token for tandem's `/mcp` and the values of its MCP servers' `env`
//! and `headers`, and a process's arguments can be read by any process of the machine
//! (`/proc/PID/cmdline`). The file is 0600 in a 0700 directory of its own under the
//! temporary directory, named like the confined agents' private ones
//! (`tandem-agent-<server pid>-mcp-<random>`) so that the sweep that removes theirs also
//! removes one a killed server left; a confined CLI may read this directory alone of
//! them ([`crate::adapter::VendorProcess::starting`]). It is removed when the process
//! it was written for is gone (the handle is dropped).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::adapter::confine::TEMP_PREFIX;

/// The written file; dropping it removes its directory.
#[derive(Debug)]
pub struct McpFile {
    /// The directory made for it.
    dir: PathBuf,
    /// The file.
    path: PathBuf,
}

impl McpFile {
    /// Writes `config` under `temp` (the vendor process's temporary directory).
    pub fn write(temp: &Path, config: &str) -> std::io::Result<McpFile> {
        let token = crate::clock::random_token("", 8).map_err(std::io::Error::other)?;
        let dir = temp.join(format!("{TEMP_PREFIX}{}-mcp-{token}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let file = McpFile {
            path: dir.join("mcp.json"),
            dir,
        };
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file.path)?;
        out.write_all(config.as_bytes())?;
        Ok(file)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for McpFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn only_its_owner_reads_it_and_it_goes_with_its_handle() {
        let scratch = crate::testkit::Scratch::new("mcp-file");
        let file = McpFile::write(scratch.path(), r#"{"mcpServers":{}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let mode = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0)
        };
        assert_eq!(mode(file.path()), 0o600);
        assert_eq!(mode(file.path().parent().unwrap_or(scratch.path())), 0o700);
        assert_eq!(
            std::fs::read_to_string(file.path()).ok().as_deref(),
            Some(r#"{"mcpServers":{}}"#)
        );
        let dir = file.dir.clone();
        drop(file);
        assert!(!dir.exists());
    }
}
