//! Named crash points for the crash tests of multi-step workflows (pair creation and
//! closing, proposal acceptance, `spawn_sessions`). Test builds only (feature
//! `failpoints`): a crash point set to `return` waits until every write queued so far
//! is committed, then aborts the whole process, so a test can restart the server on
//! the data a crash at exactly that step leaves. Without the feature it is nothing.

use crate::store::StoreWriter;

/// Aborts the process here when the failpoint `name` is set (test builds only), once
/// the writes queued before it are on disk.
#[cfg(feature = "failpoints")]
pub(crate) async fn crash_point(writer: &StoreWriter, name: &str) {
    if fail::eval(name, |_| ()).is_some() {
        let synced = writer.synced_since(writer.epoch()).await;
        tracing::warn!(name, synced, "crash point: aborting");
        std::process::abort();
    }
}

/// Without the `failpoints` feature a crash point does nothing.
#[cfg(not(feature = "failpoints"))]
pub(crate) async fn crash_point(_writer: &StoreWriter, _name: &str) {}

/// A step a test made fail (the failpoint's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Failpoint(pub String);

/// Test builds: the failpoint `name` set to `return(MESSAGE)` makes this step fail
/// with MESSAGE (to test a workflow's handling of an ordinary error).
#[cfg(feature = "failpoints")]
pub(crate) fn fail_here(name: &str) -> Result<(), Failpoint> {
    match fail::eval(name, |arg| {
        arg.unwrap_or_else(|| format!("failpoint {name}"))
    }) {
        Some(message) => Err(Failpoint(message)),
        None => Ok(()),
    }
}

/// Without the `failpoints` feature nothing fails here.
#[cfg(not(feature = "failpoints"))]
pub(crate) fn fail_here(_name: &str) -> Result<(), Failpoint> {
    Ok(())
}
