//! The one polling helper of the tests: wait, bounded, until something the server does
//! asynchronously has happened, and fail the test naming what never happened.

use std::time::Duration;

use tokio::time::Instant;

/// How long [`eventually`] polls before it fails the test: long enough for a loaded
/// 2-core machine running other tests, short enough that a hang fails well before
/// nextest's own timeout.
pub const POLL_LIMIT: Duration = Duration::from_secs(20);

/// The pause between two checks.
pub const POLL_EVERY: Duration = Duration::from_millis(25);

/// Calls `check` every [`POLL_EVERY`] until it returns `Some`, and returns that value;
/// panics with "timed out waiting for {what}" after [`POLL_LIMIT`]. For a yes/no
/// condition, return `cond.then_some(())`.
pub async fn eventually<T>(what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    eventually_within(what, POLL_LIMIT, check).await
}

/// [`eventually`] with its own limit, for waits the test bounds on purpose (e.g. "a
/// revoked token stops working within a few seconds").
pub async fn eventually_within<T>(
    what: &str,
    limit: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}
