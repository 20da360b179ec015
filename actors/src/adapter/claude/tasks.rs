//! Background work a Claude turn left running: backgrounded Bash commands and
//! sub-agents started with `run_in_background`.
//!
//! The CLI reports the complete set on every change (`system` subtype
//! `background_tasks_changed`) and each task's end separately (`task_updated` with a
//! final status, `task_notification`). The tracker keeps the set, remembers when each
//! task was first seen (the CLI does not say when it started), and tells the actor
//! whether membership changed, so `background_tasks` is published only on change.

use std::collections::HashMap;

use tandem_protocol::{BackgroundTask, TaskType};

use super::wire::CliTask;

/// Task statuses after which a task is gone.
const FINAL: [&str; 5] = ["completed", "failed", "killed", "stopped", "cancelled"];

/// The live set of one process's background tasks.
#[derive(Debug, Default)]
pub struct TaskTracker {
    /// The tasks, in the order the CLI listed them.
    tasks: Vec<BackgroundTask>,
    /// First time each task id was seen, epoch ms: kept across list updates.
    first_seen: HashMap<String, u64>,
}

/// The wire task type for a CLI task type.
pub fn task_type(cli: &str) -> TaskType {
    match cli {
        "local_bash" | "bash" | "shell" => TaskType::Shell,
        "local_agent" | "agent" | "remote_agent" => TaskType::Agent,
        _ => TaskType::Other,
    }
}

impl TaskTracker {
    /// A copy of the running tasks, emitted to the session whenever the set changes.
    pub fn tasks(&self) -> Vec<BackgroundTask> {
        self.tasks.clone()
    }

    /// True when a task with this id runs.
    pub fn contains(&self, task_id: &str) -> bool {
        self.tasks.iter().any(|t| t.task_id == task_id)
    }

    /// True when no task runs.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Replaces the set with the CLI's list; true when membership changed.
    pub fn replace(&mut self, list: &[CliTask], now: u64) -> bool {
        let before: Vec<String> = self.tasks.iter().map(|t| t.task_id.clone()).collect();
        self.tasks = list
            .iter()
            .map(|t| BackgroundTask {
                task_id: t.task_id.clone(),
                task_type: task_type(&t.task_type),
                description: t.description.clone(),
                started_at: Some(*self.first_seen.entry(t.task_id.clone()).or_insert(now)),
            })
            .collect();
        self.first_seen
            .retain(|id, _| list.iter().any(|t| &t.task_id == id));
        let after: Vec<String> = self.tasks.iter().map(|t| t.task_id.clone()).collect();
        before != after
    }

    /// Drops a task whose status became final; true when it was in the set.
    pub fn finished(&mut self, task_id: &str, status: &str) -> bool {
        if !FINAL.contains(&status) || !self.contains(task_id) {
            return false;
        }
        self.tasks.retain(|t| t.task_id != task_id);
        self.first_seen.remove(task_id);
        true
    }

    /// Forgets every task (the process ended, taking its tasks with it); true when
    /// the set was not already empty.
    pub fn clear(&mut self) -> bool {
        self.first_seen.clear();
        !std::mem::take(&mut self.tasks).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(id: &str, kind: &str) -> CliTask {
        CliTask {
            task_id: id.into(),
            task_type: kind.into(),
            description: format!("task {id}"),
        }
    }

    #[test]
    fn keeps_first_seen_times_and_reports_membership_changes() {
        let mut t = TaskTracker::default();
        assert!(t.replace(&[cli("a", "local_bash")], 100));
        assert!(!t.replace(&[cli("a", "local_bash")], 200), "same set");
        assert!(t.replace(&[cli("a", "local_bash"), cli("b", "local_agent")], 300));
        let tasks = t.tasks();
        assert_eq!(tasks[0].started_at, Some(100));
        assert_eq!(tasks[0].task_type, TaskType::Shell);
        assert_eq!(tasks[1].started_at, Some(300));
        assert_eq!(tasks[1].task_type, TaskType::Agent);
        assert!(!t.finished("b", "running"));
        assert!(t.finished("b", "completed"));
        assert!(!t.finished("b", "completed"), "already gone");
        assert!(t.replace(&[], 400));
        assert!(t.is_empty());
        assert!(!t.clear());
        assert_eq!(task_type("workflow"), TaskType::Other);
    }
}
