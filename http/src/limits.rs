//! Per-user and per-socket limits of the WebSocket: how many connections a user may
//! hold open, and how many messages one socket may send in a second. They keep one
//! runaway script (or one leaked token) from taking the server's memory and CPU.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Open WebSocket connections per user. A [`ConnectionSlot`] holds one; dropping it
/// (when the socket's actor goes, or the upgrade fails) gives it back.
#[derive(Debug, Default, Clone)]
pub struct ConnectionCounts {
    open: Arc<Mutex<HashMap<String, usize>>>,
}

impl ConnectionCounts {
    /// Takes a slot for `user`, unless `user` already holds `max`.
    pub fn acquire(&self, user: &str, max: usize) -> Option<ConnectionSlot> {
        let mut open = self.open.lock().ok()?;
        let count = open.entry(user.to_string()).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(ConnectionSlot {
            counts: self.clone(),
            user: user.to_string(),
        })
    }

    /// Connections `user` holds now.
    pub fn open(&self, user: &str) -> usize {
        self.open
            .lock()
            .ok()
            .and_then(|open| open.get(user).copied())
            .unwrap_or(0)
    }
}

/// One open connection of one user; released on drop.
#[derive(Debug)]
pub struct ConnectionSlot {
    counts: ConnectionCounts,
    user: String,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.counts.open.lock() {
            if let Some(count) = open.get_mut(&self.user) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    open.remove(&self.user);
                }
            }
        }
    }
}

/// Messages one socket sent in the current one-second window.
#[derive(Debug)]
pub struct RateWindow {
    max: u32,
    started: Instant,
    count: u32,
}

impl RateWindow {
    /// A window allowing `max` messages a second.
    pub fn new(max: u32) -> RateWindow {
        RateWindow {
            max: max.max(1),
            started: Instant::now(),
            count: 0,
        }
    }

    /// Counts one message; true when it is over the limit.
    pub fn over(&mut self) -> bool {
        self.over_at(Instant::now())
    }

    /// [`RateWindow::over`] at a given time.
    fn over_at(&mut self, now: Instant) -> bool {
        if now.duration_since(self.started) >= Duration::from_secs(1) {
            self.started = now;
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
        self.count > self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_and_given_back() {
        let counts = ConnectionCounts::default();
        let a = counts.acquire("u", 2);
        let b = counts.acquire("u", 2);
        assert!(a.is_some() && b.is_some());
        assert!(counts.acquire("u", 2).is_none());
        assert!(counts.acquire("v", 2).is_some());
        drop(a);
        assert_eq!(counts.open("u"), 1);
        assert!(counts.acquire("u", 2).is_some());
    }

    #[test]
    fn rate_window_counts_per_second() {
        let mut w = RateWindow::new(3);
        let t0 = w.started;
        let over: Vec<bool> = (0..5).map(|_| w.over_at(t0)).collect();
        assert_eq!(over, [false, false, false, true, true]);
        // A new second starts a new count.
        assert!(!w.over_at(t0 + Duration::from_millis(1000)));
    }
}
