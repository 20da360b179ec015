//! A Codex session's background terminals: shell commands that outlive their turn,
//! listed after turns and reported as the session's background tasks.

use std::collections::HashMap;

use actix::prelude::*;
use tandem_protocol::{BackgroundTask, TaskType};

use super::rpc::RpcError;
use super::thread::CodexThread;
use super::wire::{
    method, BackgroundTerminalsListParams, BackgroundTerminalsListResponse,
    BackgroundTerminalsTerminateParams, BackgroundTerminalsTerminateResponse,
};
use crate::adapter::messages::AgentItem;
use crate::clock::now_ms;

/// A background terminal as last reported.
#[derive(Debug, Clone)]
pub(super) struct Task {
    pub task: BackgroundTask,
    /// The command's item id (its late `item/completed` means the terminal ended).
    pub item_id: String,
}

/// The session's background terminals and when their commands started.
#[derive(Debug, Default)]
pub(super) struct Terminals {
    /// As last reported to the session.
    pub tasks: Vec<Task>,
    /// When each shell command of this session started (background task start times).
    pub command_starts: HashMap<String, u64>,
}

impl Terminals {
    /// True when `item_id` is the command of a live background terminal.
    pub fn has_item(&self, item_id: &str) -> bool {
        self.tasks.iter().any(|t| t.item_id == item_id)
    }
}

impl CodexThread {
    /// Lists the thread's background terminals and reports the set if it changed.
    pub(super) fn refresh_tasks(&mut self, ctx: &mut Context<Self>) {
        let (Some(conn), Some(thread_id)) = (self.live_conn(), self.thread_id.clone()) else {
            return;
        };
        let timeout = self.limits.request;
        let work = async move {
            let mut all = Vec::new();
            let mut cursor = None;
            loop {
                let page: BackgroundTerminalsListResponse = conn
                    .request(
                        method::TERMINALS_LIST,
                        &BackgroundTerminalsListParams {
                            thread_id: thread_id.clone(),
                            cursor: cursor.take(),
                        },
                        timeout,
                    )
                    .await?;
                all.extend(page.data);
                match page.next_cursor {
                    Some(next) if !next.is_empty() => cursor = Some(next),
                    _ => return Ok::<_, RpcError>(all),
                }
            }
        };
        ctx.spawn(work.into_actor(self).map(|res, act, _| match res {
            Ok(terminals) => {
                let tasks: Vec<Task> = terminals
                    .into_iter()
                    .map(|t| Task {
                        task: BackgroundTask {
                            task_id: t.process_id,
                            task_type: TaskType::Shell,
                            description: t.command,
                            started_at: Some(
                                act.terminals
                                    .command_starts
                                    .get(&t.item_id)
                                    .copied()
                                    .unwrap_or_else(now_ms),
                            ),
                        },
                        item_id: t.item_id,
                    })
                    .collect();
                act.set_tasks(tasks);
            }
            Err(e) => {
                tracing::debug!(session = %act.session_id, error = %e, "background terminals not listed");
            }
        }));
    }

    /// Reports the task set when its membership changed.
    pub(super) fn set_tasks(&mut self, tasks: Vec<Task>) {
        let mut old: Vec<&str> = self
            .terminals
            .tasks
            .iter()
            .map(|t| t.task.task_id.as_str())
            .collect();
        let mut new: Vec<&str> = tasks.iter().map(|t| t.task.task_id.as_str()).collect();
        old.sort_unstable();
        new.sort_unstable();
        if old == new {
            return;
        }
        let live = tasks.iter().map(|t| t.task.clone()).collect();
        let terminals = &mut self.terminals;
        terminals.tasks = tasks;
        let kept = &terminals.tasks;
        terminals
            .command_starts
            .retain(|item, _| kept.iter().any(|t| t.item_id == *item));
        self.emitter.send(None, AgentItem::BackgroundTasks(live));
        self.report_busy();
    }

    /// Terminates one background terminal, then lists them again.
    pub(super) fn stop_task(&mut self, task_id: String, ctx: &mut Context<Self>) {
        let (Some(conn), Some(thread_id)) = (self.live_conn(), self.thread_id.clone()) else {
            return;
        };
        let timeout = self.limits.request;
        let params = BackgroundTerminalsTerminateParams {
            thread_id,
            process_id: task_id,
        };
        let work = async move {
            conn.request::<_, BackgroundTerminalsTerminateResponse>(
                method::TERMINALS_TERMINATE,
                &params,
                timeout,
            )
            .await
        };
        ctx.spawn(work.into_actor(self).map(|res, act, ctx| {
            if let Err(e) = res {
                tracing::warn!(session = %act.session_id, error = %e, "terminating a background terminal failed");
            }
            act.refresh_tasks(ctx);
        }));
    }
}
