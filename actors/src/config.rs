//! Runtime settings, filled from the command line by the HTTP crate.

use std::path::PathBuf;

use crate::adapter::VendorsConfig;

/// Everything the runtime needs to know at start.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Directory holding the SQLite database.
    pub data_dir: PathBuf,
    /// Session working directories must lie under one of these (canonical paths).
    pub workspace_roots: Vec<PathBuf>,
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
    /// This server's cluster node name (`--node`), stamped on the sessions it creates;
    /// `None` outside a cluster.
    pub node: Option<String>,
    /// Model names the config file adds to a vendor's list (`[vendors.X] models`), by
    /// vendor id: offered besides what the CLI reports (Claude Code reports none).
    pub configured_models: std::collections::BTreeMap<String, Vec<String>>,
    /// Where a Worker works when `pair.create` does not say, and for Workers a
    /// proposal or `send_to_partner` creates (`[workspace] worker_workspace`,
    /// `--worker-workspace`).
    pub worker_workspace: tandem_protocol::workspace::WorkspaceMode,
}

impl RuntimeConfig {
    /// Defaults for a data directory; workspace root is the current directory.
    pub fn new(data_dir: PathBuf, workspace_roots: Vec<PathBuf>) -> Self {
        RuntimeConfig {
            data_dir,
            workspace_roots,
            commit_batch: 4096,
            client_queue_bytes: 256 << 10,
            total_queue_bytes: 256 << 20,
            ring_events: 1024,
            client_stall: std::time::Duration::from_secs(30),
            vendors: VendorsConfig::default(),
            store_give_up: std::time::Duration::from_secs(60),
            max_sessions_per_user: 100_000,
            node: None,
            configured_models: std::collections::BTreeMap::new(),
            worker_workspace: tandem_protocol::workspace::WorkspaceMode::Shared,
        }
    }
}
