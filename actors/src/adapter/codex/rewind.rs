//! A rewind (`chat.edit-send`) on Codex: the thread is forked before the first turn
//! to forget (`thread/fork {beforeTurnId}`, found with `thread/turns/list`), and the
//! session continues on the fork. The source thread is left as it was, so the
//! superseded branch stays resumable by its id. (The pinned app-server has no
//! `thread/rollback`; `thread/revert` rewrites only the stored history of a thread
//! that stays loaded with its old turns.)

use actix::prelude::*;
use tokio::sync::oneshot;

use super::plan::{policy, Applied};
use super::rpc::{Connection, RpcError, ThreadInbound};
use super::server::Connect;
use super::thread::CodexThread;
use super::wire::{
    method, ThreadForkParams, ThreadResponse, ThreadTurnsListParams, ThreadTurnsListResponse,
};
use crate::adapter::messages::{AgentItem, CannotBranch, VendorFork};

impl CodexThread {
    /// Makes Codex forget the newest `drop_turns` turns of the thread, answering on
    /// `done`.
    pub(super) fn rewind(
        &mut self,
        drop_turns: u64,
        done: oneshot::Sender<Result<(), CannotBranch>>,
        ctx: &mut Context<Self>,
    ) {
        let Some(thread_id) = self.thread_id.clone() else {
            let _ = done.send(Err("the session has no Codex thread yet".into()));
            return;
        };
        if drop_turns == 0 {
            let _ = done.send(Ok(()));
            return;
        }
        let model = Some(self.settings.model.clone()).filter(|m| !m.is_empty());
        let work = self.fork_thread(thread_id, drop_turns, false);
        ctx.spawn(work.into_actor(self).map(move |res, act, ctx| {
            let answer = match res {
                Ok((conn, Some(forked))) => {
                    act.switch_thread(conn, forked, model, ctx);
                    Ok(())
                }
                // Codex has none of those turns (they never reached it): nothing to forget.
                Ok((_, None)) => Ok(()),
                Err(e) => Err(CannotBranch(e.to_string())),
            };
            let _ = done.send(answer);
        }));
    }

    /// Forks the thread into a new one without its newest `drop_turns` turns (all of
    /// them when `drop_turns` is 0) for a `session.fork`; this session stays on its
    /// thread. Answers the new thread's id on `done`.
    pub(super) fn fork(
        &mut self,
        drop_turns: u64,
        done: oneshot::Sender<Result<VendorFork, CannotBranch>>,
        ctx: &mut Context<Self>,
    ) {
        let Some(thread_id) = self.thread_id.clone() else {
            let _ = done.send(Err("the session has no Codex thread yet".into()));
            return;
        };
        let work = self.fork_thread(thread_id, drop_turns, true);
        ctx.spawn(work.into_actor(self).map(move |res, _act, _ctx| {
            let answer = match res {
                Ok((_, Some(forked))) => Ok(VendorFork {
                    vendor_session_id: forked,
                    fork_on_open: None,
                }),
                Ok((_, None)) => Err("Codex did not fork the thread".into()),
                Err(e) => Err(CannotBranch(e.to_string())),
            };
            let _ = done.send(answer);
        }));
    }

    /// `thread/fork` of `thread_id` before the oldest of its newest `drop_turns`
    /// turns (found with `thread/turns/list`), with the session's settings; the
    /// connection and the fork's id. When Codex has none of those turns, a rewind
    /// (`always` false) has nothing to forget and forks nothing, and a fork
    /// (`always`) takes the whole thread.
    fn fork_thread(
        &self,
        thread_id: String,
        drop_turns: u64,
        always: bool,
    ) -> impl std::future::Future<Output = Result<(Connection, Option<String>), RpcError>> + 'static
    {
        let (approval_policy, sandbox) = policy(self.settings.permission_mode, self.confined);
        let fork = ThreadForkParams {
            thread_id: thread_id.clone(),
            before_turn_id: None,
            cwd: self.cwd.clone(),
            approval_policy,
            sandbox,
            model: Some(self.settings.model.clone()).filter(|m| !m.is_empty()),
            developer_instructions: self.settings.system_prompt.clone(),
            config: self.thread_config(),
            exclude_turns: true,
        };
        let known = self.live_conn();
        let server = self.server.clone();
        let session_id = self.session_id.clone();
        let timeout = self.limits.request;
        async move {
            let conn = match known {
                Some(conn) => conn,
                None => server
                    .send(Connect { session_id })
                    .await
                    .map_err(|e| RpcError::Closed(format!("app-server actor gone: {e}")))??,
            };
            let before = if drop_turns == 0 {
                None
            } else {
                let list = ThreadTurnsListParams {
                    thread_id,
                    limit: u32::try_from(drop_turns).unwrap_or(u32::MAX),
                    sort_direction: "desc",
                };
                let turns: ThreadTurnsListResponse = conn
                    .request(method::THREAD_TURNS_LIST, &list, timeout)
                    .await?;
                // Newest first: the last of the page is the oldest turn to leave out.
                turns.data.last().map(|t| t.id.clone())
            };
            if before.is_none() && !always {
                return Ok((conn, None));
            }
            let fork = ThreadForkParams {
                before_turn_id: before,
                ..fork
            };
            let forked: ThreadResponse = conn.request(method::THREAD_FORK, &fork, timeout).await?;
            Ok((conn, Some(forked.thread.id)))
        }
    }

    /// Continues the session on `forked`, loaded on `conn` with the current settings.
    fn switch_thread(
        &mut self,
        conn: Connection,
        forked: String,
        model: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        if let (Some(old_conn), Some(old)) = (&self.conn, &self.thread_id) {
            old_conn.unroute(old);
        }
        conn.route(&forked, ctx.address().recipient::<ThreadInbound>());
        let (approval_policy, sandbox) = policy(self.settings.permission_mode, self.confined);
        self.applied = Some(Applied {
            generation: conn.generation(),
            approval_policy,
            sandbox,
            model,
            effort: None,
        });
        self.instructions = self.settings.system_prompt.clone();
        self.conn = Some(conn);
        self.thread_id = Some(forked.clone());
        self.emitter.send(None, AgentItem::VendorSessionId(forked));
    }
}
