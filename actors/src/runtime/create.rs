//! Creating sessions: validation against the catalog and the owner's limit, the
//! working directory check, the record committed before the actor starts.

use std::path::PathBuf;

use tandem_protocol::workspace::WorkspaceMode;

use super::*;
use crate::ids::{SessionId, UserId, VendorId};
use crate::workspace::{checkpoint, worktree};

/// What a new session is made of (validated by [`Runtime::new_session`]).
pub(super) struct NewSession {
    pub(super) id: Option<SessionId>,
    pub(super) owner_id: UserId,
    pub(super) visibility: tandem_protocol::Visibility,
    pub(super) vendor: VendorId,
    pub(super) model: String,
    pub(super) effort: String,
    pub(super) title: Option<String>,
    pub(super) cwd: String,
    pub(super) permission_mode: tandem_protocol::PermissionMode,
    pub(super) parent_id: Option<SessionId>,
    pub(super) pending_prompt: Option<String>,
    pub(super) handoff_from: Option<SessionId>,
    /// What a fork starts from (`session.fork`).
    pub(super) fork: Option<ForkStart>,
    /// A worktree of its own to create, branched in the checkout at `cwd`.
    pub(super) worktree: Option<WorktreeRequest>,
    /// The vendor's own session this one continues (`external.import`): its first turn
    /// resumes it.
    pub(super) resume: Option<String>,
    /// The MCP servers it chose; `None`: every one its owner may use.
    pub(super) mcp_servers: Option<Vec<tandem_protocol::mcp_servers::McpServerChoice>>,
}

/// A new session's own worktree, asked for.
pub(super) struct WorktreeRequest {
    /// What to branch from (default: the HEAD of the checkout at `cwd`).
    pub(super) base_ref: Option<String>,
    /// A checkpoint commit whose files the new worktree starts with (a fork's): its
    /// index and `HEAD` stay the branch's, so they show as uncommitted changes.
    pub(super) files_from: Option<String>,
}

/// What a fork is made from.
pub(super) struct ForkStart {
    /// The source and the anchor.
    pub(super) forked_from: tandem_protocol::ForkedFrom,
    /// The transcript its agent is given with the first message, when the vendor
    /// does not fork the conversation itself.
    pub(super) context: Option<String>,
    /// The vendor's own fork of the conversation, to resume.
    pub(super) vendor: Option<crate::adapter::messages::VendorFork>,
}

impl Runtime {
    /// Creates a session owned by `who`.
    pub async fn create_session(
        &self,
        who: &Principal,
        params: SessionCreateParams,
    ) -> Result<SessionInfo, RuntimeError> {
        let cwd = self.resolve_cwd(who, params.cwd.as_deref())?;
        if let Some(choice) = params.mcp_servers.as_deref() {
            if choice.len() > 32 {
                return Err(RuntimeError::InvalidArgument(
                    "mcpServers: at most 32 servers".into(),
                ));
            }
            self.inner
                .services
                .mcp_servers
                .check_choice(&who.user_id, choice)
                .map_err(RuntimeError::unusable)?;
        }
        self.new_session(NewSession {
            mcp_servers: params.mcp_servers,
            resume: None,
            id: None,
            owner_id: who.user_id.clone(),
            visibility: params.visibility.unwrap_or_default(),
            vendor: params.vendor.map_or(VendorId::SCRIPTED, VendorId::from),
            model: params.model.unwrap_or_default(),
            effort: params.effort.unwrap_or_default(),
            title: params.title,
            cwd: cwd.to_string_lossy().into_owned(),
            permission_mode: params.permission_mode.unwrap_or_default(),
            parent_id: None,
            pending_prompt: None,
            handoff_from: None,
            fork: None,
            worktree: (params.workspace == Some(WorkspaceMode::Worktree)).then_some(
                WorktreeRequest {
                    base_ref: params.base_ref,
                    files_from: None,
                },
            ),
        })
        .await
    }

    /// The MCP servers session `id` chose, for a session made from it (a fork, a
    /// handoff, a Worker, a spawned child) to get the same; `None` when it did not
    /// choose or cannot be read.
    pub(super) fn chosen_mcp_servers(
        &self,
        id: &str,
    ) -> Option<Vec<tandem_protocol::mcp_servers::McpServerChoice>> {
        match self.inner.store.load_session(id) {
            Ok(loaded) => loaded.and_then(|l| l.record.mcp_servers),
            Err(e) => {
                tracing::warn!(session = id, error = %e, "cannot read a session's MCP servers; the new one gets its owner's");
                None
            }
        }
    }

