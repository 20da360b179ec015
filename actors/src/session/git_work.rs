//! [`GitWork`]: the session's bookkeeping of the git work after its turns (the
//! `git_state` and checkpoint task each turn end starts): which task's answer is
//! current, how many run, whether the directory is a repository, and who waits for
//! them to end. A plain value the actor owns; the tasks themselves are spawned by
//! `workspace.rs`.

use std::sync::Arc;

use tandem_protocol::workspace::GitState;
use tokio::sync::oneshot;

/// The newest checkpoint commit, parent of the next one (`None` after a restart:
/// the next one's parent is the checkout's `HEAD`). Its lock is held by the
/// checkpoint (or restore) being made, so they are made one after the other, in
/// order.
pub(crate) type CheckpointLock = Arc<tokio::sync::Mutex<Option<String>>>;

/// Git work after turns, as the actor sees it.
#[derive(Debug, Default)]
pub(crate) struct GitWork {
    /// The last `git_state` appended (`None` after a restart: the first state
    /// computed is appended again).
    last_state: Option<GitState>,
    /// Counts the tasks started; only the latest one's state is used.
    generation: u64,
    /// See [`CheckpointLock`].
    last_checkpoint: CheckpointLock,
    /// Tasks started and not yet ended.
    running: u32,
    /// Told the last `seq` once no task runs ([`super::workspace::Settle`]).
    settle_waiters: Vec<oneshot::Sender<u64>>,
    /// Whether the working directory was a repository when a task last looked
    /// (`None` before the first).
    in_repository: Option<bool>,
}

impl GitWork {
    /// A turn ended: the generation of the task to start, or `None` when none is
    /// needed: outside a repository the one still to run will look again, so turns
    /// that end faster than git starts queue no more of them.
    pub(crate) fn begin(&mut self) -> Option<u64> {
        if self.in_repository == Some(false) && self.running > 0 {
            return None;
        }
        self.generation += 1;
        self.running += 1;
        Some(self.generation)
    }

    /// The lock checkpoints and restores take (see [`CheckpointLock`]).
    pub(crate) fn checkpoint_lock(&self) -> CheckpointLock {
        self.last_checkpoint.clone()
    }

    /// Takes the state task `generation` computed; true when it is the latest task's
    /// and differs from the last one appended (the caller appends it).
    pub(crate) fn take_state(&mut self, generation: u64, state: &GitState) -> bool {
        if generation != self.generation || self.last_state.as_ref() == Some(state) {
            return false;
        }
        self.last_state = Some(state.clone());
        true
    }

    /// A task ended; `repository` is what it found (`None`: it could not tell).
    /// Once none runs, the waiters to tell (each gets the last `seq`).
    pub(crate) fn ended(&mut self, repository: Option<bool>) -> Vec<oneshot::Sender<u64>> {
        self.running = self.running.saturating_sub(1);
        if repository.is_some() {
            self.in_repository = repository;
        }
        if self.running == 0 {
            std::mem::take(&mut self.settle_waiters)
        } else {
            Vec::new()
        }
    }

    /// True when a turn starting now must wait for the tasks still running (so its
    /// agent's writes stay out of their checkpoints); outside a repository none
    /// waits.
    pub(crate) fn holds_starts(&self) -> bool {
        self.running > 0 && self.in_repository != Some(false)
    }

    /// Hears when no task runs: `waiter` back when none runs now (the caller
    /// answers it), else kept until the last one ends.
    pub(crate) fn settle(&mut self, waiter: oneshot::Sender<u64>) -> Option<oneshot::Sender<u64>> {
        if self.running == 0 {
            return Some(waiter);
        }
        self.settle_waiters.push(waiter);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(branch: &str) -> GitState {
        GitState {
            branch: Some(branch.into()),
            base: None,
            ahead: 0,
            behind: 0,
            dirty: false,
            files: Vec::new(),
        }
    }

    #[test]
    fn only_the_latest_tasks_changed_state_is_appended() {
        let mut git = GitWork::default();
        let first = git.begin();
        let second = git.begin();
        assert_eq!((first, second), (Some(1), Some(2)));
        // The older task answers late: dropped.
        assert!(!git.take_state(1, &state("a")));
        assert!(git.take_state(2, &state("a")));
        // The same state again is not appended twice.
        let third = git.begin();
        assert_eq!(third, Some(3));
        assert!(!git.take_state(3, &state("a")));
        assert!(git.take_state(3, &state("b")));
    }

    #[test]
    fn outside_a_repository_turns_neither_wait_nor_pile_up_tasks() {
        let mut git = GitWork::default();
        assert_eq!(git.begin(), Some(1));
        // Before the first task said anything, a new turn waits for it.
        assert!(git.holds_starts());
        assert!(git.ended(Some(false)).is_empty());
        assert!(!git.holds_starts());
        assert_eq!(git.begin(), Some(2));
        // One is still to run and will look again: no second one.
        assert_eq!(git.begin(), None);
        assert!(!git.holds_starts());
        git.ended(None);
        // It could not tell: what was known stays.
        assert!(!git.holds_starts());
        assert_eq!(git.begin(), Some(3));
    }

    #[test]
    fn in_a_repository_starts_wait_until_every_task_ended() {
        let mut git = GitWork::default();
        git.begin();
        git.begin();
        git.ended(Some(true));
        assert!(git.holds_starts());
        git.ended(Some(true));
        assert!(!git.holds_starts());
    }

    #[test]
    fn settle_waiters_are_told_when_the_last_task_ends() {
        let mut git = GitWork::default();
        let (now, _rx) = oneshot::channel();
        assert!(git.settle(now).is_some(), "nothing runs: answered at once");
        git.begin();
        git.begin();
        let (later, mut rx) = oneshot::channel();
        assert!(git.settle(later).is_none());
        assert!(git.ended(Some(true)).is_empty());
        let told = git.ended(Some(true));
        assert_eq!(told.len(), 1);
        for waiter in told {
            let _ = waiter.send(7);
        }
        assert_eq!(rx.try_recv().ok(), Some(7));
    }
}
