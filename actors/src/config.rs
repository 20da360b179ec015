//! Runtime settings, filled from the command line by the HTTP crate.

use std::path::PathBuf;

use crate::adapter::VendorsConfig;

/// Everything the runtime needs to know at start.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Directory holding the SQLite database.
    pub data_dir: PathBuf,
    /// Session working directories must lie under one of these (canonical paths):
    /// the admin's roots, and every user's without a grant of their own.
    pub workspace_roots: Vec<PathBuf>,
    /// Roots granted to named users (`[users.NAME] workspace_roots`, canonical): such
    /// a user opens sessions under these only.
    pub user_roots: std::collections::BTreeMap<String, Vec<PathBuf>>,
    /// The `--config` file, if any: like the data directory, never served to a
    /// session.
    pub config_file: Option<PathBuf>,
    /// Most events committed in one transaction. 1 means a commit per event (only for
    /// measuring what batching saves).
    pub commit_batch: usize,
    /// Bytes a WebSocket client may have queued before it is told it lagged.
    pub client_queue_bytes: usize,
    /// Bytes all WebSocket clients together may have queued; past it the clients
    /// furthest behind are evicted.
    pub total_queue_bytes: usize,
    /// A WebSocket client that has bytes queued and writes none of them for this long
    /// is disconnected.
    pub client_stall: std::time::Duration,
    /// Events each session keeps in memory for fast replay.
    pub ring_events: usize,
    /// How to start each vendor's CLI; a vendor missing here is not installed.
    pub vendors: VendorsConfig,
    /// How long commits may keep failing (no success in between) before the server
    /// stops: a store that never comes back must not leave a server that acknowledges
    /// nothing.
    pub store_give_up: std::time::Duration,
    /// Most sessions one user may own (Workers, spawned and handed-off sessions
    /// count); the next creation is `LIMIT_EXCEEDED`.
    pub max_sessions_per_user: usize,
    /// `--max-live-processes`: most vendor CLI processes serving one session each
    /// (Claude Code, ACP agents) that run at once; `None`: no limit.
    pub max_live_processes: Option<usize>,
    /// `--max-concurrent-turns`: most turns running at once across sessions; more
    /// wait in line (a Driver's delegation never does). `None`: no limit.
    pub max_concurrent_turns: Option<usize>,
    /// `--max-process-rss`, MiB: such a process (with the processes it started) that
    /// uses more is closed between turns and its session resumed at the next.
    pub max_process_rss_mib: Option<u64>,
    /// This server's cluster node name (`--node`), stamped on the sessions it creates;
    /// `None` outside a cluster.
    pub node: Option<String>,
    /// Model names the config file adds to a vendor's list (`[vendors.X] models`), by
    /// vendor id: offered besides what the CLI reports (Claude Code reports none).
    pub configured_models: std::collections::BTreeMap<String, Vec<String>>,
    /// Sizes uploads and message attachments may have, and how long an unused upload
    /// is kept.
    pub uploads: crate::uploads::UploadLimits,
    /// Where a Worker works when `pair.create` does not say, and for Workers a
    /// proposal or `send_to_partner` creates (`[workspace] worker_workspace`,
    /// `--worker-workspace`).
    pub worker_workspace: tandem_protocol::workspace::WorkspaceMode,
    /// Whether vendor processes run confined by Landlock (`--confine-agents`, what the
    /// kernel enforces); reported on `GET /vendors`. Each configured vendor's
    /// [`crate::adapter::VendorProcess::confine`] holds the launcher.
    pub confinement: crate::adapter::confine::Confinement,
    /// The ports worktrees get as `TANDEM_PORT`, one each (`[workspace] ports`,
    /// `--worktree-ports`).
    pub worktree_ports: std::ops::RangeInclusive<u16>,
    /// How sessions' terminals are started and limited (`--max-terminals`,
    /// `--terminal-idle-secs`).
    pub terminals: crate::terminals::TerminalsConfig,
    /// The MCP servers every session's agent gets (`[mcp_servers.NAME]`).
    pub mcp_servers: Vec<crate::adapter::mcp_servers::NamedServer>,
}

impl RuntimeConfig {
    /// Paths no session may read or write through the files API or attachments: the
    /// data directory (tokens, database, uploads) and the config file.
    pub fn private_paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![self.data_dir.clone()];
        paths.extend(self.config_file.clone());
        paths
    }

    /// Why the data directory's place is a risk, when it lies inside a workspace
    /// root (the defaults do this when `tandem serve` starts in the home directory):
    /// the files API and attachments never reach it, but an agent that is not
    /// confined runs as the server's user and can read its tokens.
    pub fn data_dir_warning(&self) -> Option<String> {
        let data = self
            .data_dir
            .canonicalize()
            .or_else(|_| std::path::absolute(&self.data_dir))
            .ok()?;
        let root = self
            .workspace_roots
            .iter()
            .chain(self.user_roots.values().flatten())
            .find(|root| data.starts_with(root))?;
        Some(format!(
            "the data directory {} lies inside the workspace root {}: sessions never reach it \
             through the files API or attachments, but an agent working in a directory that \
             holds it can read its tokens (Landlock cannot allow a directory except one inside \
             it, and an unconfined agent can read anything); give --data-dir outside every root",
            data.display(),
            root.display()
        ))
    }

    /// The roots `user` may open sessions under: their grant, else the server's.
    pub fn roots_of(&self, user: &str, admin: bool) -> &[PathBuf] {
        match self.user_roots.get(user) {
            Some(roots) if !admin => roots,
            _ => &self.workspace_roots,
        }
    }

    /// Defaults for a data directory; workspace root is the current directory.
    pub fn new(data_dir: PathBuf, workspace_roots: Vec<PathBuf>) -> Self {
        RuntimeConfig {
            data_dir,
            workspace_roots,
            user_roots: std::collections::BTreeMap::new(),
            config_file: None,
            commit_batch: 4096,
            client_queue_bytes: 256 << 10,
            total_queue_bytes: 256 << 20,
            ring_events: 1024,
            client_stall: std::time::Duration::from_secs(30),
            vendors: VendorsConfig::default(),
            store_give_up: std::time::Duration::from_secs(60),
            max_sessions_per_user: 100_000,
            max_live_processes: None,
            max_concurrent_turns: None,
            max_process_rss_mib: None,
            node: None,
            configured_models: std::collections::BTreeMap::new(),
            uploads: crate::uploads::UploadLimits::default(),
            worker_workspace: tandem_protocol::workspace::WorkspaceMode::Shared,
            confinement: crate::adapter::confine::Confinement::off("not configured"),
            worktree_ports: crate::scripts::DEFAULT_PORTS,
            terminals: crate::terminals::TerminalsConfig::default(),
            mcp_servers: Vec::new(),
        }
    }
}
