//! tandem's runtime: every session, vendor adapter and the event gateway is an actix
//! actor; SQLite (one writer thread, group commit) holds everything durable.
//!
//! The HTTP crate talks to this crate only through [`Runtime`], a cheap-to-clone handle.
//! See ARCHITECTURE.md at the repository root for the bird's-eye view.

pub mod access;
pub mod adapter;
pub mod attachments;
pub mod checks;
pub mod clock;
pub mod cluster;
pub mod cluster_link;
pub mod config;
pub(crate) mod crash;
pub mod error;
pub mod external;
pub mod failover;
pub mod flow;
pub mod gateway;
pub mod handoff;
pub mod holds;
pub mod ids;
pub mod judge;
#[cfg(test)]
mod layering;
pub mod mcp_tokens;
pub mod message_queue;
pub mod metrics;
pub mod owners;
pub mod pair;
pub mod push;
pub mod record;
pub mod registry;
pub mod review;
pub mod review_by;
pub mod runtime;
pub mod schedule;
pub mod scripts;
pub mod session;
pub mod store;
pub mod terminals;
#[cfg(test)]
mod testkit;
pub mod text;
pub mod tools;
pub mod turn_slots;
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
