//! tandem's runtime: every session, vendor adapter and the event gateway is an actix
//! actor; SQLite (one writer thread, group commit) holds everything durable.
//!
//! The HTTP crate talks to this crate only through [`Runtime`], a cheap-to-clone handle.
//! See ARCHITECTURE.md at the repository root for the bird's-eye view.

pub(crate) mod access;
pub mod adapter;
pub(crate) mod attachments;
pub(crate) mod checks;
pub mod clock;
pub mod cluster;
pub(crate) mod cluster_link;
pub(crate) mod config;
pub(crate) mod crash;
pub(crate) mod error;
pub(crate) mod external;
pub(crate) mod failover;
pub mod flow;
pub mod gateway;
pub(crate) mod handoff;
pub mod holds;
pub(crate) mod ids;
pub(crate) mod judge;
#[cfg(test)]
mod layering;
pub(crate) mod mcp_tokens;
pub(crate) mod message_queue;
pub mod metrics;
pub(crate) mod owners;
pub(crate) mod pair;
pub mod push;
pub(crate) mod record;
pub(crate) mod registry;
pub(crate) mod review;
pub(crate) mod review_by;
pub mod runtime;
pub(crate) mod schedule;
pub(crate) mod scripts;
pub mod session;
pub mod store;
pub mod terminals;
#[cfg(test)]
mod testkit;
pub(crate) mod text;
pub(crate) mod tools;
pub(crate) mod turn_slots;
pub mod uploads;
pub mod workspace;

pub use access::Principal;
pub use config::RuntimeConfig;
pub use error::RuntimeError;
pub use gateway::{ClientQueue, Deliver};
pub use runtime::Runtime;

/// Starts the runtime with the agent tools wired into its sessions: the composition
/// root the HTTP layer (and the test fixtures) call. Call inside an actix `System`.
pub fn start(config: RuntimeConfig) -> Result<runtime::Started, RuntimeError> {
    if let Some(warning) = config.data_dir_warning() {
        tracing::warn!("{warning}");
    }
    Runtime::start(config, tools::ToolRouter::host)
}
