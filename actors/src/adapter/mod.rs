//! Vendor adapters and what the server knows about each vendor.
//!
//! Only the adapter modules know a vendor's wire format. Every adapter is an actor that
//! takes [`messages::AdapterCommand`]s from its session and reports
//! [`messages::AgentOutput`]s back, built from the shared [`core`] (paced emitter, turn
//! slot, approvals). [`vendors::Vendors`] is the registry that starts the right adapter
//! for a session's [`VendorId`]; [`AdapterContext`] is what a session hands a new
//! adapter.

pub mod acp;
pub mod catalog;
pub mod claude;
pub mod codex;
pub mod confine;
pub mod context;
pub mod core;
pub mod edits;
pub mod fleet;
pub mod health;
pub mod mcp_servers;
pub mod messages;
pub mod model_cache;
pub mod old_history;
pub mod process;
pub mod scripted;
pub mod supervisor;
pub mod tool_host;
pub mod vendors;

pub use catalog::{clamp_effort, VendorCatalog, VendorSpec};

/// The capability a vendor lists in `GET /vendors` when its adapter can rewind its
/// conversation (`chat.edit-send`).
pub const REWIND_CAPABILITY: &str = "rewind";

/// The capability a vendor lists when it forks a conversation itself, so a
/// `session.fork` of the same vendor gets the vendor's own copy, not a transcript.
pub const FORK_CAPABILITY: &str = "fork";

/// What the scripted agent, Codex and Claude Code can all do (`GET /vendors`).
pub const CLI_CAPABILITIES: &[&str] = &[
    "interrupt",
    "backgroundTasks",
    "tools",
    "approvals",
    REWIND_CAPABILITY,
    "images",
];
pub use context::{AdapterContext, McpAccess};
pub use process::{ConfiguredVendor, VendorProcess, VendorProtocol, VendorsConfig};
pub use tool_host::{ToolFuture, ToolHost, Tools};
// The vendor id lives in the leaf `ids` module (the stored record names it); kept
// here so adapter code and its users name it where vendors are.
pub use crate::ids::VendorId;
pub use vendors::{AdapterFactory, Vendors};
