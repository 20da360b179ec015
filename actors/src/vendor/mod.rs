//! Vendor adapters and what the server knows about each vendor.
//!
//! Only the adapter modules know a vendor's wire format. Every adapter is an actor that
//! takes [`adapter::AdapterCommand`]s from its session and reports
//! [`adapter::AgentOutput`]s back.

pub mod adapter;
pub mod catalog;
pub mod scripted;

pub use catalog::{clamp_effort, VendorCatalog, VendorSpec};