    /// Validates and creates a session, persists it and starts its actor.
    pub(super) async fn new_session(&self, spec: NewSession) -> Result<SessionInfo, RuntimeError> {
        // Workers, children and handoffs inherit an owner: never a revoked one.
        if self.inner.services.owners.revoked(&spec.owner_id) {
            return Err(RuntimeError::OwnerRevoked {
                session: spec
                    .parent_id
                    .clone()
                    .or_else(|| spec.handoff_from.clone())
                    .unwrap_or_else(|| "(new)".into()),
                owner: spec.owner_id,
            });
        }
        let catalog = &self.inner.services.catalog;
        let vendor = catalog.get(&spec.vendor).ok_or_else(|| {
            RuntimeError::unusable(format!("unknown vendor `{:.64}`", spec.vendor.as_str()))
        })?;
        if !vendor.installed {
            return Err(RuntimeError::VendorNotInstalled(spec.vendor.to_string()));
        }
        let effort = clamp_effort(spec.effort.trim(), &vendor.effort_levels)?;
        let title = match spec.title.as_deref() {
            Some(t) => crate::session::validate_title(t)?,
            None => "New session".to_string(),
        };
        // Reserve the owner's slot before anything is written; given back on failure.
        self.inner.sessions.take_slot(&spec.owner_id, false)?;
        let owner = spec.owner_id.clone();
        let created = self.create_record(spec, effort, title).await;
        if created.is_err() {
            self.inner.sessions.free_slot(&owner);
        }
        created
    }

    /// Persists a validated new session and, once it is committed, starts its actor.
    async fn create_record(
        &self,
        spec: NewSession,
        effort: String,
        title: String,
    ) -> Result<SessionInfo, RuntimeError> {
        let now = now_ms();
        let id = spec
            .id
            .unwrap_or_else(|| SessionId::new(random_id("ses_", 12)));
        let (cwd, workspace) = match spec.worktree {
            Some(request) => {
                let (dir, info) = self.create_worktree(&id, &spec.cwd, request).await?;
                (dir, Some(info))
            }
            None => (spec.cwd, None),
        };
        let record = SessionRecord {
            id,
            title,
            vendor: spec.vendor,
            model: spec.model.trim().to_string(),
            effort,
            permission_mode: spec.permission_mode,
            status: SessionStatus::Idle,
            turn_count: 0,
            created_at: now,
            last_activity: now,
            owner_id: spec.owner_id,
            visibility: spec.visibility,
            vendor_session_id: spec.resume.clone().or_else(|| {
                spec.fork
                    .as_ref()
                    .and_then(|f| f.vendor.as_ref())
                    .map(|v| v.vendor_session_id.clone())
            }),
            vendor_fork_on_open: spec
                .fork
                .as_ref()
                .and_then(|f| f.vendor.as_ref())
                .and_then(|v| v.fork_on_open.clone()),
            cwd,
            current_turn_id: None,
            turn_started_at: None,
            pair: None,
            more_workers: Vec::new(),
            waiting_place: None,
            queued: Default::default(),
            permission_rules: Vec::new(),
            parent_id: spec.parent_id,
            handoff_from: spec.handoff_from,
            forked_from: spec.fork.as_ref().map(|f| f.forked_from.clone()),
            last_checks: None,
            fork_context: spec.fork.and_then(|f| f.context),
            pending_prompt: spec.pending_prompt,
            mcp_servers: spec.mcp_servers,
            proposal: None,
            schedules: Vec::new(),
            delivered: Vec::new(),
            archived_at: None,
            node: self.inner.config.node.clone(),
            superseded: Vec::new(),
            workspace,
            remote_report: None,
            turn_end_seq: 0,
            seen_seq: 0,
            question: None,
            loop_run: None,
            commands: Vec::new(),
            on_limit: Default::default(),
            notify: Default::default(),
        };
        self.commit_and_start(record).await
    }

    /// Makes a new session's own worktree (branched in the checkout at `cwd`, with a
    /// fork's checkpoint files when asked) and gives it a port; its directory and
    /// what the record keeps of it.
    async fn create_worktree(
        &self,
        id: &str,
        cwd: &str,
        request: WorktreeRequest,
    ) -> Result<(String, tandem_protocol::workspace::WorkspaceInfo), RuntimeError> {
        let dir = worktree::worktree_dir(&self.inner.config.data_dir, id);
        let from = PathBuf::from(cwd);
        let (sid, at) = (id.to_string(), dir.clone());
        let info = actix_rt::task::spawn_blocking(move || {
            let info = worktree::create(&from, &at, &sid, request.base_ref.as_deref())?;
            if let Some(commit) = request.files_from.as_deref() {
                if let Err(e) = checkpoint::materialize(&at, commit) {
                    let _ =
                        worktree::remove(Path::new(&info.base_checkout), &at, &info.branch, false);
                    return Err(e);
                }
            }
            Ok(info)
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("worktree task failed: {e}")))??;
        let mut info = info;
        info.port = self.inner.services.scripts.take_port();
        Ok((dir.to_string_lossy().into_owned(), info))
    }

    /// Writes a new session's record and, once it is on disk, starts its actor and
    /// announces it; a record not committed is refused and its worktree removed.
    async fn commit_and_start(&self, record: SessionRecord) -> Result<SessionInfo, RuntimeError> {
        let writer = &self.inner.services.writer;
        let epoch = writer.epoch();
        writer.write(WriteOp::Session(Box::new(record.clone())))?;
        // Listed and announced only once it is on disk.
        if !writer.synced_since(epoch).await {
            if let Some(ws) = record.workspace.clone() {
                if let Some(port) = ws.port {
                    self.inner.services.scripts.free_port(port);
                }
                // Not created: its worktree goes too.
                let dir = PathBuf::from(&record.cwd);
                let _ = actix_rt::task::spawn_blocking(move || {
                    worktree::remove(Path::new(&ws.base_checkout), &dir, &ws.branch, false)
                })
                .await;
            }
            return Err(RuntimeError::NotCommitted(format!(
                "session {} was not created",
                record.id
            )));
        }
        let worktree = record.workspace.is_some();
        let handle = self.spawn_session(record, 0);
        if worktree {
            self.inner.workspaces.prepare_worktree(&handle).await;
        }
        let info = handle.shared.info();
        self.inner
            .services
            .gateway
            .do_send(SessionChanged(info.clone()));
        Ok(info)
    }

    /// Checks a requested working directory against the workspace roots of `who`
    /// (their own grant, else the server's) and keeps it out of the server's private
    /// paths; the first root when none is asked for.
    pub(super) fn resolve_cwd(
        &self,
        who: &Principal,
        cwd: Option<&str>,
    ) -> Result<PathBuf, RuntimeError> {
        let config = &self.inner.config;
        let roots = config.roots_of(&who.user_id, who.admin);
        let Some(cwd) = cwd.filter(|c| !c.trim().is_empty()) else {
            return roots.first().cloned().ok_or_else(|| {
                RuntimeError::InvalidArgument("no workspace root configured".into())
            });
        };
        if cwd.contains('\0') {
            // The one malformed path: the document says so.
            return Err(RuntimeError::InvalidArgument(
                "cwd contains a NUL byte".into(),
            ));
        }
        // From here on the path is well formed, and whether it can be used is a fact
        // of this server's disk and configuration (REST 422).
        let path = Path::new(cwd).canonicalize().map_err(|e| {
            RuntimeError::unusable(format!("cwd `{}` is not usable: {e}", cwd.escape_debug()))
        })?;
        if !path.is_dir() {
            return Err(RuntimeError::unusable(format!(
                "cwd `{cwd}` is not a directory"
            )));
        }
        if !roots.iter().any(|root| path.starts_with(root)) {
            return Err(RuntimeError::unusable(format!(
                "cwd `{cwd}` is outside your workspace roots"
            )));
        }
        let private = config.private_paths();
        if private
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .any(|p| path.starts_with(p))
        {
            return Err(RuntimeError::unusable(format!(
                "cwd `{cwd}` is inside the server's data directory; sessions cannot work there"
            )));
        }
        Ok(path)
    }
}
